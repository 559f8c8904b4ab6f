// SPDX-License-Identifier: Apache-2.0

package vllm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestFlagValue(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		names []string
		value string
		found bool
	}{
		{[]string{"--port", "8200"}, []string{"--port"}, "8200", true},
		{[]string{"--port=8200"}, []string{"--port"}, "8200", true},
		{[]string{"-tp", "8"}, FlagTensorParallelSize.Names(), "8", true},
		{[]string{"--tensor-parallel-size", "4", "-tp=8"}, FlagTensorParallelSize.Names(), "8", true}, // the last wins, as in argparse
		{[]string{"--port"}, []string{"--port"}, "", false},                                           // no value
		{[]string{"--portal", "1"}, []string{"--port"}, "", false},
		// vLLM's parser reads a flag's underscores as dashes (vllm/utils/argparse_utils.py,
		// FlexibleArgumentParser.parse_args): both spellings are one flag
		{[]string{"--tensor_parallel_size", "4"}, FlagTensorParallelSize.Names(), "4", true},
		{[]string{"--served-model-name", "a", "--served_model_name=b"}, []string{"--served-model-name"}, "b", true},
		{[]string{"--kv_transfer_config.kv_connector", "Nixl"}, []string{"--kv-transfer-config"}, "", false}, // a key of its JSON, not the flag
		{[]string{"--model", "org/my_model"}, []string{"--model"}, "org/my_model", true},                     // values keep their underscores
	} {
		value, found := FlagValue(tc.args, tc.names...)
		assert.Equal(t, tc.value, value, "%v", tc.args)
		assert.Equal(t, tc.found, found, "%v", tc.args)
	}
}

func TestParallelSize(t *testing.T) {
	n, found, err := ParallelSize([]string{"--model", "m"}, FlagPipelineParallelSize)
	assert.Equal(t, []any{int64(1), false, nil}, []any{n, found, err}, "absent: 1")
	n, found, err = ParallelSize([]string{"-pp", "2"}, FlagPipelineParallelSize)
	assert.Equal(t, []any{int64(2), true, nil}, []any{n, found, err})
	_, _, err = ParallelSize([]string{"-dp", "0"}, FlagDataParallelSize)
	assert.EqualError(t, err, `--data-parallel-size "0": must be a positive integer`)
}

func TestShellScriptsAndBooleanFlags(t *testing.T) {
	assert.True(t, IsShellScript(&corev1.Container{Command: []string{"/bin/sh", "-c"}, Args: []string{"vllm serve m"}}))
	assert.True(t, IsShellScript(&corev1.Container{Command: []string{"bash", "-ec", "vllm serve m"}}))
	assert.False(t, IsShellScript(&corev1.Container{Command: []string{"vllm", "serve"}, Args: []string{"-c", "x"}}))
	assert.False(t, IsShellScript(&corev1.Container{Args: []string{"--model", "m"}}))
	c := &corev1.Container{Command: []string{"vllm", "serve"}, Args: []string{"--enable-sleep-mode=true"}}
	assert.True(t, HasFlag(c, "--enable-sleep-mode"))
	assert.False(t, HasFlag(c, "--enable-sleep"))
	assert.True(t, HasFlag(&corev1.Container{Args: []string{"--enable_sleep_mode"}}, "--enable-sleep-mode"), "underscores are dashes")
}

