// SPDX-License-Identifier: Apache-2.0

package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// buildPodGroup is the service's one shared PodGroup (docs/design/0000-the-fusioninfer-design.md).
func buildPodGroup(svc *api.InferenceService) *volcanov1beta1.PodGroup {
	pg := &volcanov1beta1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: volcanov1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      api.PodGroupName(svc.Name),
			Namespace: svc.Namespace,
			Labels:    serviceObjectLabels(svc),
			// A PodGroup has no readiness to wait for; per-role status comes from the LWSs.
			Annotations: map[string]string{AnnotationPulumiSkipAwait: "true"},
		},
	}
	if svc.Spec.GangMode() == api.GangModeTaskMember {
		pg.Spec = taskMemberSpec(svc)
	} else {
		pg.Spec = subGroupSpec(svc)
	}
	if s := svc.Spec.SchedulingStrategy; s != nil {
		pg.Spec.Queue = s.Queue
		pg.Spec.PriorityClassName = s.PriorityClassName
		if s.MinResources == api.MinResourcesAuto {
			pg.Spec.MinResources = ptr.To(minimalSetResources(&svc.Spec))
		}
	}
	pg.Spec.NetworkTopology = networkTopologySpec(svc.Spec.GroupTopologyPolicy())
	return pg
}

// networkTopologySpec is Volcano's form of a topology policy (nil for none).
func networkTopologySpec(p *api.NetworkTopologyPolicy) *volcanov1beta1.NetworkTopologySpec {
	if p == nil {
		return nil
	}
	return &volcanov1beta1.NetworkTopologySpec{
		Mode:               volcanov1beta1.NetworkTopologyMode(p.TopologyMode()),
		HighestTierAllowed: p.HighestTierAllowed,
		HighestTierName:    p.HighestTierName,
	}
}

// subGroupSpec gangs each replica whole (subGroupSize nodeCount, grouped by replica index) and
// requires minRoleReplicas of every role together; extra replicas are placed whole when they fit.
func subGroupSpec(svc *api.InferenceService) volcanov1beta1.PodGroupSpec {
	var spec volcanov1beta1.PodGroupSpec
	for i := range svc.Spec.Roles {
		role := &svc.Spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		minReplicas := svc.Spec.MinRoleReplicas(role.Name)
		spec.MinMember += minReplicas * role.NodeCount()
		base := volcanov1beta1.SubGroupPolicySpec{
			Name:         role.Name,
			SubGroupSize: ptr.To(role.NodeCount()),
			MinSubGroups: ptr.To(minReplicas),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				LabelService:  svc.Name,
				LabelRoleName: role.Name,
			}},
			// Without it Volcano does not split the role's pods by replica.
			MatchLabelKeys:  []string{LabelReplicaIndex},
			NetworkTopology: networkTopologySpec(svc.Spec.RoleTopologyPolicy(role)),
		}
		if !role.Autoscaled() {
			spec.SubGroupPolicy = append(spec.SubGroupPolicy, base)
			continue
		}
		baseReplicasOnly(base.LabelSelector)
		spec.SubGroupPolicy = append(spec.SubGroupPolicy, base, elasticSubGroup(svc, role))
	}
	return spec
}

// taskMemberSpec is the fusioninfer design's literal PodGroup for Volcano < 1.14: every replica is a task and
// every pod is required, so nothing is scheduled until the whole service fits.
func taskMemberSpec(svc *api.InferenceService) volcanov1beta1.PodGroupSpec {
	spec := volcanov1beta1.PodGroupSpec{MinTaskMember: map[string]int32{}}
	for i := range svc.Spec.Roles {
		role := &svc.Spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		for r := int32(0); r < role.ReplicaCount(); r++ {
			spec.MinTaskMember[api.TaskName(role.Name, r)] = role.NodeCount()
			spec.MinMember += role.NodeCount()
		}
	}
	return spec
}

func podGroupMinMember(o Object) int32 {
	return o.Object.(*volcanov1beta1.PodGroup).Spec.MinMember
}
