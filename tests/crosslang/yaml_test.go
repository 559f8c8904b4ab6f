// SPDX-License-Identifier: Apache-2.0

package crosslang

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
)

// yamlProgram is the part of a Pulumi YAML program the test reads.
type yamlProgram struct {
	Resources map[string]struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	} `json:"resources"`
}

// TestYAMLProgramsBuildTheGoProgramsObjects: a Pulumi YAML program's properties are the inputs
// the engine sends the provider; constructed, they give the manifest's objects.
func TestYAMLProgramsBuildTheGoProgramsObjects(t *testing.T) {
	programs, err := filepath.Glob(filepath.Join("..", "..", "examples", "yaml", "*", "Pulumi.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, programs)
	for _, program := range programs {
		story := filepath.Base(filepath.Dir(program))
		t.Run(story, func(t *testing.T) {
			data, err := os.ReadFile(program)
			require.NoError(t, err)
			var p yamlProgram
			require.NoError(t, yaml.Unmarshal(data, &p))
			services := 0
			for name, r := range p.Resources {
				if r.Type != "fusioninfer:index:InferenceService" {
					continue
				}
				services++
				inputs := resource.FromResourcePropertyMap(resource.NewPropertyMapFromMap(r.Properties))
				manifest := filepath.Join("..", "..", "examples", "manifests", story+".yaml")
				assert.Equal(t, frontdoor.Rendered(t, manifest), frontdoor.Constructed(t, name, inputs))
			}
			assert.Equal(t, 1, services, "one InferenceService per program")
		})
	}
}
