// Package planner predicts how much of a service a cluster of a given shape runs: which replicas
// Volcano's gang rules let it place, for the PodGroup this project emits (docs/design/0003). It
// counts GPUs only and follows the gang and hard network-topology rules; it is a prediction of
// those rules, not of every scheduler plugin (CPU, memory, affinity and taints are not modelled).
package planner

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// Node is a node pods can be placed on.
type Node struct {
	Name string `json:"name"`
	GPUs int64  `json:"gpus"`
	// Topology maps a network tier (1 = the closest, as Volcano HyperNode tiers) to the domain
	// the node sits in at that tier, e.g. {1: leaf-a, 2: spine-1}.
	Topology map[int]string `json:"topology,omitempty"`
}

// Cluster is the nodes, and the names of the tiers (for highestTierName).
type Cluster struct {
	Nodes     []Node
	TierNames map[string]int
}

// Uniform is a cluster of n nodes with the same GPUs each.
func Uniform(n int, gpusPerNode int64) Cluster {
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{Name: "node-" + strconv.Itoa(i), GPUs: gpusPerNode}
	}
	return Cluster{Nodes: nodes}
}

// GPUs is the cluster's total.
func (c Cluster) GPUs() int64 {
	var total int64
	for _, n := range c.Nodes {
		total += n.GPUs
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
		gpus := api.GPUsPerPod(&role.Template.Spec.Containers[api.ServingContainerIndex])
		for r := int32(0); r < role.ReplicaCount(); r++ {
			inMinimalSet := spec.GangScheduled() && r < spec.GangMinimum(role)
			if inMinimalSet {
				minimal = append(minimal, len(replicas))
			} else {
				extra = append(extra, len(replicas))
			}
			replicas = append(replicas, Replica{Role: role.Name, Index: r, Pods: role.NodeCount(), GPUsPerPod: gpus, Minimal: inMinimalSet})
		}
		for r := int32(0); r < role.ElasticReplicaLimit(); r++ { // after every base replica: Volcano places them as room appears
			elastic = append(elastic, Replica{Role: role.Name, Index: r, Pods: role.NodeCount(), GPUsPerPod: gpus, Elastic: true})
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

// groupDomains are the node sets the whole service may use: all nodes, or, under a hard group
// policy, each domain of its tier.
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

// place applies the gang rules on one set of nodes.
func place(spec *api.InferenceServiceSpec, cluster Cluster, nodes []int, replicas []Replica, minimal, extra []int) ([]Replica, error) {
	out := append([]Replica{}, replicas...)
	free := make([]int64, len(cluster.Nodes))
	for _, i := range nodes {
		free[i] = cluster.Nodes[i].GPUs
	}
	roles := map[string]*api.Role{}
	for i := range spec.Roles {
		roles[spec.Roles[i].Name] = &spec.Roles[i]
	}
	// placeAll places replicas together or not at all.
	placeAll := func(indexes []int) (bool, error) {
		trial := append([]int64{}, free...)
		placements := map[int][]string{}
		for _, i := range indexes {
			at, err := placeReplica(spec, cluster, nodes, trial, out[i], roles[out[i].Role])
			if err != nil || at == nil {
				return false, err
			}
			placements[i] = at
		}
		copy(free, trial)
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
// for each pod the fullest node that still fits it, as a bin-packing scheduler would. It returns
// the nodes used, or nil when the replica does not fit; free is updated only on success.
func placeReplica(spec *api.InferenceServiceSpec, cluster Cluster, nodes []int, free []int64, r Replica, role *api.Role) ([]string, error) {
	candidates := [][]int{nodes}
	if policy := spec.RoleTopologyPolicy(role); policy != nil && policy.TopologyMode() == api.NetworkTopologyHard {
		tier, err := tierOf(policy, cluster)
		if err != nil {
			return nil, err
		}
		candidates = domainsAt(cluster, nodes, tier)
	}
	for _, domain := range candidates {
		trial := append([]int64{}, free...)
		var at []string
		for p := int32(0); p < r.Pods; p++ {
			bestNode := -1
			for _, i := range domain {
				if trial[i] >= r.GPUsPerPod && (bestNode < 0 || trial[i] < trial[bestNode]) {
					bestNode = i
				}
			}
			if bestNode < 0 {
				at = nil
				break
			}
			trial[bestNode] -= r.GPUsPerPod
			at = append(at, cluster.Nodes[bestNode].Name)
		}
		if at != nil || r.Pods == 0 {
			copy(free, trial)
			return at, nil
		}
	}
	return nil, nil
}
