// SPDX-License-Identifier: Apache-2.0

package karpenter

// Karpenter v1 (sigs.k8s.io/karpenter v1.8.0, pkg/apis/v1): the NodePool of a karpenter pool, and
// what `fusioninfer status` reads of a NodeClaim.

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KarpenterGroupVersion is Karpenter's API group and version.
var KarpenterGroupVersion = schema.GroupVersion{Group: "karpenter.sh", Version: "v1"}

// Labels, values and conditions of Karpenter v1 this project uses.
const (
	// NodePoolLabelKey is the label Karpenter puts on every node and NodeClaim of a NodePool.
	NodePoolLabelKey = "karpenter.sh/nodepool"
	// CapacityTypeLabelKey selects on-demand, spot or reserved capacity; its values are Karpenter's
	// capacity types (sigs.k8s.io/karpenter pkg/apis/v1/labels.go, CapacityTypeSpot,
	// CapacityTypeOnDemand, CapacityTypeReserved).
	CapacityTypeLabelKey = "karpenter.sh/capacity-type"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeSpot     = "spot"
	CapacityTypeReserved = "reserved"
	// ConsolidationPolicyWhenEmpty consolidates only nodes without workload pods.
	ConsolidationPolicyWhenEmpty = "WhenEmpty"
	// ConditionTypeLaunched is true once the cloud provider has launched a NodeClaim's instance.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeInitialized is true once a NodeClaim's node is ready for pods.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeReady is a NodePool's: false when Karpenter launches nothing for it (its
	// validation or its node class failed).
	ConditionTypeReady = "Ready"
	// Never is a duration that never elapses (Karpenter's NillableDuration without a value).
	Never = "Never"
)

// NodePool is a Karpenter NodePool: the nodes Karpenter may launch for pending pods.
// +kubebuilder:object:root=true
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              NodePoolSpec `json:"spec"`
	// Status is what Karpenter reports (`fusioninfer status` reads it; the project never sets it).
	Status *NodePoolStatus `json:"status,omitempty"`
}

// NodePoolStatus is what `fusioninfer status` reads of a NodePool's status.
type NodePoolStatus struct {
	// Resources is the capacity of the pool's nodes, which its limits cap.
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is how many nodes the pool has.
	Nodes *int64 `json:"nodes,omitempty"`
	// Conditions are Karpenter's (metav1.Condition's fields): Ready, ValidationSucceeded,
	// NodeClassReady, NodeRegistrationHealthy.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePoolList is a list of NodePools.
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the part of Karpenter's NodePoolSpec this project sets.
type NodePoolSpec struct {
	Template   NodeClaimTemplate `json:"template"`
	Disruption Disruption        `json:"disruption"`
	// Limits cap the node capacity the pool may launch, summed over its nodes.
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// NodeClaimTemplate describes the nodes of a pool.
type NodeClaimTemplate struct {
	TemplateMeta `json:"metadata,omitempty"`
	Spec         NodeClaimTemplateSpec `json:"spec"`
}

// TemplateMeta is the metadata every node of a pool carries.
type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the part of Karpenter's NodeClaimTemplateSpec this project sets.
type NodeClaimTemplateSpec struct {
	Taints       []corev1.Taint                         `json:"taints,omitempty"`
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	NodeClassRef *NodeClassReference                    `json:"nodeClassRef"`
	// ExpireAfter is a Go duration or Never.
	ExpireAfter string `json:"expireAfter,omitempty"`
}

// NodeSelectorRequirementWithMinValues is a node requirement, optionally with the least number
// of distinct values Karpenter must keep choosing from.
type NodeSelectorRequirementWithMinValues struct {
	corev1.NodeSelectorRequirement `json:",inline"`
	MinValues                      *int `json:"minValues,omitempty"`
}

// NodeClassReference names the cloud provider's node class.
type NodeClassReference struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Group string `json:"group"`
}

// Disruption is when Karpenter may take a pool's nodes away.
type Disruption struct {
	// ConsolidateAfter is a Go duration or Never.
	ConsolidateAfter    string   `json:"consolidateAfter"`
	ConsolidationPolicy string   `json:"consolidationPolicy,omitempty"`
	Budgets             []Budget `json:"budgets,omitempty"`
}

// Budget limits how many of a pool's nodes are disrupted at once.
type Budget struct {
	Nodes string `json:"nodes"`
}

// NodeClaim is what this project reads of a Karpenter NodeClaim: its labels and conditions.
// +kubebuilder:object:root=true
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimStatus holds a NodeClaim's node and conditions (Karpenter's are metav1.Condition's
// fields).
type NodeClaimStatus struct {
	// NodeName is the node Karpenter launched for the claim, once it registered.
	NodeName   string             `json:"nodeName,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}
