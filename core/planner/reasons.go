// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// reasons say, for a prediction that is not Full, what holds the service or its waiting replicas
// back, in plain words with the numbers: first what no cluster of this shape can ever change (a
// pod larger than every node), then what the gang needs together, then why each waiting replica
// does not fit beside the placed ones.
func reasons(spec *api.InferenceServiceSpec, cluster Cluster, p *Prediction) []string {
	if p.Status == Full {
		return nil
	}
	var out []string
	largest := int64(0)
	for _, n := range cluster.Nodes {
		largest = max(largest, n.GPUs)
	}
	tooLarge := map[string]bool{}
	for _, r := range p.Replicas {
		if !r.Scheduled && r.GPUsPerPod > largest && !tooLarge[r.Role] {
			tooLarge[r.Role] = true
			out = append(out, fmt.Sprintf("each %s pod needs %d %s on one node; the largest node has %d",
				r.Role, r.GPUsPerPod, api.GPUResourceName, largest))
		}
	}
	if p.Status == Blocked && spec.GangScheduled() && len(tooLarge) == 0 {
		out = append(out, gangReason(spec, cluster, p))
	}
	if p.Status == Blocked && spec.GangScheduled() {
		return out // nothing is placed until the gang is: its reason is the replicas' reason
	}
	free := cluster.GPUs()
	for _, r := range p.Replicas {
		if r.Scheduled {
			free -= r.GPUs()
		}
	}
	// The waiting replicas, by role: they are alike, so one line says it for all of them.
	var roles []string
	waiting := map[string][]Replica{}
	for _, r := range p.Replicas {
		if !r.Scheduled && !tooLarge[r.Role] {
			if waiting[r.Role] == nil {
				roles = append(roles, r.Role)
			}
			waiting[r.Role] = append(waiting[r.Role], r)
		}
	}
	for _, role := range roles {
		rs := waiting[role]
		verb := "wait: each needs"
		if len(rs) == 1 {
			verb = "waits: it needs"
		}
		out = append(out, fmt.Sprintf("%s %s %s, and %d GPUs are free beside the placed replicas%s",
			namesText(rs), verb, podsText(rs[0].Pods, rs[0].GPUsPerPod), free, fragmentation(spec, rs[0], free)))
	}
	return out
}

// gangReason is why the gang's minimal set (or, in taskMember mode, the whole service) cannot be
// placed together.
func gangReason(spec *api.InferenceServiceSpec, cluster Cluster, p *Prediction) string {
	what, need := "the gang's minimal set", p.GPUsMinimal
	if spec.GangMode() == api.GangModeTaskMember {
		what, need = "gangPolicy.mode taskMember: the whole service", p.GPUsFull
	}
	var parts []string
	pods := map[int64]int32{} // GPUs a pod -> pods of that size in the set
	for _, r := range p.Replicas {
		if r.Minimal {
			parts = append(parts, fmt.Sprintf("%s %s", r.Name(), podsText(r.Pods, r.GPUsPerPod)))
			pods[r.GPUsPerPod] += r.Pods
		}
	}
	set := fmt.Sprintf("%s (%s) must be placed together", what, strings.Join(parts, ", "))
	if have := cluster.GPUs(); need > have {
		return fmt.Sprintf("%s: it needs %d GPUs, the cluster has %d", set, need, have)
	}
	if isHard(spec.GroupTopologyPolicy()) {
		return fmt.Sprintf("%s within one domain of the hard network topology (spec.schedulingStrategy.networkTopology.groupPolicy): "+
			"no domain holds its %d GPUs", set, need)
	}
	sizes := make([]int64, 0, len(pods))
	for g := range pods {
		sizes = append(sizes, g)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] > sizes[j] })
	var fits []string
	for _, g := range sizes {
		fits = append(fits, fmt.Sprintf("%d pods of %d GPUs, the nodes hold %d such pods", pods[g], g, slots(cluster, g)))
	}
	return fmt.Sprintf("%s: the cluster has the %d GPUs it needs, but not on the right nodes (%s)", set, need, strings.Join(fits, "; "))
}

// slots is how many pods of g GPUs the cluster's nodes hold, each node on its own.
func slots(cluster Cluster, g int64) int64 {
	var n int64
	for _, node := range cluster.Nodes {
		if g > 0 {
			n += node.nodes() * (node.GPUs / g)
		}
	}
	return n
}

// fragmentation says why free GPUs that would be enough do not take the replica: a hard network
// topology keeps it in one domain, or they are spread over nodes with too few each.
func fragmentation(spec *api.InferenceServiceSpec, r Replica, free int64) string {
	switch {
	case free < r.GPUs():
		return ""
	case isHard(spec.RoleTopologyPolicy(spec.RoleNamed(r.Role))):
		return ", but not within one domain of its hard network topology"
	default:
		return fmt.Sprintf(", but not %d on each of %d nodes", r.GPUsPerPod, r.Pods)
	}
}

func isHard(policy *api.NetworkTopologyPolicy) bool {
	return policy != nil && policy.TopologyMode() == api.NetworkTopologyHard
}

func podsText(pods int32, gpus int64) string {
	unit := map[bool]string{true: "GPU", false: "GPUs"}[gpus == 1]
	if pods == 1 {
		return fmt.Sprintf("1 pod of %d %s", gpus, unit)
	}
	return fmt.Sprintf("%d pods of %d %s", pods, gpus, unit)
}

// namesText names replicas, the first few of a long list.
func namesText(rs []Replica) string {
	const shown = 3
	var names []string
	for i := 0; i < len(rs) && i < shown; i++ {
		names = append(names, rs[i].Name())
	}
	if len(rs) > shown {
		return fmt.Sprintf("%s and %d more", strings.Join(names, ", "), len(rs)-shown)
	}
	return strings.Join(names, ", ")
}
