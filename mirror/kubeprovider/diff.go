// SPDX-License-Identifier: Apache-2.0

package kubeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"
)

// Diff is provider/pkg/provider/provider.go Diff under server-side apply: the old live object
// (from the state Create or Update returned, ParseCheckpoint) pruned to the shape of the old
// inputs (pruneLiveState), compared with the new inputs as a JSON merge patch, each changed path
// a detailed diff (convertPatchToDiff), less the paths under ignoreChanges. A change of name or
// namespace, or of a field the provider's database says cannot change in place (forceNew; for a
// Patch resource only name and namespace), replaces. namespaced says whether the kind is
// namespaced (the provider asks discovery, and takes an unknown kind as namespaced).
func Diff(urn resource.URN, olds, news resource.PropertyMap, ignoreChanges []string, namespaced bool) (plugin.DiffResponse, error) {
	newInputs := normalizeInputs(Unstructured(news))
	oldInputs, oldLive := ParseCheckpoint(olds)
	if oldLive.GetName() == "" {
		return plugin.DiffResponse{}, fmt.Errorf("expected live object name to be nonempty: %v", oldLive)
	}
	oldInputs = normalizeInputs(oldInputs)
	oldLivePruned := pruneLiveState(oldLive, oldInputs)
	if namespaced {
		oldLivePruned.SetNamespace(canonicalNamespace(oldLivePruned.GetNamespace()))
		newInputs.SetNamespace(canonicalNamespace(newInputs.GetNamespace()))
	} else {
		oldLivePruned.SetNamespace("")
		newInputs.SetNamespace("")
	}
	if oldLivePruned.GroupVersionKind().Empty() {
		oldLivePruned.SetGroupVersionKind(newInputs.GroupVersionKind())
	}
	if oldLivePruned.GetResourceVersion() != "" { // server-side apply mode
		oldLivePruned.SetResourceVersion("")
	}
	if newInputs.GetName() != "" {
		oldLivePruned.SetName(oldLive.GetName())
	}

	patch, err := mergePatch(oldLivePruned.Object, newInputs.Object)
	if err != nil {
		//lint:ignore ST1005 the provider's own words
		return plugin.DiffResponse{}, fmt.Errorf("Failed to check for changes in resource %q: %w", urn, err)
	}
	response := plugin.DiffResponse{Changes: plugin.DiffNone}
	if len(patch) == 0 {
		return response, nil
	}
	forceNew := []string{".metadata.name", ".metadata.namespace"}
	if !IsPatchResource(urn, newInputs.GetKind()) {
		forceNew = forceNewProperties(newInputs)
	}
	converter := &patchConverter{forceNew: forceNew, diff: map[string]plugin.PropertyDiff{}}
	if err := converter.addMap(nil, patch, oldLivePruned.Object, newInputs.Object, oldInputs.Object, false); err != nil {
		return plugin.DiffResponse{}, err
	}
	for path := range converter.diff {
		parsed, err := resource.ParsePropertyPath(path)
		if err != nil {
			return plugin.DiffResponse{}, fmt.Errorf("failed to parse diff path: %w", err)
		}
		for _, ignore := range ignoreChanges {
			ignorePath, err := resource.ParsePropertyPath(ignore)
			if err != nil {
				return plugin.DiffResponse{}, fmt.Errorf("failed to parse ignore path: %w", err)
			}
			if ignorePath.Contains(parsed) {
				delete(converter.diff, path)
			}
		}
	}
	if len(converter.diff) == 0 {
		return response, nil
	}
	response.Changes = plugin.DiffSome
	response.DetailedDiff = converter.diff
	for path, d := range converter.diff {
		if d.Kind.IsReplace() || (d.Kind == plugin.DiffDelete && path == "metadata") {
			response.ReplaceKeys = append(response.ReplaceKeys, resource.PropertyKey(path))
		}
	}
	// Delete before replacing an object that keeps its name and namespace (the provider also
	// requires it to be named and not autonamed: every object here is).
	response.DeleteBeforeReplace = len(response.ReplaceKeys) > 0 && newInputs.GetName() != "" &&
		newInputs.GetName() == oldLive.GetName() && newInputs.GetNamespace() == oldLive.GetNamespace()
	return response, nil
}

