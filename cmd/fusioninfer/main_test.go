// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

const (
	story1Path = "../../examples/manifests/story1-monolithic.yaml"
	story4     = "../../examples/manifests/story4-disaggregated-multinode.yaml"
)

// run runs the command as main does; err is set when it exits non-zero.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := runMain(args, strings.NewReader(stdin), &out, &errOut); code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	return out.String(), errOut.String(), err
}

// requireExit: the command exited with status want (0: no error), its table printed either way.
func requireExit(t *testing.T, want int, err error, stderr string) {
	t.Helper()
	if want == 0 {
		require.NoError(t, err, stderr)
		return
	}
	require.EqualError(t, err, fmt.Sprintf("exit status %d", want), stderr)
}

// documents parses a YAML stream into its objects.
func documents(t *testing.T, stream string) []map[any]any {
	t.Helper()
	var docs []map[any]any
	decoder := yaml.NewDecoder(strings.NewReader(stream))
	for {
		var doc map[any]any
		if err := decoder.Decode(&doc); err != nil {
			break
		}
		docs = append(docs, doc)
	}
	return docs
}

func objectNames(docs []map[any]any) []string {
	var out []string
	for _, d := range docs {
		meta := d["metadata"].(map[any]any)
		out = append(out, d["kind"].(string)+"/"+meta["namespace"].(string)+"/"+meta["name"].(string))
	}
	return out
}

func TestRenderFile(t *testing.T) {
	stdout, stderr, err := run(t, "", "render", "-f", story4)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "the one warning: story 4 has no router: %s", stderr)
	assert.Equal(t, []string{
		"PodGroup/default/deepseek-r1-disagg",
		"LeaderWorkerSet/default/deepseek-r1-disagg-decode-0",  // rollout order: the gang's minimal set first,
		"LeaderWorkerSet/default/deepseek-r1-disagg-prefill-0", // decode before prefill
		"LeaderWorkerSet/default/deepseek-r1-disagg-decode-1",
	}, objectNames(documents(t, stdout)))
}

func TestRenderStdinWithSeveralDocumentsAndNamespace(t *testing.T) {
	one, err := os.ReadFile("../../examples/manifests/story1-monolithic.yaml")
	require.NoError(t, err)
	three, err := os.ReadFile("../../examples/manifests/story3-multinode.yaml")
	require.NoError(t, err)
	stdout, _, err := run(t, string(one)+"---\n"+string(three), "render", "-f", "-", "--namespace", "llm")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"LeaderWorkerSet/llm/qwen-inference-inference-0",
		"PodGroup/llm/deepseek-r1-inference",
		"LeaderWorkerSet/llm/deepseek-r1-inference-inference-0",
		"LeaderWorkerSet/llm/deepseek-r1-inference-inference-1",
	}, objectNames(documents(t, stdout)))
}

// TestRenderWarnsOfWhatTheEndpointPickerDeprecates: a configuration the Endpoint Picker still
// loads but logs as deprecated renders, and stderr names the field and the replacement.
func TestRenderWarnsOfWhatTheEndpointPickerDeprecates(t *testing.T) {
	manifest, err := os.ReadFile("../../examples/manifests/llama-router.yaml")
	require.NoError(t, err)
	configured := func(apiVersion string) string {
		out := strings.Replace(string(manifest), "      strategy: prefix-cache\n", "      endpointPickerConfig: |\n        apiVersion: "+apiVersion+
			"\n        kind: EndpointPickerConfig\n        plugins:\n        - type: queue-scorer\n", 1)
		require.NotEqual(t, string(manifest), out, "the example's router names its strategy")
		return out
	}
	stdout, stderr, err := run(t, configured("inference.networking.x-k8s.io/v1alpha1"), "render", "-f", "-")
	require.NoError(t, err)
	assert.NotEmpty(t, stdout)
	assert.Contains(t, stderr, `warning: InferenceService "llama-8b": spec.roles[1].endpointPickerConfig: apiVersion inference.networking.x-k8s.io/v1alpha1 is deprecated: use llm-d.ai/v1alpha1`)
	_, stderr, err = run(t, configured("llm-d.ai/v1alpha1"), "render", "-f", "-")
	require.NoError(t, err)
	assert.NotContains(t, stderr, "warning", "the current apiVersion")
}

func TestNamespaceFlagMustNotContradictTheManifest(t *testing.T) {
	stdout, stderr, err := run(t, "", "render", "-f", "../../examples/manifests/qwen-pd-nixl.yaml", "-n", "other")
	require.Error(t, err)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `metadata.namespace: Invalid value: "llm": does not match --namespace "other"`)
}

