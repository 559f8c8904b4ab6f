// SPDX-License-Identifier: Apache-2.0

package provider_test

import (
	"encoding/json"
	"go/ast"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/goparse"
)

// TestSchemaEnumsAreTheInputModels: every string type the input model declares (type X string in
// api) is an api.Enum, every closed set of another package's type the input model uses
// is one too (api.EnumOf), and the schema has each as an enum with exactly the values validation
// allows, referred to by the fields of that type (so the SDKs type them).
func TestSchemaEnumsAreTheInputModels(t *testing.T) {
	files, err := goparse.Package(token.NewFileSet(), "../api", 0, nil)
	require.NoError(t, err)
	var stringTypes []string
	for _, file := range files {
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
	enums := map[string]reflect.Type{}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[api.ComponentType](), reflect.TypeFor[api.NodePoolKind](), reflect.TypeFor[api.MinResourcesMode](),
		reflect.TypeFor[api.NetworkTopologyMode](), reflect.TypeFor[api.GangMode](), reflect.TypeFor[api.AwaitMode](),
		reflect.TypeFor[api.ModelLoadFormat](), reflect.TypeFor[api.ModelFlexibilityMode](), reflect.TypeFor[api.PoolAPIVersion](),
		reflect.TypeFor[api.FailureMode](), reflect.TypeFor[api.CapacityType](), reflect.TypeFor[api.InferenceCRDGroups](),
		reflect.TypeFor[api.RouterMode](),
		// Declared by other packages.
		reflect.TypeFor[api.EndpointPickerRelease](), reflect.TypeFor[lwsv1.RestartPolicyType](), reflect.TypeFor[lwsv1.StartupPolicyType](),
		reflect.TypeFor[corev1.TaintEffect](), reflect.TypeFor[corev1.PersistentVolumeAccessMode](),
	} {
		enum, ok := api.EnumOf(typ)
		require.True(t, ok, "%s is an enumeration", typ)
		enums[enum.Name] = typ
		if typ.PkgPath() == reflect.TypeFor[api.Role]().PkgPath() {
			assert.Contains(t, stringTypes, typ.Name(), "an enumeration of the input model is a type X string of api")
		}
	}
	require.NotEmpty(t, stringTypes)
	for _, name := range stringTypes {
		assert.Contains(t, enums, name, "each string type of the input model is an enum listed here")
	}
	assert.Equal(t, []string{"EndpointPickerRelease", "ModelCacheAccessMode", "RestartPolicy", "StartupPolicy", "TaintEffect"},
		slices.Sorted(maps.Keys(stringFieldTypesOutsideAPI(reflect.TypeFor[api.InferenceServiceSpec](), map[reflect.Type]bool{}))),
		"every field of a string type another package declares is an enumeration (or a type listed as not one)")

	var schema struct {
		Types map[string]struct {
			Enum []struct{ Value string } `json:"enum"`
		} `json:"types"`
	}
	served := servedSchema(t)
	require.NoError(t, json.Unmarshal(served, &schema))
	for name, typ := range enums {
		enum, _ := api.EnumOf(typ)
		schemaType, ok := schema.Types["fusioninfer:index:"+name]
		if !assert.True(t, ok, "the schema has the enum %s", name) {
			continue
		}
		var values []string
		for _, v := range schemaType.Enum {
			values = append(values, v.Value)
		}
		assert.Equal(t, enum.Values, values, name)
		assert.Contains(t, string(served), `"$ref": "#/types/fusioninfer:index:`+name+`"`, "a field refers to %s", name)
	}
}

// stringFieldTypesOutsideAPI are the string types of the input model's fields (through its
// structs) that another package declares, by the name api.EnumOf gives them ("" when none).
func stringFieldTypesOutsideAPI(t reflect.Type, seen map[reflect.Type]bool) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		ft := t.Field(i).Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.String && ft.PkgPath() != "" && ft.PkgPath() != t.PkgPath():
			enum, _ := api.EnumOf(ft)
			out[enum.Name] = true
		case ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() && !seen[ft]:
			seen[ft] = true
			maps.Copy(out, stringFieldTypesOutsideAPI(ft, seen))
		}
	}
	return out
}
