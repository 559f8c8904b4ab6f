// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// fakeServer is vLLM's OpenAI server as far as the loader uses it (vllm/entrypoints/openai:
// /v1/models lists the base model and each adapter, whose card has its path as root and the base
// as parent; loading a loaded name and unloading an unknown one are errors), with
// VLLM_ALLOW_RUNTIME_LORA_UPDATING on.
type fakeServer struct {
	mu      sync.Mutex
	loaded  map[string]string // name -> path
	calls   []string
	refuse  map[string]string // path -> the error a load of it gets
	healthy bool
}

func newFakeServer() *fakeServer {
	return &fakeServer{loaded: map[string]string{}, refuse: map[string]string{}, healthy: true}
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.healthy {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	switch r.URL.Path {
	case vllm.PathModels:
		type card struct {
			ID     string  `json:"id"`
			Root   string  `json:"root"`
			Parent *string `json:"parent"`
		}
		base := "meta-llama/Llama-3.1-8B-Instruct"
		cards := []card{{ID: base, Root: "/models/base"}}
		for name, path := range f.loaded {
			cards = append(cards, card{ID: name, Root: path, Parent: &base})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": cards})
	case vllm.PathLoadLoRAAdapter:
		var req map[string]string
		_ = json.NewDecoder(r.Body).Decode(&req)
		name, path := req["lora_name"], req["lora_path"]
		f.calls = append(f.calls, "load "+name+" "+path)
		if msg, ok := f.refuse[path]; ok {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
		if _, ok := f.loaded[name]; ok {
			http.Error(w, "The lora adapter '"+name+"' has already been loaded.", http.StatusBadRequest)
			return
		}
		f.loaded[name] = path
	case vllm.PathUnloadLoRAAdapter:
		var raw map[string]string
		_ = json.NewDecoder(r.Body).Decode(&raw)
		f.calls = append(f.calls, "unload "+raw["lora_name"])
		if _, ok := f.loaded[raw["lora_name"]]; !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		delete(f.loaded, raw["lora_name"])
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeServer) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

// writeList writes the adapter list; each adapter's files are in the cache (its download done:
// its adapter_config.json under the loader's root) unless its path is in missing.
func writeList(t *testing.T, l *loader, file string, adapters ...vllm.Adapter) {
	t.Helper()
	for _, a := range adapters {
		if missing[a.Path] {
			continue
		}
		dir := filepath.Join(l.root, a.Path)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, vllm.AdapterConfigFile), []byte(`{"peft_type": "LORA", "r": 8}`), 0o644))
	}
	data, err := json.Marshal(vllm.AdapterList{Adapters: adapters})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o644))
}

// missing are adapter paths whose files writeList leaves out of the cache.
var missing = map[string]bool{"/models/hf/org/gone/v1": true}

func newTestLoader(t *testing.T) (*loader, *fakeServer, string) {
	fake := newFakeServer()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "adapters.json")
	return &loader{list: file, root: t.TempDir(), servers: []string{srv.URL}, client: srv.Client(), log: log.New(io.Discard, "", 0)}, fake, file
}

func ready(t *testing.T, l *loader) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
	return rec.Code, rec.Body.String()
}

func TestLoaderLoadsTheListAndFollowsItsChanges(t *testing.T) {
	l, fake, file := newTestLoader(t)
	ctx := context.Background()
	code, _ := ready(t, l)
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready before the first reconcile")

	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"}, vllm.Adapter{Name: "support", Path: "/models/s3/a/support/v1"})
	l.reconcile(ctx)
	assert.ElementsMatch(t, []string{"load sql /models/hf/org/sql/v1", "load support /models/s3/a/support/v1"}, fake.takeCalls())
	code, _ = ready(t, l)
	assert.Equal(t, http.StatusOK, code)

	l.reconcile(ctx)
	assert.Empty(t, fake.takeCalls(), "what is loaded stays loaded")

	// support replaced, sql removed, legal added
	writeList(t, l, file, vllm.Adapter{Name: "support", Path: "/models/s3/a/support/v2"}, vllm.Adapter{Name: "legal", Path: "/models/gs/a/legal"})
	l.reconcile(ctx)
	assert.Equal(t, []string{"unload support", "load support /models/s3/a/support/v2", "load legal /models/gs/a/legal", "unload sql"}, fake.takeCalls())
	assert.Equal(t, map[string]string{"support": "/models/s3/a/support/v2", "legal": "/models/gs/a/legal"}, fake.loaded)

	rec := httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/adapters", nil))
	var state vllm.LoaderState
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &state))
	assert.Equal(t, vllm.LoaderState{Adapters: []vllm.AdapterState{{Name: "support", Path: "/models/s3/a/support/v2", Loaded: true},
		{Name: "legal", Path: "/models/gs/a/legal", Loaded: true}}}, state)
}