func TestSummaryIsYAMLComments(t *testing.T) {
	stdout, _, err := run(t, "", "render", "-f", story4, "--summary")
	require.NoError(t, err)
	head := strings.Split(stdout, "---")[0]
	for _, line := range strings.Split(strings.TrimSpace(head), "\n") {
		assert.True(t, strings.HasPrefix(line, "#"), "summary line %q is a comment", line)
	}
	assert.Contains(t, head, "prefill  prefiller  1         2              2     8         16    prefill-0")
	assert.Contains(t, head, "decode   decoder    2         4              8     8         64    decode-0,decode-1")
	assert.Contains(t, head, "minMember 6 (prefill 1x2 + decode 1x4), minimal set 48 GPUs")
	assert.Len(t, documents(t, stdout), 4, "the stream still parses to the same objects")
}

func TestSummaryShowsTheRolloutBatches(t *testing.T) {
	for file, want := range map[string]string{
		"qwen-rollout.yaml":         "# rollout: 3 batches, each after the one before is Available: chat 0-1 -> chat 2-3 -> chat 4-5\n",
		"story1-monolithic.yaml":    "# rollout: 1 batch: inference 0\n",
		"qwen-pd-router.yaml":       "# rollout: every replica at once (spec.await is not all, so nothing holds a batch back)\n",
		"llama-router.yaml":         "# rollout: 5 batches, each after the one before is Available: server 0 -> server 1 -> server 2 -> server 3 -> router\n",
		"story2-disaggregated.yaml": "# rollout: 5 batches, each after the one before is Available: decode 0 + prefill 0 -> decode 1 -> decode 2 -> decode 3 -> prefill 1\n",
	} {
		stdout, _, err := run(t, "", "render", "-f", "../../examples/manifests/"+file, "--summary")
		require.NoError(t, err)
		assert.Contains(t, strings.Split(stdout, "---")[0], want, file)
	}
}

func TestSummaryShowsTheRouter(t *testing.T) {
	stdout, _, err := run(t, "", "render", "-f", "../../examples/manifests/qwen-pd-router.yaml", "--summary")
	require.NoError(t, err)
	head := strings.Split(stdout, "---")[0]
	assert.Contains(t, head, "# router: HTTPRoute qwen3-32b-pd-httproute -> InferencePool qwen3-32b-pd-pool (inference.networking.k8s.io/v1, port 8000)"+
		" -> Endpoint Picker qwen3-32b-pd-epp (ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0, strategy pd-disaggregation)")
	assert.Len(t, documents(t, stdout), 18, "the decode sidecar's account, role, binding, PodGroup, 4 LWSs, EPP account, role, binding, metrics auth role and binding, config, Deployment, Service, pool, route")
}

// A standalone router's entrance is its Service and the proxy's port, not an HTTPRoute.
func TestSummaryShowsTheStandaloneRouter(t *testing.T) {
	stdout, _, err := run(t, "", "render", "-f", "../../examples/manifests/standalone-router.yaml", "--summary")
	require.NoError(t, err)
	head := strings.Split(stdout, "---")[0]
	assert.Contains(t, head, "# router: Service qwen-standalone-router:8081 (standalone proxy) -> InferencePool qwen-standalone-pool")
	assert.NotContains(t, head, "HTTPRoute")
	assert.Contains(t, head, "# send a request: kubectl -n llm port-forward service/qwen-standalone-router 26602:8081 & sleep 2; curl -s localhost:26602/v1/completions")
}

func TestSummaryShowsTheRanks(t *testing.T) {
	stdout, _, err := run(t, "", "render", "-f", "../../examples/manifests/deepseek-wide-ep-pd.yaml", "--summary")
	require.NoError(t, err)
	head := strings.Split(stdout, "---")[0]
	assert.Contains(t, head, "# ranks: prefill 16 a replica (8 a pod of 8 GPUs, 1 GPU a rank, expert parallel); decode 16 a replica (8 a pod of 8 GPUs, 1 GPU a rank, expert parallel)\n")
	assert.Contains(t, head, "InferencePool deepseek-r1-wide-ep-pool (inference.networking.k8s.io/v1, ports 8000-8007, one a rank)")
}

func TestOutputDirectoryWritesOneFilePerObjectInApplyOrder(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := run(t, "", "render", "-f", story4, "-o", dir)
	require.NoError(t, err)
	assert.Contains(t, stdout, "wrote 4 objects")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	assert.Equal(t, []string{
		"0000-default-podgroup-deepseek-r1-disagg.yaml",
		"0001-default-leaderworkerset-deepseek-r1-disagg-decode-0.yaml",
		"0002-default-leaderworkerset-deepseek-r1-disagg-prefill-0.yaml",
		"0003-default-leaderworkerset-deepseek-r1-disagg-decode-1.yaml",
	}, files)
	data, err := os.ReadFile(filepath.Join(dir, files[1]))
	require.NoError(t, err)
	assert.Contains(t, string(data), "name: deepseek-r1-disagg-decode-0")
}

