// SPDX-License-Identifier: Apache-2.0

// Package crosslang proves that a TypeScript (or Python) user and a Go user who describe the same
// service get the same Kubernetes objects: the inputs a program's InferenceService registration
// carried under its language's Pulumi mocks go through the provider's Construct, and the objects
// must equal the CLI's render of the story's manifest (which the Go program's children equal too).
package crosslang

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
)

// capturedRegistration is what tests/typescript writes per example.
type capturedRegistration struct {
	Type   string         `json:"type"`
	Name   string         `json:"name"`
	Inputs map[string]any `json:"inputs"`
}

func TestTypeScriptProgramsBuildTheGoProgramsObjects(t *testing.T) {
	assertLanguage(t, "FUSIONINFER_TS_INPUTS", "typescript")
}

func TestPythonProgramsBuildTheGoProgramsObjects(t *testing.T) {
	assertLanguage(t, "FUSIONINFER_PY_INPUTS", "python")
}

// capturedDir is where `make test-typescript` or `make test-python` wrote what a language's programs registered under its mocks.
func capturedDir(t *testing.T, env, language string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" && os.Getenv("CI") != "" {
		t.Fatalf("%s is not set: in CI these tests run only from `make test-%s`, after its programs ran under their mocks", env, language)
	}
	if dir == "" {
		t.Skipf("%[1]s is not set: `make test-%[2]s` sets it after running the %[2]s programs under their mocks", env, language)
	}
	return dir
}

// captured is one program's InferenceService registration, as its language's run recorded it.
func captured(t *testing.T, dir, program, language string) capturedRegistration {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, program+".json"))
	require.NoError(t, err, "the %s run recorded no inputs for %s", language, program)
	var reg capturedRegistration
	require.NoError(t, json.Unmarshal(data, &reg))
	return reg
}

func assertLanguage(t *testing.T, env, language string) {
	dir := capturedDir(t, env, language)
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", language, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	for _, example := range examples {
		story := filepath.Base(example)
		t.Run(story, func(t *testing.T) {
			reg := captured(t, dir, story, language)
			inputs := resource.FromResourcePropertyMap(resource.NewPropertyMapFromMap(reg.Inputs))
			manifest := filepath.Join("..", "..", "examples", "manifests", strings.TrimSuffix(story, "-ts")+".yaml")
			assert.Equal(t, frontdoor.Rendered(t, manifest), frontdoor.Constructed(t, reg.Name, inputs))
		})
	}
}

// unknownMarker is the engine's marker of a value unknown at preview, as every language's SDK
// writes it.
const unknownMarker = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

func TestTypeScriptPreviewKeepsAnUnknownInsideATemplate(t *testing.T) {
	assertPreviewKeepsUnknown(t, "FUSIONINFER_TS_INPUTS", "typescript")
}

func TestPythonPreviewKeepsAnUnknownInsideATemplate(t *testing.T) {
	assertPreviewKeepsUnknown(t, "FUSIONINFER_PY_INPUTS", "python")
}

// assertPreviewKeepsUnknown: a program whose template takes an env value from another resource's
// output, unknown at preview, previews the LeaderWorkerSet's contents as unknown through the
// provider, never the LWS with the value dropped.
func assertPreviewKeepsUnknown(t *testing.T, env, language string) {
	reg := captured(t, capturedDir(t, env, language), "preview-unknown-env", language)
	data, err := json.Marshal(reg.Inputs)
	require.NoError(t, err)
	require.Contains(t, string(data), unknownMarker, "the %s program's env value is unknown at preview", language)
	inputs := resource.FromResourcePropertyMap(resource.NewPropertyMapFromMapRepl(reg.Inputs, nil, func(v any) (resource.PropertyValue, bool) {
		if v == unknownMarker {
			return resource.MakeComputed(resource.NewStringProperty("")), true
		}
		return resource.PropertyValue{}, false
	}))
	preview := frontdoor.ConstructedInputs(t, reg.Name, inputs, true)
	lws, ok := preview[reg.Name+"-inference-0"]
	require.True(t, ok, "the LWS is laid out at preview: %v", preview)
	assert.True(t, lws.Get("spec").IsComputed(), "the LWS's spec previews unknown, not without the env value: %v", lws.Get("spec"))
}