// TestLoaderRefusesAnAdapterWithoutItsFiles: an adapter whose directory has no
// adapter_config.json (its download failed, or its source holds no adapter) is not sent to the
// server, which would refuse it the same way; its state and the readiness name it and the cause,
// and the other adapters load.
func TestLoaderRefusesAnAdapterWithoutItsFiles(t *testing.T) {
	l, fake, file := newTestLoader(t)
	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"}, vllm.Adapter{Name: "gone", Path: "/models/hf/org/gone/v1"})
	l.reconcile(context.Background())
	assert.Equal(t, []string{"load sql /models/hf/org/sql/v1"}, fake.takeCalls())
	code, body := ready(t, l)
	assert.Equal(t, http.StatusOK, code, "one adapter that cannot load does not take the pod, its base model and its other adapters out")
	assert.Contains(t, body, "adapter gone (/models/hf/org/gone/v1) failed to load: no adapter_config.json in /models/hf/org/gone/v1")

	rec := httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, vllm.PathLoaderState, nil))
	var state vllm.LoaderState
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &state))
	require.Len(t, state.Adapters, 2)
	assert.Equal(t, vllm.AdapterState{Name: "sql", Path: "/models/hf/org/sql/v1", Loaded: true}, state.Adapters[0])
	assert.False(t, state.Adapters[1].Loaded)
	assert.Contains(t, state.Adapters[1].Error, "no adapter_config.json in /models/hf/org/gone/v1")
	assert.Contains(t, state.Problem, "adapter gone")
}

// TestLoaderStateSaysWhatHoldsTheListBack: before any adapter is tried, the state says why.
func TestLoaderStateSaysWhatHoldsTheListBack(t *testing.T) {
	l, fake, file := newTestLoader(t)
	state := func() vllm.LoaderState {
		rec := httptest.NewRecorder()
		l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, vllm.PathLoaderState, nil))
		var s vllm.LoaderState
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
		return s
	}
	assert.Equal(t, vllm.LoaderState{Adapters: []vllm.AdapterState{}, Problem: "not reconciled yet"}, state())
	fake.healthy = false
	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"})
	l.reconcile(context.Background())
	assert.Contains(t, state().Problem, "the model server is not answering yet")
}

func TestLoaderNamesAnAdapterThatFailsToLoad(t *testing.T) {
	l, fake, file := newTestLoader(t)
	fake.refuse["/models/hf/org/big/v1"] = "LoRA rank 64 is greater than max_lora_rank 16."
	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"}, vllm.Adapter{Name: "big", Path: "/models/hf/org/big/v1"})
	l.reconcile(context.Background())
	code, body := ready(t, l)
	assert.Equal(t, http.StatusOK, code, "the pod serves what loaded")
	assert.Contains(t, body, `adapter big (/models/hf/org/big/v1) failed to load: 400 Bad Request: LoRA rank 64 is greater than max_lora_rank 16.`)
	assert.Contains(t, fake.loaded, "sql", "one adapter's failure does not hold back the others")
}

func TestLoaderWaitsForTheServer(t *testing.T) {
	l, fake, file := newTestLoader(t)
	fake.healthy = false
	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"})
	l.reconcile(context.Background())
	code, body := ready(t, l)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "the model server")
	fake.healthy = true
	l.reconcile(context.Background())
	code, _ = ready(t, l)
	assert.Equal(t, http.StatusOK, code)
}

func TestLoaderRefusesAListItCannotRead(t *testing.T) {
	l, _, file := newTestLoader(t)
	require.NoError(t, os.WriteFile(file, []byte("adapters: [sql]"), 0o644))
	l.reconcile(context.Background())
	code, body := ready(t, l)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "adapters.json")
}