// TestOutputDirectoryMustBeEmpty: an earlier render's files beside the new ones would be applied
// too; -o refuses a directory that is not empty, and --replace deletes only the object files.
func TestOutputDirectoryMustBeEmpty(t *testing.T) {
	dir := t.TempDir()
	_, _, err := run(t, "", "render", "-f", story4, "-o", dir)
	require.NoError(t, err)
	_, stderr, err := run(t, "", "render", "-f", "../../examples/manifests/story1-monolithic.yaml", "-o", dir)
	require.Error(t, err)
	assert.Contains(t, stderr, "is not empty (4 files)")
	assert.Contains(t, stderr, "--replace")

	stdout, stderr, err := run(t, "", "render", "-f", "../../examples/manifests/story1-monolithic.yaml", "-o", dir, "--replace")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "wrote 1 object to")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the new render's file is left")
	assert.Equal(t, "0000-default-leaderworkerset-qwen-inference-inference-0.yaml", entries[0].Name())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: []\n"), 0o644))
	_, stderr, err = run(t, "", "render", "-f", story4, "-o", dir, "--replace")
	require.Error(t, err)
	assert.Contains(t, stderr, "holds files an earlier render did not write (kustomization.yaml)")
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{"0000-default-leaderworkerset-qwen-inference-inference-0.yaml", "kustomization.yaml"}, left,
		"a refused --replace changes nothing")
}

// TestObjectsAreUniqueAcrossEverythingRendered: service "a" with role "b-c" and service "a-b"
// with role "c" both make LeaderWorkerSet a-b-c-0; rendered together they are refused, with both
// sources. A file given twice is refused rather than rendered twice.
func TestObjectsAreUniqueAcrossEverythingRendered(t *testing.T) {
	service := func(name, role string) string {
		return fmt.Sprintf("apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: %s}\nspec:\n  roles:\n"+
			"  - {name: %s, componentType: worker, template: {spec: {containers: [{name: vllm, image: vllm/vllm-openai:v0.33.0}]}}}\n", name, role)
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.yaml"), filepath.Join(dir, "second.yaml")
	require.NoError(t, os.WriteFile(first, []byte(service("a", "b-c")), 0o644))
	require.NoError(t, os.WriteFile(second, []byte(service("x", "y")+"---\n"+service("a-b", "c")), 0o644))
	stdout, stderr, err := run(t, "", "render", "-f", first, "-f", second)
	require.Error(t, err)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, second+`:8: InferenceService "a-b": LeaderWorkerSet default/a-b-c-0 is also an object of `+first+`:1: InferenceService "a"`)

	stdout, stderr, err = run(t, "", "render", "-f", first, "-f", first)
	require.Error(t, err)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, first+": given twice with -f")
	_, _, err = run(t, "", "render", "-f", first, "-f", second, "-n", "other")
	require.Error(t, err, "the same names in one namespace still collide")

	// Two services that both install FMA's dual-pods controller share its CRDs, identical: they pass.
	dualPods := func(name string) string {
		data, err := os.ReadFile("../../examples/manifests/granite-sleep-wake.yaml")
		require.NoError(t, err)
		return strings.Replace(strings.Replace(string(data), "name: granite", "name: "+name, 1), "namespace: llm", "namespace: "+name, 1)
	}
	require.NoError(t, os.WriteFile(first, []byte(dualPods("first")), 0o644))
	require.NoError(t, os.WriteFile(second, []byte(dualPods("second")), 0o644))
	_, stderr, err = run(t, "", "render", "-f", first, "-f", second)
	require.NoError(t, err, stderr)
}

// TestAServiceIsRenderedOnce: one service twice, in one file or in two (with other replicas), is
// refused with both sources, though its objects would be identical or apply over each other.
func TestAServiceIsRenderedOnce(t *testing.T) {
	data, err := os.ReadFile("../../examples/manifests/story1-monolithic.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	twice, more := filepath.Join(dir, "twice.yaml"), filepath.Join(dir, "more.yaml")
	require.NoError(t, os.WriteFile(twice, []byte(string(data)+"---\n"+string(data)), 0o644))
	require.NoError(t, os.WriteFile(more, []byte(strings.Replace(string(data), "replicas: 1", "replicas: 3", 1)), 0o644))
	const second = `: InferenceService "qwen-inference": a second service "qwen-inference" in namespace "default" (the first at `
	stdout, stderr, err := run(t, "", "render", "-f", twice)
	require.Error(t, err)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, twice+":26"+second+twice+":1)")

	stdout, stderr, err = run(t, "", "render", "-f", story1Path, "-f", more)
	require.Error(t, err)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, more+":1"+second+story1Path+":1)")
	assert.Contains(t, stderr, "1 problem; nothing rendered")
}

