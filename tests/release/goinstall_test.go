// SPDX-License-Identifier: Apache-2.0

// Package release installs the project as users get it from a release: the module at the version
// of the VERSION file, served by a Go module proxy, fetched with the README's own commands.
package release

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

const modulePath = "github.com/fusioninfer/pulumi-fusioninfer"

// TestGoInstallFromAProxy: the README's `go install .../cmd/fusioninfer@vX` and `go get ...@vX`,
// against a file proxy holding the module as the Go proxy would serve it from the release tag (the
// tracked files of the working tree, nested modules left out, as `go mod download` would get
// them). `go install pkg@version` refuses a module whose go.mod has a replace directive; this is
// the test that says so.
func TestGoInstallFromAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and a program from a module proxy of its own: make check runs it")
	}
	root := testcli.Root()
	version := "v" + strings.TrimSpace(string(readFile(t, filepath.Join(root, "VERSION"))))
	readme := string(readFile(t, filepath.Join(root, "README.md")))

	install := readmeCommand(t, readme, "go install "+modulePath+"/cmd/fusioninfer@")
	get := readmeCommand(t, readme, "go get "+modulePath+"@")
	for _, command := range []string{install, get} {
		require.True(t, strings.HasSuffix(command, "@"+version), "README's %q names the VERSION file's %s", command, version)
	}

	proxy := t.TempDir()
	writeProxy(t, root, proxy, version)
	env := goEnv(t, proxy)
	forgetCachedModule(t, env)
	t.Cleanup(func() { forgetCachedModule(t, env) })

	// The CLI, as the README installs it; it reports the version it was installed at.
	bin := t.TempDir()
	run(t, t.TempDir(), append(env, "GOBIN="+bin), strings.Fields(install)...)
	out := run(t, root, env, filepath.Join(bin, "fusioninfer"), "--version")
	require.Contains(t, out, "version "+strings.TrimPrefix(version, "v"), "fusioninfer --version after go install")
	out = run(t, root, env, filepath.Join(bin, "fusioninfer"), "render", "-f", "examples/manifests/story1-monolithic.yaml", "--summary")
	require.Contains(t, out, "qwen-inference", "the installed CLI renders an example")

	// A fresh program: the README's Go snippet in a main, the README's go get, then go mod tidy.
	program := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(program, "main.go"), []byte(readmeProgram(t, readme)), 0o644))
	run(t, program, env, "go", "mod", "init", "example.com/llm")
	run(t, program, env, strings.Fields(get)...)
	run(t, program, env, "go", "mod", "tidy")
	run(t, program, env, "go", "build", "-o", filepath.Join(bin, "program"), ".")
}

// readmeCommand is the README's command that starts with prefix, up to the closing backtick.
func readmeCommand(t *testing.T, readme, prefix string) string {
	t.Helper()
	_, after, found := strings.Cut(readme, "`"+prefix)
	require.True(t, found, "README has `%s...`", prefix)
	version, _, _ := strings.Cut(after, "`")
	return prefix + version
}

// readmeProgram wraps the README's Go snippet (the block after "Your own Go program") in the
// package, imports and pulumi.Run a user writes around it.
func readmeProgram(t *testing.T, readme string) string {
	t.Helper()
	_, after, found := strings.Cut(readme, "**Your own Go program.**")
	require.True(t, found)
	_, after, found = strings.Cut(after, "```go\n")
	require.True(t, found)
	snippet, _, _ := strings.Cut(after, "```")
	return `package main

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"` + modulePath + `/api"
	"` + modulePath + `/components/inferenceservice"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
` + snippet + `		return nil
	})
}
`
}

// writeProxy lays out dir as a GOPROXY file tree serving the module at version: @v/list, .info,
// .mod and the module zip (https://go.dev/ref/mod#goproxy-protocol).
func writeProxy(t *testing.T, root, dir, version string) {
	t.Helper()
	escaped, err := module.EscapePath(modulePath)
	require.NoError(t, err)
	at := filepath.Join(dir, escaped, "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
	info, err := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), info, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), readFile(t, filepath.Join(root, "go.mod")), 0o644))

	archive, err := os.Create(filepath.Join(at, version+".zip"))
	require.NoError(t, err)
	require.NoError(t, modzip.Create(archive, module.Version{Path: modulePath, Version: version}, moduleFiles(t, root)))
	require.NoError(t, archive.Close())
	_, err = zip.OpenReader(archive.Name())
	require.NoError(t, err)
}

// moduleFiles are the files git tracks in the working tree, less those of nested modules
// (tests/cluster/modules/*), which the module zip never holds.
func moduleFiles(t *testing.T, root string) []modzip.File {
	t.Helper()
	tracked := strings.Split(strings.TrimRight(run(t, root, nil, "git", "ls-files", "-z"), "\x00"), "\x00")
	var nested []string
	for _, name := range tracked {
		if strings.HasSuffix(name, "/go.mod") {
			nested = append(nested, strings.TrimSuffix(name, "go.mod"))
		}
	}
	var files []modzip.File
	for _, name := range tracked {
		inNested := false
		for _, prefix := range nested {
			inNested = inNested || strings.HasPrefix(name, prefix)
		}
		info, err := os.Lstat(filepath.Join(root, name))
		if inNested || os.IsNotExist(err) { // a tracked file deleted in the working tree is not released
			continue
		}
		require.NoError(t, err)
		files = append(files, trackedFile{path: name, file: filepath.Join(root, name), info: info})
	}
	require.NotEmpty(t, files)
	return files
}

type trackedFile struct {
	path, file string
	info       os.FileInfo
}

func (f trackedFile) Path() string                 { return f.path }
func (f trackedFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f trackedFile) Open() (io.ReadCloser, error) { return os.Open(f.file) }

// goEnv is the environment of a user whose GOPROXY serves the release first: the module's
// checksum is not in the public checksum database, so it is exempt from it; the module cache is the
// machine's own (its dependencies are there and built already). The go command indexes a module
// cache directory once per path and version, taking it to be immutable (the module index in
// GOCACHE); this test serves the same version with new contents, so the index is off.
func goEnv(t *testing.T, proxy string) []string {
	t.Helper()
	upstream := strings.TrimSpace(run(t, "", nil, "go", "env", "GOPROXY"))
	return append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+upstream,
		"GONOSUMDB="+modulePath, "GOFLAGS=-modcacherw", "GOWORK=off", "GODEBUG=goindex=0")
}

// forgetCachedModule removes the module from the module cache, so that go fetches this run's zip
// rather than reusing an earlier run's of the same version.
func forgetCachedModule(t *testing.T, env []string) {
	t.Helper()
	cache := strings.TrimSpace(run(t, "", env, "go", "env", "GOMODCACHE"))
	escaped, err := module.EscapePath(modulePath)
	require.NoError(t, err)
	matches, err := filepath.Glob(filepath.Join(cache, escaped+"@*"))
	require.NoError(t, err)
	for _, dir := range append(matches, filepath.Join(cache, "cache", "download", escaped)) {
		_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err == nil {
				_ = os.Chmod(path, info.Mode()|0o700)
			}
			return nil
		})
		require.NoError(t, os.RemoveAll(dir))
	}
}

var goDownloadLine = regexp.MustCompile(`(?m)^go: (downloading|finding|extracting) .*\n`)

// run runs a command in dir and returns its combined output; a failure stops the test with it.
func run(t *testing.T, dir string, env []string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", strings.Join(argv, " "), goDownloadLine.ReplaceAllString(string(out), ""))
	return string(out)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return data
}
