// SPDX-License-Identifier: Apache-2.0

package provider_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/provider/descriptions"
)

// TestReferenceIsFreshAndComplete: docs/reference.md's field reference is what make gen writes
// from the input model, and it names every property of the schema, so no field a program can
// set goes undocumented.
func TestReferenceIsFreshAndComplete(t *testing.T) {
	table, err := descriptions.Collect("..")
	require.NoError(t, err)
	data, err := os.ReadFile("../docs/reference.md")
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(data), descriptions.ReferenceStart+"\n")
	require.True(t, found, "docs/reference.md has the field reference's markers")
	got, _, found := strings.Cut(rest, descriptions.ReferenceEnd)
	require.True(t, found)
	assert.Equal(t, descriptions.Reference(table), got, "docs/reference.md's fields are stale: run make gen")

	var schema struct {
		Types map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"types"`
		Resources map[string]struct {
			InputProperties map[string]json.RawMessage `json:"inputProperties"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(servedSchema(t), &schema))
	documented := func(name string) bool {
		return strings.Contains(got, "."+name+"` |") || strings.Contains(got, "| `"+name+"` |") || strings.Contains(got, "SDK input `"+name+"`")
	}
	var missing []string
	for token, typ := range schema.Types {
		if strings.HasSuffix(token, ":RoleStatus") { // an output, described under Outputs
			continue
		}
		for name := range typ.Properties {
			if !documented(name) {
				missing = append(missing, token+"."+name)
			}
		}
	}
	for _, resource := range schema.Resources {
		for name := range resource.InputProperties {
			if !documented(name) {
				missing = append(missing, "input "+name)
			}
		}
	}
	assert.Empty(t, missing, "schema properties docs/reference.md does not name")
}
