// SPDX-License-Identifier: Apache-2.0

package diagnosis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// What Karpenter (sigs.k8s.io/karpenter v1.8.0) and Volcano (v1.14.1) write that the causes of a
// karpenter pool read.
const (
	// karpenterComponent is the source of Karpenter's events.
	karpenterComponent = "karpenter"
	// karpenterEventPrefix starts the message of Karpenter's FailedScheduling event on a pod it
	// cannot launch a node for (pkg/controllers/provisioning/scheduling/events.go,
	// PodFailedToScheduleEvent).
	karpenterEventPrefix = "Failed to schedule pod, "
	// karpenterLimitError is in that message when the NodePool's limits stop a launch
	// (scheduling/scheduler.go: "all available instance types exceed limits for nodepool").
	karpenterLimitError = "exceed limits for nodepool"
	// karpenterNoCompatibleInstanceTypes is the reason of Karpenter's warning on a NodePool whose
	// requirements filter out every instance type (scheduling/events.go, NoCompatibleInstanceTypes).
	karpenterNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
	// volcanoSchedulable is the PodScheduled reason Volcano gives a pending pod it could place
	// but holds back, its gang or replica not whole (volcano pkg/scheduler/api/job_info.go,
	// TaskSchedulingReason: PodReasonSchedulable). Karpenter launches only for pods whose reason
	// is Unschedulable (pkg/utils/pod/scheduling.go, FailedToSchedule).
	volcanoSchedulable = "Schedulable"
)

// karpenterPoolCauses: what keeps a karpenter pool from giving the service's pending pods their
// nodes: a NodePool Karpenter does not take, a NodeClaim it cannot launch, a limit reached, no
// instance type that fits, and Volcano holding pods on empty nodes Karpenter counts as free.
func (d *diagnoser) karpenterPoolCauses() []Cause {
	var out []Cause
	for i := range d.o.NodePools {
		pool := &d.o.NodePools[i]
		object := "NodePool/" + pool.Name
		if pool.Status != nil {
			if ready := meta.FindStatusCondition(pool.Status.Conditions, karpenter.ConditionTypeReady); ready != nil && ready.Status == metav1.ConditionFalse {
				why := []string{orDefault(ready.Message, "it is not ready")}
				for _, c := range pool.Status.Conditions {
					if c.Type != karpenter.ConditionTypeReady && c.Status == metav1.ConditionFalse {
						why = append(why, fmt.Sprintf("%s: %s", c.Type, strings.TrimSpace(c.Reason+" "+c.Message)))
					}
				}
				c := Cause{Object: object, Reason: orDefault(ready.Reason, "NotReady"),
					Message: "Karpenter launches no node for the pool: " + strings.Join(why, "; "),
					Fix: fmt.Sprintf("the pool's nodeClassRef must name a node class that exists and is ready, and the NodePool pass "+
						"Karpenter's validation (kubectl describe nodepool %s)", pool.Name)}
				out = append(out, c)
				d.poolCauses[pool.Name] = &c
				continue
			}
		}
		pending := d.pendingPodsOf(pool.Name)
		if len(pending) == 0 {
			continue
		}
		for _, cause := range []func(*karpenter.NodePool, []*corev1.Pod) *Cause{d.limitCause, d.noInstanceTypeCause, d.heldNodesCause} {
			if c := cause(pool, pending); c != nil {
				out = append(out, *c)
				d.poolCauses[pool.Name] = c
				break
			}
		}
	}
	return append(out, d.nodeClaimCauses()...)
}

