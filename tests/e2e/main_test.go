//go:build e2e

// Package e2e deploys InferenceServices through Pulumi's real engine (in-process, pkg/v3's
// lifecycle framework) onto a simulated cluster (tests/cluster): a real kube-apiserver,
// kube-controller-manager and kube-scheduler, the real LeaderWorkerSet controller with its
// webhooks, Volcano's real scheduler and controllers, and kwok's GPU nodes, whose pods turn Ready
// after a load time. The engine's kubernetes plugin is a stand-in for pulumi-kubernetes (wire),
// so what is proved is our plan, our objects and the controllers' behaviour. Run it with
// `make e2e`; FUSIONINFER_CLUSTER_KEEP=1 keeps the logs of a passing run too.
package e2e

import (
	"testing"
	"time"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// testCluster is the cluster every test deploys to; each test uses namespaces and nodes of its own.
var testCluster *testcluster.Cluster

func TestMain(m *testing.M) {
	testcluster.Main(m, testcluster.Options{Controllers: true, LeaderWorkerSet: true, Volcano: true, Kwok: true, PodReadyDelay: time.Second},
		func(c *testcluster.Cluster) { testCluster = c })
}
