// SPDX-License-Identifier: Apache-2.0

package vllm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestServerCommandLine(t *testing.T) {
	cases := []struct {
		name string
		c    corev1.Container
		want []string
	}{
		{"no script: the command line", corev1.Container{Command: []string{"vllm", "serve"}, Args: []string{"m", "--port", "1"}},
			[]string{"vllm", "serve", "m", "--port", "1"}},
		{"exec in a script", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{"exec vllm serve m --port 8123"}},
			[]string{"vllm", "serve", "m", "--port", "8123"}},
		{"quotes removed, the server's command found after others", corev1.Container{Command: []string{"bash", "-ec",
			`echo "go" && exec env A=1 B=2 /usr/bin/vllm serve 'org/m' --port="8124" --ssl-certfile /c.pem`}},
			[]string{"/usr/bin/vllm", "serve", "org/m", "--port=8124", "--ssl-certfile", "/c.pem"}},
		{"a module", corev1.Container{Command: []string{"sh", "-c", "python3 -m vllm.entrypoints.openai.api_server --port 9"}},
			[]string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "9"}},
		{"an expansion kept as written", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{`vllm serve m --port "${PORT:-1}"`}},
			[]string{"vllm", "serve", "m", "--port", `"${PORT:-1}"`}},
		{"no server in the script: the command line", corev1.Container{Command: []string{"sh", "-c", "python launch.py"}},
			[]string{"sh", "-c", "python launch.py"}},
		{"a script that does not parse: the command line", corev1.Container{Command: []string{"sh", "-c", "vllm serve m 'open"}},
			[]string{"sh", "-c", "vllm serve m 'open"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ServerCommandLine(&tc.c)) })
	}
	assert.True(t, Expanded(`"${PORT:-1}"`))
	assert.False(t, Expanded("8123"))
}

func TestServesTLS(t *testing.T) {
	assert.True(t, ServesTLS(&corev1.Container{Args: []string{"--ssl-keyfile", "/k", "--ssl-certfile", "/c"}}))
	assert.True(t, ServesTLS(&corev1.Container{Args: []string{"--ssl_certfile=/c"}}), "either spelling")
	assert.True(t, ServesTLS(&corev1.Container{Command: []string{"sh", "-c", "exec vllm serve m --ssl-certfile /c"}}), "in a script")
	assert.False(t, ServesTLS(&corev1.Container{Args: []string{"--ssl-keyfile", "/k"}}), "a key alone: uvicorn serves plain HTTP")
	assert.False(t, ServesTLS(&corev1.Container{Args: []string{"--port", "1"}}))
}
