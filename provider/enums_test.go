package provider_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// TestSchemaEnumsAreTheInputModels: every string type the input model declares (type X string in
// components/api) is an api.Enum, and the schema has it as an enum with exactly the values
// validation allows, referred to by the fields of that type (so the SDKs type them).
func TestSchemaEnumsAreTheInputModels(t *testing.T) {
	packages, err := parser.ParseDir(token.NewFileSet(), "../components/api", func(info fs.FileInfo) bool {
		return !strings.HasSuffix(info.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	var stringTypes []string
	for _, pkg := range packages {
		for _, file := range pkg.Files {
			for _, decl := range file.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.TYPE {
					continue
				}
				for _, spec := range gen.Specs {
					ts := spec.(*ast.TypeSpec)
					if ident, ok := ts.Type.(*ast.Ident); ok && ident.Name == "string" && ts.Name.IsExported() {
						stringTypes = append(stringTypes, ts.Name.Name)
					}
				}
			}
		}
	}
	enums := map[string]api.Enum{
		"ComponentType": api.ComponentType(""), "NodePoolKind": api.NodePoolKind(""), "MinResourcesMode": api.MinResourcesMode(""),
		"NetworkTopologyMode": api.NetworkTopologyMode(""), "GangMode": api.GangMode(""), "AwaitMode": api.AwaitMode(""),
		"ModelLoadFormat": api.ModelLoadFormat(""), "ModelFlexibilityMode": api.ModelFlexibilityMode(""),
		"PoolAPIVersion": api.PoolAPIVersion(""), "FailureMode": api.FailureMode(""), "EndpointPickerRelease": api.EndpointPickerRelease(""),
	}
	require.NotEmpty(t, stringTypes)
	assert.ElementsMatch(t, stringTypes, keys(enums), "each string type of the input model is an enum listed here")

	var schema struct {
		Types map[string]struct {
			Enum []struct{ Value string } `json:"enum"`
		} `json:"types"`
	}
	served := servedSchema(t)
	require.NoError(t, json.Unmarshal(served, &schema))
	for name, enum := range enums {
		typ, ok := schema.Types["fusioninfer:index:"+name]
		if !assert.True(t, ok, "the schema has the enum %s", name) {
			continue
		}
		var values []string
		for _, v := range typ.Enum {
			values = append(values, v.Value)
		}
		assert.Equal(t, enum.AllowedValues(), values, name)
		assert.Contains(t, string(served), `"$ref": "#/types/fusioninfer:index:`+name+`"`, "a field refers to %s", name)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
