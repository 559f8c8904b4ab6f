// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
)

// RoleSummary is what one serving role asks of the cluster.
type RoleSummary struct {
	Name          string
	ComponentType api.ComponentType
	Replicas      int32
	NodesPerRep   int32
	Pods          int64
	GPUsPerPod    int64
	GPUs          int64
	// MinReplicas is the gang minimum of the role (its replicas when not gang scheduled).
	MinReplicas int32
	// MaxReplicas is an autoscaled role's maxReplicas, its replicas otherwise; Replicas, Pods and
	// GPUs count the base replicas.
	MaxReplicas int32
	TaskNames   []string
	// Ranks are a data parallel role's ranks a replica (parallelism.data), zero without
	// parallelism; LocalRanks of them in each pod, RankGPUs GPUs each.
	Ranks, LocalRanks int32
	RankGPUs          int
	Expert            bool
}

// Summary is the one-screen view of a tree: roles, pods, GPUs and the gang.
type Summary struct {
	Service, Namespace string
	Roles              []RoleSummary
	Pods, GPUs         int64
	// MinimalGPUs are the GPUs of the gang's minimal set (its gang minimum of every role); zero
	// when the service is not gang scheduled: without a gang there is no minimal set.
	MinimalGPUs int64
	Gang        bool
	GangMode    api.GangMode
	PodGroup    string
	MinMember   int32
	Objects     map[string]int
	// Router describes the routing stack; nil without a router role.
	Router *RouterSummary
	// Models says where each model's weights come from; empty when the servers fetch their own.
	Models []ModelSummary
	// Rollout lists the batches a rollout updates one after another ("chat 0-1", "decode 0 +
	// prefill 0", "router"); empty when nothing is awaited and every replica updates at once.
	Rollout []string
}

// RouterSummary is what a router role deploys in front of the serving roles.
type RouterSummary struct {
	Pool, PoolAPIVersion string
	// PoolPort is the first port the pool targets on a pod; PoolPorts how many, one a rank.
	PoolPort, PoolPorts int32
	EndpointPicker      string // the Deployment
	Image               string
	// Strategy is the preset's name, "default", "custom" for a raw EndpointPickerConfig, or
	// "round-robin" on lwepp.
	Strategy string
	// HTTPRoute is the gateway mode's route; Service and ServicePort the standalone router's
	// Service, which clients call (one is empty).
	HTTPRoute   string
	Service     string
	ServicePort int32
	// Request is a shell line that sends the service one completion (requestCommand).
	Request string
}

// Summarize describes a built tree.
func Summarize(t *Tree) Summary {
	spec := &t.Service.Spec
	s := Summary{Service: t.Service.Name, Namespace: t.Service.Namespace, Gang: spec.GangScheduled(), Objects: map[string]int{}}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		rs := RoleSummary{
			Name: role.Name, ComponentType: role.ComponentType, Replicas: role.ReplicaCount(), NodesPerRep: role.NodeCount(),
			GPUsPerPod: api.PodGPUs(&role.Template.Spec), MinReplicas: role.ReplicaCount(),
			MaxReplicas: role.MaxReplicaCount(),
		}
		if p := role.Parallelism; p != nil {
			rs.Ranks, rs.LocalRanks, rs.RankGPUs, rs.Expert = int32(p.Data), role.LocalRanks(), p.RankGPUs(), p.Expert
		}
		rs.Pods = int64(rs.Replicas) * int64(rs.NodesPerRep)
		rs.GPUs = rs.Pods * rs.GPUsPerPod
		if s.Gang {
			rs.MinReplicas = spec.GangMinimum(role)
			for r := int32(0); r < rs.Replicas; r++ {
				rs.TaskNames = append(rs.TaskNames, api.TaskName(role.Name, r))
			}
		}
		s.Pods += rs.Pods
		s.GPUs += rs.GPUs
		if s.Gang {
			s.MinimalGPUs += int64(rs.MinReplicas) * int64(rs.NodesPerRep) * rs.GPUsPerPod
		}
		s.Roles = append(s.Roles, rs)
	}
	if s.Gang {
		s.GangMode = spec.GangMode()
		s.PodGroup = api.PodGroupName(t.Service.Name)
		for _, o := range t.Objects {
			if o.TypeMeta == KindPodGroup {
				s.MinMember = podGroupMinMember(o)
			}
		}
	}
	for _, o := range t.Objects {
		s.Objects[o.Kind]++
	}
	s.Router = summarizeRouter(t)
	s.Models = summarizeModels(t)
	refs := make([]Ref, len(t.Objects))
	for i := range t.Objects {
		refs[i] = t.Objects[i].Ref
	}
	s.Rollout = RolloutBatches(refs)
	return s
}

