// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goInMessages are the marks of Go in a message a user reads: a slice or struct printed with
// %v ("[a b c]", "[{...}]", "map[...]"), a Go type or package ("*v1.", "strconv.", "Go struct
// field", "int64"), a JSON null or empty string for a value that says nothing, a raw regular
// expression, JSON's escapes.
var goInMessages = regexp.MustCompile(`one of \[|: \[[a-z]|\[[a-z0-9][\w.-]* [a-z0-9][\w.-]*( [\w.-]+)*\]|\[\{|map\[|\*v1\.|strconv\.|Go struct|` +
	`cannot unmarshal|\b(int|int32|int64|float64|uint)\b|resource\.Quantity|Invalid value: null|Invalid value: ""|` +
	`regular expression|\^\(|\\u00|error converting YAML`)

func TestGoInMessagesMatchesWhatItMeans(t *testing.T) {
	for _, bad := range []string{`one of [a b c]`, `Invalid value: [{"name":"http"}]`, `nodes.yaml: [nodes[1].name: x, nodes[2].gpus: y]`,
		`strconv.Atoi: parsing "abc"`, `quantities must match the regular expression '^([+-]?[0-9.]+)'`,
		`Invalid value: null`, `Invalid value: ""`, `must be a int64`, `\u003e=`, `map[a:b]`} {
		assert.Regexp(t, goInMessages, bad)
	}
	for _, good := range []string{`spec.roles[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]`,
		`supported values: "a", "b"`, `(did you mean "replicas"?)`, `one of a, b or c`} {
		assert.NotRegexp(t, goInMessages, good)
	}
}

// manifests is the examples' directory, absolute: the tests of files change directory.
var manifests, _ = filepath.Abs("../../examples/manifests")

// edit is a manifest with old replaced by new, which it must hold.
func edit(t *testing.T, file, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(manifests, file))
	require.NoError(t, err)
	require.Contains(t, string(data), old, file)
	return strings.Replace(string(data), old, new, 1)
}

