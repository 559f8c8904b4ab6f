// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/download"
)

// binary is the downloader, built once for the tests: they run its real command line.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fusioninfer-download")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "fusioninfer-download")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(fmt.Sprintf("go build: %v\n%s", err, out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A tiny model: weights in LFS (verified by SHA-256), configuration in git (verified by git's
// SHA-1), one file in a folder.
var tinyModel = map[string][]byte{
	"config.json":                      []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}`),
	"tokenizer.json":                   []byte(`{"version": "1.0", "model": {"type": "BPE"}}`),
	"model-00001-of-00002.safetensors": bytes.Repeat([]byte("weights-one "), 40000),
	"model-00002-of-00002.safetensors": bytes.Repeat([]byte("weights-two "), 30000),
	"original/params.json":             []byte(`{"dim": 64}`),
	"model.safetensors.index.json":     []byte(`{"weight_map": {}}`),
	"generation_config.json":           []byte(`{"temperature": 0.6}`),
}

func isLFS(path string) bool { return strings.HasSuffix(path, ".safetensors") }

// fakeHub serves tinyModel with the Hugging Face Hub's API: the revision's commit, the tree in
// pages (Link headers), and files by commit with Range. It can cut a file's first response
// short, serve a corrupt file, and demand a token.
type fakeHub struct {
	repo, revision, commit, token string
	files                         map[string][]byte
	cutAt                         map[string]int // path -> bytes sent before the connection drops, once
	corrupt                       map[string]bool
	mu                            sync.Mutex
	ranges                        map[string][]string // path -> Range headers of its requests
	resolves                      int
}

func newFakeHub() *fakeHub {
	return &fakeHub{repo: "test-org/tiny-model", revision: "v1.0", commit: "0123456789abcdef0123456789abcdef01234567",
		files: tinyModel, cutAt: map[string]int{}, corrupt: map[string]bool{}, ranges: map[string][]string{}}
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, `{"error":"Access to model test-org/tiny-model is restricted."}`, http.StatusUnauthorized)
		return
	}
	api := "/api/models/" + h.repo
	switch {
	case r.URL.Path == api+"/revision/"+h.revision:
		json.NewEncoder(w).Encode(map[string]any{"id": h.repo, "sha": h.commit})
	case r.URL.Path == api+"/tree/"+h.commit && r.URL.Query().Get("recursive") == "true":
		paths := slices.Sorted(func(yield func(string) bool) {
			for p := range h.files {
				if !yield(p) {
					return
				}
			}
		})
		page, half := r.URL.Query().Get("cursor"), len(paths)/2
		if page == "" {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?recursive=true&cursor=2>; rel="next"`, r.Host, r.URL.Path))
			paths = paths[:half]
		} else {
			paths = paths[half:]
		}
		entries := []map[string]any{{"type": "directory", "path": "original", "oid": "d", "size": 0}}
		for _, p := range paths {
			content := h.files[p]
			entry := map[string]any{"type": "file", "path": p, "size": len(content), "oid": gitBlobSHA1(content)}
			if isLFS(p) {
				sum := sha256.Sum256(content)
				entry["lfs"] = map[string]any{"oid": hex.EncodeToString(sum[:]), "size": len(content), "pointerSize": 134}
				entry["size"] = 134
			}
			entries = append(entries, entry)
		}
		json.NewEncoder(w).Encode(entries)
	case strings.HasPrefix(r.URL.Path, "/"+h.repo+"/resolve/"+h.commit+"/"):
		path := strings.TrimPrefix(r.URL.Path, "/"+h.repo+"/resolve/"+h.commit+"/")
		content, ok := h.files[path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		h.resolves++
		h.ranges[path] = append(h.ranges[path], r.Header.Get("Range"))
		cut, cutOnce := h.cutAt[path]
		delete(h.cutAt, path)
		h.mu.Unlock()
		if h.corrupt[path] {
			content = bytes.ToUpper(content)
		}
		if cutOnce {
			w.Header().Set("Content-Length", fmt.Sprint(len(content)))
			w.WriteHeader(http.StatusOK)
			w.Write(content[:cut])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-file
		}
		http.ServeContent(w, r, path, time.Time{}, bytes.NewReader(content))
	default:
		http.NotFound(w, r)
	}
}

