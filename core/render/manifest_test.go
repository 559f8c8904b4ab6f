package render_test

import (
	"fmt"
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
