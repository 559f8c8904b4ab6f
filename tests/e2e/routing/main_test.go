// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package routing sends requests through what a router role deploys, on the simulated cluster
// with the pods' programs running (tests/cluster containers.go): every vLLM pod is
// llm-d-inference-sim at its own loopback address, the Endpoint Picker is the real one of the
// rendered release run with the rendered Deployment's flags, configuration and ServiceAccount, and
// a test gateway (tests/gateway) speaks ext_proc to it and forwards to the pod it picks. What it
// proves and its figures: docs/router.md ("Requests through the tree").
package routing

import (
	"testing"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.MainWithContainers(m) }
