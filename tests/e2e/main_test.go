// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package e2e deploys InferenceServices through Pulumi's real engine onto a simulated cluster
// (tests/e2e/harness, tests/cluster) and watches the real controllers act on them: every example
// manifest, rollouts, the gang, await minimal and a first deployment's time. Run it with
// `make e2e`; FUSIONINFER_CLUSTER_KEEP=1 keeps the logs of a passing run too.
package e2e

import (
	"testing"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