func TestModelAndSetModel(t *testing.T) {
	cases := []struct {
		name          string
		command, args []string
		model         string // what Model reads, "" for none
		wantCommand   []string
		wantArgs      []string
	}{
		{"--model value", nil, []string{"--model", "org/m", "-tp", "8"}, "org/m", nil, []string{"--model", "/models/m", "-tp", "8"}},
		{"--model=value", []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, []string{"--model=org/m"}, "org/m",
			[]string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, []string{"--model=/models/m"}},
		{"the entrypoint's positional model", nil, []string{"org/m", "--port", "8000"}, "org/m", nil, []string{"/models/m", "--port", "8000"}},
		{"vllm serve's positional model in the command", []string{"vllm", "serve", "org/m"}, []string{"-tp", "8"}, "org/m",
			[]string{"vllm", "serve", "/models/m"}, []string{"-tp", "8"}},
		{"/usr/bin/vllm serve with the model in args", []string{"/usr/bin/vllm", "serve"}, []string{"org/m"}, "org/m",
			[]string{"/usr/bin/vllm", "serve"}, []string{"/models/m"}},
		{"no model: --model added", nil, []string{"--port", "8000"}, "", nil, []string{"--port", "8000", "--model", "/models/m"}},
		{"a flag first is not a model", []string{"vllm", "serve"}, []string{"--port", "8000"}, "",
			[]string{"vllm", "serve"}, []string{"--port", "8000", "--model", "/models/m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Command: tc.command, Args: tc.args}
			got, found := Model(c)
			assert.Equal(t, tc.model != "", found)
			assert.Equal(t, tc.model, got)
			SetModel(c, "/models/m")
			assert.Equal(t, tc.wantCommand, c.Command)
			assert.Equal(t, tc.wantArgs, c.Args)
			got, _ = Model(c)
			assert.Equal(t, "/models/m", got, "the server now reads the path")
		})
	}
}

func TestRunsServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want bool
	}{
		{"the vLLM image's entrypoint", corev1.Container{Image: "vllm/vllm-openai:v0.33.0", Args: []string{"--model", "m"}}, true},
		{"a vLLM image by digest", corev1.Container{Image: "registry.example.com/mirror/vllm-openai@sha256:abc"}, true},
		{"a vLLM image on a registry with a port", corev1.Container{Image: "localhost:5000/vllm:dev"}, true},
		{"vllm serve", corev1.Container{Image: "ghcr.io/llm-d/llm-d-cuda:v0.4", Command: []string{"vllm", "serve", "m"}}, true},
		{"vllm serve by path", corev1.Container{Image: "x", Command: []string{"/usr/local/bin/vllm"}, Args: []string{"serve", "m"}}, true},
		{"python -m", corev1.Container{Image: "x", Command: []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}}, true},
		{"a shell script", corev1.Container{Image: "x", Command: []string{"sh", "-c"}, Args: []string{"nvidia-smi && exec vllm serve m --port 8200"}}, true},
		{"a sidecar", corev1.Container{Image: "fluent/fluent-bit:3.2"}, false},
		{"a vLLM image running something else", corev1.Container{Image: "vllm/vllm-openai:v0.33.0", Command: []string{"sleep", "infinity"}}, false},
		{"a script that only names vllm", corev1.Container{Image: "busybox", Command: []string{"sh", "-c", "tail -f /var/log/vllm"}}, false},
		{"an image named like vLLM's", corev1.Container{Image: "example.com/vllmish:1"}, false},
	} {
		assert.Equal(t, tc.want, RunsServer(&tc.c), tc.name)
	}
}

func TestFlagValues(t *testing.T) {
	names := []string{"--served-model-name", "a", "b", "--port", "8000"}
	assert.Equal(t, []string{"a", "b"}, FlagServedModelName.Values(names))
	assert.Equal(t, []string{"c"}, FlagServedModelName.Values(append(names, "--served_model_name=c")), "the last occurrence wins")
	assert.Empty(t, FlagServedModelName.Values([]string{"--port", "8000"}))
}

// TestFlagWithout: a rank's command drops the server's own --port in every spelling vLLM reads.
func TestFlagWithout(t *testing.T) {
	for _, words := range [][]string{
		{"vllm", "serve", "m", "--port", "9000", "--x"},
		{"vllm", "serve", "m", "--port=9000", "--x"},
		{"vllm", "serve", "m", "--port", "8000", "--x", "--port=9000"},
	} {
		assert.Equal(t, []string{"vllm", "serve", "m", "--x"}, FlagPort.Without(words), "%q", words)
	}
}

// TestFlagOccurrences: every value a command line gives a flag, in either spelling, in order.
func TestFlagOccurrences(t *testing.T) {
	assert.Equal(t, []string{"8000", "8001", "8002"},
		FlagPort.Occurrences([]string{"serve", "--port", "8000", "--x", "--port=8001", "--port", "8002"}))
	assert.Equal(t, []string{"4", "2"},
		FlagTensorParallelSize.Occurrences([]string{"--tensor_parallel_size", "4", "-tp=2"}))
	assert.Empty(t, FlagPort.Occurrences([]string{"serve", "m"}))
}