// TestAFileGivenTwiceUnderAnotherSpellingIsRefused: the same file through an absolute path or a
// symlink is still the same file; both spellings are named.
func TestAFileGivenTwiceUnderAnotherSpellingIsRefused(t *testing.T) {
	const relative = "../../examples/manifests/story1-monolithic.yaml"
	absolute, err := filepath.Abs(relative)
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "link.yaml")
	require.NoError(t, os.Symlink(absolute, link))
	for _, tc := range []struct{ name, first, second string }{
		{"same spelling", relative, relative},
		{"relative and absolute", relative, absolute},
		{"through a symlink", relative, link},
		{"dot segments", relative, "./" + relative},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := run(t, "", "render", "-f", tc.first, "-f", tc.second)
			require.Error(t, err)
			assert.Empty(t, stdout)
			want := tc.second + ": given twice with -f"
			if tc.first != tc.second {
				want += " (also as " + tc.first + ")"
			}
			assert.Contains(t, stderr, want+"; its services would be rendered twice")
		})
	}
}

const badServices = `apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: bad
spec:
  roles:
    - name: decode
      componentType: decoder
      multinode:
        nodeCount: 0
      template:
        spec:
          containers: [{name: vllm, image: vllm/vllm-openai:v0.33.0}]
    - name: router
      componentType: router
      routerMode: gateway
---
apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: typo
spec:
  roles:
    - name: inference
      componentType: worker
      replica: 2
`

func TestBadInputPrintsEveryErrorAndNothingOnStdout(t *testing.T) {
	good, err := os.ReadFile(story4)
	require.NoError(t, err)
	stdout, stderr, err := run(t, string(good)+"---\n"+badServices, "render", "-f", "-")
	require.Error(t, err)
	assert.Empty(t, stdout, "nothing is printed when anything is refused")
	badLine := strings.Count(string(good), "\n") + 2 // after the good document and the separator
	typoLine := badLine + 17
	// Each problem is at the line of its field (or of the field's parent, when it is missing).
	assert.Equal(t, strings.Join([]string{
		fmt.Sprintf(`-:%d: InferenceService "bad": spec.roles: Required value: a decoder role needs a prefiller role to receive KV caches from`, badLine+5),
		fmt.Sprintf(`-:%d: InferenceService "bad": spec.roles[0].multinode.nodeCount: Invalid value: 0: must be >= 1 and <= 1024`, badLine+9),
		fmt.Sprintf(`-:%d: InferenceService "bad": spec.roles[1].httproute.parentRefs: Required value: the Gateway the route attaches to, e.g. httproute: {parentRefs: [{name: inference-gateway}]}, as routerMode gateway needs (routerMode standalone needs no Gateway)`, badLine+13),
		// A decoding problem hides none of the rules the rest of its document breaks.
		fmt.Sprintf(`-:%d: InferenceService "typo": spec.roles[0].template: Required value: the pod template of the model server`, typoLine+6),
		fmt.Sprintf(`-:%d: unknown field "spec.roles[0].replica" (did you mean "replicas"?)`, typoLine+8),
		"5 problems; nothing rendered",
	}, "\n")+"\n", stderr)
}

func TestHelpExplainsItself(t *testing.T) {
	stdout, _, err := run(t, "", "--help")
	require.NoError(t, err)
	for _, want := range []string{"InferenceService", "LeaderWorkerSet", "PodGroup", "render", "plan", "Volcano"} {
		assert.Contains(t, stdout, want)
	}
	stdout, _, err = run(t, "", "render", "--help")
	require.NoError(t, err)
	for _, want := range []string{"--filename", "--namespace", "--output-dir", "--summary", "stdin"} {
		assert.Contains(t, stdout, want)
	}
}

func TestProcessExitsNonZeroOnBadInput(t *testing.T) {
	cmd := exec.Command(testcli.Binary(t), "render", "-f", "-")
	cmd.Stdin = strings.NewReader(badServices)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "exit status: %v", err)
	assert.Equal(t, 1, exitErr.ExitCode())
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "spec.roles[0].multinode.nodeCount")
}

func TestMissingFileAndUnknownFlag(t *testing.T) {
	_, stderr, err := run(t, "", "render", "-f", "does-not-exist.yaml")
	require.Error(t, err)
	assert.Contains(t, stderr, "does-not-exist.yaml")
	_, stderr, err = run(t, "", "render", "-f", story4, "--replicas", "3")
	require.Error(t, err)
	assert.Contains(t, stderr, "unknown flag: --replicas")
}

func TestPlanReproducesTheSeedTable(t *testing.T) {
	stdout, stderr, err := run(t, "", "plan", "-f", story4, "--nodes", "10,8,6,4,2", "--gpus-per-node", "8")
	requireExit(t, 3, err, stderr) // a row is Blocked
	for _, want := range []string{
		"InferenceService deepseek-r1-disagg: 80 GPUs at full size, 48 GPUs for the gang's minimal set",
		"not of every scheduler plugin",
		"CLUSTER           prefill-0 (16 GPUs)  decode-0 (32 GPUs)  decode-1 (32 GPUs)  SERVICE",
		"80 GPUs (10 x 8)  scheduled            scheduled           scheduled           Full",
		"64 GPUs (8 x 8)   scheduled            scheduled           pending             Partial (prefill-0, decode-0)",
		"48 GPUs (6 x 8)   scheduled            scheduled           pending             Partial (prefill-0, decode-0)",
		"32 GPUs (4 x 8)   pending              pending             pending             Blocked",
		"16 GPUs (2 x 8)   pending              pending             pending             Blocked",
	} {
		assert.Contains(t, stdout, want)
	}
}

