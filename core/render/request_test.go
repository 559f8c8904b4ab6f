// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// TestRequestCommandSendsToTheEntrance: the line a user runs reaches the router's entrance (the
// Service through a port-forward standalone, the Gateway's address with the route's host) and
// names the model the servers answer to.
func TestRequestCommandSendsToTheEntrance(t *testing.T) {
	cases := map[string]string{
		"standalone-router.yaml": `kubectl -n llm port-forward service/qwen-standalone-router 26602:8081 & sleep 2; curl -s localhost:26602/v1/completions ` +
			`-H 'Content-Type: application/json' -d '{"model":"Qwen/Qwen3-8B","prompt":"Kubernetes is","max_tokens":20}'`,
		"llama-router.yaml": `curl -s "http://$(kubectl -n gateways get gateway inference-gateway -o jsonpath='{.status.addresses[0].value}')"'/v1/completions' ` +
			`-H 'Host: llama.example.com' -H 'Content-Type: application/json' -d '{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"Kubernetes is","max_tokens":20}'`,
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			summary := render.Summarize(story(t, file))
			require.NotNil(t, summary.Router)
			assert.Equal(t, want, summary.Router.Request)
			assertShellParses(t, summary.Router.Request)
		})
	}
}

// TestRequestCommandFollowsTheRoute: in gateway mode the line carries what the route's first rule
// matches and goes to the listener its parentRef names; a served name with a quote stays one
// shell word; two standalone services of one namespace forward from different local ports
// (issue 55).
func TestRequestCommandFollowsTheRoute(t *testing.T) {
	cases := []struct {
		name  string
		route string
		model string
		want  []string
	}{
		{"an exact path, a header and a query", `{"parentRefs":[{"name":"gw"}],"rules":[{"matches":[{"path":{"type":"Exact","value":"/llm/complete"},` +
			`"headers":[{"name":"x-tenant","value":"a"}],"queryParams":[{"name":"v","value":"1"}]}]}]}`, "",
			[]string{`'/llm/complete?v=1'`, `-H 'x-tenant: a'`}},
		{"a path prefix", `{"parentRefs":[{"name":"gw"}],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/qwen/"}}]}]}`, "",
			[]string{`'/qwen/v1/completions'`}},
		{"a path prefix the completions path is under", `{"parentRefs":[{"name":"gw"}],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/v1"}}]}]}`, "",
			[]string{`"'/v1/completions' `}},
		{"GET only", `{"parentRefs":[{"name":"gw"}],"rules":[{"matches":[{"method":"GET"}]}]}`, "",
			[]string{"# the route's first rule matches GET only: a completion, a POST, does not pass it"}},
		{"a parentRef's port", `{"parentRefs":[{"name":"gw","port":8443}]}`, "", []string{`value}'):8443"'/v1/completions'`}},
		{"a parentRef's listener", `{"parentRefs":[{"name":"gw","sectionName":"http"}]}`, "",
			[]string{`:$(kubectl -n llm get gateway gw -o jsonpath='{.spec.listeners[?(@.name=="http")].port}')`}},
		{"a mesh's Service", `{"parentRefs":[{"group":"","kind":"Service","name":"chat"}]}`, "",
			[]string{`# from a pod in the mesh: curl -s 'http://chat.llm.svc/v1/completions'`}},
		{"a served name with a quote", `{"parentRefs":[{"name":"gw"}]}`, "o'reilly/chat",
			[]string{`'{"model":"o'\''reilly/chat","prompt":"Kubernetes is","max_tokens":20}'`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree := story(t, "llama-router.yaml")
			svc := tree.Service
			router := svc.Spec.Router()
			route := map[string]any{}
			require.NoError(t, json.Unmarshal([]byte(tc.route), &route))
			router.HTTPRoute = route
			if tc.model != "" {
				for i := range svc.Spec.Roles {
					if svc.Spec.Roles[i].ComponentType.Serving() {
						c := &svc.Spec.Roles[i].Template.Spec.Containers[0]
						c.Args = append(c.Args, "--served-model-name", tc.model)
					}
				}
			}
			rebuilt, errs := render.Build(svc)
			require.Empty(t, errs)
			line := render.Summarize(rebuilt).Router.Request
			for _, w := range tc.want {
				assert.Contains(t, line, w)
			}
			assertShellParses(t, line)
		})
	}
	a, b := story(t, "standalone-router.yaml").Service, story(t, "standalone-router.yaml").Service
	b.Name = "other"
	ta, errs := render.Build(a)
	require.Empty(t, errs)
	tb, errs := render.Build(b)
	require.Empty(t, errs)
	local := regexp.MustCompile(`port-forward \S+ (\d+):`)
	assert.NotEqual(t, local.FindStringSubmatch(render.Summarize(ta).Router.Request)[1], local.FindStringSubmatch(render.Summarize(tb).Router.Request)[1])
}

// assertShellParses: bash reads the line as a command (bash -n, nothing run).
func assertShellParses(t *testing.T, line string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		return
	}
	out, err := exec.Command(bash, "-n", "-c", line).CombinedOutput()
	assert.NoError(t, err, "bash -n: %s\n%s", out, line)
}

// TestEveryRoutedExampleNamesItsModel: every example with a router gets a request line with the
// model its servers serve, none with a placeholder.
func TestEveryRoutedExampleNamesItsModel(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "manifests", "*.yaml"))
	require.NoError(t, err)
	routed := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		trees, _, problems := render.LoadManifest(file, data, nil)
		require.Empty(t, problems, file)
		for _, tree := range trees {
			router := render.Summarize(tree).Router
			if router == nil {
				continue
			}
			routed++
			assert.NotEmpty(t, router.Request, file)
			assert.False(t, strings.Contains(router.Request, `"model": "MODEL"`), "%s: %s", file, router.Request)
		}
	}
	assert.GreaterOrEqual(t, routed, 9)
}