// canonicalNamespace is provider.go canonicalNamespace: no namespace is "default".
func canonicalNamespace(namespace string) string {
	if namespace == "" {
		return "default"
	}
	return namespace
}

// mergePatch is provider.go inputPatch: the RFC 7386 merge patch from old to new, decoded.
func mergePatch(old, new map[string]any) (map[string]any, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(new)
	if err != nil {
		return nil, err
	}
	data, err := jsonpatch.CreateMergePatch(oldJSON, newJSON)
	if err != nil {
		return nil, err
	}
	patch := map[string]any{}
	return patch, json.Unmarshal(data, &patch)
}

// patchConverter is provider.go patchConverter: a merge patch turned into Pulumi's detailed diff.
type patchConverter struct {
	forceNew []string
	diff     map[string]plugin.PropertyDiff
}

// missing stands for a key absent from a map, apart from one present with a null value.
type missingValue struct{}

var missing = missingValue{}

func get(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return missing
}

// addValue is provider.go addPatchValueToDiff: a patched value v at path, against the old live
// value, the new and the old input; an update only where the value really changed (a merge patch
// replaces arrays whole), a replacement where a forceNew path changed.
func (pc *patchConverter) addValue(path []any, v, old, newInput, oldInput any, inArray bool) error {
	if newInput == missing && (v != nil || oldInput == missing) {
		return nil // the cluster's own field, or no input at all
	}
	var kind plugin.DiffKind
	inputDiff := false
	switch {
	case v == nil:
		if _, computed := newInput.(resource.Computed); computed {
			kind = plugin.DiffUpdate
			if old == missing {
				kind = plugin.DiffAdd
			}
		} else {
			kind, inputDiff = plugin.DiffDelete, true
		}
	case old == missing:
		kind = plugin.DiffAdd
	default:
		switch v := v.(type) {
		case map[string]any:
			if oldMap, ok := old.(map[string]any); ok {
				newMap, _ := newInput.(map[string]any)
				oldInputMap, _ := oldInput.(map[string]any)
				return pc.addMap(path, v, oldMap, newMap, oldInputMap, inArray)
			}
		case []any:
			if oldArray, ok := old.([]any); ok {
				newArray, _ := newInput.([]any)
				oldInputArray, _ := oldInput.([]any)
				return pc.addArray(path, v, oldArray, newArray, oldInputArray)
			}
		default:
			if reflect.DeepEqual(v, old) || equalNumbers(v, old) {
				return nil
			}
		}
		kind = plugin.DiffUpdate
	}
	replaces, err := patchPropertiesChanged(patchSlice(path, v), pc.forceNew)
	if err != nil {
		return err
	}
	if replaces {
		kind = map[plugin.DiffKind]plugin.DiffKind{plugin.DiffAdd: plugin.DiffAddReplace,
			plugin.DiffDelete: plugin.DiffDeleteReplace, plugin.DiffUpdate: plugin.DiffUpdateReplace}[kind]
	}
	pc.diff[propertyPath(path)] = plugin.PropertyDiff{Kind: kind, InputDiff: inputDiff}
	return nil
}

// addMap is provider.go addPatchMapToDiff; within an array it also records the old keys the
// patch drops (a merge patch replaces arrays whole, so their deletions are not in it).
func (pc *patchConverter) addMap(path []any, m, old, newInput, oldInput map[string]any, inArray bool) error {
	for k, v := range m {
		if err := pc.addValue(append(path[:len(path):len(path)], k), v, get(old, k), get(newInput, k), get(oldInput, k), inArray); err != nil {
			return err
		}
	}
	if !inArray {
		return nil
	}
	for k, v := range old {
		if _, ok := m[k]; ok {
			continue
		}
		if err := pc.addValue(append(path[:len(path):len(path)], k), nil, v, get(newInput, k), get(oldInput, k), inArray); err != nil {
			return err
		}
	}
	return nil
}

