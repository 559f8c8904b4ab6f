// SPDX-License-Identifier: Apache-2.0

// Package specfill makes InferenceServices with every field of the input model set, for the
// tests that prove each front door carries every field (tests only).
package specfill

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// Filled is a service whose spec has every field of every api struct set to a random value (not
// a valid service: the front doors are proved to carry values, and validation is the same code
// behind all of them). Upstream types the input model holds whole (the pod template, resource
// requirements) get a small fixed value; the route a small Gateway API route.
func Filled(seed int64) *api.InferenceService {
	f := randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 2).Funcs(
		// Every language's SDK sends numbers as float64, exact up to 2^53.
		func(i *int, c randfill.Continue) { *i = int(c.Int31()) + 1 },
		func(s *string, c randfill.Continue) { *s = "v" + c.String(6) }, // never empty
		func(b *bool, _ randfill.Continue) { *b = true },                // never the zero value
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			*t = corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": c.String(8)}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "vllm", Image: "vllm/vllm-openai:" + c.String(4), Args: []string{"--model", c.String(8)},
					Env: []corev1.EnvVar{{Name: "MODEL", Value: c.String(8)}},
				}}},
			}
		},
		func(r *corev1.ResourceRequirements, c randfill.Continue) {
			*r = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(c.Intn(4000)+1), resource.DecimalSI)}}
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(int32(c.Intn(100) + 1))
			} else {
				*v = intstr.FromString(fmt.Sprintf("%d%%", c.Intn(100)+1))
			}
		},
		func(m *map[string]any, c randfill.Continue) {
			*m = map[string]any{"parentRefs": []any{map[string]any{"name": c.String(8)}}, "hostnames": []any{c.String(8)}}
		},
	)
	svc := &api.InferenceService{}
	f.Fill(&svc.Spec)
	noZeroScalars(reflect.ValueOf(&svc.Spec).Elem())
	svc.APIVersion, svc.Kind, svc.Name, svc.Namespace = api.APIVersion, api.Kind, "filled", "ns"
	svc.Labels = map[string]string{"team": "llm"}
	return svc
}

// Unset lists the fields of the spec (as paths) that hold their zero value: Filled leaves none,
// so a new field of the input model is covered by the tests that use it without anyone adding it.
func Unset(spec *api.InferenceServiceSpec) []string {
	var out []string
	walk(reflect.ValueOf(spec).Elem(), "spec", &out)
	return out
}

var apiPackage = reflect.TypeOf(api.Role{}).PkgPath()

func walk(v reflect.Value, path string, out *[]string) {
	if v.IsZero() {
		*out = append(*out, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		walk(v.Elem(), path, out)
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Struct:
		if v.Type().PkgPath() != apiPackage {
			return // an upstream type, held whole
		}
		for i := 0; i < v.NumField(); i++ {
			walk(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	}
}

// noZeroScalars sets the strings (of any string type) and booleans of the api structs that random
// filling left at their zero value: "" and false are what an unset field holds.
func noZeroScalars(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			noZeroScalars(v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			noZeroScalars(v.Index(i))
		}
	case reflect.Struct:
		if v.Type().PkgPath() == apiPackage {
			for i := 0; i < v.NumField(); i++ {
				noZeroScalars(v.Field(i))
			}
		}
	case reflect.String:
		if v.String() == "" {
			v.SetString("set")
		}
	case reflect.Bool:
		v.SetBool(true)
	}
}
