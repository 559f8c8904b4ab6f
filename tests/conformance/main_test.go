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
	kubeAPIServer, err := buildKubeAPIServer()
	if err != nil {
		progress("%v", err)
		return 1
	}
	etcd, err := ensureEtcd()
	if err != nil {
		progress("%v", err)
		return 1
	}
	testCluster, err = startCluster(kubeAPIServer, etcd)
	defer testCluster.stop()
	if err != nil {
		progress("%v", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if kinds, err = testCluster.installCRDs(ctx); err != nil {
		progress("%v", err)
		return 1
	}
	return m.Run()
}
