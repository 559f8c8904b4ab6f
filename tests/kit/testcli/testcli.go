// SPDX-License-Identifier: Apache-2.0

// Package testcli builds the fusioninfer CLI once per test binary, so tests run the real program.
package testcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once   sync.Once
	binary string
	err    error
	output []byte
)

// Binary is the path of a freshly built fusioninfer, built on first use.
func Binary(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(here), "..", "..", "..")
		dir, mkErr := os.MkdirTemp("", "fusioninfer-cli-")
		if mkErr != nil {
			err = mkErr
			return
		}
		binary = filepath.Join(dir, "fusioninfer")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/fusioninfer")
		cmd.Dir = root
		output, err = cmd.CombinedOutput()
	})
	if err != nil {
		tb.Fatalf("building the CLI: %v\n%s", err, output)
	}
	return binary
}

// Root is the repository root.
func Root() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..")
}