// TestMessagesAreInTheUsersWords: every problem a user's bad input reaches is reported at its
// file and line, names the field, says what is allowed, and prints no Go.
func TestMessagesAreInTheUsersWords(t *testing.T) {
	const story1, router, pools, autoscaled = "story1-monolithic.yaml", "llama-router.yaml", "pd-gpu-node-pools.yaml", "autoscaling-pd.yaml"
	const limits = `                limits:
                  nvidia.com/gpu: "1"
`
	const server = "spec.roles[0].template.spec.containers[0]"
	for _, tc := range []struct {
		name, manifest string
		// want: in the message, after "-:LINE: " (InferenceService "name": ...).
		line int
		want []string
	}{
		{"a memory limit that is no quantity", edit(t, story1, limits, limits+"                  memory: lots\n"), 25,
			[]string{server + `.resources.limits[memory]: must be a quantity such as 16Gi, 500m or 2, not "lots"`}},
		{"a GPU limit that is no quantity", edit(t, story1, `nvidia.com/gpu: "1"`, `nvidia.com/gpu: one`), 24,
			[]string{server + `.resources.limits[nvidia.com/gpu]: must be a quantity such as 16Gi, 500m or 2, not "one"`}},
		{"a CPU request that is a list", edit(t, story1, limits, limits+"                requests:\n                  cpu: [1]\n"), 26,
			[]string{server + `.resources.requests[cpu]: must be a quantity such as 16Gi, 500m or 2, not [1]`}},
		{"replicas a string", edit(t, story1, "replicas: 1", `replicas: "two"`), 10,
			[]string{`spec.roles[0].replicas: must be an integer, not string`}},
		{"replicas a fraction", edit(t, story1, "replicas: 1", `replicas: 1.5`), 10,
			[]string{`spec.roles[0].replicas: must be an integer`}},
		{"a container port a string", edit(t, story1, "containerPort: 8000", `containerPort: http`), 20,
			[]string{server + `.ports[0].containerPort: must be an integer, not string`}},
		{"an unknown strategy", edit(t, router, "strategy: prefix-cache", "strategy: fastest"), 42,
			[]string{`spec.roles[1].strategy: Unsupported value: "fastest": supported values: "kv-cache-utilization", "lora-affinity", "pd-disaggregation", "precise-prefix-cache", "prefix-cache", "queue-size"`}},
		{"an unknown release", edit(t, router, "strategy: prefix-cache", "strategy: prefix-cache\n      endpointPicker: {release: v9}"), 43,
			[]string{`spec.roles[1].endpointPicker.release: Unsupported value: "v9": supported values: `}},
		{"--port not a number", edit(t, story1, `"Qwen/Qwen3-8B"`, `"Qwen/Qwen3-8B"`+"\n                - --port=abc"), 16,
			[]string{server + `.args: Invalid value: "abc": --port must be a port, a whole number from 1 to 65535`}},
		{"--port not a number, no ports declared", strings.Replace(edit(t, story1, `"Qwen/Qwen3-8B"`, `"Qwen/Qwen3-8B"`+"\n                - --port\n                - abc"),
			"              ports:\n                - containerPort: 8000\n                  name: http\n", "", 1), 16,
			[]string{server + `.args: Invalid value: "abc": --port must be a port, a whole number from 1 to 65535`}},
		{"--port out of range", edit(t, story1, `"Qwen/Qwen3-8B"`, `"Qwen/Qwen3-8B"`+"\n                - --port=70000"), 16,
			[]string{server + `.args: Invalid value: "70000": --port must be a port, a whole number from 1 to 65535`}},
		{"--port not the declared port", edit(t, story1, `"Qwen/Qwen3-8B"`, `"Qwen/Qwen3-8B"`+"\n                - --port=9000"), 20,
			[]string{server + `.ports: Invalid value: "8000 (http)": the port named http is 8000 but the server's --port is 9000`}},
		{"an unknown field", edit(t, story1, "replicas: 1", "replica: 1"), 10,
			[]string{`unknown field "spec.roles[0].replica" (did you mean "replicas"?)`}},
		{"an autoscaled role with no metric", edit(t, autoscaled, "        metric: \"vllm:num_requests_waiting\"\n", ""), 46,
			[]string{`spec.roles[1].autoscaling.metric: Required value: vllm:num_requests_waiting, vllm:kv_cache_usage_perc, epp:requests or a PromQL query`}},
		{"a node pool's label against its instance types", edit(t, pools, "        workload: llm-serving\n", "        workload: llm-serving\n        node.kubernetes.io/instance-type: p4d.24xlarge\n"), 20,
			[]string{`spec.nodePools[0].labels[node.kubernetes.io/instance-type]: Invalid value: "p4d.24xlarge": contradicts instanceTypes p5.48xlarge:`}},
		{"two adapters of one name", edit(t, "llama-lora-adapters.yaml", "- name: support-v2", "- name: sql"), 28,
			[]string{`spec.model.adapters[2].name: Duplicate value: "sql"`}},
		{"a YAML syntax error", edit(t, story1, "replicas: 1", "replicas: [1"), 10,
			[]string{`yaml: line 10: `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := run(t, tc.manifest, "render", "-f", "-")
			require.Error(t, err, stdout)
			problem, _, _ := strings.Cut(stderr, "\n")
			assert.Regexp(t, `^-:`+strconv.Itoa(tc.line)+`: `, problem, "at the line of the field")
			for _, want := range tc.want {
				assert.Contains(t, problem, want)
			}
			assert.NotRegexp(t, goInMessages, stderr)
		})
	}
}

