// SPDX-License-Identifier: Apache-2.0

// Package planner predicts how much of a service a cluster of a given shape runs: which replicas
// Volcano's gang rules let it place, for the PodGroup this project emits (docs/design/0003). It
// counts GPUs, and memory on the nodes that say theirs, and follows the gang and hard
// network-topology rules; it is a prediction of those rules, not of every scheduler plugin (CPU,
// affinity and taints are not modelled).
package planner

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// Node is a node pods can be placed on, or, with Count, that many alike nodes: a cluster of a
// million nodes of one shape is one entry, and the planner's cost follows the entries and the
// service's pods, never the node count.
type Node struct {
	// Name is the node's; Count alike nodes are Name-0, Name-1, ... (as a nodes file's count
	// names them).
	Name string `json:"name"`
	// Count is how many alike nodes the entry stands for; 0 is one node, named Name.
	Count int64 `json:"count,omitempty"`
	GPUs  int64 `json:"gpus"`
	// Memory is each node's allocatable memory in bytes; nil leaves memory uncounted there (pods
	// fit on their GPUs alone). A pod's memory request holds its KV cache offload, which
	// validation keeps within it (api/kvcacheoffload.go).
	Memory *int64 `json:"memory,omitempty"`
	// Topology maps a network tier (1 = the closest, as Volcano HyperNode tiers) to the domain
	// the node sits in at that tier, e.g. {1: leaf-a, 2: spine-1}.
	Topology map[int]string `json:"topology,omitempty"`
	// first is the number of the entry's first node: what is left of an entry once services
	// before took some of its nodes is named on from there (Cluster.without).
	first int64
}

// nodes is how many nodes the entry stands for.
func (n Node) nodes() int64 {
	if n.Count == 0 {
		return 1
	}
	return n.Count
}

// nodeName is the name of the entry's j-th node.
func (n Node) nodeName(j int64) string {
	if n.Count == 0 {
		return n.Name
	}
	return n.Name + "-" + strconv.FormatInt(n.first+j, 10)
}

// Cluster is the nodes, and the names of the tiers (for highestTierName).
type Cluster struct {
	Nodes     []Node
	TierNames map[string]int
}

// Uniform is a cluster of n nodes with the same GPUs each, node-0 .. node-{n-1}: one entry.
func Uniform(n, gpusPerNode int64) Cluster {
	if n == 0 {
		return Cluster{}
	}
	return Cluster{Nodes: []Node{{Name: "node", Count: n, GPUs: gpusPerNode}}}
}

// GPUs is the cluster's total.
func (c Cluster) GPUs() int64 {
	var total int64
	for _, n := range c.Nodes {
		total += n.nodes() * n.GPUs
	}
	return total
}

// ServiceStatus is how much of the service runs.
type ServiceStatus string

const (
	// Full: every replica is placed.
	Full ServiceStatus = "Full"
	// Partial: the gang's minimal set (and maybe more) is placed, not everything.
	Partial ServiceStatus = "Partial"
	// Blocked: nothing is placed.
	Blocked ServiceStatus = "Blocked"
)

// Replica is one replica's predicted placement.
type Replica struct {
	Role       string
	Index      int32
	Pods       int32
	GPUsPerPod int64
	// MemoryPerPod is a pod's memory request in bytes (api.PodRequests), counted on the nodes
	// that say their memory.
	MemoryPerPod int64
	// Minimal is true for a replica of the gang's minimal set (every replica in taskMember mode).
	Minimal bool
	// Elastic is true for a replica an autoscaler may add above the role's base (Index counts
	// from 0 among them).
	Elastic   bool
	Scheduled bool
	// Nodes hold the replica's pods, one entry per pod, when scheduled.
	Nodes []string
}

// GPUs is the replica's total.
func (r Replica) GPUs() int64 { return int64(r.Pods) * r.GPUsPerPod }

// Name is the replica's Volcano task key, and an elastic replica's place among them.
func (r Replica) Name() string {
	if r.Elastic {
		return api.TaskName(api.ElasticTaskName(r.Role), r.Index)
	}
	return api.TaskName(r.Role, r.Index)
}

// Prediction is the outcome for one service on one cluster.
type Prediction struct {
	Replicas []Replica
	Status   ServiceStatus
	// GPUsFull and GPUsMinimal are what the whole service (every autoscaled role at
	// maxReplicas) and the gang's minimal set need; GPUsBase what it needs with no elastic replica.
	GPUsFull, GPUsMinimal, GPUsBase int64
	// Reasons say what holds the service back when it is not Full, in plain words.
	Reasons []string
}

