// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

// KubernetesVersion is the pulumi-kubernetes release whose PodTemplateSpec the pod templates are.
const KubernetesVersion = "4.33.0"

// kubernetesRequirement is what the TypeScript and Python SDKs ask of pulumi-kubernetes: the
// release whose types they refer to or a later one of its major version, whose types are the
// same. One rule for both, stated in each language's words (npm ^4.33.0, pip >=4.33.0,<5.0.0),
// as Pulumi's codegen states the Pulumi SDK's. The schema declares no package dependency on
// kubernetes: Pulumi's Node codegen would write it as an exact pin over this one
// (pkg/codegen/nodejs/gen.go genNPMPackageMetadata), its Python codegen as a floor (python/gen.go GeneratePackage).
var kubernetesRequirement = sdkRequirement(semver.MustParse(KubernetesVersion))

// sdkRequirement is a package release and every later one of its major version.
type sdkRequirement semver.Version

func (r sdkRequirement) npm() string { return "^" + semver.Version(r).String() }

func (r sdkRequirement) pip() string {
	return fmt.Sprintf(">=%s,<%d.0.0", semver.Version(r), r.Major+1)
}

// kubernetesTypesRef is where the kubernetes package's core/v1 types are, as a cross-package reference.
const kubernetesTypesRef = "/kubernetes/v" + KubernetesVersion + "/schema.json#/types/kubernetes:core/v1:"

// inlinedKubernetesTypes is where infer puts the Kubernetes structs of the input model it walked
// (corev1.PodTemplateSpec, corev1.ResourceRequirements: Go package core/v1); the schema refers to
// the kubernetes package's own types of the same names instead.
const inlinedKubernetesTypes = "fusioninfer:v1:"

// intOrStringToken is the upstream intstr.IntOrString as infer names it: a count or a percent,
// which the schema gives as an integer or a string, as the kubernetes package does.
const intOrStringToken = "fusioninfer:intstr:IntOrString"

// withKubernetesReferences serves the inferred schema with pod templates that are the kubernetes
// package's own type, so TypeScript and Python users pass the PodTemplateSpec they already know.
func withKubernetesReferences(prov p.Provider) p.Provider {
	inferred := prov.GetSchema
	prov.GetSchema = func(ctx context.Context, req p.GetSchemaRequest) (p.GetSchemaResponse, error) {
		resp, err := inferred(ctx, req)
		if err != nil {
			return resp, err
		}
		resp.Schema, err = rewriteSchema(resp.Schema)
		return resp, err
	}
	return prov
}

// rewriteSchema makes the inferred schema the one SDKs are generated from: the input model's
// upstream Kubernetes types are the kubernetes package's (which the SDKs require: kubernetesRequirement;
// a schema that still refers to an inlined copy is refused), IntOrString is an integer or a string, and every
// property is described.
func rewriteSchema(raw string) (string, error) {
	var spec pschema.PackageSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return "", err
	}
	for token := range spec.Types {
		if strings.HasPrefix(token, inlinedKubernetesTypes) || token == intOrStringToken {
			delete(spec.Types, token)
		}
	}
	for token, t := range spec.Types {
		for name, prop := range t.Properties {
			prop.TypeSpec = upstreamType(prop.TypeSpec)
			t.Properties[name] = prop
		}
		spec.Types[token] = t
	}
	for token, r := range spec.Resources {
		for name, prop := range r.InputProperties {
			prop.TypeSpec = upstreamType(prop.TypeSpec)
			r.InputProperties[name] = prop
		}
		spec.Resources[token] = r
	}
	withEnums(&spec)
	if err := describe(&spec); err != nil {
		return "", err
	}
	out, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return "", err
	}
	if strings.Contains(string(out), "#/types/"+inlinedKubernetesTypes) || strings.Contains(string(out), "#/types/"+intOrStringToken) {
		return "", fmt.Errorf("the schema still refers to an inlined upstream type (%s*, %s)", inlinedKubernetesTypes, intOrStringToken)
	}
	return string(out), nil
}

