// SPDX-License-Identifier: Apache-2.0

package render

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// An Endpoint Picker of several replicas: a PodDisruptionBudget and a spread over nodes, so that
// losing a node or draining one leaves a picker (docs/design/0035-an-endpoint-picker-that-survives-losing-a-replica.md).
// Which replicas are Ready is the release's (eppconfig.Release.HealthServices): with leader
// election only the leader, so the Service sends ext_proc to it alone; a standalone router's
// pickers do not elect (docs/design/0044-a-standalone-door-that-stays-open.md), and all are Ready.

// KindPodDisruptionBudget is the kind of the Endpoint Picker's disruption budget.
var KindPodDisruptionBudget = TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"}

const (
	suffixEPPDisruptionBudget = "epp-pdb"
	// hostnameTopologyKey spreads the pickers over nodes, a well-known label every node has.
	hostnameTopologyKey = corev1.LabelHostname
)

// endpointPickerHARefs are the objects an Endpoint Picker of several replicas adds: its
// disruption budget, once the Deployment is there (a budget over no pods guards nothing).
func endpointPickerHARefs(svc *api.InferenceService) []Ref {
	router := svc.Spec.Router()
	if router == nil || router.EndpointPickerReplicas() < 2 {
		return nil
	}
	return []Ref{routerRef(svc, KindPodDisruptionBudget, api.EndpointPickerName(svc.Name), suffixEPPDisruptionBudget, suffixEPPDeployment)}
}

// highlyAvailable: the Endpoint Picker runs more than one replica.
func (r *routing) highlyAvailable() bool { return r.router.EndpointPickerReplicas() > 1 }

// disruptionBudget keeps one Endpoint Picker Ready through voluntary disruptions (drains,
// Karpenter's consolidation): minAvailable 1, whatever the replica count. With leader election
// only the leader is Ready, so its eviction is refused while it is the one Ready replica (a
// drain of its node waits for an operator to delete it, who then takes the failover's gap
// knowingly), and the standbys, never Ready, are always evictable (AlwaysAllow: a running pod that
// is not Ready may be evicted whatever the budget, k8s.io/api policy/v1
// UnhealthyPodEvictionPolicyType; maxUnavailable 1 would want replicas-1 Ready pods, and under the
// default IfHealthyBudget no standby could go either). Without
// leader election (lwepp) every replica is Ready and all but one may go. A standalone router's
// pickers are each a door of its Service, all Ready: maxUnavailable 1, so a drain takes them one
// at a time, each after the one before has been replaced, and is never refused for long.
func (r *routing) disruptionBudget(ref Ref) *policyv1.PodDisruptionBudget {
	budget := &policyv1.PodDisruptionBudget{
		TypeMeta:   typeMeta(KindPodDisruptionBudget),
		ObjectMeta: r.meta(ref),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               ptr.To(intstr.FromInt32(1)),
			Selector:                   &metav1.LabelSelector{MatchLabels: r.eppSelector()},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
	if r.router.Standalone() {
		budget.Spec.MinAvailable, budget.Spec.MaxUnavailable = nil, ptr.To(intstr.FromInt32(1))
	}
	return budget
}

// topologySpread spreads the Endpoint Picker's replicas over nodes, preferred and not required
// (ScheduleAnyway): a leader and its standby on one node still serve, while a required spread
// would leave a replica Pending where there is one node for it, and with the Recreate strategy a
// rollout would then wait for a node before any picker serves. Only the nodes the pod may run
// on count (nodeTaintsPolicy Honor): the GPU nodes, tainted, would otherwise be empty domains.
func (r *routing) topologySpread() []corev1.TopologySpreadConstraint {
	if !r.highlyAvailable() {
		return nil
	}
	return []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       hostnameTopologyKey,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: r.eppSelector()},
		NodeTaintsPolicy:  ptr.To(corev1.NodeInclusionPolicyHonor),
	}}
}