// Predict places a validated service on a cluster.
func Predict(svc *api.InferenceService, cluster Cluster) (*Prediction, error) {
	spec := &svc.Spec
	var replicas, elastic []Replica
	var minimal, extra []int
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		gpus := api.PodGPUs(&role.Template.Spec)
		memory := api.PodRequests(&role.Template.Spec)[corev1.ResourceMemory]
		for r := int32(0); r < role.ReplicaCount(); r++ {
			inMinimalSet := spec.GangScheduled() && r < spec.GangMinimum(role)
			if inMinimalSet {
				minimal = append(minimal, len(replicas))
			} else {
				extra = append(extra, len(replicas))
			}
			replicas = append(replicas, Replica{Role: role.Name, Index: r, Pods: role.NodeCount(), GPUsPerPod: gpus, MemoryPerPod: memory.Value(), Minimal: inMinimalSet})
		}
		for r := int32(0); r < role.ElasticReplicaLimit(); r++ { // after every base replica: Volcano places them as room appears
			elastic = append(elastic, Replica{Role: role.Name, Index: r, Pods: role.NodeCount(), GPUsPerPod: gpus, MemoryPerPod: memory.Value(), Elastic: true})
		}
	}
	for _, r := range elastic {
		extra = append(extra, len(replicas))
		replicas = append(replicas, r)
	}
	p := &Prediction{Replicas: replicas}
	for _, i := range minimal {
		p.GPUsMinimal += replicas[i].GPUs()
	}
	for _, r := range replicas {
		p.GPUsFull += r.GPUs()
		if !r.Elastic {
			p.GPUsBase += r.GPUs()
		}
	}

	domains, err := groupDomains(spec, cluster)
	if err != nil {
		return nil, err
	}
	// Under a hard service-level policy every pod stays in one domain: take the domain where the
	// most replicas fit.
	var best []Replica
	for _, nodes := range domains {
		placed, err := place(spec, cluster, nodes, replicas, minimal, extra)
		if err != nil {
			return nil, err
		}
		if best == nil || scheduledCount(placed) > scheduledCount(best) {
			best = placed
		}
	}
	if best == nil { // a hard group policy, and no node in any domain of its tier
		best = replicas
	}
	p.Replicas = best
	switch n := scheduledCount(best); {
	case n == 0:
		p.Status = Blocked
	case n == len(best):
		p.Status = Full
	default:
		p.Status = Partial
	}
	p.Reasons = reasons(spec, cluster, p)
	return p, nil
}

func scheduledCount(replicas []Replica) int {
	n := 0
	for _, r := range replicas {
		if r.Scheduled {
			n++
		}
	}
	return n
}

// groupDomains are the node sets (indexes of the cluster's entries) the whole service may use: all
// nodes, or, under a hard group policy, each domain of its tier.
func groupDomains(spec *api.InferenceServiceSpec, cluster Cluster) ([][]int, error) {
	all := make([]int, len(cluster.Nodes))
	for i := range all {
		all[i] = i
	}
	policy := spec.GroupTopologyPolicy()
	if policy == nil || policy.TopologyMode() != api.NetworkTopologyHard {
		return [][]int{all}, nil
	}
	tier, err := tierOf(policy, cluster)
	if err != nil {
		return nil, err
	}
	return domainsAt(cluster, all, tier), nil
}

func tierOf(policy *api.NetworkTopologyPolicy, cluster Cluster) (int, error) {
	if policy.HighestTierAllowed != nil {
		return *policy.HighestTierAllowed, nil
	}
	tier, ok := cluster.TierNames[policy.HighestTierName]
	if !ok {
		return 0, fmt.Errorf("network tier %q is not named in the nodes file's tiers", policy.HighestTierName)
	}
	return tier, nil
}

// domainsAt splits nodes by their domain at a tier, in domain-name order; nodes that do not say
// which domain they are in at that tier cannot take pods bound to it.
func domainsAt(cluster Cluster, nodes []int, tier int) [][]int {
	byDomain := map[string][]int{}
	for _, i := range nodes {
		if d, ok := cluster.Nodes[i].Topology[tier]; ok {
			byDomain[d] = append(byDomain[d], i)
		}
	}
	names := make([]string, 0, len(byDomain))
	for d := range byDomain {
		names = append(names, d)
	}
	sort.Strings(names)
	out := make([][]int, len(names))
	for i, d := range names {
		out[i] = byDomain[d]
	}
	return out
}

// room is what a node has left, or what a pod takes: GPUs, and memory in bytes.
type room struct{ gpus, memory int64 }

// pod is what one of the replica's pods takes.
func (r Replica) pod() room { return room{r.GPUsPerPod, r.MemoryPerPod} }

// whole is an untouched node's room.
func (n Node) whole() room {
	if n.Memory == nil {
		return room{gpus: n.GPUs}
	}
	return room{n.GPUs, *n.Memory}
}

// holds says whether what is left of one of the entry's nodes takes the pod: memory counts only
// on a node that says its memory.
func (n Node) holds(left, pod room) bool {
	return left.gpus >= pod.gpus && (n.Memory == nil || left.memory >= pod.memory)
}

