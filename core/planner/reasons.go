// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

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
	tooLarge := map[string]bool{}
	for _, r := range p.Replicas {
		if !r.Scheduled && !tooLarge[r.Role] {
			if why := noNodeHolds(cluster, r); why != "" {
				tooLarge[r.Role] = true
				out = append(out, why)
			}
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
			namesText(rs), verb, podsText(cluster, rs[0].Pods, rs[0].pod()), free, fragmentation(spec, cluster, rs[0], free)))
	}
	return out
}

// noNodeHolds says why no node of the cluster, even empty, holds one of the replica's pods: too
// many GPUs, too much memory, or not both on one node; "" when one does.
func noNodeHolds(cluster Cluster, r Replica) string {
	pod := r.pod()
	var largest room
	memoryEverywhere := true
	for _, n := range cluster.Nodes {
		if n.holds(n.whole(), pod) {
			return ""
		}
		largest.gpus = max(largest.gpus, n.GPUs)
		if n.Memory == nil {
			memoryEverywhere = false
		} else {
			largest.memory = max(largest.memory, *n.Memory)
		}
	}
	switch {
	case pod.gpus > largest.gpus:
		return fmt.Sprintf("each %s pod needs %d %s on one node; the largest node has %d", r.Role, pod.gpus, api.GPUResourceName, largest.gpus)
	case memoryEverywhere && pod.memory > largest.memory:
		return fmt.Sprintf("each %s pod requests %s of memory on one node; the largest node has %s", r.Role, memoryText(pod.memory), memoryText(largest.memory))
	default:
		return fmt.Sprintf("each %s pod needs %d %s and %s of memory on one node; no node has both", r.Role, pod.gpus, api.GPUResourceName, memoryText(pod.memory))
	}
}

// gangReason is why the gang's minimal set (or, in taskMember mode, the whole service) cannot be
// placed together.
func gangReason(spec *api.InferenceServiceSpec, cluster Cluster, p *Prediction) string {
	what, need := "the gang's minimal set", p.GPUsMinimal
	if spec.GangMode() == api.GangModeTaskMember {
		what, need = "gangPolicy.mode taskMember: the whole service", p.GPUsFull
	}
	var parts []string
	pods := map[room]int32{} // a pod's size -> pods of that size in the set
	for _, r := range p.Replicas {
		if r.Minimal {
			parts = append(parts, fmt.Sprintf("%s %s", r.Name(), podsText(cluster, r.Pods, r.pod())))
			pods[r.pod()] += r.Pods
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
	sizes := make([]room, 0, len(pods))
	for size := range pods {
		sizes = append(sizes, size)
	}
	sort.Slice(sizes, func(i, j int) bool {
		return sizes[i].gpus > sizes[j].gpus || sizes[i].gpus == sizes[j].gpus && sizes[i].memory > sizes[j].memory
	})
	var fits []string
	for _, size := range sizes {
		fits = append(fits, fmt.Sprintf("%s, the nodes hold %d such pods", podsText(cluster, pods[size], size), slots(cluster, size)))
	}
	return fmt.Sprintf("%s: the cluster has the %d GPUs it needs, but not on the right nodes (%s)", set, need, strings.Join(fits, "; "))
}

// slots is how many pods of a size the cluster's nodes hold, each node on its own (pods of no
// GPUs are not counted).
func slots(cluster Cluster, pod room) int64 {
	var n int64
	for _, node := range cluster.Nodes {
		if pod.gpus > 0 {
			each := node.GPUs / pod.gpus
			if node.Memory != nil && pod.memory > 0 {
				each = min(each, *node.Memory/pod.memory)
			}
			n += node.nodes() * each
		}
	}
	return n
}

// fragmentation says why free GPUs that would be enough do not take the replica: a hard network
// topology keeps it in one domain, or they are spread over nodes with too few each.
func fragmentation(spec *api.InferenceServiceSpec, cluster Cluster, r Replica, free int64) string {
	switch {
	case free < r.GPUs():
		return ""
	case isHard(spec.RoleTopologyPolicy(spec.RoleNamed(r.Role))):
		return ", but not within one domain of its hard network topology"
	case countsMemory(cluster) && r.MemoryPerPod > 0:
		return fmt.Sprintf(", but not %d with %s of memory on each of %d nodes", r.GPUsPerPod, memoryText(r.MemoryPerPod), r.Pods)
	default:
		return fmt.Sprintf(", but not %d on each of %d nodes", r.GPUsPerPod, r.Pods)
	}
}

// countsMemory says whether a node of the cluster says its memory.
func countsMemory(cluster Cluster) bool {
	for _, n := range cluster.Nodes {
		if n.Memory != nil {
			return true
		}
	}
	return false
}

// memoryText is bytes as Kubernetes writes a memory quantity (48Gi).
func memoryText(bytes int64) string {
	return resource.NewQuantity(bytes, resource.BinarySI).String()
}

func isHard(policy *api.NetworkTopologyPolicy) bool {
	return policy != nil && policy.TopologyMode() == api.NetworkTopologyHard
}

// podsText is pods of a size: their GPUs, and their memory where the cluster counts it.
func podsText(cluster Cluster, pods int32, pod room) string {
	size := fmt.Sprintf("%d %s", pod.gpus, map[bool]string{true: "GPU", false: "GPUs"}[pod.gpus == 1])
	if countsMemory(cluster) && pod.memory > 0 {
		size += " and " + memoryText(pod.memory) + " of memory"
	}
	if pods == 1 {
		return "1 pod of " + size
	}
	return fmt.Sprintf("%d pods of %s", pods, size)
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
