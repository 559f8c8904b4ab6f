// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oracle is an Endpoint Picker's own start-up code, built from the module proxy as a program of
// its own module (oracle/<release>/main.go) and asked over stdin and stdout: the releases whose
// code cannot be linked into the project's module (it pins GIE v1.2.0).
type oracle struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  *json.Encoder
	out *json.Decoder
}

// oracleRequest and oracleVerdict are main.go's request and verdict.
type oracleRequest struct {
	Args     []string `json:"args,omitempty"`
	Config   string   `json:"config,omitempty"`
	Describe bool     `json:"describe,omitempty"`
}

type oracleVerdict struct {
	ArgsErr   string                       `json:"argsErr,omitempty"`
	ConfigErr string                       `json:"configErr,omitempty"`
	Plugins   map[string]string            `json:"plugins,omitempty"`
	Types     map[string]oracleDescription `json:"types,omitempty"`
}

type oracleDescription struct {
	Kinds      []string `json:"kinds,omitempty"`
	Produces   []string `json:"produces,omitempty"`
	Consumes   []string `json:"consumes,omitempty"`
	Err        string   `json:"err,omitempty"`
	Extractors []string `json:"extractors,omitempty"`
}

var (
	oracles   = map[string]*oracle{}
	oraclesMu sync.Mutex
)

// startOracle builds (once, not in short mode: it is kept in the user cache under the hash of its module's go.sum,
// as tests/cluster keeps the cluster's programs) and starts the oracle of a release, for the
// whole test binary.
func startOracle(t *testing.T, release string) *oracle {
	t.Helper()
	oraclesMu.Lock()
	defer oraclesMu.Unlock()
	if o := oracles[release]; o != nil {
		return o
	}
	dir := filepath.Join("oracle", release)
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	require.NoError(t, err)
	hash := sha256.Sum256(sum)
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	path := filepath.Join(cache, "pulumi-fusioninfer", "oracle-"+release+"-"+hex.EncodeToString(hash[:6]))
	if _, err := os.Stat(path); err != nil {
		// Building it costs minutes cold: make test's short mode uses the oracle once make check
		// (or CI) has built it, and leaves its tests out until then.
		if testing.Short() {
			t.Skipf("the %s oracle is not built yet (make check builds it; short mode does not)", release)
		}
		start := time.Now()
		build := exec.Command("go", "build", "-o", path+".tmp", ".")
		build.Dir = dir
		build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "building the %s oracle:\n%s", release, out)
		require.NoError(t, os.Rename(path+".tmp", path))
		t.Logf("built the %s oracle in %s", release, time.Since(start).Round(time.Second))
	}
	cmd := exec.Command(path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = nil // the EPP's flag deprecation notices
	require.NoError(t, cmd.Start())
	o := &oracle{cmd: cmd, in: json.NewEncoder(stdin), out: json.NewDecoder(bufio.NewReaderSize(stdout, 1<<20))}
	oracles[release] = o
	return o
}

// ask puts one request to the oracle.
func (o *oracle) ask(t *testing.T, req oracleRequest) oracleVerdict {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.NoError(t, o.in.Encode(req))
	var v oracleVerdict
	require.NoError(t, o.out.Decode(&v), "the oracle answers")
	return v
}
