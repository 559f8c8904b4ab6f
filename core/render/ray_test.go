// SPDX-License-Identifier: Apache-2.0

package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// stubCommands puts fake `ray`, `vllm` and `python3` on a PATH: each prints its name and then
// every argument it received on a line of its own, so a test sees the exact argv the shell built.
func stubCommands(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	stub := "#!/bin/sh\nprintf '%s\\n' \"$(basename \"$0\")\"\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"
	for _, name := range []string{"ray", "vllm", "python3"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(stub), 0o755))
	}
	return dir
}

// runScript runs a script the way the container does (`/bin/sh -c SCRIPT`).
func runScript(t *testing.T, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=" + stubCommands(t) + ":/usr/bin:/bin", "HOME=/root"}, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func argv(words ...string) string {
	var b strings.Builder
	b.WriteString(words[0] + "\n")
	for _, w := range words[1:] {
		b.WriteString("[" + w + "]\n")
	}
	return b.String()
}

func TestRayLeaderScriptPassesEveryArgumentUnchanged(t *testing.T) {
	tricky := []string{
		"--kv-transfer-config", `{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}`,
		"--served-model-name", "my model with spaces",
		"--chat-template", "it's {{ messages }} \"quoted\"",
		"--note", "$HOME `uname` $(id) ; rm -rf / && echo pwned | cat > /tmp/x",
		"--empty", "",
		"--newline", "line1\nline2",
		"--glob", "*.json",
	}
	cases := []struct {
		name     string
		server   corev1.Container
		wantArgv []string
	}{
		{
			name:     "image entrypoint: vllm serve + args",
			server:   corev1.Container{Args: append([]string{"--model", "Qwen/Qwen3-8B"}, tricky...)},
			wantArgv: append(append([]string{"vllm", "serve", "--model", "Qwen/Qwen3-8B"}, tricky...), "--distributed-executor-backend", "ray"),
		},
		{
			name:     "explicit command",
			server:   corev1.Container{Command: []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, Args: tricky},
			wantArgv: append(append([]string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, tricky...), "--distributed-executor-backend", "ray"),
		},
		{
			name:     "backend already given",
			server:   corev1.Container{Args: []string{"--model", "m", "--distributed-executor-backend", "ray"}},
			wantArgv: []string{"vllm", "serve", "--model", "m", "--distributed-executor-backend", "ray"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := runScript(t, RayLeaderScript(&tc.server))
			// The head starts first, then the server gets exactly the argv the user wrote.
			assert.Equal(t, argv("ray", "start", "--head", "--port=6379")+argv(tc.wantArgv...), out)
		})
	}
}

func TestRayWorkerScriptJoinsTheLeader(t *testing.T) {
	out := runScript(t, RayWorkerScript, "LWS_LEADER_ADDRESS=svc-decode-0-0.svc-decode-0.llm")
	assert.Equal(t, argv("ray", "start", "--address=svc-decode-0-0.svc-decode-0.llm:6379", "--block"), out)
}
