// SPDX-License-Identifier: Apache-2.0

//go:build conformance

// Package conformance proves that a real Kubernetes API server, with the upstream CRDs, accepts
// every object the project emits, keeps every field we set, and sees a second apply as no change.
// It runs etcd and kube-apiserver built from the module proxy (tests/cluster) on loopback ports
// chosen at run time, and stops both whatever happens. Run it with `make conformance`.
package conformance

import (
	"testing"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

var (
	testCluster *cluster
	kinds       resources
)

func TestMain(m *testing.M) {
	testcluster.Main(m, testcluster.Options{}, func(c *testcluster.Cluster) {
		testCluster = &cluster{Cluster: c, client: c.Dynamic, config: c.Config}
		kinds = testCluster.kinds()
	})
}
