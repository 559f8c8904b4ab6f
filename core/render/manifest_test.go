// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// manifestService is a one-role service of the given name, namespace ("" for none) and replicas.
func manifestService(name, namespace string, replicas int) string {
	meta := "{name: " + name + "}"
	if namespace != "" {
		meta = "{name: " + name + ", namespace: " + namespace + "}"
	}
	return fmt.Sprintf("apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: %s\nspec:\n  roles:\n"+
		"  - {name: inference, componentType: worker, replicas: %d, template: {spec: {containers: [{name: vllm, image: vllm/vllm-openai:v0.33.0}]}}}\n",
		meta, replicas)
}

// loadAll loads each file as the CLI's -f does, and checks them together.
func loadAll(t *testing.T, files ...[2]string) []string {
	t.Helper()
	var trees []*render.Tree
	var sources []render.Source
	for _, f := range files {
		fileTrees, fileSources, problems := render.LoadManifest(f[0], []byte(f[1]), nil)
		require.Empty(t, problems)
		trees = append(trees, fileTrees...)
		sources = append(sources, fileSources...)
	}
	return render.Duplicates(trees, sources)
}

// TestAServiceIsGivenOnce: two services of one namespace and name are refused wherever they come
// from (one file, two files), identical or not, with both sources: the second would be applied
// over the first, and the root program would register the component twice (Pulumi's "Duplicate
// resource URN"). One name in two namespaces is two services.
func TestAServiceIsGivenOnce(t *testing.T) {
	const second = `: InferenceService "svc": a second service "svc" in namespace "default" (the first at a.yaml:1); give each service once: remove one, or rename one`
	svc := manifestService("svc", "", 1)
	assert.Equal(t, []string{"a.yaml:8" + second}, loadAll(t, [2]string{"a.yaml", svc + "---\n" + svc}),
		"the same document twice in one file")
	assert.Equal(t, []string{"b.yaml:1" + second}, loadAll(t, [2]string{"a.yaml", svc}, [2]string{"b.yaml", manifestService("svc", "default", 3)}),
		"the same service, with other replicas, in two files; default is the namespace of a service that names none")
	assert.Empty(t, loadAll(t, [2]string{"a.yaml", svc}, [2]string{"b.yaml", manifestService("svc", "llm", 1)}),
		"one name in two namespaces")
	assert.Len(t, loadAll(t, [2]string{"a.yaml", svc + "---\n" + svc + "---\n" + svc}), 2, "each later one is named once")
}

// TestDecodingAndValidationProblemsAtOnce: a document's decoding problems (an unknown field, a
// value of the wrong type) do not hide the rules the rest of it breaks; a rule about a value
// decoding left out is not reported again.
func TestDecodingAndValidationProblemsAtOnce(t *testing.T) {
	const manifest = `apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata: {name: ds}
spec:
  roles:
    - name: inference
      componentType: worker
      replica: 2
      multinode: {nodeCount: 0}
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.11.0
              ports: "8000"
`
	trees, _, problems := render.LoadManifest("bad.yaml", []byte(manifest), nil)
	assert.Empty(t, trees, "nothing is built of a document with problems")
	require.Len(t, problems, 3, "%q", problems)
	assert.Contains(t, problems[0], `bad.yaml:8: unknown field "spec.roles[0].replica" (did you mean "replicas"?)`)
	assert.Contains(t, problems[1], `bad.yaml:9: InferenceService "ds": spec.roles[0].multinode.nodeCount: Invalid value: 0`)
	assert.Contains(t, problems[2], `bad.yaml:15: spec.roles[0].template.spec.containers[0].ports: must be a list, not string`)
}

// BenchmarkLoadManifest loads a manifest of 1,000 one-role services, as `fusioninfer render`
// does: the cost of a service of a large manifest (issue 42 measured 109,000 in one file: 105 s,
// 4.2 GB), which MaxManifestBytes bounds.
func BenchmarkLoadManifest(b *testing.B) {
	var manifest strings.Builder
	for i := range 1000 {
		manifest.WriteString(manifestService(fmt.Sprintf("s%d", i), "llm", 1) + "---\n")
	}
	data := []byte(manifest.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, problems := render.LoadManifest("many.yaml", data, nil); len(problems) > 0 {
			b.Fatal(problems[0])
		}
	}
}