func gitBlobSHA1(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// jobCommand is the download Job's command line for a source, as the core renders it, with the
// cache's mount path replaced by a directory of the test's.
func jobCommand(t *testing.T, source, cache string, exclude ...string) []string {
	t.Helper()
	tree := cachedTree(t, source, exclude...)
	for _, o := range tree.Objects {
		if job, ok := o.Object.(*batchv1.Job); ok {
			c := job.Spec.Template.Spec.Containers[0]
			require.Equal(t, []string{render.DownloaderCommand}, c.Command)
			args := slices.Clone(c.Args)
			i := slices.Index(args, api.ModelMountPath)
			require.Equal(t, "--cache", args[i-1])
			args[i] = cache
			return args
		}
	}
	t.Fatal("no download Job")
	return nil
}

func cachedTree(t *testing.T, source string, exclude ...string) *render.Tree {
	t.Helper()
	return adaptersTree(t, source, nil, exclude...)
}

// adaptersTree is cachedTree's service with LoRA adapters of the model, by name.
func adaptersTree(t *testing.T, source string, adapters map[string]string, exclude ...string) *render.Tree {
	t.Helper()
	data, err := os.ReadFile("../../examples/manifests/story1-monolithic.yaml")
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	svc := docs[0].Service
	svc.Spec.Roles[0].Template.Spec.Containers[0].Args = nil
	svc.Spec.Model = &api.Model{Source: source, Name: "tiny", Cache: &api.ModelCache{Size: "1Gi", StorageClassName: "shared", Exclude: exclude}}
	for _, name := range slices.Sorted(maps.Keys(adapters)) {
		svc.Spec.Model.Adapters = append(svc.Spec.Model.Adapters, api.LoRAAdapter{Name: name, Source: adapters[name]})
	}
	tree, verrs := render.Build(svc)
	require.Empty(t, verrs)
	return tree
}

// serverModelDir is where the servers' --model points, under the test's cache directory.
func serverModelDir(t *testing.T, tree *render.Tree, cache string) string {
	t.Helper()
	for _, o := range tree.Objects {
		if lws, ok := o.Object.(*lwsv1.LeaderWorkerSet); ok {
			model, found := vllm.Model(&lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0])
			require.True(t, found)
			return filepath.Join(cache, strings.TrimPrefix(model, api.ModelMountPath))
		}
	}
	t.Fatal("no LWS")
	return ""
}

