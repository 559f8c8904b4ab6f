// SPDX-License-Identifier: Apache-2.0

package api

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// The input model's enumerations, each declared once here: validation refuses any other value
// (field.NotSupported with this list) and the provider's schema gives each as an enum
// (provider/schema.go, withEnums), so TypeScript and Python programs get the values as types.

// Enum is a string type of the input model with a closed set of values.
type Enum interface {
	// AllowedValues are the values, in the order the documentation gives them.
	AllowedValues() []string
}

// EnumType is an enumeration as the schema and the reference give it: its name and its values.
type EnumType struct {
	Name   string
	Values []string
}

// enumsOfOtherPackages are the closed sets of the input model whose types another package
// declares (they cannot carry AllowedValues here), under the name the schema gives each.
var enumsOfOtherPackages = map[reflect.Type]EnumType{
	// The Endpoint Picker releases are eppconfig's, which knows what each one is.
	reflect.TypeFor[EndpointPickerRelease](): {"EndpointPickerRelease", values(eppconfig.Releases()...)},
	// LWS's own: sigs.k8s.io/lws api/leaderworkerset/v1 leaderworkerset_types.go (the
	// +kubebuilder:validation:Enum markers of RestartPolicy and StartupPolicy).
	reflect.TypeFor[lwsv1.RestartPolicyType](): {"RestartPolicy", values(lwsv1.RecreateGroupOnPodRestart, lwsv1.NoneRestartPolicy)},
	reflect.TypeFor[lwsv1.StartupPolicyType](): {"StartupPolicy", values(lwsv1.LeaderCreatedStartupPolicy, lwsv1.LeaderReadyStartupPolicy)},
	// The access modes a model cache claim may have: every server mounts it at once (model.go,
	// validateModelCache), so neither ReadWriteOnce nor ReadWriteOncePod.
	reflect.TypeFor[corev1.PersistentVolumeAccessMode](): {"ModelCacheAccessMode", values(corev1.ReadWriteMany, corev1.ReadOnlyMany)},
	// A node taint's effects (k8s.io/api core/v1 types.go, TaintEffect).
	reflect.TypeFor[corev1.TaintEffect](): {"TaintEffect", values(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)},
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
func (RouterMode) AllowedValues() []string     { return values(RouterStandalone, RouterGateway) }
func (InferenceCRDGroups) AllowedValues() []string {
	return values(CRDGroupsInferenceExtension, CRDGroupsLLMD, CRDGroupsBoth)
}
func (CapacityType) AllowedValues() []string {
	return []string{karpenter.CapacityTypeOnDemand, karpenter.CapacityTypeSpot, karpenter.CapacityTypeReserved}
}

// EnumOf is t's name and values when t is one of the input model's enumerations: an Enum of this
// package, or a closed set another package declares.
func EnumOf(t reflect.Type) (EnumType, bool) {
	if t.Kind() != reflect.String {
		return EnumType{}, false
	}
	if enum, ok := enumsOfOtherPackages[t]; ok {
		return enum, true
	}
	if enum, ok := reflect.New(t).Elem().Interface().(Enum); ok && t.PkgPath() == reflect.TypeFor[Enum]().PkgPath() {
		return EnumType{Name: t.Name(), Values: enum.AllowedValues()}, true
	}
	return EnumType{}, false
}

// allowedValues are the values of the enumeration T, for validation's field.NotSupported.
func allowedValues[T ~string]() []string {
	enum, _ := EnumOf(reflect.TypeFor[T]())
	return enum.Values
}

func values[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
