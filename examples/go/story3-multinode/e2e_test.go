// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package main

import (
	"testing"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// TestProgramRunsOnTheCluster: this program, deployed through Pulumi's engine onto the simulated
// cluster of make e2e, runs, re-deploys with no step and destroys clean.
func TestProgramRunsOnTheCluster(t *testing.T) {
	harness.AddNodesWithTopology(t, "nodes", 24, 8)
	harness.AssertProgramRuns(t, program, "../../manifests/story3-multinode.yaml")
}
