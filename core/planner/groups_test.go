// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// expanded is the cluster with each entry of Count alike nodes written out node by node, under
// the names the entry gives them.
func expanded(c Cluster) Cluster {
	out := Cluster{TierNames: c.TierNames}
	for _, n := range c.Nodes {
		if n.Count == 0 {
			out.Nodes = append(out.Nodes, n)
			continue
		}
		for j := int64(0); j < n.Count; j++ {
			out.Nodes = append(out.Nodes, Node{Name: n.Name + "-" + strconv.FormatInt(j, 10), GPUs: n.GPUs, Topology: n.Topology})
		}
	}
	return out
}

// TestAlikeNodesPlaceAsTheirNodesDo: a cluster given as groups of alike nodes gets the very
// prediction, node names and reasons included, that the same nodes given one by one get.
func TestAlikeNodesPlaceAsTheirNodesDo(t *testing.T) {
	hardRole := func(t *testing.T) *api.InferenceService {
		svc := manifest(t, "story4-disaggregated-multinode.yaml")
		svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
			RolePolicy: &api.NetworkTopologyPolicy{HighestTierAllowed: ptr.To(1)},
		}}
		return svc
	}
	hardGroup := func(t *testing.T) *api.InferenceService {
		svc := manifest(t, "story4-disaggregated-multinode.yaml")
		svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
			GroupPolicy: &api.NetworkTopologyPolicy{HighestTierName: "spine"},
		}}
		return svc
	}
	services := map[string]func(t *testing.T) *api.InferenceService{
		"story4":     func(t *testing.T) *api.InferenceService { return manifest(t, "story4-disaggregated-multinode.yaml") },
		"pd":         func(t *testing.T) *api.InferenceService { return manifest(t, "qwen-pd-nixl.yaml") },
		"autoscaled": func(t *testing.T) *api.InferenceService { return manifest(t, "autoscaling-pd.yaml") },
		"taskMember": func(t *testing.T) *api.InferenceService { return manifest(t, "legacy-taskmember.yaml") },
		"hardRole":   hardRole,
		"hardGroup":  hardGroup,
	}
	tiers := map[string]int{"leaf": 1, "spine": 2}
	clusters := map[string]Cluster{
		"uniform": Uniform(9, 8),
		"mixed": {Nodes: []Node{{Name: "big", Count: 2, GPUs: 8}, {Name: "small", Count: 8, GPUs: 4},
			{Name: "huge", Count: 2, GPUs: 16}, {Name: "lone", GPUs: 12}}},
		"mixed, small first": {Nodes: []Node{{Name: "small", Count: 3, GPUs: 2}, {Name: "big", Count: 5, GPUs: 16}}},
		"topology": {TierNames: tiers, Nodes: []Node{
			{Name: "a", Count: 3, GPUs: 8, Topology: map[int]string{1: "leaf-a", 2: "spine-1"}},
			{Name: "b", Count: 3, GPUs: 8, Topology: map[int]string{1: "leaf-b", 2: "spine-1"}},
			{Name: "c", Count: 4, GPUs: 8, Topology: map[int]string{1: "leaf-c", 2: "spine-2"}},
			{Name: "d", Count: 2, GPUs: 16, Topology: map[int]string{1: "leaf-c", 2: "spine-2"}},
		}},
	}
	for svcName, svc := range services {
		for clusterName, cluster := range clusters {
			grouped, groupedErr := Predict(svc(t), cluster)
			oneByOne, err := Predict(svc(t), expanded(cluster))
			assert.Equal(t, err, groupedErr, "%s on %s", svcName, clusterName) // a tier the cluster does not name
			assert.Equal(t, oneByOne, grouped, "%s on %s", svcName, clusterName)
		}
	}
}

// TestPlanCostIsTheServicesNotTheClusters: the planner allocates as much for a million nodes of
// one shape as for ten, and a billion nodes of a billion GPUs each answer at once.
func TestPlanCostIsTheServicesNotTheClusters(t *testing.T) {
	svc := manifest(t, "story4-disaggregated-multinode.yaml")
	allocs := func(nodes int64) float64 {
		return testing.AllocsPerRun(3, func() {
			if _, err := Predict(svc, Uniform(nodes, 8)); err != nil {
				t.Fatal(err)
			}
		})
	}
	assert.Equal(t, allocs(10), allocs(1_000_000), "allocations grow with the node count")

	huge := Uniform(1_000_000_000, 1_000_000_000)
	assert.EqualValues(t, int64(1_000_000_000)*1_000_000_000, huge.GPUs())
	p, err := Predict(svc, huge)
	require.NoError(t, err)
	assert.Equal(t, Full, p.Status)
	assert.Equal(t, []string{"node-0", "node-0"}, p.Replicas[0].Nodes, "best fit: both prefill pods on the first node")
}

// BenchmarkPredictByClusterSize: the cost of a plan is the service's, whatever the node count
// (compare the ns/op and allocs/op of the sizes).
func BenchmarkPredictByClusterSize(b *testing.B) {
	svc := manifest(b, "story4-disaggregated-multinode.yaml")
	for _, nodes := range []int64{10, 10_000, 10_000_000, 1_000_000_000} {
		cluster := Uniform(nodes, 8)
		b.Run(strconv.FormatInt(nodes, 10)+" nodes", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Predict(svc, cluster); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNodesFileCostIsItsEntriesNotItsNodes: a nodes file's counted entry is one planner entry,
// as --nodes is, so a plan from a file of 100000-node entries costs what the service costs
// (issue 32, item 2: 100 such entries took 10 s and 1.9 GB).
func TestNodesFileCostIsItsEntriesNotItsNodes(t *testing.T) {
	svc := manifest(t, "story4-disaggregated-multinode.yaml")
	file := func(count int) []byte {
		return []byte("nodes:\n- {name: a, count: " + strconv.Itoa(count) + ", gpus: 8}\n- {name: b, count: " + strconv.Itoa(count) + ", gpus: 8}\n")
	}
	allocs := func(count int) float64 {
		return testing.AllocsPerRun(3, func() {
			cluster, err := ParseNodesFile("nodes.yaml", file(count))
			require.NoError(t, err)
			if _, err := Predict(svc, cluster); err != nil {
				t.Fatal(err)
			}
		})
	}
	assert.Equal(t, allocs(10_000), allocs(100_000), "allocations grow with the nodes file's counts")

	cluster, err := ParseNodesFile("nodes.yaml", file(3))
	require.NoError(t, err)
	assert.Equal(t, []Node{{Name: "a", Count: 3, GPUs: 8}, {Name: "b", Count: 3, GPUs: 8}}, cluster.Nodes)
}
