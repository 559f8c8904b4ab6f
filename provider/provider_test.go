// SPDX-License-Identifier: Apache-2.0

package provider_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/provider"
	"github.com/fusioninfer/pulumi-fusioninfer/provider/descriptions"
)

var update = flag.Bool("update", false, "rewrite schema.json from the provider")

// servedSchema is the schema the provider serves, without its version (stamped at build time).
func servedSchema(t *testing.T) []byte {
	t.Helper()
	prov, err := provider.New()
	require.NoError(t, err)
	server, err := integration.NewServer(context.Background(), provider.Name, semver.MustParse("0.0.0"), integration.WithProvider(prov))
	require.NoError(t, err)
	resp, err := server.GetSchema(p.GetSchemaRequest{})
	require.NoError(t, err)
	var spec map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Schema), &spec))
	delete(spec, "version")
	out, err := json.MarshalIndent(spec, "", "  ")
	require.NoError(t, err)
	return append(out, '\n')
}

// TestSchemaIsCheckedIn: schema.json is what the provider serves; after a change of the
// component's Args run `go test ./provider -update` and review the diff.
func TestSchemaIsCheckedIn(t *testing.T) {
	got := servedSchema(t)
	if *update {
		require.NoError(t, os.WriteFile("schema.json", got, 0o644))
	}
	want, err := os.ReadFile("schema.json")
	require.NoError(t, err, "run go test ./provider -update")
	assert.Equal(t, string(want), string(got), "schema.json drifted: run go test ./provider -update")
}

func TestPodTemplatesAreTheKubernetesType(t *testing.T) {
	var spec struct {
		Types map[string]struct {
			Properties map[string]struct {
				Ref string `json:"$ref"`
			} `json:"properties"`
		} `json:"types"`
		Language struct {
			Nodejs struct{ Dependencies map[string]string }
			Python struct{ Requires map[string]string }
		} `json:"language"`
	}
	require.NoError(t, json.Unmarshal(servedSchema(t), &spec))
	assert.Equal(t, "/kubernetes/v4.33.0/schema.json#/types/kubernetes:core/v1:PodTemplateSpec",
		spec.Types["fusioninfer:index:Role"].Properties["template"].Ref)
	for token := range spec.Types {
		assert.NotContains(t, token, "fusioninfer:v1:", "no inlined copy of a kubernetes type")
	}
	// the SDKs require the release of those types, or a later 4.x (tests/readme holds the generated SDKs to it)
	assert.Equal(t, "^4.33.0", spec.Language.Nodejs.Dependencies["@pulumi/kubernetes"])
	assert.Equal(t, ">=4.33.0,<5.0.0", spec.Language.Python.Requires["pulumi_kubernetes"])
}

// TestEveryInputAndOutputIsDescribed: the schema (and so every SDK) documents each property, from
// the Go doc comments (descriptions.json, kept fresh by TestDescriptionsAreFresh).
func TestEveryInputAndOutputIsDescribed(t *testing.T) {
	var spec struct {
		Types map[string]struct {
			Properties map[string]struct{ Description string }
		}
		Resources map[string]struct {
			Properties      map[string]struct{ Description string }
			InputProperties map[string]struct{ Description string }
		}
	}
	require.NoError(t, json.Unmarshal(servedSchema(t), &spec))
	var undescribed []string
	check := func(where string, props map[string]struct{ Description string }) {
		for name, p := range props {
			if p.Description == "" {
				undescribed = append(undescribed, where+"."+name)
			}
		}
	}
	for token, ty := range spec.Types {
		check(token, ty.Properties)
	}
	for token, r := range spec.Resources {
		check(token+" input", r.InputProperties)
		check(token+" output", r.Properties)
	}
	require.NotEmpty(t, spec.Resources)
	assert.Empty(t, undescribed, "give these fields a doc comment, then make gen")
}

func TestDescriptionsAreFresh(t *testing.T) {
	table, err := descriptions.Collect("..")
	require.NoError(t, err)
	want, err := json.MarshalIndent(table, "", "  ")
	require.NoError(t, err)
	got, err := os.ReadFile("descriptions.json")
	require.NoError(t, err)
	assert.Equal(t, string(want)+"\n", string(got), "descriptions.json is stale: run make gen")
}

// TestDescriptionsSpeakToSDKUsers: a TypeScript or Python user reads the schema's descriptions
// beside the property's own name, so none starts with the Go field's name ("Replicas is the
// number..." for replicas) or speaks Go: no Go syntax (a slice's [], a map[ type, a *pointer),
// no Go type names, no Go.
func TestDescriptionsSpeakToSDKUsers(t *testing.T) {
	var spec struct {
		Types map[string]struct {
			Description string
			Properties  map[string]struct{ Description string }
		}
		Resources map[string]struct {
			Properties      map[string]struct{ Description string }
			InputProperties map[string]struct{ Description string }
		}
	}
	require.NoError(t, json.Unmarshal(servedSchema(t), &spec))
	goisms := regexp.MustCompile(`\[\]|map\[|\*[A-Za-z]|\b(int|int32|int64|float64|bool|nil|struct|interface\{\})\b|\bGo\b`)
	var bad []string
	check := func(where, name, description string) {
		first, _, _ := strings.Cut(description, " ")
		if strings.EqualFold(strings.TrimRight(first, ":,."), name) {
			bad = append(bad, fmt.Sprintf("%s starts with its Go name: %q", where, description))
		}
		if m := goisms.FindString(description); m != "" {
			bad = append(bad, fmt.Sprintf("%s speaks Go (%s): %q", where, m, description))
		}
	}
	for token, ty := range spec.Types {
		check(token, token[strings.LastIndex(token, ":")+1:], ty.Description)
		for name, p := range ty.Properties {
			check(token+"."+name, name, p.Description)
		}
	}
	for token, r := range spec.Resources {
		for name, p := range r.InputProperties {
			check(token+" input "+name, name, p.Description)
		}
		for name, p := range r.Properties {
			check(token+" output "+name, name, p.Description)
		}
	}
	slices.Sort(bad)
	assert.Empty(t, bad, "write the doc comment as an SDK user reads it, then make gen")
}
