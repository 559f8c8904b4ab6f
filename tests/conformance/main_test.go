//go:build conformance

// Package conformance proves that a real Kubernetes API server, with the upstream CRDs, accepts
// every object the project emits, keeps every field we set, and sees a second apply as no change.
// It builds kube-apiserver from k8s.io/kubernetes, runs it against Debian's etcd on loopback
// ports chosen at run time, and stops both whatever happens. Run it with `make conformance`.
package conformance

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

var (
	testCluster *cluster
	kinds       resources
)

func TestMain(m *testing.M) {
	// Children get SIGKILL when the thread that started them exits (Pdeathsig); keep this one.
	runtime.LockOSThread()
	start := time.Now()
	code := run(m)
	progress("done in %s", time.Since(start).Round(time.Second))
	os.Exit(code)
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{})
	defer c.Stop(false)
	if err != nil {
		progress("%v", err)
		return 1
	}
	testCluster = &cluster{Cluster: c, client: c.Dynamic, config: c.Config}
	kinds = testCluster.kinds()
	return m.Run()
}
