// SPDX-License-Identifier: Apache-2.0

package karpenter

import (
	"slices"
	"strings"
)

// Karpenter v1.8.0's rules for the labels of a NodePool's nodes (sigs.k8s.io/karpenter
// pkg/apis/v1/labels.go: WellKnownLabels, RestrictedLabelDomains, LabelDomainExceptions,
// RestrictedLabels, IsRestrictedLabel, IsRestrictedNodeLabel). Karpenter's NodePool validation
// (pkg/apis/v1/nodepool_validation.go, (*NodeClaimTemplate).validateLabels, run by its NodePool
// validation controller) refuses a template label in a restricted domain unless it is well known,
// and the NodePool label itself: such a NodePool is never Ready and Karpenter launches nothing for
// it, though the API server's CEL rules on the CRD let some of those keys through
// (beta.kubernetes.io/arch, for one). mirror_test.go holds these lists against Karpenter's.
var (
	// KarpenterWellKnownLabels are the labels of restricted domains Karpenter knows and takes.
	KarpenterWellKnownLabels = []string{
		NodePoolLabelKey,
		"topology.kubernetes.io/zone",
		"topology.kubernetes.io/region",
		"node.kubernetes.io/instance-type",
		"kubernetes.io/arch",
		"kubernetes.io/os",
		CapacityTypeLabelKey,
		"node.kubernetes.io/windows-build",
	}
	// KarpenterRestrictedLabelDomains are the domains (and their subdomains) of labels Karpenter
	// keeps for the kubelet and itself.
	KarpenterRestrictedLabelDomains = []string{"kubernetes.io", "k8s.io", KarpenterGroupVersion.Group}
	// karpenterLabelDomainExceptions are subdomains of the restricted ones Karpenter allows.
	karpenterLabelDomainExceptions = []string{"kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io"}
	// karpenterRestrictedLabels are single keys Karpenter refuses.
	karpenterRestrictedLabels = []string{"kubernetes.io/hostname"}
)

// KarpenterRefusesNodeLabel reports whether Karpenter's NodePool validation refuses key as a
// label of the pool's nodes: the NodePool label itself, or a key of a restricted domain that is
// not well known ((*NodeClaimTemplate).validateLabels with IsRestrictedLabel).
func KarpenterRefusesNodeLabel(key string) bool {
	if key == NodePoolLabelKey {
		return true
	}
	if slices.Contains(KarpenterWellKnownLabels, key) {
		return false
	}
	domain, _, found := strings.Cut(key, "/")
	if !found {
		domain = ""
	}
	for _, exception := range karpenterLabelDomainExceptions {
		if strings.HasSuffix(domain, exception) {
			return false
		}
	}
	for _, restricted := range KarpenterRestrictedLabelDomains {
		if strings.HasSuffix(domain, restricted) {
			return true
		}
	}
	return slices.Contains(karpenterRestrictedLabels, key)
}