func runDownloader(t *testing.T, args []string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHubDownloadResumesAndVerifies: the Job's command line against a Hub that drops the
// connection in the middle of a weights file. The first attempt fails and keeps what it got; the
// second (the Job's retry) asks for the rest with Range, verifies every file, and fills the very
// directory the servers' --model names; a third does nothing.
func TestHubDownloadResumesAndVerifies(t *testing.T) {
	hub := newFakeHub()
	hub.token = "hf_secret"
	const big = "model-00001-of-00002.safetensors"
	hub.cutAt[big] = 123457
	server := httptest.NewServer(hub)
	defer server.Close()
	cache := t.TempDir()
	source := "hf://test-org/tiny-model@v1.0"
	args := append(jobCommand(t, source, cache), "--parallel", "1")
	env := []string{"HF_ENDPOINT=" + server.URL, "HF_TOKEN=hf_secret"}

	out, err := runDownloader(t, args, env...)
	require.Error(t, err, out)
	assert.Contains(t, out, big+": interrupted at byte 123457 of 480000 (a rerun resumes there)")
	dir := serverModelDir(t, cachedTree(t, source), cache)
	part, err := os.ReadFile(filepath.Join(dir, big+".part"))
	require.NoError(t, err)
	assert.Len(t, part, 123457, "what arrived is kept")

	out, err = runDownloader(t, args, env...)
	require.NoError(t, err, out)
	assert.Contains(t, out, big+": resuming at byte 123457 of 480000")
	assert.Equal(t, []string{"", "bytes=123457-"}, hub.ranges[big], "the second attempt asks for the rest only")
	for path, content := range tinyModel {
		got, err := os.ReadFile(filepath.Join(dir, path))
		require.NoError(t, err, path)
		assert.True(t, bytes.Equal(content, got), "%s arrived whole", path)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	assert.Empty(t, parts)
	var manifest download.Manifest
	data, err := os.ReadFile(filepath.Join(dir, download.CompleteMarker))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &manifest))
	assert.Equal(t, hub.commit, manifest.Revision, "the revision's commit is recorded")
	assert.Len(t, manifest.Files, len(tinyModel))
	assert.Equal(t, filepath.Join(cache, "hf/test-org/tiny-model/v1.0"), dir)

	resolves := hub.resolves
	out, err = runDownloader(t, args, env...)
	require.NoError(t, err, out)
	assert.Contains(t, out, "is complete in")
	assert.Equal(t, resolves, hub.resolves, "a complete cache downloads nothing")
}

// TestHubDownloadExcludes: cache.exclude's patterns leave files out (a folder by its name), and a
// later download without them fetches what is missing only.
func TestHubDownloadExcludes(t *testing.T) {
	hub := newFakeHub()
	server := httptest.NewServer(hub)
	defer server.Close()
	cache := t.TempDir()
	source := "hf://test-org/tiny-model@v1.0"
	args := jobCommand(t, source, cache, "original", "generation_*.json")
	assert.Equal(t, []string{"--exclude", "original", "--exclude", "generation_*.json"}, args[len(args)-4:])
	out, err := runDownloader(t, args, "HF_ENDPOINT="+server.URL)
	require.NoError(t, err, out)
	assert.Contains(t, out, "5 files (2 excluded)")
	dir := serverModelDir(t, cachedTree(t, source), cache)
	for _, path := range []string{"original/params.json", "generation_config.json"} {
		_, err := os.Stat(filepath.Join(dir, path))
		assert.True(t, os.IsNotExist(err), "%s is excluded", path)
	}
	resolves := hub.resolves
	out, err = runDownloader(t, jobCommand(t, source, cache), "HF_ENDPOINT="+server.URL)
	require.NoError(t, err, out)
	assert.Equal(t, resolves+2, hub.resolves, "the two excluded files, and nothing else")
	_, err = os.Stat(filepath.Join(dir, "original/params.json"))
	assert.NoError(t, err)
}

func TestHubDownloadRefusesACorruptFile(t *testing.T) {
	hub := newFakeHub()
	hub.corrupt["config.json"] = true
	server := httptest.NewServer(hub)
	defer server.Close()
	cache := t.TempDir()
	source := "hf://test-org/tiny-model@v1.0"
	out, err := runDownloader(t, jobCommand(t, source, cache), "HF_ENDPOINT="+server.URL)
	require.Error(t, err, out)
	assert.Contains(t, out, "config.json: gitsha1 ")
	assert.Contains(t, out, "the file is corrupt, and is fetched again on the next attempt")
	dir := serverModelDir(t, cachedTree(t, source), cache)
	_, err = os.Stat(filepath.Join(dir, "config.json"))
	assert.True(t, os.IsNotExist(err), "a corrupt file never takes its final name")
	_, err = os.Stat(filepath.Join(dir, download.CompleteMarker))
	assert.True(t, os.IsNotExist(err), "nor is the directory marked complete")
}

