// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanFlagsSayWhatIsAllowed: a cluster size that is no whole number of nodes, or GPUs that
// cannot be counted, are refused with what --nodes and --gpus-per-node take, exit 1.
func TestPlanFlagsSayWhatIsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string // substrings of the first line on stderr
	}{
		{"a word", []string{"--nodes", "abc", "--gpus-per-node", "8"},
			[]string{`"abc"`, "--nodes", "whole numbers of nodes", "--nodes 10,8,6"}},
		{"a fraction", []string{"--nodes", "4,2.5", "--gpus-per-node", "8"}, []string{`"2.5"`, "whole numbers of nodes"}},
		{"negative", []string{"--nodes", "-3", "--gpus-per-node", "8"}, []string{`"-3"`, "whole numbers of nodes"}},
		{"too many to count", []string{"--nodes", "99999999999999999999", "--gpus-per-node", "8"},
			[]string{`"99999999999999999999"`, "at most 9223372036854775807"}},
		{"GPUs a word", []string{"--nodes", "4", "--gpus-per-node", "eight"}, []string{`"eight"`, "--gpus-per-node", "a whole number of GPUs"}},
		{"GPUs none", []string{"--nodes", "4", "--gpus-per-node", "0"}, []string{"--gpus-per-node", "at least 1"}},
		{"more GPUs than can be counted", []string{"--nodes", "1000000000", "--gpus-per-node", "10000000000"},
			[]string{"1000000000 nodes x 10000000000 GPUs", "at most 9223372036854775807"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runMain(append([]string{"plan", "-f", story4}, tc.flags...), strings.NewReader(""), &out, &errOut)
			assert.Equal(t, 1, code)
			assert.Empty(t, out.String())
			firstLine, _, _ := strings.Cut(errOut.String(), "\n")
			assert.NotContains(t, errOut.String(), "strconv")
			for _, want := range tc.want {
				assert.Contains(t, firstLine, want)
			}
		})
	}
}

// TestPlanOfAHugeCluster: a billion nodes of a billion GPUs each cost what the service costs.
func TestPlanOfAHugeCluster(t *testing.T) {
	stdout, stderr, err := run(t, "", "plan", "-f", story4, "--nodes", "1000000000,4", "--gpus-per-node", "1000000000")
	requireExit(t, 0, err, stderr)
	assert.Contains(t, stdout, "1000000000000000000 GPUs (1000000000 x 1000000000)")
	assert.Contains(t, stdout, "4000000000 GPUs (4 x 1000000000)")
}

// TestOneIsSingular: one GPU, one object, one problem are said in the singular.
func TestOneIsSingular(t *testing.T) {
	stdout, stderr, err := run(t, "", "plan", "-f", story1Path, "--nodes", "1", "--gpus-per-node", "1")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "qwen-inference: 1 GPU at full size;")
	assert.Contains(t, stdout, "inference-0 (1 GPU)")
	assert.Contains(t, stdout, "\n1 GPU (1 x 1)")
	assert.NotContains(t, stdout, "1 GPUs")

	var out bytes.Buffer
	require.NoError(t, writeObjectFiles(t.TempDir(), false, []objectFile{{"llm", "Service", "one", func() ([]byte, error) { return []byte("kind: Service\n"), nil }}}, &out))
	assert.Contains(t, out.String(), "wrote 1 object to ")

	_, stderr, _ = run(t, "apiVersion: fusioninfer.io/v1alpha1\nkind: Service\n", "render", "-f", "-")
	assert.Contains(t, stderr, "\n1 problem; nothing rendered\n")
}

// TestPlanSharesTheClusterAmongAFilesServices: two 1-GPU services on one 1-GPU node: the first,
// in the file's order, is Full and the second Blocked (issue 55: each was planned alone, and
// both reported Full with exit 0).
func TestPlanSharesTheClusterAmongAFilesServices(t *testing.T) {
	story1, err := os.ReadFile(story1Path)
	require.NoError(t, err)
	second := strings.Replace(string(story1), "name: qwen-inference", "name: qwen-second", 1)
	stdin := string(story1) + "\n---\n" + second
	stdout, stderr, err := run(t, stdin, "plan", "-f", "-", "--nodes", "1", "--gpus-per-node", "1")
	requireExit(t, 3, err, stderr)
	assert.Contains(t, stdout, "2 services share each cluster, placed in the file's order")
	first, rest, found := strings.Cut(stdout, "InferenceService qwen-second")
	require.True(t, found, stdout)
	assert.Regexp(t, `(?m)^1 GPU \(1 x 1\) +scheduled +Full$`, first)
	assert.Regexp(t, `(?m)^1 GPU \(1 x 1\) +pending +Blocked$`, rest)
	// On two nodes both fit.
	stdout, stderr, err = run(t, stdin, "plan", "-f", "-", "--nodes", "2", "--gpus-per-node", "1")
	requireExit(t, 0, err, stderr)
	assert.NotContains(t, stdout, "Blocked")
}
