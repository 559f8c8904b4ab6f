package api

import "reflect"

// The input model's enumerations, each declared once here: validation refuses any other value
// (field.NotSupported with this list) and the provider's schema gives each as an enum
// (provider/schema.go, withEnums), so TypeScript and Python programs get the values as types.

// Enum is a string type of the input model with a closed set of values.
type Enum interface {
	// AllowedValues are the values, in the order the documentation gives them.
	AllowedValues() []string
}

func (ComponentType) AllowedValues() []string {
	return values(ComponentTypeWorker, ComponentTypePrefiller, ComponentTypeDecoder, ComponentTypeRouter)
}
func (NodePoolKind) AllowedValues() []string { return values(NodePoolKarpenter, NodePoolExisting) }
func (MinResourcesMode) AllowedValues() []string {
	return values(MinResourcesAuto, MinResourcesNone)
}
func (NetworkTopologyMode) AllowedValues() []string {
	return values(NetworkTopologyHard, NetworkTopologySoft)
}
func (GangMode) AllowedValues() []string        { return values(GangModeSubGroup, GangModeTaskMember) }
func (AwaitMode) AllowedValues() []string       { return values(AwaitAll, AwaitMinimal, AwaitNone) }
func (ModelLoadFormat) AllowedValues() []string { return values(RunaiStreamer) }
func (ModelFlexibilityMode) AllowedValues() []string {
	return values(DualPods)
}
func (PoolAPIVersion) AllowedValues() []string { return values(PoolV1, PoolV1Alpha2) }
func (FailureMode) AllowedValues() []string    { return values(FailClose, FailOpen) }
func (EndpointPickerRelease) AllowedValues() []string {
	return values(EPPReleaseLLMDRouter, EPPReleaseGIE150, EPPReleaseGIE, EPPReleaseLWEPP)
}

// EnumOf is t's Enum when t is one of the input model's enumerations.
func EnumOf(t reflect.Type) (Enum, bool) {
	if t.Kind() != reflect.String {
		return nil, false
	}
	enum, ok := reflect.New(t).Elem().Interface().(Enum)
	return enum, ok
}

func values[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
