// SPDX-License-Identifier: Apache-2.0

package kubeprovider

import (
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The keys of the provider's state besides the live object: provider/pkg/provider/provider.go
// checkpointObject and its constants.
const (
	inputsKey            = "__inputs"
	initialAPIVersionKey = "__initialApiVersion"
	fieldManagerKey      = "__fieldManager"
)

// The provider stores the schema's "x-kubernetes-*" keys with underscores and sends them with
// dashes: provider/pkg/provider/util.go underscoreToDashMap.
var underscoreToDash = map[string]string{
	"x_kubernetes_embedded_resource":       "x-kubernetes-embedded-resource",
	"x_kubernetes_int_or_string":           "x-kubernetes-int-or-string",
	"x_kubernetes_list_map_keys":           "x-kubernetes-list-map-keys",
	"x_kubernetes_list_type":               "x-kubernetes-list-type",
	"x_kubernetes_map_type":                "x-kubernetes-map-type",
	"x_kubernetes_preserve_unknown_fields": "x-kubernetes-preserve-unknown-fields",
	"x_kubernetes_validations":             "x-kubernetes-validations",
}

var dashToUnderscore = func() map[string]resource.PropertyKey {
	out := map[string]resource.PropertyKey{}
	for underscore, dash := range underscoreToDash {
		out[dash] = resource.PropertyKey(underscore)
	}
	return out
}()

// Unstructured is provider/pkg/provider/util.go propMapToUnstructured: the property map as the
// object the provider sends, "x_kubernetes_*" keys dashed and secrets unwrapped.
func Unstructured(pm resource.PropertyMap) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: pm.MapRepl(func(k string) (string, bool) {
		dash, ok := underscoreToDash[k]
		return dash, ok
	}, stripSecrets)}
}

func stripSecrets(v resource.PropertyValue) (any, bool) {
	if v.IsSecret() {
		return v.SecretValue().Element.MapRepl(nil, stripSecrets), true
	}
	return nil, false
}

// propertyMap is an object as the provider stores it: "x-kubernetes-*" keys with underscores.
func propertyMap(obj *unstructured.Unstructured) resource.PropertyMap {
	return resource.NewPropertyMapFromMapRepl(obj.Object, func(k string) (resource.PropertyKey, bool) {
		underscore, ok := dashToUnderscore[k]
		return underscore, ok
	}, nil)
}

// Checkpoint is provider/pkg/provider/provider.go checkpointObject: the state Create and Update
// return, the live object as the provider last saw it with the inputs that made it under
// "__inputs", the apiVersion first created and the field manager. (Secrets are not mirrored:
// this project creates none.)
func Checkpoint(inputs, live *unstructured.Unstructured, initialAPIVersion, fieldManager string) resource.PropertyMap {
	state := propertyMap(live)
	state[inputsKey] = resource.NewObjectProperty(propertyMap(inputs))
	state[initialAPIVersionKey] = resource.NewStringProperty(initialAPIVersion)
	state[fieldManagerKey] = resource.NewStringProperty(fieldManager)
	return state
}

// ParseCheckpoint is provider/pkg/provider/provider.go parseCheckpointObject: the inputs and the
// live object of a state (the "__*" keys other than the inputs stay in live, as there).
func ParseCheckpoint(state resource.PropertyMap) (inputs, live *unstructured.Unstructured) {
	obj := Unstructured(state).Object
	in, ok := obj[inputsKey].(map[string]any)
	if !ok {
		in = map[string]any{}
	}
	delete(obj, inputsKey)
	return &unstructured.Unstructured{Object: in}, &unstructured.Unstructured{Object: obj}
}

// InitialAPIVersion is provider.go initialAPIVersion: the apiVersion the state says the object
// was first created with, else the inputs'.
func InitialAPIVersion(state resource.PropertyMap, inputs *unstructured.Unstructured) string {
	if v, ok := state[initialAPIVersionKey]; ok && v.IsString() {
		return v.StringValue()
	}
	return inputs.GetAPIVersion()
}

// Refreshed is provider.go Read after its GET, for a resource this project created: the new
// inputs are the live object cut to the shape of the old (normalised) inputs, and the state is
// those with the live object.
func Refreshed(oldInputs resource.PropertyMap, live *unstructured.Unstructured, oldState resource.PropertyMap, fieldManager string) (inputs, state resource.PropertyMap) {
	old := normalizeInputs(Unstructured(oldInputs))
	liveInputs := pruneLiveState(live, old)
	return resource.NewPropertyMapFromMap(liveInputs.Object), Checkpoint(liveInputs, live, InitialAPIVersion(oldState, old), fieldManager)
}
