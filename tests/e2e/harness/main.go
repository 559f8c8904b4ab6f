// SPDX-License-Identifier: Apache-2.0

// Package harness deploys Pulumi Go programs through Pulumi's real engine (in-process, pkg/v3's
// lifecycle framework) onto the simulated cluster of tests/cluster, with a stand-in for the
// pulumi-kubernetes provider (wire.go), and checks what the real controllers make of them. Used
// by tests/e2e and by the Go example programs' e2e tests (`make e2e`).
package harness

import (
	"testing"
	"time"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// Cluster is the cluster every test deploys to; each test uses namespaces and nodes of its own.
var Cluster *testcluster.Cluster

// Main runs a package's e2e tests against a cluster with every controller: the control plane,
// the LeaderWorkerSet controller (testcluster.LWSVersion), Volcano and kwok.
// FUSIONINFER_CLUSTER_KEEP=1 keeps its logs.
func Main(m *testing.M) { MainWithLeaderWorkerSet(m, testcluster.LWSVersion) }

// MainWithLeaderWorkerSet is Main with another version of the LeaderWorkerSet controller.
func MainWithLeaderWorkerSet(m *testing.M, version string) {
	testcluster.Main(m, options(version), func(c *testcluster.Cluster) { Cluster = c })
}

// MainWithKEDA is Main with KEDA's operator and metrics server and the HPA controller.
func MainWithKEDA(m *testing.M) {
	opts := options(testcluster.LWSVersion)
	opts.KEDA = true
	testcluster.Main(m, opts, func(c *testcluster.Cluster) { Cluster = c })
}

// MainWithKarpenter is Main with Karpenter's kwok cloud provider launching the nodes of the
// services' NodePools, and KEDA (MainWithKEDA) to scale their autoscaled roles.
func MainWithKarpenter(m *testing.M) {
	opts := options(testcluster.LWSVersion)
	opts.Karpenter, opts.KEDA = true, true
	testcluster.Main(m, opts, func(c *testcluster.Cluster) { Cluster = c })
}

// MainWithContainers is Main with the pods' programs running (testcluster.Options.Containers):
// every vLLM pod serves (llm-d-inference-sim) at its own address on loopback, and every Endpoint
// Picker of a release the suite builds runs against the cluster.
func MainWithContainers(m *testing.M) {
	opts := options(testcluster.LWSVersion)
	opts.Containers = true
	testcluster.Main(m, opts, func(c *testcluster.Cluster) { Cluster = c })
}

func options(lwsVersion string) testcluster.Options {
	return testcluster.Options{Controllers: true, LeaderWorkerSet: true, LeaderWorkerSetVersion: lwsVersion,
		Volcano: true, Kwok: true, PodReadyDelay: time.Second}
}
