// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

// Main runs a suite's tests against a cluster started with opts, and exits with their status.
// setup, given the running cluster, prepares what the tests share. The cluster stops whatever
// happens; its logs are kept when a test fails, or with FUSIONINFER_CLUSTER_KEEP=1.
func Main(m *testing.M, opts Options, setup func(*Cluster)) {
	// Children get SIGKILL when the thread that started them exits (Pdeathsig); keep this one.
	runtime.LockOSThread()
	start := time.Now()
	code := run(m, opts, setup)
	Progress("done in %s", time.Since(start).Round(time.Second))
	os.Exit(code)
}

func run(m *testing.M, opts Options, setup func(*Cluster)) (code int) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	defer func() { c.Stop(code != 0 || os.Getenv("FUSIONINFER_CLUSTER_KEEP") != "") }()
	if err != nil {
		Progress("%v", err)
		return 1
	}
	setup(c)
	return m.Run()
}