// TestPlanOfAnAutoscaledService: the base, the minimal set and the maximum, elastic replicas last.
func TestPlanOfAnAutoscaledService(t *testing.T) {
	stdout, stderr, err := run(t, "", "plan", "-f", "../../examples/manifests/autoscaling-pd.yaml", "--nodes", "6", "--gpus-per-node", "8")
	requireExit(t, 2, err, stderr) // Partial
	assert.Contains(t, stdout, "InferenceService deepseek-autoscaled: 104 GPUs at maxReplicas, 40 GPUs for the base replicas, 24 GPUs for the gang's minimal set")
	assert.Contains(t, stdout, "Partial (prefill-0, decode-0, decode-1, prefill-elastic-0)")
	assert.Contains(t, stdout, "decode-elastic-0, decode-elastic-1, decode-elastic-2 wait: each needs 2 pods of 8 GPUs")
	stdout, stderr, err = run(t, "", "render", "--summary", "-f", "../../examples/manifests/autoscaling-pd.yaml")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "decode   decoder    2 (autoscaled to 5)")
}

// TestPlanSaysEachPoolsLimit: a karpenter pool's line says what its NodePool may launch and what
// fills it (an autoscaled role at maxReplicas, a rollout's surge), so that a replica beyond it,
// which waits Pending, is explained before it happens.
func TestPlanSaysEachPoolsLimit(t *testing.T) {
	stdout, stderr, err := run(t, "", "plan", "-f", "../../examples/manifests/pd-gpu-node-pools.yaml", "--nodes", "8", "--gpus-per-node", "8")
	requireExit(t, 2, err, stderr)
	assert.Contains(t, stdout, "Node pool h100: Karpenter launches at most 64 GPUs (NodePool deepseek-r1-pools-h100's limit, 8 nodes of 8): "+
		"decode 2 replicas on 8 nodes; a replica beyond them waits Pending")
	assert.NotContains(t, stdout, "Node pool a100", "an existing pool has no NodePool")

	manifest := filepath.Join(t.TempDir(), "autoscaled.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata: {name: chat}
spec:
  monitoring: {prometheusAddress: "http://prometheus:9090"}
  nodePools: [{name: l4, gpusPerNode: 4, nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}]
  roles:
    - name: chat
      componentType: worker
      nodePool: l4
      rolloutStrategy: {maxSurge: 1}
      autoscaling: {minReplicas: 2, maxReplicas: 8, metric: "vllm:num_requests_waiting", target: 4}
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: ["--model", "Qwen/Qwen3-8B"]
              resources: {limits: {nvidia.com/gpu: "1"}}
`), 0o644))
	stdout, stderr, err = run(t, "", "plan", "-f", manifest, "--nodes", "3", "--gpus-per-node", "4")
	requireExit(t, 0, err, stderr)
	assert.Contains(t, stdout, "Node pool l4: Karpenter launches at most 12 GPUs (NodePool chat-l4's limit, 3 nodes of 4): "+
		"chat 8 replicas + 1 surging in a rollout on 3 nodes", "9 one-GPU pods pack 4 to a node: 3 nodes")
}

func TestPlanWithANodesFileAndManyReplicas(t *testing.T) {
	nodes := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte("nodes:\n  - {name: gpu, count: 5, gpus: 2}\n"), 0o644))
	stdout, stderr, err := run(t, "", "plan", "-f", "../../examples/manifests/qwen-pd-nixl.yaml", "--nodes-file", nodes)
	requireExit(t, 2, err, stderr)
	assert.Contains(t, stdout, "scheduled           scheduled           scheduled          scheduled          scheduled          pending")
	assert.Contains(t, stdout, "Partial (prefill-0, prefill-1, decode-0, decode-1, decode-2)")

	// 1,250 replicas: one column per role. The minimal set first, then extras in role order.
	stdout, stderr, err = run(t, "", "plan", "-f", "../../tests/perf/testdata/pd-1000-decode-250-prefill.yaml", "--nodes", "600", "--gpus-per-node", "8")
	requireExit(t, 2, err, stderr)
	assert.Contains(t, stdout, "prefill (scheduled/replicas)  decode (scheduled/replicas)  SERVICE")
	assert.Contains(t, stdout, "250/250                       25/1000                      Partial")
}

func TestPlanRefusesBadInput(t *testing.T) {
	nodes := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte("nodes:\n  - {name: gpu, gpu: 2}\n"), 0o644))
	for _, args := range [][]string{
		{"plan", "-f", story4, "--nodes-file", nodes},
		{"plan", "-f", story4, "--nodes", "4"},
		{"plan", "-f", story4},
	} {
		stdout, stderr, err := run(t, "", args...)
		require.Error(t, err, args)
		assert.Empty(t, stdout)
		assert.NotEmpty(t, stderr)
	}
	_, stderr, _ := run(t, "", "plan", "-f", story4, "--nodes-file", nodes)
	assert.Contains(t, stderr, `unknown field "nodes[0].gpu"`)
}

// TestPlanWithTopology: the same 80 GPUs run story 4 in full, but not the service whose hard
// topology keeps it under one spine and each decode replica under one leaf switch.
func TestPlanWithTopology(t *testing.T) {
	nodes := "../../examples/nodes/two-spines.yaml"
	stdout, stderr, err := run(t, "", "plan", "-f", story4, "--nodes-file", nodes)
	requireExit(t, 0, err, stderr)
	assert.Contains(t, stdout, "scheduled           scheduled           Full")
	stdout, stderr, err = run(t, "", "plan", "-f", "../../examples/manifests/deepseek-topology-queue.yaml", "--nodes-file", nodes)
	requireExit(t, 3, err, stderr)
	assert.Contains(t, stdout, "pending              pending             pending             Blocked",
		"spine-1's leaves hold 3 nodes (a decode replica needs 4 in one leaf); spine-2 holds 4 (the minimal set needs 6)")
}

// TestNeverSilent runs the whole command as main does: every failure exits 1 with nothing on
// stdout and one line on stderr that says what is wrong and what to do.
func TestNeverSilent(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the first line on stderr
	}{
		{"render without a file", []string{"render"}, []string{"no manifest: give its file", "fusioninfer render --help"}},
		{"unknown command", []string{"rendr"}, []string{`unknown command "rendr"`, "did you mean render", "fusioninfer --help"}},
		{"unknown flag", []string{"render", "--bogus"}, []string{"unknown flag: --bogus"}},
		{"unreadable file", []string{"render", "-f", "/nonexistent/service.yaml"}, []string{"cannot read the manifest", "/nonexistent/service.yaml", "readable InferenceService file"}},
		{"a directory", []string{"render", "-f", "."}, []string{"cannot read the manifest", "is a directory"}},
		{"plan without a cluster", []string{"plan", "-f", story4}, []string{"--nodes", "--nodes-file", "fusioninfer plan --help"}},
		{"unreadable nodes file", []string{"plan", "-f", story4, "--nodes-file", "/nonexistent/nodes.yaml"}, []string{"cannot read the nodes file", "/nonexistent/nodes.yaml"}},
		{"plan without -f", []string{"plan", "--nodes", "8", "--gpus-per-node", "8"}, []string{`required flag(s) "filename" not set`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runMain(tc.args, strings.NewReader(""), &out, &errOut)
			assert.Equal(t, 1, code)
			assert.Empty(t, out.String())
			firstLine, _, _ := strings.Cut(errOut.String(), "\n")
			assert.True(t, strings.HasPrefix(firstLine, "fusioninfer: "), "stderr: %q", errOut.String())
			for _, want := range tc.want {
				assert.Contains(t, firstLine, want)
			}
		})
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, runMain([]string{"render", "-f", story1Path}, strings.NewReader(""), &out, &errOut))
	assert.Empty(t, errOut.String())
	assert.NotEmpty(t, out.String())
}

// TestFlagErrorsAreOneLine: a flag given a value it does not take is one line on stderr that
// says what the flag takes, with no usage and no Go (strconv.ParseBool, time.ParseDuration).
func TestFlagErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"render", "--summary=maybe"}, `fusioninfer: --summary "maybe": give true or false (see 'fusioninfer render --help')`},
		{[]string{"status", "--timeout", "soon"}, `fusioninfer: --timeout "soon": give a duration such as 30s or 2m (see 'fusioninfer status --help')`},
		{[]string{"status", "-f", story1Path, "--timeout", "0s"}, `fusioninfer: --timeout 0s: give a duration above zero such as 30s or 2m (see 'fusioninfer status --help')`},
		{[]string{"plan", "-f", story1Path, "--gpus-per-node", "eight"}, `fusioninfer: --gpus-per-node "eight": not a whole number; --gpus-per-node takes a whole number of GPUs, at least 1 (see 'fusioninfer plan --help')`},
		{[]string{"render", "--bogus"}, `fusioninfer: unknown flag: --bogus (see 'fusioninfer render --help')`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.Equal(t, 1, runMain(tc.args, strings.NewReader(""), &out, &errOut))
			assert.Empty(t, out.String())
			assert.Equal(t, tc.want+"\n", errOut.String())
		})
	}
}

func TestNeverSilentSucceeds(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, runMain([]string{"render", "-f", story1Path}, strings.NewReader(""), &out, &errOut))
	assert.Empty(t, errOut.String())
	assert.NotEmpty(t, out.String())
}

// TestPlanSaysWhy: a Blocked or Partial row is followed by its reason; a service without a gang is
// not described with one.
func TestPlanSaysWhy(t *testing.T) {
	stdout, stderr, err := run(t, "", "plan", "-f", story4, "--nodes", "20,6", "--gpus-per-node", "4")
	requireExit(t, 3, err, stderr)
	assert.Contains(t, stdout, "  80 GPUs (20 x 4): each prefill pod needs 8 nvidia.com/gpu on one node; the largest node has 4\n")
	assert.Contains(t, stdout, "  24 GPUs (6 x 4): each decode pod needs 8 nvidia.com/gpu on one node; the largest node has 4\n")
	stdout, stderr, err = run(t, "", "plan", "-f", story4, "--nodes", "6", "--gpus-per-node", "8")
	requireExit(t, 2, err, stderr)
	assert.Contains(t, stdout, "  48 GPUs (6 x 8): decode-1 waits: it needs 4 pods of 8 GPUs, and 0 GPUs are free beside the placed replicas\n")
	stdout, stderr, err = run(t, "", "plan", "-f", "../../examples/manifests/story1-monolithic.yaml", "--nodes", "0", "--gpus-per-node", "8")
	requireExit(t, 3, err, stderr)
	assert.NotContains(t, stdout, "gang")
	assert.Contains(t, stdout, "each replica is placed on its own (no PodGroup)")
}

func TestSummaryAndPlanShowWhereWeightsComeFrom(t *testing.T) {
	const weights = "prefill, decode: hf://deepseek-ai/DeepSeek-R1 (revision main, unpinned: pin a commit with @), downloaded once by " +
		"Job deepseek-r1-cached-model-download (timeout 8h32m0s) into claim deepseek-r1-cached-model (1500Gi, shared-rwx), " +
		"served as deepseek-ai/DeepSeek-R1\n"
	manifest := "../../examples/manifests/deepseek-model-cache.yaml"
	stdout, _, err := run(t, "", "render", "-f", manifest, "--summary")
	require.NoError(t, err)
	assert.Contains(t, strings.Split(stdout, "---")[0], "# model: "+weights)
	stdout, _, err = run(t, "", "plan", "-f", manifest, "--nodes", "10", "--gpus-per-node", "8")
	require.NoError(t, err)
	assert.Contains(t, stdout, "Weights of "+weights)
	stdout, _, err = run(t, "", "render", "-f", "../../examples/manifests/qwen-s3-streamer.yaml", "--summary")
	require.NoError(t, err)
	assert.Contains(t, stdout, "# model: chat: s3://models/qwen/Qwen3-32B, streamed by vLLM's Run:ai streamer, no cache, served as "+
		"Qwen/Qwen3-32B; compile cache qwen3-32b-streamed-compile-cache\n")
	stdout, _, err = run(t, "", "render", "-f", "../../examples/manifests/llama-lora-adapters.yaml", "--summary")
	require.NoError(t, err)
	assert.Contains(t, stdout, "served as meta-llama/Llama-3.1-8B-Instruct; LoRA adapters sql, support-v1, support-v2 "+
		"(fetched by the same Job, listed in ConfigMap llama-lora-adapters, loaded by each server's lora-loader); "+
		"split support: support-v1 90, support-v2 10\n")
	stdout, _, err = run(t, "", "render", "-f", story4, "--summary")
	require.NoError(t, err)
	assert.NotContains(t, stdout, "# model:", "a service without spec.model: its servers fetch their own")
}

// TestRenderTakesFilesAsArguments: `render FILE`, and a shell glob after one -f (`-f a*.yaml`:
// the shell gives the files after the first as arguments), render as -f for each would; no file
// at all says how to give one.
func TestRenderTakesFilesAsArguments(t *testing.T) {
	const story3 = "../../examples/manifests/story3-multinode.yaml"
	both, stderr, err := run(t, "", "render", "-f", story1Path, "-f", story3)
	require.NoError(t, err, stderr)
	for _, args := range [][]string{{"render", story1Path, story3}, {"render", "-f", story1Path, story3}} {
		stdout, stderr, err := run(t, "", args...)
		require.NoError(t, err, "%v: %s", args, stderr)
		assert.Equal(t, both, stdout, "%v", args)
	}
	stdout, stderr, err := run(t, "", "render")
	requireExit(t, 1, err, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "fusioninfer: no manifest: give its file (render -f FILE, or render FILE ...), or - for stdin (see 'fusioninfer render --help')\n", stderr)
}

// TestSummaryWithAnOutputDirectory: -o DIR --summary prints the summary on stdout, above what it
// wrote, rather than dropping it.
func TestSummaryWithAnOutputDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, err := run(t, "", "render", "-f", story4, "-o", dir, "--summary")
	require.NoError(t, err, stderr)
	summary, _, err := run(t, "", "render", "-f", story4, "--summary")
	require.NoError(t, err)
	head, _, _ := strings.Cut(summary, "---\n")
	assert.Equal(t, head+"wrote 4 objects to "+dir+"\n", stdout)
}

// TestReplaceNeedsAnOutputDirectory: --replace says what it needs rather than being ignored.
func TestReplaceNeedsAnOutputDirectory(t *testing.T) {
	for _, args := range [][]string{{"render", "-f", story1Path, "--replace"}, {"platform", "render", "--replace"}} {
		stdout, stderr, err := run(t, "", args...)
		requireExit(t, 1, err, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "fusioninfer: --replace deletes the files of an earlier render in -o DIR: give -o DIR too", "%v", args)
	}
}

// TestNamespaceFlagIsCheckedAsAFlag: a bad --namespace is the flag's problem, said once, not a
// problem at a line of every manifest.
func TestNamespaceFlagIsCheckedAsAFlag(t *testing.T) {
	const want = `fusioninfer: --namespace "BAD": not a namespace name: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit`
	for _, args := range [][]string{
		{"render", "-f", story1Path, "-n", "BAD"},
		{"status", "--name", "x", "-n", "BAD", "--kubeconfig", "/nonexistent/kubeconfig"},
	} {
		stdout, stderr, err := run(t, "", args...)
		requireExit(t, 1, err, stderr)
		assert.Empty(t, stdout)
		assert.True(t, strings.HasPrefix(stderr, want), "%v: %s", args, stderr)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
	}
}

// TestPrefillDecodeWithoutARouterSaysHowRequestsArrive: a prefill/decode service renders without a
// router, with a warning that nothing routes requests to its prefill role; with a router, none.
func TestPrefillDecodeWithoutARouterSaysHowRequestsArrive(t *testing.T) {
	stdout, stderr, err := run(t, "", "render", "-f", story4)
	require.NoError(t, err)
	assert.NotEmpty(t, stdout)
	assert.Equal(t, `warning: InferenceService "deepseek-r1-disagg": spec.roles: prefill/decode roles without a router: `+
		"nothing sends a request's prefill to the prefill role (no InferencePool, Endpoint Picker or disaggregation sidecar is rendered); "+
		"add a role of componentType router, or send requests through a proxy of your own that has the prefill role prefill before the decode role decodes\n", stderr)
	_, stderr, err = run(t, "", "render", "-f", "../../examples/manifests/qwen-pd-router.yaml")
	require.NoError(t, err)
	assert.Empty(t, stderr)
}

// TestServerPortsThatCannotServeAreRefusedInTheManifest: a port named http where vLLM does not
// listen, and a server on the LoRA loader's port, are refused at their fields through the CLI.
func TestServerPortsThatCannotServeAreRefusedInTheManifest(t *testing.T) {
	manifest := `apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata: {name: ports}
spec:
  model:
    source: hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659
    cache: {size: 100Gi, storageClassName: shared-rwx}
    adapters: [{name: sql, source: "hf://org/sql-lora@v1"}]
  roles:
    - name: named
      componentType: worker
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              ports: [{containerPort: 9100, name: http}]
              resources: {limits: {nvidia.com/gpu: "1"}}
    - name: loaderport
      componentType: worker
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: [--port, "8091"]
              resources: {limits: {nvidia.com/gpu: "1"}}
`
	_, stderr, err := run(t, manifest, "render", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, stderr, `spec.roles[0].template.spec.containers[0].ports[0].containerPort: Invalid value: 9100: vLLM listens on 8000 without --port`)
	assert.Contains(t, stderr, `spec.roles[1].template.spec.containers[0].args: Invalid value: 8091: the LoRA loader of a model with adapters listens on 8091`)
}

// TestRenderRefusesAnAdapterNameTwoModelsOfThePoolServe: through the manifest door, a second
// role's own model with an adapter named as the first model's is refused at its field: the
// router's pool would send a request for it to servers of either base model.
func TestRenderRefusesAnAdapterNameTwoModelsOfThePoolServe(t *testing.T) {
	manifest, err := os.ReadFile("../../examples/manifests/llama-lora-adapters.yaml")
	require.NoError(t, err)
	second := `    - name: big
      componentType: worker
      model:
        source: hf://meta-llama/Llama-3.1-70B-Instruct@1e9e39f249a16976918f6564b8830bc894c89659
        cache: {size: 300Gi, storageClassName: shared-rwx}
        adapters:
          - {name: sql, source: "hf://example-org/llama-3.1-70b-sql-lora@v1"}
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              resources: {limits: {nvidia.com/gpu: "1"}}
`
	stdout, stderr, err := run(t, string(manifest)+second, "render", "-f", "-")
	require.Error(t, err)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `spec.roles[2].model.adapters[0].name: Invalid value: "sql": spec.model has an adapter of this name, `+
		`and the router's pool sends a request for it to any server of either model: give it another name`)
}

// TestEveryExampleRendersTogether: the examples are one catalogue a user may render at once
// (`render -f a.yaml -f b.yaml ...`): no two of them claim one namespace and name.
func TestEveryExampleRendersTogether(t *testing.T) {
	files, err := filepath.Glob("../../examples/manifests/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	args := []string{"render"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	_, stderr, err := run(t, "", args...)
	require.NoError(t, err, stderr)
}
