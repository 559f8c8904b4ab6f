// SPDX-License-Identifier: Apache-2.0

// Package perf measures the CLI as a user runs it: the whole process, on a service of the size
// the foundation issue sets as the target.
package perf

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// BenchmarkCLIRenderTarget renders 1,000 decode replicas x 4 nodes + 250 prefill replicas x 2
// nodes (1,250 LeaderWorkerSets) with `fusioninfer render`, process start to exit, and reports
// the peak resident memory of the process. The goal: under 1 s and under 300 MB.
func BenchmarkCLIRenderTarget(b *testing.B) {
	binary := testcli.Binary(b)
	input := filepath.Join("testdata", "pd-1000-decode-250-prefill.yaml")
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	var peakKB int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(binary, "render", "-f", input)
		cmd.Stdout = devNull
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; rss > peakKB {
			peakKB = rss // kilobytes on Linux
		}
	}
	b.ReportMetric(float64(peakKB)/1024, "peak-MB")
}
