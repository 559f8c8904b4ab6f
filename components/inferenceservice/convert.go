// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"encoding/json"
	"fmt"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/mapper"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// Service is the InferenceService the Args describe, without pod templates, and the templates
// by role index (an Input each; absent where a role has none).
func (a *Args) Service(componentName string) (*api.InferenceService, map[int]k8scorev1.PodTemplateSpecInput) {
	svc := &api.InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: api.APIVersion, Kind: api.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: a.ServiceName, Namespace: a.Namespace, Labels: a.Labels},
		Spec:       a.spec(),
	}
	if svc.Name == "" {
		svc.Name = componentName
	}
	templates := map[int]k8scorev1.PodTemplateSpecInput{}
	for i := range a.Roles {
		if a.Roles[i].Template != nil {
			templates[i] = a.Roles[i].Template
		}
	}
	return svc, templates
}

// templateMapper encodes pulumi-kubernetes structs by their `pulumi` tags, which are the
// Kubernetes field names; nil fields are simply absent.
var templateMapper = mapper.New(&mapper.Opts{IgnoreMissing: true})

// templateToAPI converts a resolved pulumi-kubernetes pod template, at the field path at of the
// spec, to the upstream API type. Decoding is strict, so a field the API type does not know is
// an error, never dropped.
func templateToAPI(tpl k8scorev1.PodTemplateSpec, at *field.Path) (*corev1.PodTemplateSpec, error) {
	m, mapErr := templateMapper.Encode(tpl)
	if mapErr != nil {
		return nil, fmt.Errorf("%s: %w", at, mapErr)
	}
	return TemplateFromMap(m, at)
}

// TemplateFromMap decodes a pod template given as a plain map (JSON names), at the field path
// at of the spec, into the upstream API type as strictly as a manifest (api.DecodeStrictlyAt):
// a field the API type does not know, or a value it refuses, is an error naming its field.
func TemplateFromMap(m map[string]any, at *field.Path) (*corev1.PodTemplateSpec, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	var out corev1.PodTemplateSpec
	if err := api.DecodeStrictlyAt(data, &out, at); err != nil {
		return nil, err
	}
	return &out, nil
}

// templateFromAPI converts an upstream pod template to a pulumi-kubernetes input.
func templateFromAPI(tpl *corev1.PodTemplateSpec) (k8scorev1.PodTemplateSpecInput, error) {
	data, err := json.Marshal(tpl)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	var out k8scorev1.PodTemplateSpec
	if mapErr := templateMapper.Decode(m, &out); mapErr != nil {
		return nil, mapErr
	}
	return pulumi.ToOutput(out).(k8scorev1.PodTemplateSpecOutput), nil
}

// ArgsFromService builds component Args from a decoded manifest, so a program can deploy the
// same file the CLI renders.
func ArgsFromService(svc *api.InferenceService) (*Args, error) {
	args := argsFromSpec(&svc.Spec)
	args.ServiceName, args.Namespace, args.Labels = svc.Name, svc.Namespace, svc.Labels
	for i := range svc.Spec.Roles {
		if tpl := svc.Spec.Roles[i].Template; tpl != nil {
			input, err := templateFromAPI(tpl)
			if err != nil {
				return nil, fmt.Errorf("spec.roles[%d].template: %w", i, err)
			}
			args.Roles[i].Template = input
		}
	}
	return args, nil
}