func TestHubDownloadNamesTheMissingToken(t *testing.T) {
	hub := newFakeHub()
	hub.token = "hf_secret"
	server := httptest.NewServer(hub)
	defer server.Close()
	out, err := runDownloader(t, jobCommand(t, "hf://test-org/tiny-model@v1.0", t.TempDir()), "HF_ENDPOINT="+server.URL, "HF_TOKEN=")
	require.Error(t, err)
	assert.Contains(t, out, "401 Unauthorized (a gated or private repository: put a token with access in the credentials Secret as HF_TOKEN)")
}

// fakeS3 serves objects with S3's REST API, path style: ListObjectsV2 and GetObject with Range.
type fakeS3 struct {
	bucket  string
	objects map[string][]byte
	etags   map[string]string // key -> ETag; default the MD5 of a single-part upload
}

func (s *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, isObject := strings.CutPrefix(r.URL.Path, "/"+s.bucket+"/")
	switch {
	case r.URL.Path == "/"+s.bucket && r.URL.Query().Get("list-type") == "2":
		type object struct {
			Key  string `xml:"Key"`
			Size int    `xml:"Size"`
			ETag string `xml:"ETag"`
		}
		result := struct {
			XMLName  xml.Name `xml:"ListBucketResult"`
			Name     string   `xml:"Name"`
			Prefix   string   `xml:"Prefix"`
			KeyCount int      `xml:"KeyCount"`
			Contents []object `xml:"Contents"`
		}{Name: s.bucket, Prefix: r.URL.Query().Get("prefix")}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range s.objects {
				if !yield(k) {
					return
				}
			}
		}) {
			if strings.HasPrefix(k, result.Prefix) {
				result.Contents = append(result.Contents, object{Key: k, Size: len(s.objects[k]), ETag: s.etag(k)})
			}
		}
		result.KeyCount = len(result.Contents)
		w.Header().Set("Content-Type", "application/xml")
		xml.NewEncoder(w).Encode(result)
	case isObject && r.Method == http.MethodGet:
		content, ok := s.objects[key]
		if !ok {
			http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
			return
		}
		w.Header().Set("ETag", s.etag(key))
		http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(content))
	default:
		http.Error(w, "<Error><Code>NotImplemented</Code></Error>", http.StatusNotImplemented)
	}
}

func (s *fakeS3) etag(key string) string {
	if e, ok := s.etags[key]; ok {
		return e
	}
	sum := md5.Sum(s.objects[key])
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// TestBucketDownload: an S3-compatible store (AWS_ENDPOINT_URL) through the AWS SDK: objects
// under the prefix only, single-part objects verified by their MD5 ETag, multipart ones by size.
func TestBucketDownload(t *testing.T) {
	store := &fakeS3{bucket: "models", objects: map[string][]byte{
		"tiny/config.json":                      tinyModel["config.json"],
		"tiny/model-00001-of-00002.safetensors": tinyModel["model-00001-of-00002.safetensors"],
		"tiny/original/params.json":             tinyModel["original/params.json"],
		"other/config.json":                     []byte("{}"),
	}, etags: map[string]string{"tiny/model-00001-of-00002.safetensors": `"9b2cf535f27731c974343645a3985328-3"`}}
	server := httptest.NewServer(store)
	defer server.Close()
	cache := t.TempDir()
	source := "s3://models/tiny"
	env := []string{"AWS_ENDPOINT_URL=" + server.URL, "AWS_ACCESS_KEY_ID=key", "AWS_SECRET_ACCESS_KEY=secret", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true"}
	out, err := runDownloader(t, jobCommand(t, source, cache), env...)
	require.NoError(t, err, out)
	dir := serverModelDir(t, cachedTree(t, source), cache)
	assert.Equal(t, filepath.Join(cache, "s3/models/tiny"), dir)
	for _, path := range []string{"config.json", "model-00001-of-00002.safetensors", "original/params.json"} {
		got, err := os.ReadFile(filepath.Join(dir, path))
		require.NoError(t, err, path)
		assert.True(t, bytes.Equal(tinyModel[path], got), path)
	}
	_, err = os.Stat(filepath.Join(dir, "other"))
	assert.True(t, os.IsNotExist(err), "only the prefix's objects")

	store.objects["tiny/config.json"] = []byte(`{"corrupt": true, "same size?": 0}`)
	store.etags["tiny/config.json"] = `"` + strings.Repeat("0", 32) + `"`
	require.NoError(t, os.RemoveAll(dir))
	out, err = runDownloader(t, jobCommand(t, source, cache), env...)
	require.Error(t, err, out)
	assert.Contains(t, out, "config.json: md5 ")
}

func TestCommandLineErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no source":            {"--cache", "/tmp"},
		"an unknown scheme":    {"--source", "ftp://x/y", "--cache", "/tmp"},
		"a source not fetched": {"--source", "pvc://weights/x", "--cache", "/tmp"},
		"a bad pattern":        {"--source", "hf://org/name", "--cache", "/tmp", "--exclude", "[a-"},
	} {
		out, err := runDownloader(t, args)
		assert.Error(t, err, name)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "%s: one line: %s", name, out)
	}
}

