// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/specfill"
)

// TestEveryFieldThroughTheProvider: every field of the input model is in the served schema (so a
// TypeScript, Python or YAML program can set it), and the provider carries what such a program
// sends to the spec the core builds from (the provider's front door). Pod templates are the
// kubernetes package's type and are compared object by object in the construct tests.
func TestEveryFieldThroughTheProvider(t *testing.T) {
	data, err := os.ReadFile("schema.json")
	require.NoError(t, err)
	var schema pschema.PackageSpec
	require.NoError(t, json.Unmarshal(data, &schema))
	inputs := schema.Resources["fusioninfer:index:InferenceService"].InputProperties
	for seed := int64(1); seed <= 20; seed++ {
		want := specfill.Filled(seed)
		require.Empty(t, specfill.Unset(&want.Spec))
		sent := map[string]any{}
		specJSON, err := json.Marshal(want.Spec)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(specJSON, &sent))
		for key, v := range sent {
			prop, ok := inputs[key]
			if assert.True(t, ok, "the schema has no input %q", key) {
				inSchema(t, &schema, prop.TypeSpec, v, key)
			}
		}
		sent["serviceName"], sent["namespace"], sent["labels"] = want.Name, want.Namespace, map[string]any{"team": "llm"}
		for _, role := range sent["roles"].([]any) {
			delete(role.(map[string]any), "template") // an Input of its own: see decodeInputs
		}
		got, templates, err := serviceOf("component", resource.FromResourcePropertyMap(resource.NewPropertyMapFromMap(sent)))
		require.NoError(t, err)
		assert.Empty(t, templates)
		for i := range want.Spec.Roles {
			want.Spec.Roles[i].Template = nil
		}
		if !assert.True(t, equality.Semantic.DeepEqual(want, got), "seed %d: the provider lost a field", seed) {
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			assert.JSONEq(t, string(w), string(g))
		}
	}
}

// inSchema checks that every key of a value sent for a property is a property of its type.
func inSchema(t *testing.T, schema *pschema.PackageSpec, typ pschema.TypeSpec, v any, path string) {
	t.Helper()
	switch {
	case typ.Ref != "" && strings.HasPrefix(typ.Ref, "#/types/"):
		obj, ok := schema.Types[strings.TrimPrefix(typ.Ref, "#/types/")]
		require.True(t, ok, "%s: %s is not in the schema", path, typ.Ref)
		if len(obj.Enum) > 0 { // the filled spec's values are any strings: TestSchemaEnumsAreTheInputModels
			assert.IsType(t, "", v, "%s: an enum of strings", path)
			return
		}
		for key, fv := range v.(map[string]any) {
			prop, ok := obj.Properties[key]
			if assert.True(t, ok, "the schema has no property %s.%s", path, key) {
				inSchema(t, schema, prop.TypeSpec, fv, path+"."+key)
			}
		}
	case typ.Type == "array":
		for _, e := range v.([]any) {
			inSchema(t, schema, *typ.Items, e, path+"[]")
		}
	case typ.Type == "object" && typ.AdditionalProperties != nil:
		for key, e := range v.(map[string]any) {
			inSchema(t, schema, *typ.AdditionalProperties, e, path+"."+key)
		}
	}
}
