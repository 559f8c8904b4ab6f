// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"encoding/json"
	"fmt"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/mapper"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	comProvider "github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// decodeInputs is the InferenceService a language SDK's inputs describe, and each role's pod
// template as an Input. Everything but the templates decides the tree's shape, so it must be known
// and is decoded exactly as a manifest is (api.DecodeService: strict, every field of the one input
// model). The templates keep what the SDK sent: their dependencies and secrets through the Go
// SDK's own copy, and, at preview, any unknown value nested in them (the SDK's copy would hand over
// a known template with that field missing; it is unknown as a whole instead, so a preview never
// shows an object the update will not write).
func decodeInputs(ctx *pulumi.Context, name string, raw property.Map, copied comProvider.ConstructInputs) (*api.InferenceService, map[int]k8scorev1.PodTemplateSpecInput, error) {
	svc, templates, err := serviceOf(name, raw)
	if err != nil || len(templates) == 0 {
		return svc, nil, err
	}
	var inputs templateInputs
	if err := copied.CopyTo(&inputs); err != nil {
		return nil, nil, err
	}
	out := map[int]k8scorev1.PodTemplateSpecInput{}
	for i, unknownInside := range templates {
		tpl := inputs.Roles[i].Template
		if unknownInside && ctx.DryRun() {
			tpl = pulumi.All(tpl, pulumi.UnsafeUnknownOutput(nil)).ApplyT(func(v []any) any { return v[0] }).(pulumi.AnyOutput)
		}
		out[i] = podTemplate(tpl)
	}
	return svc, out, nil
}

// serviceOf is the InferenceService the inputs describe, without pod templates, and the roles
// that have one (true where it holds an unknown value).
func serviceOf(name string, raw property.Map) (*api.InferenceService, map[int]bool, error) {
	plain, templates, errs := shapeOf(raw)
	if len(errs) > 0 {
		return nil, nil, &api.ValidationError{Service: name, Errors: errs}
	}
	document := map[string]any{"apiVersion": api.APIVersion, "kind": api.Kind, "metadata": metadata(plain, name), "spec": plain}
	data, err := json.Marshal(document)
	if err != nil {
		return nil, nil, err
	}
	svc, err := api.DecodeService(data)
	if err != nil {
		return nil, nil, fmt.Errorf("InferenceService %q: %w", name, err)
	}
	return svc, templates, nil
}

// templateInputs are the roles' templates as the Go SDK copies them from the inputs.
type templateInputs struct {
	Roles []struct {
		Template pulumi.AnyOutput `pulumi:"template,optional"`
	} `pulumi:"roles"`
}

// metadataInputs are the inputs that are the manifest's metadata, not its spec.
var metadataInputs = map[string]string{"serviceName": "name", "namespace": "namespace", "labels": "labels"}

// metadata moves the metadata inputs out of the spec: the service's name (the component's unless
// serviceName is given), namespace and labels.
func metadata(plain map[string]any, name string) map[string]any {
	out := map[string]any{"name": name}
	for input, key := range metadataInputs {
		if v, ok := plain[input]; ok {
			if v != "" {
				out[key] = v
			}
			delete(plain, input)
		}
	}
	return out
}

// shapeOf is the inputs as plain values without the templates, and the roles that have a
// template (true where it holds an unknown value). A value unknown outside a template is an
// error: it decides which objects exist.
func shapeOf(raw property.Map) (map[string]any, map[int]bool, field.ErrorList) {
	var errs field.ErrorList
	templates := map[int]bool{}
	out := map[string]any{}
	for key, v := range raw.AllStable {
		if key == "roles" && v.IsArray() {
			var roles []any
			for i, role := range v.AsArray().All {
				if !role.IsMap() {
					roles = append(roles, plainValue(role, field.NewPath("spec", "roles").Index(i), &errs))
					continue
				}
				m := map[string]any{}
				for k, rv := range role.AsMap().AllStable {
					if k == "template" {
						if !rv.IsNull() {
							templates[i] = rv.HasComputed()
						}
						continue
					}
					m[k] = plainValue(rv, field.NewPath("spec", "roles").Index(i).Child(k), &errs)
				}
				roles = append(roles, m)
			}
			out[key] = roles
			continue
		}
		out[key] = plainValue(v, field.NewPath("spec", key), &errs)
	}
	return out, templates, errs
}

// plainValue is an input value as JSON would carry it.
func plainValue(v property.Value, path *field.Path, errs *field.ErrorList) any {
	switch {
	case v.IsComputed():
		*errs = append(*errs, field.Invalid(path, "(unknown)", "must be known at preview: it decides which objects the service has (only pod templates may hold unknown values)"))
		return nil
	case v.IsNull():
		return nil
	case v.IsBool():
		return v.AsBool()
	case v.IsNumber():
		return v.AsNumber()
	case v.IsString():
		return v.AsString()
	case v.IsArray():
		var out []any
		for i, e := range v.AsArray().All {
			out = append(out, plainValue(e, path.Index(i), errs))
		}
		return out
	case v.IsMap():
		out := map[string]any{}
		for k, e := range v.AsMap().AllStable {
			out[k] = plainValue(e, path.Key(k), errs)
		}
		return out
	default:
		*errs = append(*errs, field.Invalid(path, "(an asset, archive or resource reference)", "must be a plain value"))
		return nil
	}
}

var templateMapper = mapper.New(&mapper.Opts{IgnoreMissing: true})

// podTemplate is a template received as a map as the pulumi-kubernetes input the component takes.
func podTemplate(in pulumi.AnyOutput) k8scorev1.PodTemplateSpecOutput {
	return in.ApplyT(func(v any) (k8scorev1.PodTemplateSpec, error) {
		var out k8scorev1.PodTemplateSpec
		m, ok := v.(map[string]any)
		if !ok {
			return out, fmt.Errorf("template: want an object, got %T", v)
		}
		err := templateMapper.Decode(m, &out)
		return out, err
	}).(k8scorev1.PodTemplateSpecOutput)
}

// platformSpecOf is the Platform spec a language SDK's inputs describe, decoded as strictly as
// `fusioninfer platform render -f` decodes a file (platform.Decode). Every input decides which
// objects exist, so every one must be known.
func platformSpecOf(raw property.Map) (*platform.Spec, error) {
	var errs field.ErrorList
	plain := map[string]any{}
	for key, v := range raw.AllStable {
		if v.HasComputed() {
			errs = append(errs, field.Invalid(field.NewPath(key), "(unknown)", "must be known at preview: it decides which objects the Platform installs"))
			continue
		}
		plain[key] = plainValue(v, field.NewPath(key), &errs)
	}
	if len(errs) > 0 {
		return nil, &platform.ValidationError{Errors: errs}
	}
	data, err := json.Marshal(plain)
	if err != nil {
		return nil, err
	}
	return platform.Decode(data)
}