// TestProbeSaysWhyNotReady: the exec readiness probe prints the loader's cause, which the
// kubelet's event carries to fusioninfer status.
func TestProbeSaysWhyNotReady(t *testing.T) {
	l, fake, file := newTestLoader(t)
	fake.healthy = false
	fake.refuse["/models/hf/org/big/v1"] = "LoRA rank 64 is greater than max_lora_rank 16."
	writeList(t, l, file, vllm.Adapter{Name: "big", Path: "/models/hf/org/big/v1"})
	l.reconcile(context.Background())
	srv := httptest.NewServer(l)
	defer srv.Close()
	probe := func(out io.Writer) error {
		return run(context.Background(), []string{"--adapters", file, "--probe", "--listen", strings.TrimPrefix(srv.URL, "http://")}, out)
	}
	err := probe(io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the model server is not answering yet")

	// an adapter that fails passes the probe, named in its output
	fake.healthy = true
	l.reconcile(context.Background())
	var out bytes.Buffer
	require.NoError(t, probe(&out))
	assert.Contains(t, out.String(), "adapter big (/models/hf/org/big/v1) failed to load: 400 Bad Request: LoRA rank 64")
}

// newRanksLoader is a loader of a data parallel pod: one vLLM server a local rank, each its own
// HTTP server (core/render DataParallelScript: port + rank).
func newRanksLoader(t *testing.T, ranks int) (*loader, []*fakeServer, string) {
	l, first, file := newTestLoader(t)
	fakes := []*fakeServer{first}
	for range ranks - 1 {
		fake := newFakeServer()
		srv := httptest.NewServer(fake)
		t.Cleanup(srv.Close)
		fakes = append(fakes, fake)
		l.servers = append(l.servers, srv.URL)
	}
	return l, fakes, file
}

// TestLoaderLoadsEveryRank: a data parallel pod's ranks are each a server the pool routes to, so
// each gets every adapter, follows the list's changes, and one that failed names its rank.
func TestLoaderLoadsEveryRank(t *testing.T) {
	l, fakes, file := newRanksLoader(t, 3)
	ctx := context.Background()
	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"}, vllm.Adapter{Name: "support", Path: "/models/s3/a/support/v1"})
	l.reconcile(ctx)
	for i, fake := range fakes {
		assert.Equal(t, map[string]string{"sql": "/models/hf/org/sql/v1", "support": "/models/s3/a/support/v1"}, fake.loaded, "rank %d", i)
		fake.takeCalls()
	}
	code, _ := ready(t, l)
	assert.Equal(t, http.StatusOK, code)

	// one rank restarted and lost its adapters; sql removed; the third rank refuses support v2
	fakes[1].loaded = map[string]string{}
	fakes[2].refuse["/models/s3/a/support/v2"] = "LoRA rank 64 is greater than max_lora_rank 16."
	writeList(t, l, file, vllm.Adapter{Name: "support", Path: "/models/s3/a/support/v2"})
	l.reconcile(ctx)
	assert.Equal(t, map[string]string{"support": "/models/s3/a/support/v2"}, fakes[0].loaded)
	assert.Equal(t, map[string]string{"support": "/models/s3/a/support/v2"}, fakes[1].loaded)
	assert.Equal(t, map[string]string{}, fakes[2].loaded, "unloaded, then refused")

	rec := httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, vllm.PathLoaderState, nil))
	var state vllm.LoaderState
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &state))
	require.Len(t, state.Adapters, 1)
	assert.False(t, state.Adapters[0].Loaded, "an adapter is loaded when every rank has it")
	assert.Equal(t, "on "+l.servers[2]+": 400 Bad Request: LoRA rank 64 is greater than max_lora_rank 16.", state.Adapters[0].Error)
	code, body := ready(t, l)
	assert.Equal(t, http.StatusOK, code, "the pod serves what loaded")
	assert.Contains(t, body, "adapter support (/models/s3/a/support/v2) failed to load: on "+l.servers[2])

	// a rank not answering holds the pod back, and is named
	fakes[1].healthy = false
	l.reconcile(ctx)
	code, body = ready(t, l)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "the model server "+l.servers[1]+" is not answering yet")
}

// TestLoaderTakesEveryServerFlag: --server repeats, one a rank; vLLM's default port without it.
func TestLoaderTakesEveryServerFlag(t *testing.T) {
	opts, err := parseFlags([]string{"--adapters", "/a.json", "--server", "http://localhost:8000", "--server", "http://localhost:8001/"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"http://localhost:8000", "http://localhost:8001"}, opts.servers)
	opts, err = parseFlags([]string{"--adapters", "/a.json"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"http://localhost:8000"}, opts.servers)
}

// TestLoaderKeepsWhatIsLoadedWhenItsFilesGo: the files are checked only before a load: an
// adapter every rank has loaded stays loaded, and listed so, when its directory goes.
func TestLoaderKeepsWhatIsLoadedWhenItsFilesGo(t *testing.T) {
	l, fakes, file := newRanksLoader(t, 2)
	writeList(t, l, file, vllm.Adapter{Name: "sql", Path: "/models/hf/org/sql/v1"})
	l.reconcile(context.Background())
	require.NoError(t, os.Remove(filepath.Join(l.root, "/models/hf/org/sql/v1", vllm.AdapterConfigFile)))
	l.reconcile(context.Background())
	assert.Equal(t, []vllm.AdapterState{{Name: "sql", Path: "/models/hf/org/sql/v1", Loaded: true}}, l.state)
	assert.Equal(t, map[string]string{"sql": "/models/hf/org/sql/v1"}, fakes[1].loaded)

	fakes[1].loaded = map[string]string{} // a rank restarted: it needs the files, which are gone
	l.reconcile(context.Background())
	require.Len(t, l.state, 1)
	assert.False(t, l.state[0].Loaded)
	assert.Contains(t, l.state[0].Error, "no adapter_config.json in /models/hf/org/sql/v1")
}