// upstreamType is a property's type with the upstream Kubernetes types of the input model as the
// SDKs should see them: the kubernetes package's types (a TypeScript or Python user passes the
// PodTemplateSpec they already know), and IntOrString as an integer or a string.
func upstreamType(t pschema.TypeSpec) pschema.TypeSpec {
	switch {
	case t.Ref == "#/types/"+intOrStringToken:
		return pschema.TypeSpec{OneOf: []pschema.TypeSpec{{Type: "integer"}, {Type: "string"}}}
	case strings.HasPrefix(t.Ref, "#/types/"+inlinedKubernetesTypes):
		return pschema.TypeSpec{Ref: kubernetesTypesRef + strings.TrimPrefix(t.Ref, "#/types/"+inlinedKubernetesTypes)}
	}
	if t.Items != nil {
		items := upstreamType(*t.Items)
		t.Items = &items
	}
	if t.AdditionalProperties != nil {
		values := upstreamType(*t.AdditionalProperties)
		t.AdditionalProperties = &values
	}
	return t
}

// withEnums gives every property of an enumerated type of the input model (api.EnumOf) its enum
// type, fusioninfer:index:{Name}, with the values validation allows, found by walking the input
// model's Go types from the spec: infer types such a field as a plain string.
func withEnums(spec *pschema.PackageSpec) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, props map[string]pschema.PropertySpec)
	walk = func(t reflect.Type, props map[string]pschema.PropertySpec) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
				ft = ft.Elem()
			}
			if enum, ok := api.EnumOf(ft); ok {
				token := Name + ":index:" + enum.Name
				if _, declared := spec.Types[token]; !declared {
					values := make([]pschema.EnumValueSpec, 0, len(enum.Values))
					for _, v := range enum.Values {
						values = append(values, pschema.EnumValueSpec{Value: v})
					}
					spec.Types[token] = pschema.ComplexTypeSpec{ObjectTypeSpec: pschema.ObjectTypeSpec{Type: "string",
						Description: fmt.Sprintf("One of: %s.", strings.Join(enum.Values, ", "))}, Enum: values}
				}
				if prop, ok := props[name]; ok {
					prop.TypeSpec = withRef(prop.TypeSpec, "#/types/"+token)
					props[name] = prop
				}
				continue
			}
			if ft.Kind() != reflect.Struct || ft.PkgPath() != t.PkgPath() || seen[ft] {
				continue
			}
			seen[ft] = true
			if typ, ok := spec.Types[typeToken(ft)]; ok {
				walk(ft, typ.Properties)
			}
		}
	}
	for token, r := range spec.Resources {
		if token != inferenceservice.TypeToken { // the Platform's inputs are not the input model's
			continue
		}
		walk(reflect.TypeFor[api.InferenceServiceSpec](), r.InputProperties)
		spec.Resources[token] = r
	}
}

// typeToken is a Go type of the input model as infer names it in the schema.
func typeToken(t reflect.Type) string { return Name + ":index:" + t.Name() }

// withRef is a property's type with its string values the enum at ref: the property itself, or
// its items or values for a list or map of them.
func withRef(t pschema.TypeSpec, ref string) pschema.TypeSpec {
	switch {
	case t.Items != nil:
		items := withRef(*t.Items, ref)
		t.Items = &items
		return t
	case t.AdditionalProperties != nil:
		values := withRef(*t.AdditionalProperties, ref)
		t.AdditionalProperties = &values
		return t
	}
	return pschema.TypeSpec{Ref: ref}
}

//go:embed descriptions.json
var descriptionsJSON []byte

// describe fills every property's description from the doc comment of its Go field
// (provider/descriptions.json, written by `make gen`): a type is described by its Go struct, the
// component's inputs by the component's Args and its outputs by the component.
func describe(spec *pschema.PackageSpec) error {
	var table map[string]map[string]string
	if err := json.Unmarshal(descriptionsJSON, &table); err != nil {
		return fmt.Errorf("the descriptions.json embedded in the provider: %w", err)
	}
	fill := func(props map[string]pschema.PropertySpec, goType string) {
		for name, prop := range props {
			if prop.Description == "" {
				prop.Description = table[goType][name]
				props[name] = prop
			}
		}
	}
	for token, t := range spec.Types {
		fill(t.Properties, token[strings.LastIndex(token, ":")+1:])
		spec.Types[token] = t
	}
	for token, r := range spec.Resources {
		fill(r.InputProperties, "Args")
		fill(r.InputProperties, "InferenceServiceSpec")
		fill(r.InputProperties, "Spec") // the Platform's (core/platform)
		fill(r.Properties, token[strings.LastIndex(token, ":")+1:])
		spec.Resources[token] = r
	}
	return nil
}
