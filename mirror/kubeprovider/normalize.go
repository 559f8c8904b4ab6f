// SPDX-License-Identifier: Apache-2.0

package kubeprovider

import (
	"reflect"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// knownGroupVersions are the built-in API versions, whose objects the provider normalises through
// their typed structs: provider/pkg/kinds/kinds.go KnownGroupVersions (those this project can
// emit, and the aliases of the core group).
var knownGroupVersions = map[string]bool{
	"v1": true, "core/v1": true, "apps/v1": true, "batch/v1": true, "rbac.authorization.k8s.io/v1": true,
	"admissionregistration.k8s.io/v1": true, "apiextensions.k8s.io/v1": true, "policy/v1": true,
	"scheduling.k8s.io/v1": true, "storage.k8s.io/v1": true, "networking.k8s.io/v1": true,
	"autoscaling/v2": true, "discovery.k8s.io/v1": true, "coordination.k8s.io/v1": true,
}

// readOnlyMetadata are the metadata fields the provider removes from inputs before comparing them:
// provider/pkg/provider/provider.go normalizeInputs.
var readOnlyMetadata = []string{"creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp",
	"generation", "managedFields", "resourceVersion", "uid"}

// normalizeInputs is provider/pkg/provider/provider.go normalizeInputs: an object of a built-in
// kind goes through its typed struct and back (clients.Normalize), keeping only the fields the
// inputs have (so "1000m" and "1" compare equal, and fields the type does not have go); any
// object loses the read-only metadata. Inputs with unknown values are not normalised.
func normalizeInputs(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if !hasComputedValue(obj.Object) && knownGroupVersions[obj.GetAPIVersion()] {
		if normalized, ok := normalize(obj); ok {
			obj = pruneLiveState(normalized, obj)
		}
	}
	for _, field := range readOnlyMetadata {
		unstructured.RemoveNestedField(obj.Object, "metadata", field)
	}
	return obj
}

// normalize is provider/pkg/clients/unstructured.go Normalize for the kinds this project emits:
// FromUnstructured into the client-go scheme's type, then ToUnstructured; a CRD only loses a
// false spec.preserveUnknownFields and its status (normalizeCRD). The provider returns the input
// unchanged where the scheme has no such type.
func normalize(obj *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	if obj.GetKind() == "CustomResourceDefinition" {
		out := obj.DeepCopy()
		if preserve, found, err := unstructured.NestedBool(out.Object, "spec", "preserveUnknownFields"); err == nil && found && !preserve {
			unstructured.RemoveNestedField(out.Object, "spec", "preserveUnknownFields")
		}
		unstructured.RemoveNestedField(out.Object, "status")
		return out, true
	}
	typed, err := scheme.Scheme.New(obj.GroupVersionKind())
	if err != nil {
		return nil, false
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, false
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, false
	}
	return &unstructured.Unstructured{Object: m}, true
}

// pruneLiveState is provider/pkg/provider/provider.go pruneLiveState: the live object cut to the
// shape of the inputs that made it, so fields the cluster fills in are not differences.
func pruneLiveState(live, inputs *unstructured.Unstructured) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: pruneMap(live.Object, inputs.Object)}
}

// pruneMap is provider/pkg/provider/util.go pruneMap: the entries of source whose key target has;
// where both values are maps or both slices of the same type, pruned in turn; any other value
// (a scalar, or a value whose type differs from target's) whole.
func pruneMap(source, target map[string]any) map[string]any {
	if source == nil || target == nil {
		return nil
	}
	out := map[string]any{}
	for key, value := range source {
		targetValue, ok := target[key]
		if !ok {
			continue
		}
		if value == nil || targetValue == nil || reflect.TypeOf(value) != reflect.TypeOf(targetValue) {
			out[key] = value
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			out[key] = pruneMap(v, targetValue.(map[string]any))
		case []any:
			out[key] = pruneSlice(v, targetValue.([]any))
		default:
			out[key] = value
		}
	}
	return out
}

// pruneSlice is provider/pkg/provider/util.go pruneSlice: element by element as far as target
// goes; a source whose first element's type differs from target's is kept whole.
func pruneSlice(source, target []any) []any {
	if source == nil || target == nil {
		return nil
	}
	out := make([]any, 0, len(target))
	if len(source) == 0 || len(target) == 0 {
		return out
	}
	if reflect.TypeOf(source[0]) != reflect.TypeOf(target[0]) {
		return runtime.DeepCopyJSONValue(source).([]any)
	}
	for i, targetValue := range target {
		if i >= len(source) {
			break
		}
		value := source[i]
		if value == nil || targetValue == nil {
			out = append(out, value)
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			if pruned := pruneMap(v, targetValue.(map[string]any)); pruned != nil {
				out = append(out, pruned)
			}
		case []any:
			if pruned := pruneSlice(v, targetValue.([]any)); pruned != nil {
				out = append(out, pruned)
			}
		default:
			out = append(out, value)
		}
	}
	return out
}

// hasComputedValue is provider/pkg/provider/util.go hasComputedValue: an input unknown at preview
// anywhere in the object.
func hasComputedValue(value any) bool {
	switch v := value.(type) {
	case resource.Computed:
		return true
	case map[string]any:
		return slices.ContainsFunc(mapValues(v), hasComputedValue)
	case []any:
		return slices.ContainsFunc(v, hasComputedValue)
	}
	return false
}

func mapValues(m map[string]any) []any {
	out := make([]any, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
