// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// TestDeclaredDefaultsAreTheAppliedOnes: every `default` tag of the input model (the one
// declaration of a field's default, which the reference and the generated constants read) is what
// the renderer applies: in every example and core case, each unset field with a default, set to
// its declared value, renders the very same tree; and every declared default is exercised by
// some input, so a new one needs an example that shows it.
func TestDeclaredDefaultsAreTheAppliedOnes(t *testing.T) {
	exercised := map[string]bool{}
	for _, input := range goldenInputs(t) {
		data, err := os.ReadFile(input)
		require.NoError(t, err)
		docs, errs := api.Decode(data) // a second copy of the services buildFile builds, to change
		require.Empty(t, errs)
		for i, tree := range buildFile(t, input) {
			want, err := tree.YAML()
			require.NoError(t, err)
			svc := docs[i].Service
			set := setDefaults(reflect.ValueOf(&svc.Spec).Elem(), nil)
			if len(set) == 0 {
				continue
			}
			explicit, errs := render.Build(svc)
			require.Empty(t, errs, "%s: %s set to their defaults: %v", input, set, errs)
			got, err := explicit.YAML()
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "%s: %s set to their declared defaults render differently", input, set)
			for _, name := range set {
				exercised[name] = true
			}
		}
	}
	for _, name := range declaredDefaults(reflect.TypeFor[api.InferenceServiceSpec](), map[reflect.Type]bool{}) {
		require.True(t, exercised[name], "no example or case leaves %s unset: add one that does", name)
	}
}

// setDefaults sets every unset field under v that declares a default, where it applies (a field
// of a role only on the roles its `roles` tag names), and returns them as Struct.Field.
func setDefaults(v reflect.Value, role *api.Role) []string {
	var set []string
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			set = append(set, setDefaults(v.Elem(), role)...)
		}
	case reflect.Slice:
		for i := range v.Len() {
			set = append(set, setDefaults(v.Index(i), role)...)
		}
	case reflect.Struct:
		if r, ok := v.Addr().Interface().(*api.Role); ok {
			role = r
		}
		pool, _ := v.Addr().Interface().(*api.NodePool)
		if v.Type().PkgPath() != reflect.TypeFor[api.Role]().PkgPath() {
			return nil // a Kubernetes type: no defaults of ours
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			value, ok := f.Tag.Lookup("default")
			// an autoscaled role's replicas default to autoscaling.minReplicas, and must equal it
			autoscaledReplicas := role != nil && role.Autoscaling != nil && v.Addr().Interface() == role && f.Name == "Replicas"
			// a karpenter pool's field only on karpenter pools (its pools tag)
			otherPoolKind := pool != nil && f.Tag.Get("pools") != "" && f.Tag.Get("pools") != string(pool.PoolKind())
			if !ok || !v.Field(i).IsZero() || !appliesTo(f.Tag.Get("roles"), role) || autoscaledReplicas || otherPoolKind {
				set = append(set, setDefaults(v.Field(i), role)...)
				continue
			}
			setValue(v.Field(i), value)
			set = append(set, v.Type().Name()+"."+f.Name)
		}
	}
	return set
}

// appliesTo reports whether a field with the roles tag applies to the role (always outside roles).
func appliesTo(roles string, role *api.Role) bool {
	switch {
	case role == nil, roles == "", roles == "any":
		return true
	case roles == "router":
		return role.ComponentType == api.ComponentTypeRouter
	}
	return role.ComponentType.Serving()
}

// setValue sets a zero field to the tag's value, as a user would write it.
func setValue(v reflect.Value, value string) {
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch {
	case v.Type() == reflect.TypeFor[intstr.IntOrString]():
		v.Set(reflect.ValueOf(intstr.Parse(value)))
	case v.Kind() == reflect.String:
		v.SetString(value)
	case v.CanInt():
		n, _ := strconv.Atoi(value)
		v.SetInt(int64(n))
	case v.Kind() == reflect.Bool:
		v.SetBool(value == "true")
	}
}

// declaredDefaults are the Struct.Field names of every field of the input model with a default.
func declaredDefaults(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || !strings.HasPrefix(t.PkgPath(), reflect.TypeFor[api.Role]().PkgPath()) {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("default"); ok {
			out = append(out, t.Name()+"."+f.Name)
		}
		out = append(out, declaredDefaults(f.Type, seen)...)
	}
	return out
}