// TestAdaptersDownloadOneAfterTheOther: the Job's adapters container, as the core renders it,
// fetches every adapter's source into its directory, each once, in one process; one that fails
// keeps none of the others from completing, is named, and fails the container, and the retry
// completes it and does nothing for the others.
func TestAdaptersDownloadOneAfterTheOther(t *testing.T) {
	store := &fakeS3{bucket: "adapters", objects: map[string][]byte{
		"sql/v1/adapter_config.json":           []byte(`{"r": 8}`),
		"sql/v1/adapter_model.safetensors":     []byte("sql weights"),
		"support/v1/adapter_config.json":       []byte(`{"r": 16}`),
		"support/v1/adapter_model.safetensors": []byte("support weights"),
	}}
	server := httptest.NewServer(store)
	defer server.Close()
	env := []string{"AWS_ENDPOINT_URL=" + server.URL, "AWS_ACCESS_KEY_ID=key", "AWS_SECRET_ACCESS_KEY=secret", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true"}
	tree := adaptersTree(t, "s3://adapters/base", map[string]string{"sql": "s3://adapters/sql/v1", "sql-again": "s3://adapters/sql/v1",
		"support": "s3://adapters/support/v1", "legal": "s3://adapters/legal"})
	var args []string
	for _, o := range tree.Objects {
		if job, ok := o.Object.(*batchv1.Job); ok {
			require.Len(t, job.Spec.Template.Spec.Containers, 2)
			c := job.Spec.Template.Spec.Containers[1]
			require.Equal(t, render.AdapterDownloadContainerName, c.Name)
			args = slices.Clone(c.Args)
		}
	}
	cache := t.TempDir()
	args[slices.Index(args, api.ModelMountPath)] = cache
	assert.Equal(t, 3, strings.Count(strings.Join(args, " "), "--source"), "sql's source once: %v", args)

	out, err := runDownloader(t, args, env...)
	require.Error(t, err, out)
	assert.Contains(t, out, "1 of 3 sources failed (a rerun resumes them): s3://adapters/legal: s3://adapters/legal has no files")
	for _, dir := range []string{"s3/adapters/sql/v1", "s3/adapters/support/v1"} {
		_, err := os.Stat(filepath.Join(cache, dir, download.CompleteMarker))
		assert.NoError(t, err, "%s completes though legal fails", dir)
	}

	store.objects["legal/adapter_config.json"] = []byte(`{"r": 8}`)
	out, err = runDownloader(t, args, env...)
	require.NoError(t, err, out)
	assert.Contains(t, out, "s3://adapters/sql/v1 is complete in")
	_, err = os.Stat(filepath.Join(cache, "s3/adapters/legal", download.CompleteMarker))
	assert.NoError(t, err)
}
