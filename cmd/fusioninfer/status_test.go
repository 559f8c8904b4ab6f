// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// fakeAPIServer answers the status command's reads as a cluster would: empty lists, except what
// missing (404: an API the cluster does not serve) and forbidden (403) say.
func fakeAPIServer(t *testing.T, missing, forbidden []string, pods string) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, m := range missing {
			if strings.Contains(r.URL.Path, m) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`)
				return
			}
		}
		for _, f := range forbidden {
			if strings.HasSuffix(r.URL.Path, "/"+f) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"%s is forbidden: User \"dev\" cannot list resource \"%s\""}`, f, f)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/pods") && pods != "" && !strings.HasPrefix(r.URL.Path, "/api/v1/pods") {
			fmt.Fprint(w, pods)
			return
		}
		fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
	}))
	t.Cleanup(server.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %s}}]\nusers: [{name: u, user: {token: t}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", server.URL)
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

const onePod = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"qwen-inference-inference-0-0",` +
	`"labels":{"fusioninfer.io/service":"qwen-inference","leaderworkerset.sigs.k8s.io/name":"qwen-inference-inference-0"}},"status":{"phase":"Pending"}}]}`

// TestStatusBadInput: one clear line on stderr and exit status 1 for every way the status cannot
// be read.
func TestStatusBadInput(t *testing.T) {
	manifest := "../../examples/manifests/story1-monolithic.yaml"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no service", []string{"status"}, "fusioninfer: give -f FILE (the service's manifest) or --name NAME"},
		{"both a file and a name", []string{"status", "-f", manifest, "--name", "x"}, "fusioninfer: give -f FILE or --name NAME, not both"},
		{"an output it does not write", []string{"status", "--name", "x", "-o", "yaml"}, `fusioninfer: -o "yaml": give text or json`},
		{"a Prometheus that is not a URL", []string{"status", "--name", "x", "--prometheus", "localhost:9090"},
			`fusioninfer: --prometheus "localhost:9090": give the Prometheus' URL, such as http://localhost:9090`},
		{"no kubeconfig", []string{"status", "--name", "x", "--kubeconfig", "/nonexistent/kubeconfig"},
			"fusioninfer: no cluster to read: --kubeconfig /nonexistent/kubeconfig: no such file or directory; give the path of a kubeconfig file"},
		{"a context the kubeconfig does not have", []string{"status", "--name", "x", "--kubeconfig", fakeAPIServer(t, nil, nil, ""), "--context", "nope"},
			`fusioninfer: no cluster to read: the kubeconfig has no context "nope"; give --context one of its contexts: c (kubectl config get-contexts)`},
		{"a service that does not exist", []string{"status", "-f", manifest, "--kubeconfig", fakeAPIServer(t, nil, nil, "")},
			`fusioninfer: no InferenceService "qwen-inference" in namespace "default": nothing there carries the label fusioninfer.io/service=qwen-inference`},
		{"a cluster without the LWS CRD", []string{"status", "-f", manifest, "--kubeconfig", fakeAPIServer(t, []string{"leaderworkerset.x-k8s.io"}, nil, onePod)},
			"fusioninfer: the cluster at http://127.0.0.1:"},
		{"no permission to read events", []string{"status", "-f", manifest, "--kubeconfig", fakeAPIServer(t, nil, []string{"events"}, onePod)},
			`fusioninfer: not allowed to list events in namespace "default": the status needs get and list on the service's objects and events (kubectl auth can-i list events -n default)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runMain(tc.args, strings.NewReader(""), &out, &errOut)
			assert.Equal(t, 1, code)
			assert.Empty(t, out.String())
			assert.Contains(t, errOut.String(), tc.want)
			assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line: %q", errOut.String())
		})
		if slices.Contains(tc.args, "-o") {
			continue
		}
		// Under -o json a tool reads the same error from stdout, as JSON.
		t.Run(tc.name+" as JSON", func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runMain(append(tc.args, "-o", "json"), strings.NewReader(""), &out, &errOut)
			assert.Equal(t, 1, code)
			var report statusError
			require.NoError(t, json.Unmarshal(out.Bytes(), &report), out.String())
			assert.Contains(t, "fusioninfer: "+report.Error, tc.want)
		})
	}
	var out, errOut bytes.Buffer
	runMain([]string{"status", "-f", manifest, "--kubeconfig", fakeAPIServer(t, []string{"leaderworkerset.x-k8s.io"}, nil, onePod)},
		strings.NewReader(""), &out, &errOut)
	assert.Contains(t, errOut.String(), "has no leaderworkersets API (leaderworkerset.x-k8s.io/v1): LeaderWorkerSet (install LWS)")
}

// TestStatusJSONIsNotEscapedForHTML: JSON is read by tools and people, not pasted into HTML:
// ">=" stays ">=", not "\u003e=".
func TestStatusJSONIsNotEscapedForHTML(t *testing.T) {
	bad := "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: a}\nspec:\n  roles:\n  - {name: a, componentType: worker, \"gpus>=\": 2}\n"
	var out, errOut bytes.Buffer
	require.Equal(t, 1, runMain([]string{"status", "-f", "-", "-o", "json"}, strings.NewReader(bad), &out, &errOut))
	assert.Contains(t, out.String(), `spec.roles[0].gpus>=`)
	assert.NotContains(t, out.String(), `\u003e`)
}

// TestStatusErrorsAsJSON: a refused manifest under -o json gives its problems in the JSON; with no
// kubeconfig at all the error says so, not client-go's KUBERNETES_MASTER hint.
func TestStatusErrorsAsJSON(t *testing.T) {
	bad := "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: a}\nspec:\n  roles:\n  - {name: a, componentType: worker, replica: 2}\n"
	var out, errOut bytes.Buffer
	require.Equal(t, 1, runMain([]string{"status", "-f", "-", "-o", "json"}, strings.NewReader(bad), &out, &errOut))
	var report statusError
	require.NoError(t, json.Unmarshal(out.Bytes(), &report), out.String())
	assert.Equal(t, []string{`-:6: unknown field "spec.roles[0].replica" (did you mean "replicas"?)`,
		`-:6: InferenceService "a": spec.roles[0].template: Required value: the pod template of the model server`}, report.Problems)

	cmd := exec.Command(testcli.Binary(t), "status", "--name", "x", "-o", "json")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool {
		return strings.HasPrefix(v, "KUBECONFIG=") || strings.HasPrefix(v, "HOME=")
	}), "HOME="+t.TempDir())
	stdout, err := cmd.Output()
	require.Error(t, err)
	require.NoError(t, json.Unmarshal(stdout, &report), string(stdout))
	assert.Contains(t, report.Error, "no cluster to read: no kubeconfig found (KUBECONFIG is not set and ")
	assert.NotContains(t, report.Error, "KUBERNETES_MASTER")

	// KUBECONFIG naming a file that is not there: client-go skips it; the error names it.
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	cmd = exec.Command(testcli.Binary(t), "status", "--name", "x", "-o", "json")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "KUBECONFIG=") }), "KUBECONFIG="+missing)
	stdout, err = cmd.Output()
	require.Error(t, err)
	require.NoError(t, json.Unmarshal(stdout, &report), string(stdout))
	assert.Contains(t, report.Error, "no kubeconfig found (KUBECONFIG names "+missing+", and no such file exists)")
}

// TestStatusByNameReadsTheContextsNamespace: without --namespace, a service given by name is
// looked for in the kubeconfig context's namespace, as kubectl looks; --namespace overrides it.
func TestStatusByNameReadsTheContextsNamespace(t *testing.T) {
	kubeconfig := fakeAPIServer(t, nil, nil, "")
	data, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfig, []byte(strings.Replace(string(data), "{cluster: c, user: u}", "{cluster: c, user: u, namespace: team}", 1)), 0o600))
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, runMain([]string{"status", "--name", "x", "--kubeconfig", kubeconfig}, strings.NewReader(""), &out, &errOut))
	assert.Contains(t, errOut.String(), `no InferenceService "x" in namespace "team"`)
	errOut.Reset()
	assert.Equal(t, 1, runMain([]string{"status", "--name", "x", "-n", "other", "--kubeconfig", kubeconfig}, strings.NewReader(""), &out, &errOut))
	assert.Contains(t, errOut.String(), `no InferenceService "x" in namespace "other"`)
}
