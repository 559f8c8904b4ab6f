// SPDX-License-Identifier: Apache-2.0

package epploader

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// An Oracle is an Endpoint Picker's own start-up code, built from the module proxy as a program
// of its own module (api/eppconfig/oracle/<release>/main.go) and asked over stdin and stdout: the
// releases whose code cannot be linked into the project's module (it pins GIE v1.2.0).
type Oracle struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  *json.Encoder
	out *json.Decoder
}

// Request and Verdict are main.go's request and verdict.
type Request struct {
	Args     []string `json:"args,omitempty"`
	Config   string   `json:"config,omitempty"`
	Describe bool     `json:"describe,omitempty"`
}

type Verdict struct {
	ArgsErr   string                 `json:"argsErr,omitempty"`
	ConfigErr string                 `json:"configErr,omitempty"`
	Plugins   map[string]string      `json:"plugins,omitempty"`
	Types     map[string]Description `json:"types,omitempty"`
}

type Description struct {
	Kinds      []string `json:"kinds,omitempty"`
	Produces   []string `json:"produces,omitempty"`
	Consumes   []string `json:"consumes,omitempty"`
	Err        string   `json:"err,omitempty"`
	Extractors []string `json:"extractors,omitempty"`
}

// ErrNotBuilt: the oracle is not in the user cache yet, and was not to be built.
var ErrNotBuilt = errors.New("the oracle is not built yet (make check builds it; make test's short mode does not)")

var (
	oracles   = map[string]*Oracle{}
	oraclesMu sync.Mutex
)

// StartOracle starts the oracle of a release, once for the whole process. It is kept in the user
// cache under the hash of its module's go.sum, as tests/cluster keeps the cluster's programs;
// building it costs minutes cold, so without build a missing one is ErrNotBuilt.
func StartOracle(release string, build bool) (*Oracle, error) {
	oraclesMu.Lock()
	defer oraclesMu.Unlock()
	if o := oracles[release]; o != nil {
		return o, nil
	}
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "..", "api", "eppconfig", "oracle", release)
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return nil, err
	}
	hash := sha256.Sum256(sum)
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cache, "pulumi-fusioninfer", "oracle-"+release+"-"+hex.EncodeToString(hash[:6]))
	if _, err := os.Stat(path); err != nil {
		if !build {
			return nil, ErrNotBuilt
		}
		cmd := exec.Command("go", "build", "-o", path+".tmp", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the %s oracle: %w\n%s", release, err, out)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = nil // the EPP's flag deprecation notices
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	o := &Oracle{cmd: cmd, in: json.NewEncoder(stdin), out: json.NewDecoder(bufio.NewReaderSize(stdout, 1<<20))}
	oracles[release] = o
	return o, nil
}

// Ask puts one request to the oracle.
func (o *Oracle) Ask(req Request) (Verdict, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var v Verdict
	if err := o.in.Encode(req); err != nil {
		return v, err
	}
	if err := o.out.Decode(&v); err != nil {
		return v, fmt.Errorf("the oracle answers: %w", err)
	}
	return v, nil
}
