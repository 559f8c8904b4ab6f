package provider

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	pschema "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// KubernetesVersion is the pulumi-kubernetes release whose PodTemplateSpec the pod templates are.
const KubernetesVersion = "4.33.0"

// podTemplateRef is the kubernetes package's PodTemplateSpec, as a cross-package reference.
const podTemplateRef = "/kubernetes/v" + KubernetesVersion + "/schema.json#/types/kubernetes:core/v1:PodTemplateSpec"

// roleToken is the role's type as infer names it (after the Go struct provider.RoleArgs).
const roleToken = "fusioninfer:index:RoleArgs"

// rolloutStrategyToken is the role's rollout strategy, whose maxUnavailable is a count or a percent.
const rolloutStrategyToken = "fusioninfer:index:RolloutStrategyArgs"

// inlinedKubernetesTypes is where infer puts the pulumi-kubernetes structs it walked (the Go
// package of the plain PodTemplateSpec is core/v1).
const inlinedKubernetesTypes = "fusioninfer:v1:"

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

// rewriteSchema makes the inferred schema the one SDKs are generated from: the role's template is
// the kubernetes package's PodTemplateSpec (declared as a dependency; an inlined copy of a
// kubernetes type, which infer makes from a plain pulumi-kubernetes struct, is refused),
// maxUnavailable is an integer or a string, every property is described, and types lose the Go
// "Args" suffix.
func rewriteSchema(raw string) (string, error) {
	var spec pschema.PackageSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return "", err
	}
	for token := range spec.Types {
		if strings.HasPrefix(token, inlinedKubernetesTypes) {
			delete(spec.Types, token)
		}
	}
	// The template reaches the provider as any value (so it may hold unknowns at preview); its type
	// is the kubernetes package's.
	if role, ok := spec.Types[roleToken]; ok {
		role.Properties["template"] = pschema.PropertySpec{TypeSpec: pschema.TypeSpec{Ref: podTemplateRef}}
		spec.Types[roleToken] = role
	}
	// maxUnavailable reaches the provider as any value; to the SDKs it is a number or a string, as
	// the kubernetes package's IntOrString fields are.
	if strategy, ok := spec.Types[rolloutStrategyToken]; ok {
		strategy.Properties["maxUnavailable"] = pschema.PropertySpec{TypeSpec: pschema.TypeSpec{
			OneOf: []pschema.TypeSpec{{Type: "integer"}, {Type: "string"}}}}
		spec.Types[rolloutStrategyToken] = strategy
	}
	describe(&spec)
	renamed := withoutArgsSuffix(&spec)
	version := semver.MustParse(KubernetesVersion)
	spec.Dependencies = append(spec.Dependencies, pschema.PackageDescriptor{Name: "kubernetes", Version: &version})
	out, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return "", err
	}
	for from, to := range renamed {
		out = []byte(strings.ReplaceAll(string(out), `"#/types/`+from+`"`, `"#/types/`+to+`"`))
	}
	if strings.Contains(string(out), "#/types/"+inlinedKubernetesTypes) {
		return "", fmt.Errorf("the schema still refers to inlined kubernetes types (%s*): refer to the kubernetes package", inlinedKubernetesTypes)
	}
	return string(out), nil
}

// withoutArgsSuffix names the object types after what they are: the Go structs are RoleArgs,
// MultinodeArgs... (Args of a Go component), which the SDKs would call RoleArgsArgs. It returns
// the renamed tokens; references are rewritten by the caller.
func withoutArgsSuffix(spec *pschema.PackageSpec) map[string]string {
	renamed := map[string]string{}
	for token, t := range spec.Types {
		if strings.HasSuffix(token, "Args") {
			to := strings.TrimSuffix(token, "Args")
			delete(spec.Types, token)
			spec.Types[to] = t
			renamed[token] = to
		}
	}
	return renamed
}

//go:embed descriptions.json
var descriptionsJSON []byte

// describe fills every property's description from the doc comment of its Go field
// (provider/descriptions.json, written by `make gen`): a type is described by its Go struct, the
// component's inputs by the component's Args and its outputs by the component.
func describe(spec *pschema.PackageSpec) {
	var table map[string]map[string]string
	if err := json.Unmarshal(descriptionsJSON, &table); err != nil {
		panic("descriptions.json embedded in the binary: " + err.Error())
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
		fill(r.Properties, token[strings.LastIndex(token, ":")+1:])
		spec.Resources[token] = r
	}
}
