// SPDX-License-Identifier: Apache-2.0

// Package testcli builds the fusioninfer CLI once per test binary, so tests run the real program.
package testcli

import (
	"crypto/sha256"
	"encoding/hex"
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
		// One folder per checkout and package, built over at each run: a fresh temporary folder
		// per test binary is never removed (no test outlives the binary to remove it), and a
		// 30 MB binary left by every run filled the disk of a machine that runs CI often.
		dir, dirErr := folderOf(root)
		if dirErr != nil {
			err = dirErr
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

// folderOf is the CLI's folder for this checkout and the test binary's package (its working
// folder): packages build at once under go test, so each has its own.
func folderOf(root string) (string, error) {
	here, err := os.Getwd()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + here))
	dir := filepath.Join(os.TempDir(), "fusioninfer-cli-"+hex.EncodeToString(sum[:6]))
	return dir, os.MkdirAll(dir, 0o755)
}

// Root is the repository root.
func Root() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..")
}
