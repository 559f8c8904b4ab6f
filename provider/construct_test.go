package provider_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/frontdoor"
)

// inputs are a manifest as the component's inputs: its spec's fields are the inputs' names.
func inputs(t *testing.T, svc *api.InferenceService) property.Map {
	t.Helper()
	data, err := json.Marshal(svc.Spec)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m["serviceName"] = svc.Name
	if svc.Namespace != "" {
		m["namespace"] = svc.Namespace
	}
	if svc.Labels != nil {
		m["labels"] = svc.Labels
	}
	return resource.FromResourcePropertyMap(resource.NewPropertyMapFromMap(m))
}

func TestConstructEqualsTheCLIForEveryExample(t *testing.T) {
	files, err := filepath.Glob("../examples/manifests/*.yaml")
	require.NoError(t, err)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			docs, errs := api.Decode(data)
			require.Empty(t, errs)
			constructed := frontdoor.Objects{}
			for _, doc := range docs {
				for key, obj := range frontdoor.Constructed(t, doc.Service.Name, inputs(t, doc.Service)) {
					constructed[key] = obj
				}
			}
			assert.Equal(t, frontdoor.Rendered(t, file), constructed)
		})
	}
}

// TestConstructAtPreviewWithAnUnknownTemplate: at preview a template may be unknown (built from an
// output of another resource in a TypeScript or Python program); the tree's shape is still laid out.
func TestConstructAtPreviewWithAnUnknownTemplate(t *testing.T) {
	inputs := property.NewMap(map[string]property.Value{"roles": property.New(property.NewArray([]property.Value{
		property.New(property.NewMap(map[string]property.Value{
			"name": property.New("inference"), "componentType": property.New("worker"), "replicas": property.New(2.0),
			"template": property.New(property.Computed),
		})),
	}))})
	names := frontdoor.ConstructedNames(t, "qwen", inputs, true)
	assert.Contains(t, names, "qwen-inference-0")
	assert.Contains(t, names, "qwen-inference-1", "the LWSs are laid out though the template is unknown")
}