// maxBatchesShown keeps a description of the rollout to one line for services with many batches.
const maxBatchesShown = 6

// DescribeRollout says in one line how a changed template rolls through the batches.
func DescribeRollout(batches []string) string {
	switch len(batches) {
	case 0:
		return "every replica at once (spec.await is not all, so nothing holds a batch back)"
	case 1:
		return "1 batch: " + batches[0]
	}
	shown := batches
	if len(batches) > maxBatchesShown {
		shown = append(append(append([]string{}, batches[:maxBatchesShown-2]...), "..."), batches[len(batches)-1])
	}
	return fmt.Sprintf("%d batches, each after the one before is Available: %s", len(batches), strings.Join(shown, " -> "))
}

// AwaitedAtOnce is how many objects of refs a deployment waits for together, each wait holding
// one of the engine's workers until its model has loaded: the awaited LWSs whose creation waits
// (those not rolled in batches: a rolled replica is created without a wait and loads while the
// others do, barrier 0: docs/design/0040-every-replica-loads-before-any-wait.md), and the
// largest rollout batch (a replica's LWS, the router's Endpoint Picker) when a template changes;
// 0 for a wait it has not.
func AwaitedAtOnce(refs []Ref) (creation, largestBatch int) {
	size := map[int]int{}
	for _, r := range refs {
		if r.TypeMeta == KindLeaderWorkerSet && r.Awaited && !r.RolledInBatches() {
			creation++
		}
		if r.Batch > 0 {
			size[r.Batch]++
			largestBatch = max(largestBatch, size[r.Batch])
		}
	}
	return creation, largestBatch
}

// RolloutBatches names each batch of a plan by its roles' replica ranges, which are contiguous:
// a role's replicas enter the chain lowest index first.
func RolloutBatches(refs []Ref) []string {
	type span struct {
		role        string
		first, last int32
	}
	var batches [][]span
	for _, o := range refs {
		if o.Batch == 0 {
			continue
		}
		for len(batches) < o.Batch {
			batches = append(batches, nil)
		}
		b := &batches[o.Batch-1]
		switch {
		case o.TypeMeta != KindLeaderWorkerSet: // the router's Deployment: named by its role
			*b = append(*b, span{role: o.Role, first: -1})
		case o.Elastic:
			*b = append(*b, span{role: o.Role + " elastic", first: -1})
		case len(*b) > 0 && (*b)[len(*b)-1].role == o.Role:
			(*b)[len(*b)-1].last = o.Replica
		default:
			*b = append(*b, span{role: o.Role, first: o.Replica, last: o.Replica})
		}
	}
	out := make([]string, len(batches))
	for i, spans := range batches {
		var parts []string
		for _, sp := range spans {
			switch {
			case sp.first < 0:
				parts = append(parts, sp.role)
			case sp.first == sp.last:
				parts = append(parts, fmt.Sprintf("%s %d", sp.role, sp.first))
			default:
				parts = append(parts, fmt.Sprintf("%s %d-%d", sp.role, sp.first, sp.last))
			}
		}
		out[i] = strings.Join(parts, " + ")
	}
	return out
}

func summarizeRouter(t *Tree) *RouterSummary {
	routing := t.routing
	if routing == nil {
		return nil
	}
	rs := &RouterSummary{
		Pool: api.PoolName(t.Service.Name), PoolPort: routing.PoolPort, PoolPorts: max(routing.PoolRanks, 1), EndpointPicker: api.EndpointPickerName(t.Service.Name),
		Image: routing.Selection.Image, Strategy: routing.router.Strategy,
	}
	if routing.router.Standalone() {
		rs.Service, rs.ServicePort = api.RouterServiceName(t.Service.Name), RouterProxyPort
	} else {
		rs.HTTPRoute = api.HTTPRouteName(t.Service.Name)
	}
	for _, o := range t.Objects {
		if o.Suffix == suffixPool {
			rs.PoolAPIVersion = o.APIVersion
		}
	}
	rs.Request = requestCommand(t, rs)
	switch {
	case routing.router.EndpointPickerConfig != "":
		rs.Strategy = "custom"
	case routing.release() == eppconfig.ReleaseLWEPP:
		rs.Strategy = "round-robin" // lwepp has no other
	case rs.Strategy == "" && t.Service.Spec.Disaggregated():
		rs.Strategy = eppconfig.StrategyPDDisaggregation
	case rs.Strategy == "":
		rs.Strategy = "default"
	}
	return rs
}
