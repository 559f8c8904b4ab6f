// SPDX-License-Identifier: Apache-2.0

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

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
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
	require.NotEmpty(t, files)
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

// TestPreviewKeepsAnUnknownInsideATemplate: a TypeScript or Python template whose env value comes
// from another resource's output is unknown at preview only in that field. The LWS is previewed
// unknown where it is, never with the value silently dropped (what the SDK's input copy did), and
// is written whole at update.
func TestPreviewKeepsAnUnknownInsideATemplate(t *testing.T) {
	withEnv := func(value property.Value) property.Map {
		container := property.NewMap(map[string]property.Value{
			"name": property.New("vllm"), "image": property.New("vllm/vllm-openai:v0.33.0"),
			"args": property.New(property.NewArray([]property.Value{property.New("--model"), property.New("Qwen/Qwen3-8B")})),
			"env":  property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{"name": property.New("MODEL_CONFIGMAP"), "value": value}))})),
			"resources": property.New(property.NewMap(map[string]property.Value{"limits": property.New(property.NewMap(map[string]property.Value{
				"nvidia.com/gpu": property.New("1")}))})),
		})
		template := property.NewMap(map[string]property.Value{"spec": property.New(property.NewMap(map[string]property.Value{
			"containers": property.New(property.NewArray([]property.Value{property.New(container)}))}))})
		return property.NewMap(map[string]property.Value{"roles": property.New(property.NewArray([]property.Value{
			property.New(property.NewMap(map[string]property.Value{
				"name": property.New("inference"), "componentType": property.New("worker"), "template": property.New(template),
			})),
		}))})
	}
	preview := frontdoor.ConstructedInputs(t, "qwen", withEnv(property.New(property.Computed)), true)
	lws, ok := preview["qwen-inference-0"]
	require.True(t, ok, "the LWS is laid out at preview")
	assert.True(t, lws.Get("spec").IsComputed(), "the LWS's spec is unknown at preview, not written without the env value: %v", lws.Get("spec"))

	update := frontdoor.ConstructedInputs(t, "qwen", withEnv(property.New("qwen-config")), false)
	spec := resource.ToResourcePropertyValue(update["qwen-inference-0"].Get("spec")).Mappable()
	data, err := json.Marshal(spec)
	require.NoError(t, err)
	assert.Contains(t, string(data), `{"name":"MODEL_CONFIGMAP","value":"qwen-config"}`)
}

// TestErrorsNameTheInputs: a TypeScript, Python or YAML program wrote the inputs, not a manifest;
// the provider's errors name its fields (roles[0].replicas, namespace), not the manifest's
// (spec.roles[0].replicas, metadata.namespace), whether decoding or validation refused them.
func TestErrorsNameTheInputs(t *testing.T) {
	// container is a pod template of one vLLM container with fields.
	container := func(fields map[string]property.Value) property.Map {
		c := map[string]property.Value{"name": property.New("vllm"), "image": property.New("vllm/vllm-openai:v0.33.0")}
		for k, v := range fields {
			c[k] = v
		}
		return property.NewMap(map[string]property.Value{"spec": property.New(property.NewMap(map[string]property.Value{
			"containers": property.New(property.NewArray([]property.Value{property.New(property.NewMap(c))}))}))})
	}
	role := func(fields map[string]property.Value) property.Map {
		role := map[string]property.Value{"name": property.New("chat"), "componentType": property.New("worker")}
		for k, v := range fields {
			role[k] = v
		}
		return property.NewMap(map[string]property.Value{"roles": property.New(property.NewArray([]property.Value{property.New(property.NewMap(role))}))})
	}
	for _, tc := range []struct {
		inputs property.Map
		want   string
	}{
		{role(map[string]property.Value{"replicas": property.New(0.0)}), "roles[0].replicas: Invalid value: 0"},
		{role(map[string]property.Value{"replica": property.New(2.0)}), `unknown field "roles[0].replica" (did you mean "replicas"?)`},
		{role(map[string]property.Value{"replicas": property.New("two")}), "roles[0].replicas: must be an integer, not string"},
		{role(nil).Set("namespace", property.New("Not_A_Label")), `namespace: Invalid value: "Not_A_Label"`},
		{role(nil).Set("model", property.New(property.NewMap(map[string]property.Value{
			"source": property.New("hf://meta-llama/Llama-3.1-8B-Instruct"),
			"cache":  property.New(property.NewMap(map[string]property.Value{"size": property.New("100Gi"), "storageClassName": property.New("rwx")})),
			"adapters": property.New(property.NewArray([]property.Value{
				property.New(property.NewMap(map[string]property.Value{"name": property.New("sql"), "source": property.New("hf://org/sql-v1")})),
				property.New(property.NewMap(map[string]property.Value{"name": property.New("sql"), "source": property.New("s3://adapters/sql-v2")})),
			}))}))), `model.adapters[1].name: Duplicate value: "sql"`},
		// A quantity's parser refuses it with a regular expression, and no field: in words, at its input.
		{role(map[string]property.Value{"template": property.New(container(map[string]property.Value{
			"resources": property.New(property.NewMap(map[string]property.Value{"limits": property.New(property.NewMap(map[string]property.Value{
				"memory": property.New("lots")}))}))}))}),
			`roles[0].template.spec.containers[0].resources.limits[memory]: must be a quantity such as 16Gi, 500m or 2, not "lots"`},
		{role(map[string]property.Value{"template": property.New(container(map[string]property.Value{
			"args": property.New(property.NewArray([]property.Value{property.New("--port=abc")}))}))}),
			`roles[0].template.spec.containers[0].args: Invalid value: "abc": --port must be a port, a whole number from 1 to 65535`},
	} {
		err := frontdoor.ConstructError(t, "svc", tc.inputs)
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
		// A pod template's own spec is the SDK's name too (roles[0].template.spec.containers).
		assert.NotRegexp(t, `(^|[\s"(])(spec|metadata)\.`, err.Error())
	}
}

// TestPodTemplateRulesNameTheInputs: a template the API server would refuse (issue 32: two
// containers named vllm, imagePullPolicy Sometimes, a container named VLLM_Server) is refused by
// the provider before anything is registered, at the inputs' fields.
func TestPodTemplateRulesNameTheInputs(t *testing.T) {
	container := func(name, pullPolicy string) property.Value {
		c := map[string]property.Value{"name": property.New(name), "image": property.New("vllm/vllm-openai:v0.33.0"),
			"ports": property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{
				"name": property.New("http"), "containerPort": property.New(8000.0)}))}))}
		if pullPolicy != "" {
			c["imagePullPolicy"] = property.New(pullPolicy)
		}
		return property.New(property.NewMap(c))
	}
	template := property.NewMap(map[string]property.Value{"spec": property.New(property.NewMap(map[string]property.Value{
		"containers":     property.New(property.NewArray([]property.Value{container("vllm", "Sometimes"), container("vllm", "")})),
		"initContainers": property.New(property.NewArray([]property.Value{container("VLLM_Server", "")})),
	}))})
	role := property.NewMap(map[string]property.Value{"name": property.New("chat"), "componentType": property.New("worker"),
		"template": property.New(template)})
	inputs := property.NewMap(map[string]property.Value{"roles": property.New(property.NewArray([]property.Value{property.New(role)}))})
	err := frontdoor.ConstructError(t, "svc", inputs)
	require.Error(t, err)
	for _, want := range []string{
		`roles[0].template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
		`roles[0].template.spec.containers[1].name: Duplicate value: "vllm"`,
		`roles[0].template.spec.initContainers[0].name: Invalid value: "VLLM_Server"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "spec.roles")
}
