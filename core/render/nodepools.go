// SPDX-License-Identifier: Apache-2.0

package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// Node labels the pools use.
const (
	LabelGPUProduct   = "nvidia.com/gpu.product"
	LabelInstanceType = corev1.LabelInstanceTypeStable
	// LabelInstanceFamily is Karpenter's AWS provider label for instance families.
	LabelInstanceFamily = api.InstanceFamilyLabel
	LabelNodePool       = api.ReservedLabelPrefix + "node-pool"
)

// Disruption of a serving GPU pool: only empty nodes are consolidated (after the pool's
// consolidateAfter), a few at a time, so a node that serves a model is never taken away to repack
// the cluster; and nodes do not expire (Karpenter's default, 720h, would recycle every serving
// node monthly).
var disruptionBudgetOf = "10%"

// gpuTaint keeps non-GPU pods off GPU nodes; the service's pods tolerate it.
var gpuTaint = api.GPUNodeTaint

func nodePoolSuffix(pool string) string { return "nodepool-" + pool }

// buildNodePool is the Karpenter NodePool of a karpenter pool.
func buildNodePool(svc *api.InferenceService, pool *api.NodePool) *karpenter.NodePool {
	requirements := []karpenter.NodeSelectorRequirementWithMinValues{requirement(karpenter.CapacityTypeLabelKey, pool.CapacityTypeValues())}
	if len(pool.InstanceTypes) > 0 {
		requirements = append(requirements, requirement(LabelInstanceType, pool.InstanceTypes))
	}
	if len(pool.InstanceFamilies) > 0 {
		requirements = append(requirements, requirement(LabelInstanceFamily, pool.InstanceFamilies))
	}
	taints := []corev1.Taint{gpuTaint}
	for _, t := range pool.Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return &karpenter.NodePool{
		TypeMeta: metav1.TypeMeta{APIVersion: KindNodePool.APIVersion, Kind: KindNodePool.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:   api.KarpenterNodePoolName(svc.Name, pool.Name),
			Labels: serviceObjectLabels(svc),
			// A NodePool has no readiness of its own: its nodes come when pods need them.
			Annotations: map[string]string{AnnotationPulumiSkipAwait: "true"},
		},
		Spec: karpenter.NodePoolSpec{
			Template: karpenter.NodeClaimTemplate{
				TemplateMeta: karpenter.TemplateMeta{Labels: merged(pool.Labels, map[string]string{
					LabelService: svc.Name, LabelNodePool: pool.Name,
				})},
				Spec: karpenter.NodeClaimTemplateSpec{
					Requirements: requirements,
					Taints:       taints,
					NodeClassRef: &karpenter.NodeClassReference{Group: pool.NodeClassRef.Group, Kind: pool.NodeClassRef.Kind, Name: pool.NodeClassRef.Name},
					ExpireAfter:  karpenter.Never,
				},
			},
			Disruption: karpenter.Disruption{
				ConsolidationPolicy: karpenter.ConsolidationPolicyWhenEmpty,
				ConsolidateAfter:    pool.ConsolidateAfterOrDefault().String(),
				Budgets:             []karpenter.Budget{{Nodes: disruptionBudgetOf}},
			},
			Limits: corev1.ResourceList{api.GPUResourceName: *resource.NewQuantity(poolLimit(&svc.Spec, svc.Name, pool).GPUs, resource.DecimalSI)},
		},
	}
}

func requirement(key string, values []string) karpenter.NodeSelectorRequirementWithMinValues {
	return karpenter.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
		Key: key, Operator: corev1.NodeSelectorOpIn, Values: append([]string{}, values...),
	}}
}

// PoolLimit is what a karpenter pool's NodePool may launch (its nvidia.com/gpu limit), and why.
type PoolLimit struct {
	// Pool is the pool's name in the spec; NodePool is the Karpenter NodePool's.
	Pool, NodePool string
	// GPUs is the limit: Nodes nodes of GPUsPerNode.
	GPUs, Nodes, GPUsPerNode int64
	// Roles are the roles on the pool, in spec order.
	Roles []PoolLimitRole
}

// PoolLimitRole is one role's share of a pool's limit.
type PoolLimitRole struct {
	Role string
	// Replicas are the role's at full size (an autoscaled role's maxReplicas); Surge the
	// replicas a rollout may add at once (maxSurge x the role's largest batch).
	Replicas, Surge int64
	// Nodes are the nodes they take: a multi-node pod takes a whole node, single-node pods pack.
	Nodes int64
}

// PoolLimits are the limits of the spec's karpenter pools, in spec order: the node capacity the
// pool's roles need at full size plus the groups one rollout batch may surge. Karpenter limits
// count node capacity, not pod requests, so whole nodes are counted.
func PoolLimits(spec *api.InferenceServiceSpec, service string) []PoolLimit {
	var out []PoolLimit
	for _, pool := range karpenterPools(spec) {
		out = append(out, poolLimit(spec, service, pool))
	}
	return out
}