// TestNodesFileMessagesAreInTheUsersWords: a nodes file's problems, each at its line and field,
// every one of them, with no Go list around them.
func TestNodesFileMessagesAreInTheUsersWords(t *testing.T) {
	for _, tc := range []struct {
		name, nodes string
		want        []string
	}{
		{"one name twice", "nodes:\n- name: a\n  gpus: 8\n- name: a\n  gpus: 8\n",
			[]string{`nodes.yaml:4: nodes[1].name: Duplicate value: "a"`}},
		{"two problems", "nodes:\n- name: a\n  gpus: 8\n- name: a\n  gpus: 8\n- name: b\n  gpus: -1\n",
			[]string{`nodes.yaml:4: nodes[1].name: Duplicate value: "a"`, `nodes.yaml:7: nodes[2].gpus: Invalid value: -1: must be 0 or more`}},
		{"a counted name that another node has", "nodes:\n- name: a\n  count: 3\n  gpus: 8\n- name: a-1\n  gpus: 8\n",
			[]string{`nodes.yaml:5: nodes[1].name: Duplicate value: "a-1": nodes[0] (count 3) names its nodes a-0 to a-2`}},
		{"GPUs a word", "nodes:\n- name: a\n  gpus: eight\n",
			[]string{`nodes.yaml:3: nodes[0].gpus: must be an integer, not string`}},
		{"an unknown field", "nodes:\n- name: a\n  gpu: 8\n",
			[]string{`nodes.yaml:3: unknown field "nodes[0].gpu" (did you mean "gpus"?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes.yaml"), []byte(tc.nodes), 0o644))
			t.Chdir(dir)
			_, stderr, err := run(t, "", "plan", "-f", filepath.Join(manifests, "story1-monolithic.yaml"), "--nodes-file", "nodes.yaml")
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, stderr, want)
			}
			assert.NotRegexp(t, goInMessages, stderr)
		})
	}
}

// TestPlatformMessagesAreInTheUsersWords: a Platform spec's problems say what is wrong, at the
// spec file's line, not `Invalid value: ""`.
func TestPlatformMessagesAreInTheUsersWords(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"a scheduler configuration with neither actions nor plugins", "volcano:\n  schedulerConfiguration: |\n    foo: bar\n", []string{
			`platform.yaml:2: volcano.schedulerConfiguration.actions: Required value: the gang rules need the actions enqueue and allocate`,
			`platform.yaml:2: volcano.schedulerConfiguration.tiers: Required value: the gang rules need the plugins gang, predicates and proportion`}},
		{"a scheduler configuration without some", "volcano:\n  schedulerConfiguration: |\n    actions: \"enqueue, backfill\"\n    tiers:\n    - plugins:\n      - name: gang\n", []string{
			`platform.yaml:2: volcano.schedulerConfiguration.actions: Invalid value: "enqueue, backfill": the gang rules need the action allocate`,
			`platform.yaml:2: volcano.schedulerConfiguration.tiers: Invalid value: "gang": the gang rules need the plugins predicates and proportion`}},
		{"a scheduler configuration that is no YAML", "volcano:\n  schedulerConfiguration: \"[[[\"\n", []string{
			`platform.yaml:2: volcano.schedulerConfiguration: Invalid value: not a Volcano scheduler configuration: yaml: line 1: `}},
		{"nothing to install", "leaderWorkerSet: {install: false}\nvolcano: {install: false}\ninferenceExtension: {install: false}\nkeda: {install: false}\nprometheusOperatorCRDs: {install: false}\n", []string{
			`platform.yaml:1: leaderWorkerSet.install: Invalid value: false: every part's install is false, so there is nothing to install: install one part at least`}},
		{"an unknown field", "volcano:\n  instal: false\n", []string{
			`platform.yaml:2: unknown field "volcano.instal" (did you mean "install"?)`}},
		{"install a string", "volcano:\n  install: \"no\"\n", []string{
			`platform.yaml:2: volcano.install: must be true or false, not string`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "platform.yaml"), []byte(tc.spec), 0o644))
			t.Chdir(dir)
			_, stderr, err := run(t, "", "platform", "render", "-f", "platform.yaml")
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, stderr, want)
			}
			assert.NotRegexp(t, goInMessages, stderr)
		})
	}
}