// changedBy says whether the pod takes anything the entry's nodes count.
func (n Node) changedBy(pod room) bool {
	return pod.gpus > 0 || n.Memory != nil && pod.memory > 0
}

// freeRoom is the room left on the nodes of a set of entries. Pods go to the fullest node that
// fits them, so an entry's nodes are taken in order: the first ones, which pods went to, each
// with its own room left (used), and the rest, untouched and alike, whole. Its size is the pods
// placed, not the nodes.
type freeRoom struct {
	used map[int][]room // entry index -> room left on its first nodes that took pods
}

func (f freeRoom) clone() freeRoom {
	out := freeRoom{used: make(map[int][]room, len(f.used))}
	for e, free := range f.used {
		out.used[e] = append([]room(nil), free...)
	}
	return out
}

// place applies the gang rules on one set of nodes.
func place(spec *api.InferenceServiceSpec, cluster Cluster, nodes []int, replicas []Replica, minimal, extra []int) ([]Replica, error) {
	out := append([]Replica{}, replicas...)
	free := freeRoom{used: map[int][]room{}}
	roles := map[string]*api.Role{}
	for i := range spec.Roles {
		roles[spec.Roles[i].Name] = &spec.Roles[i]
	}
	// placeAll places replicas together or not at all.
	placeAll := func(indexes []int) (bool, error) {
		trial := free.clone()
		placements := map[int][]string{}
		for _, i := range indexes {
			at, err := placeReplica(spec, cluster, nodes, &trial, out[i], roles[out[i].Role])
			if err != nil || at == nil {
				return false, err
			}
			placements[i] = at
		}
		free = trial
		for i, at := range placements {
			out[i].Scheduled, out[i].Nodes = true, at
		}
		return true, nil
	}
	switch {
	case !spec.GangScheduled():
		for _, i := range extra {
			if _, err := placeAll([]int{i}); err != nil {
				return nil, err
			}
		}
	case spec.GangMode() == api.GangModeTaskMember:
		all := append(append([]int{}, minimal...), extra...)
		if _, err := placeAll(all); err != nil {
			return nil, err
		}
	default:
		ok, err := placeAll(minimal)
		if err != nil || !ok {
			return out, err
		}
		for _, i := range extra {
			if _, err := placeAll([]int{i}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// placeReplica places one replica's pods (within one domain under a hard role policy), taking
// for each pod the fullest node that still fits it, the first such node on a tie, as a
// bin-packing scheduler would. It returns the nodes used, or nil when the replica does not fit;
// free is updated only on success.
func placeReplica(spec *api.InferenceServiceSpec, cluster Cluster, nodes []int, free *freeRoom, r Replica, role *api.Role) ([]string, error) {
	candidates := [][]int{nodes}
	if policy := spec.RoleTopologyPolicy(role); policy != nil && policy.TopologyMode() == api.NetworkTopologyHard {
		tier, err := tierOf(policy, cluster)
		if err != nil {
			return nil, err
		}
		candidates = domainsAt(cluster, nodes, tier)
	}
	for _, domain := range candidates {
		trial := free.clone()
		var at []string
		pod := r.pod()
		for p := int32(0); p < r.Pods; p++ {
			entry, j := fullestFitting(cluster, domain, trial, pod)
			if entry < 0 {
				at = nil
				break
			}
			node := cluster.Nodes[entry]
			used := trial.used[entry]
			if j == int64(len(used)) {
				if !node.changedBy(pod) {
					// A pod that takes nothing the node counts changes no node: it stays untouched.
					at = append(at, node.nodeName(j))
					continue
				}
				used = append(used, node.whole())
			}
			used[j].gpus -= pod.gpus
			used[j].memory -= pod.memory
			trial.used[entry] = used
			at = append(at, node.nodeName(j))
		}
		if at != nil || r.Pods == 0 {
			*free = trial
			return at, nil
		}
	}
	return nil, nil
}

// fullestFitting is the node with the fewest free GPUs that still holds the pod, the first in the
// domain's order on a tie: its entry and its index among the entry's nodes; -1 when none fits.
// Of an entry's untouched nodes only the first can be the one.
func fullestFitting(cluster Cluster, domain []int, free freeRoom, pod room) (int, int64) {
	bestEntry, bestIndex, bestFree := -1, int64(0), int64(0)
	consider := func(entry int, j int64, left room) {
		if cluster.Nodes[entry].holds(left, pod) && (bestEntry < 0 || left.gpus < bestFree) {
			bestEntry, bestIndex, bestFree = entry, j, left.gpus
		}
	}
	for _, e := range domain {
		used := free.used[e]
		for j, left := range used {
			consider(e, int64(j), left)
		}
		if n := int64(len(used)); n < cluster.Nodes[e].nodes() {
			consider(e, n, cluster.Nodes[e].whole())
		}
	}
	return bestEntry, bestIndex
}
