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
