// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"os"
	"path/filepath"
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
		"standalone-router.yaml": `kubectl -n llm port-forward service/qwen-standalone-router 8081:8081 & sleep 2; curl -s localhost:8081/v1/completions ` +
			`-H 'Content-Type: application/json' -d '{"model": "Qwen/Qwen3-8B", "prompt": "Kubernetes is", "max_tokens": 20}'`,
		"llama-router.yaml": `curl -s http://$(kubectl -n gateways get gateway inference-gateway -o jsonpath='{.status.addresses[0].value}')/v1/completions ` +
			`-H 'Host: llama.example.com' -H 'Content-Type: application/json' -d '{"model": "meta-llama/Llama-3.1-8B-Instruct", "prompt": "Kubernetes is", "max_tokens": 20}'`,
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			summary := render.Summarize(story(t, file))
			require.NotNil(t, summary.Router)
			assert.Equal(t, want, summary.Router.Request)
		})
	}
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
