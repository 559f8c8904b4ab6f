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
		{[]string{"-tp", "8"}, ParallelFlags.Tensor[:], "8", true},
		{[]string{"--tensor-parallel-size", "4", "-tp=8"}, ParallelFlags.Tensor[:], "8", true}, // the last wins, as in argparse
		{[]string{"--port"}, []string{"--port"}, "", false},                                    // no value
		{[]string{"--portal", "1"}, []string{"--port"}, "", false},
	} {
		value, found := FlagValue(tc.args, tc.names...)
		assert.Equal(t, tc.value, value, "%v", tc.args)
		assert.Equal(t, tc.found, found, "%v", tc.args)
	}
}

func TestParallelSize(t *testing.T) {
	n, found, err := ParallelSize([]string{"--model", "m"}, ParallelFlags.Pipeline)
	assert.Equal(t, []any{int64(1), false, nil}, []any{n, found, err}, "absent: 1")
	n, found, err = ParallelSize([]string{"-pp", "2"}, ParallelFlags.Pipeline)
	assert.Equal(t, []any{int64(2), true, nil}, []any{n, found, err})
	_, _, err = ParallelSize([]string{"-dp", "0"}, ParallelFlags.Data)
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