func poolLimit(spec *api.InferenceServiceSpec, service string, pool *api.NodePool) PoolLimit {
	limit := PoolLimit{Pool: pool.Name, NodePool: api.KarpenterNodePoolName(service, pool.Name), GPUsPerNode: int64(pool.GPUsPerNode)}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if role.NodePool != pool.Name || !role.ComponentType.Serving() {
			continue
		}
		gpus := api.PodGPUs(&role.Template.Spec)
		if gpus == 0 {
			continue
		}
		// An autoscaled role may grow to maxReplicas; its elastic LWS rolls after the base
		// batches, surging no more than they do.
		share := PoolLimitRole{Role: role.Name, Replicas: int64(role.MaxReplicaCount()), Surge: int64(role.MaxSurge()) * int64(updatedAtOnce(spec, role))}
		replicas := share.Replicas + share.Surge
		if role.MultiNode() {
			share.Nodes = replicas * int64(role.NodeCount())
		} else {
			podsPerNode := int64(pool.GPUsPerNode) / gpus
			share.Nodes = (replicas + podsPerNode - 1) / podsPerNode
		}
		limit.Roles = append(limit.Roles, share)
		limit.Nodes += share.Nodes
	}
	limit.GPUs = limit.Nodes * limit.GPUsPerNode
	return limit
}

// placeOnPool gives a role's pod template its pool's selectors, affinity and tolerations.
func placeOnPool(svcName string, pool *api.NodePool, spec *corev1.PodSpec) {
	selector := map[string]string{}
	var required, preferred []corev1.NodeSelectorRequirement
	switch pool.PoolKind() {
	case api.NodePoolKarpenter:
		selector[karpenter.NodePoolLabelKey] = api.KarpenterNodePoolName(svcName, pool.Name)
		// Karpenter cannot provision for a label GPU feature discovery adds later: a preference.
		if len(pool.Accelerators) > 0 {
			preferred = append(preferred, corev1.NodeSelectorRequirement{Key: LabelGPUProduct, Operator: corev1.NodeSelectorOpIn, Values: pool.Accelerators})
		}
	case api.NodePoolExisting:
		for k, v := range pool.Labels {
			selector[k] = v
		}
		if len(pool.Accelerators) > 0 {
			required = append(required, corev1.NodeSelectorRequirement{Key: LabelGPUProduct, Operator: corev1.NodeSelectorOpIn, Values: pool.Accelerators})
		}
		if len(pool.InstanceTypes) > 0 {
			required = append(required, corev1.NodeSelectorRequirement{Key: LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: pool.InstanceTypes})
		}
	}
	spec.NodeSelector = merged(spec.NodeSelector, selector)
	addNodeAffinity(spec, required, preferred)
	tolerate(spec, gpuTaint)
	for _, t := range pool.Taints {
		tolerate(spec, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
}

// addNodeAffinity ANDs the required expressions into every term the user wrote (terms are ORed)
// and adds the preferred ones.
func addNodeAffinity(spec *corev1.PodSpec, required, preferred []corev1.NodeSelectorRequirement) {
	if len(required) == 0 && len(preferred) == 0 {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if len(required) > 0 {
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
		}
		terms := na.RequiredDuringSchedulingIgnoredDuringExecution
		if len(terms.NodeSelectorTerms) == 0 {
			terms.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
		}
		for i := range terms.NodeSelectorTerms {
			terms.NodeSelectorTerms[i].MatchExpressions = append(terms.NodeSelectorTerms[i].MatchExpressions, required...)
		}
	}
	if len(preferred) > 0 {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: preferred}})
	}
}

// tolerate adds a toleration for the taint unless the pod already has one for it.
func tolerate(spec *corev1.PodSpec, taint corev1.Taint) {
	for _, t := range spec.Tolerations {
		keyMatches := t.Key == taint.Key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)
		valueMatches := t.Operator == corev1.TolerationOpExists || t.Value == taint.Value
		if keyMatches && valueMatches && (t.Effect == "" || t.Effect == taint.Effect) {
			return
		}
	}
	toleration := corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}
	if taint.Key == gpuTaint.Key {
		toleration = corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: taint.Effect}
	}
	spec.Tolerations = append(spec.Tolerations, toleration)
}

// karpenterPools are the service's karpenter pools, in spec order.
func karpenterPools(spec *api.InferenceServiceSpec) []*api.NodePool {
	var out []*api.NodePool
	for i := range spec.NodePools {
		if spec.NodePools[i].PoolKind() == api.NodePoolKarpenter {
			out = append(out, &spec.NodePools[i])
		}
	}
	return out
}

// updatedAtOnce is how many of a role's replicas a rollout updates together: its largest batch
// (the gang's minimal set may make the first larger), or every replica when nothing is awaited.
func updatedAtOnce(spec *api.InferenceServiceSpec, role *api.Role) int32 {
	if !spec.RolloutBatched() {
		return role.ReplicaCount()
	}
	return max(role.RolloutBatchSize(), spec.RolloutFirstBatch(role))
}