// addArray is provider.go addPatchArrayToDiff: element by element, then the added or removed tail.
func (pc *patchConverter) addArray(path []any, a, old, newInput, oldInput []any) error {
	at := func(arr []any, i int) any {
		if i < len(arr) {
			return arr[i]
		}
		return nil
	}
	for i := 0; i < max(len(a), len(old)); i++ {
		var v, o any = nil, missing
		if i < len(a) {
			v = a[i]
		}
		if i < len(old) {
			o = old[i]
		}
		if err := pc.addValue(append(path[:len(path):len(path)], i), v, o, at(newInput, i), at(oldInput, i), true); err != nil {
			return err
		}
	}
	return nil
}

// equalNumbers is provider.go equalNumbers: an int64 and a float64 of the same value are equal.
func equalNumbers(a, b any) bool {
	toFloat := func(v any) (float64, bool) {
		switch n := v.(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, true
		}
		return 0, false
	}
	x, okA := toFloat(a)
	y, okB := toFloat(b)
	return okA && okB && x == y
}

// patchSlice is provider.go makePatchSlice: the value v nested at path, for a JSONPath query.
func patchSlice(path []any, v any) map[string]any {
	var out any = v
	for i := len(path) - 1; i >= 0; i-- {
		switch p := path[i].(type) {
		case string:
			out = map[string]any{p: out}
		case int:
			out = []any{out}
		}
	}
	m, _ := out.(map[string]any)
	return m
}

// patchPropertiesChanged is provider/pkg/openapi/match.go PatchPropertiesChanged: whether any of
// the JSONPaths finds something in the patch.
func patchPropertiesChanged(patch map[string]any, paths []string) (bool, error) {
	for _, path := range paths {
		j := jsonpath.New("")
		j.AllowMissingKeys(false)
		if err := j.Parse("{" + path + "}"); err != nil {
			return false, err
		}
		err := j.Execute(&bytes.Buffer{}, patch)
		if err != nil && strings.Contains(err.Error(), "not found") {
			continue
		}
		return true, nil
	}
	return false, nil
}

// propertyPath is the detailed diff's key for a path, as provider.go addPatchValueToDiff writes
// it: dotted names, [i] for indices, ["key"] for a key with a dot, a quote or a bracket.
func propertyPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			switch {
			case strings.ContainsAny(p, `."[]`):
				fmt.Fprintf(&b, `["%s"]`, strings.ReplaceAll(p, `"`, `\"`))
			case b.Len() > 0:
				b.WriteString("." + p)
			default:
				b.WriteString(p)
			}
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		}
	}
	return b.String()
}

// forceNewProperties is provider/pkg/provider/diff.go forceNewProperties for the kinds this
// project emits: name and namespace always; the fields its database lists per kind.
func forceNewProperties(obj *unstructured.Unstructured) []string {
	props := []string{".metadata.name", ".metadata.namespace"}
	gvk := obj.GroupVersionKind()
	group := gvk.Group
	if group == "" {
		group = coreGroup
	}
	return append(props, forceNew[group+"/"+gvk.Version+"/"+gvk.Kind]...)
}

// labelSelector is provider/pkg/provider/diff.go labelSelectorForceNewProperties.
func labelSelector(prefix string) []string {
	return []string{prefix + ".matchExpressions", prefix + ".matchExpressions.key", prefix + ".matchExpressions.operator",
		prefix + ".matchExpressions.values", prefix + ".matchLabels"}
}

// forceNew is provider/pkg/provider/diff.go forceNew, for the kinds this project emits (by
// group/version/kind; the core group as "core").
var forceNew = map[string][]string{
	"apps/v1/Deployment": append([]string{".spec.selector"}, labelSelector(".spec.selector")...),
	"batch/v1/Job": append([]string{".spec.completions", ".spec.parallelism", ".spec.selector", ".spec.template"},
		labelSelector(".spec.selector")...),
	"core/v1/PersistentVolumeClaim": append([]string{".spec.accessModes", ".spec.selector", ".spec.storageClassName", ".spec.volumeName"},
		labelSelector(".spec.selector")...),
	"core/v1/Service":                                 {".spec.clusterIP"},
	"rbac.authorization.k8s.io/v1/RoleBinding":        {".roleRef"},
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": {".roleRef"},
}
