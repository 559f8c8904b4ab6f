// SPDX-License-Identifier: Apache-2.0

package keda

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KEDA's ScaledObject (keda.sh/v1alpha1), the fields this project sets, as KEDA v2.21's CRD
// (config/crd/bases/keda.sh_scaledobjects.yaml in github.com/kedacore/keda/v2) defines them.
// KEDA's own Go types cannot be imported here: v2.16 does not build with controller-runtime
// v0.22, v2.20 and later need k8s.io v0.36 (docs/design/0014-autoscaling.md). tests/conformance
// checks every ScaledObject we emit against KEDA's CRD in a real API server, so a field that
// drifts from it fails there.
//
// +kubebuilder:object:root=true
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ScaledObjectSpec `json:"spec"`
	// Status is what KEDA reports; `fusioninfer status` reads it, the render never sets it.
	Status *ScaledObjectStatus `json:"status,omitempty"`
}

// ScaledObjectStatus is the part of KEDA's ScaledObjectStatus this project reads.
type ScaledObjectStatus struct {
	// LastActiveTime is when a trigger was last active (its value above the activation
	// threshold): a target at zero replicas has been idle since.
	LastActiveTime *metav1.Time `json:"lastActiveTime,omitempty"`
}

// ScaledObjectSpec is the part of KEDA's ScaledObjectSpec this project sets.
type ScaledObjectSpec struct {
	ScaleTargetRef  *ScaleTarget    `json:"scaleTargetRef"`
	PollingInterval *int32          `json:"pollingInterval,omitempty"`
	CooldownPeriod  *int32          `json:"cooldownPeriod,omitempty"`
	MinReplicaCount *int32          `json:"minReplicaCount,omitempty"`
	MaxReplicaCount *int32          `json:"maxReplicaCount,omitempty"`
	Advanced        *AdvancedConfig `json:"advanced,omitempty"`
	Triggers        []ScaleTriggers `json:"triggers"`
}

// ScaleTarget is the object KEDA scales through its scale subresource.
type ScaleTarget struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
}

// AdvancedConfig holds the HPA KEDA makes.
type AdvancedConfig struct {
	HorizontalPodAutoscalerConfig *HorizontalPodAutoscalerConfig `json:"horizontalPodAutoscalerConfig,omitempty"`
}

// HorizontalPodAutoscalerConfig shapes the HPA KEDA makes.
type HorizontalPodAutoscalerConfig struct {
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// ScaleTriggers is one of KEDA's scalers and its settings.
type ScaleTriggers struct {
	Type       string                         `json:"type"`
	Metadata   map[string]string              `json:"metadata"`
	MetricType autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}