// pendingPodsOf are the service's pods that select the NodePool and are not on a node, by name.
func (d *diagnoser) pendingPodsOf(pool string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range d.o.Pods {
		p := &d.o.Pods[i]
		if p.Spec.NodeSelector[karpenter.NodePoolLabelKey] == pool && p.Spec.NodeName == "" && p.DeletionTimestamp == nil &&
			p.Status.Phase == corev1.PodPending {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// karpenterPoolError is what Karpenter's latest FailedScheduling event about one of the pods says
// of the NodePool, and that pod's name; "" when it says nothing of it. The event's message holds
// one error for each NodePool Karpenter tried, joined with "; " (scheduling/scheduler.go,
// addToNewNodeClaim): a limit's names its NodePool ("(NodePool=name)"), an instance type's has the
// NodePool among its requirements ("karpenter.sh/nodepool In [name]"), and an incompatible pool's
// is about another pool than the pod's own. An event from before the pool's last change speaks of
// the pool as it was (a limit since raised, a zone since mended): specChangedAt.
func (d *diagnoser) karpenterPoolError(pods []*corev1.Pod, nodePool *karpenter.NodePool) (string, string) {
	pool, changed := nodePool.Name, specChangedAt(nodePool)
	var last *corev1.Event
	var lastErr, pod string
	for _, p := range pods {
		for i := range d.o.Events {
			e := &d.o.Events[i]
			if e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.Name != p.Name || e.Source.Component != karpenterComponent ||
				e.Type != corev1.EventTypeWarning || !strings.HasPrefix(e.Message, karpenterEventPrefix) ||
				eventTime(e).Time.Before(changed.Time) || (last != nil && !eventTime(e).After(eventTime(last).Time)) {
				continue
			}
			for _, part := range strings.Split(strings.TrimPrefix(e.Message, karpenterEventPrefix), "; ") {
				if strings.HasPrefix(part, "incompatible") {
					continue
				}
				if strings.Contains(part, "(NodePool="+pool+")") || strings.Contains(part, karpenter.NodePoolLabelKey+" In ["+pool+"]") {
					last, lastErr, pod = e, part, p.Name
				}
			}
		}
	}
	return lastErr, pod
}

// karpenterNodePoolWarning is Karpenter's latest warning event about the NodePool, nil if none or
// if it is older than the pool's last change.
func (d *diagnoser) karpenterNodePoolWarning(pool *karpenter.NodePool) *corev1.Event {
	e := d.lastWarning("NodePool", pool.Name)
	if changed := specChangedAt(pool); e == nil || eventTime(e).Time.Before(changed.Time) {
		return nil
	}
	return e
}

// specChangedAt is when the NodePool was last written other than by its status (its managed
// fields' times: a pulumi up that raised its limit or changed its requirements), else its creation.
func specChangedAt(pool *karpenter.NodePool) metav1.Time {
	changed := pool.CreationTimestamp
	for _, m := range pool.ManagedFields {
		if m.Subresource == "" && m.Time != nil && m.Time.After(changed.Time) {
			changed = *m.Time
		}
	}
	return changed
}

// limitCause: Karpenter launches no node for the pods because the pool's nodes have reached its
// nvidia.com/gpu limit (its FailedScheduling event on a pending pod says so); the numbers are the
// NodePool's limit and status.
func (d *diagnoser) limitCause(pool *karpenter.NodePool, pending []*corev1.Pod) *Cause {
	event, _ := d.karpenterPoolError(pending, pool)
	if !strings.Contains(event, karpenterLimitError) {
		return nil
	}
	limit := pool.Spec.Limits[api.GPUResourceName]
	used := resource.Quantity{}
	if pool.Status != nil {
		used = pool.Status.Resources[api.GPUResourceName]
	}
	asked := int64(0)
	for _, p := range pending {
		asked += podGPUs(p)
	}
	msg := fmt.Sprintf("Karpenter launches no node beyond the pool's limit of %d nvidia.com/gpu: its nodes have %d, and %s wait "+
		"for a node, asking for %d", limit.Value(), used.Value(), count(len(pending), "pod"), asked)
	if short := used.Value() + asked - limit.Value(); short > 0 {
		msg += fmt.Sprintf(", %d more than the limit leaves", short)
	}
	return &Cause{Object: "NodePool/" + pool.Name, Reason: "LimitReached", Message: msg + " (Karpenter: " + event + ")",
		Fix: "the limit is the service at full size (autoscaled roles at maxReplicas) plus one rollout batch's surge: replicas beyond " +
			"the spec's (an LWS scaled by hand, an autoscaler held past maxReplicas) wait by design; to run more, raise replicas or " +
			"autoscaling.maxReplicas in the spec and run pulumi up (fusioninfer plan shows each pool's limit)"}
}

// noInstanceTypeCause: Karpenter finds no instance type of the pool for the pods (a GPU count no
// shape has), or the pool's requirements leave it none at all (a zone or capacity type no offering
// has: its NoCompatibleInstanceTypes event on the NodePool, scheduling/events.go).
func (d *diagnoser) noInstanceTypeCause(pool *karpenter.NodePool, pending []*corev1.Pod) *Cause {
	fix := fmt.Sprintf("check the pool's gpusPerNode, instanceTypes, capacityTypes and labels (a zone) against the shapes and "+
		"offerings the cloud has (kubectl describe nodepool %s)", pool.Name)
	if event, pod := d.karpenterPoolError(pending, pool); strings.HasPrefix(event, "no instance type") {
		return &Cause{Object: "NodePool/" + pool.Name, Reason: "NoInstanceType",
			Message: fmt.Sprintf("Karpenter finds no instance type of the pool for pod %s (%d nvidia.com/gpu on one node): %s",
				pod, podGPUs(d.podNamed(pod)), event),
			Fix: fix}
	}
	if e := d.karpenterNodePoolWarning(pool); e != nil && e.Reason == karpenterNoCompatibleInstanceTypes {
		return &Cause{Object: "NodePool/" + pool.Name, Reason: "NoInstanceType",
			Message: fmt.Sprintf("Karpenter launches nothing for the pool: %s (its instance types, capacity types and labels, "+
				"a zone among them, match no offering of the cloud's)", e.Message),
			Fix: fix}
	}
	return nil
}

// podNamed is the observed pod of that name.
func (d *diagnoser) podNamed(name string) *corev1.Pod {
	for i := range d.o.Pods {
		if d.o.Pods[i].Name == name {
			return &d.o.Pods[i]
		}
	}
	return &corev1.Pod{}
}

// heldNodesCause: Volcano holds some pods of the pool for its empty nodes until their gang or
// replica is whole (reason Schedulable), which Karpenter does not count, while Karpenter counts
// those empty nodes for the pods Volcano marks Unschedulable: neither acts again (docs/scheduling.md;
// volcano-sh/volcano#3976). Only when every NodeClaim of the pool has its node: while one is still
// launching, nodes are on their way.
func (d *diagnoser) heldNodesCause(pool *karpenter.NodePool, pending []*corev1.Pod) *Cause {
	var held, unschedulable []string
	for _, p := range pending {
		c := podCondition(p, corev1.PodScheduled)
		switch {
		case c == nil:
		case c.Reason == volcanoSchedulable:
			held = append(held, p.Name)
		case c.Reason == corev1.PodReasonUnschedulable:
			unschedulable = append(unschedulable, p.Name)
		}
	}
	if len(held) == 0 || len(unschedulable) == 0 {
		return nil
	}
	claimOf := map[string]string{}
	for i := range d.o.NodeClaims {
		nc := &d.o.NodeClaims[i]
		if nc.Labels[karpenter.NodePoolLabelKey] != pool.Name || nc.DeletionTimestamp != nil {
			continue
		}
		initialized := meta.FindStatusCondition(nc.Status.Conditions, karpenter.ConditionTypeInitialized)
		if initialized == nil || initialized.Status != metav1.ConditionTrue {
			return nil // a node is on its way
		}
		claimOf[nc.Status.NodeName] = nc.Name
	}
	var empty, claims, unclaimed []string
	for i := range d.o.Nodes {
		n := &d.o.Nodes[i]
		if n.Labels[karpenter.NodePoolLabelKey] != pool.Name || n.DeletionTimestamp != nil || !nodeReady(n) || d.anyPodOn(n.Name) {
			continue
		}
		empty = append(empty, n.Name)
		if claim := claimOf[n.Name]; claim != "" {
			claims = append(claims, claim)
		} else {
			unclaimed = append(unclaimed, n.Name)
		}
	}
	if len(empty) == 0 {
		return nil
	}
	slices.Sort(empty)
	slices.Sort(claims)
	slices.Sort(unclaimed)
	var remove []string
	if len(claims) > 0 {
		remove = append(remove, "kubectl delete nodeclaim "+strings.Join(claims, " "))
	}
	if len(unclaimed) > 0 {
		remove = append(remove, "kubectl delete node "+strings.Join(unclaimed, " "))
	}
	return &Cause{Object: "NodePool/" + pool.Name, Reason: "NodesHeldForIncompleteGangs", Message: fmt.Sprintf(
		"Volcano holds %s (%s) for the pool's %s (%s) until their gang or replica is whole, and marks them "+
			"Schedulable, which Karpenter does not launch for; Karpenter counts those empty nodes for the %s Volcano marks "+
			"Unschedulable (%s), so it launches nothing more and the pods wait for ever (volcano-sh/volcano#3976)",
		count(len(held), "pod"), strings.Join(held, ", "), count(len(empty), "empty node"), strings.Join(empty, ", "),
		count(len(unschedulable), "pod"), strings.Join(unschedulable, ", ")),
		Fix: "remove the pool's empty nodes, so that every pod waits Unschedulable and Karpenter launches for all of them at once: " +
			strings.Join(remove, "; ")}
}

// count is n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// anyPodOn reports whether a pod observed is bound to the node and not finished.
func (d *diagnoser) anyPodOn(node string) bool {
	return node != "" && slices.ContainsFunc(d.o.Pods, func(p corev1.Pod) bool {
		return p.Spec.NodeName == node && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	})
}

// nodeClaimCauses: Karpenter's claims for the service's pools that have not launched a node.
func (d *diagnoser) nodeClaimCauses() []Cause {
	var out []Cause
	for i := range d.o.NodeClaims {
		nc := &d.o.NodeClaims[i]
		launched := meta.FindStatusCondition(nc.Status.Conditions, karpenter.ConditionTypeLaunched)
		if launched != nil && launched.Status == metav1.ConditionTrue {
			continue
		}
		msg := "Karpenter has not launched a node for it yet"
		reason := "NotLaunched"
		if launched != nil && launched.Message != "" {
			msg, reason = "Karpenter cannot launch its node: "+launched.Message, orDefault(launched.Reason, reason)
		}
		out = append(out, Cause{Object: "NodeClaim/" + nc.Name, Reason: reason,
			Message: fmt.Sprintf("pool %s: %s", nc.Labels[karpenter.NodePoolLabelKey], msg),
			Fix:     "check the pool's instance types, capacity types and zones, and the cloud account's GPU quota"})
	}
	return out
}
