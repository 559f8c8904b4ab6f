// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

func manifest(t testing.TB, name string) *api.InferenceService {
	t.Helper()
	data, err := os.ReadFile("../../examples/manifests/" + name)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	require.Empty(t, api.Validate(docs[0].Service))
	return docs[0].Service
}

// scheduled is the prediction as "Status: replica replica ...".
func scheduled(p *Prediction) []string {
	var out []string
	for _, r := range p.Replicas {
		if r.Scheduled {
			out = append(out, r.Name())
		}
	}
	return out
}

// TestSeedStory4Table reproduces the scheduling table of story 4 (fusioninfer InferenceService design) on 8-GPU nodes.
func TestSeedStory4Table(t *testing.T) {
	svc := manifest(t, "story4-disaggregated-multinode.yaml")
	cases := []struct {
		nodes     int64
		status    ServiceStatus
		scheduled []string
	}{
		{10, Full, []string{"prefill-0", "decode-0", "decode-1"}},
		{8, Partial, []string{"prefill-0", "decode-0"}},
		{6, Partial, []string{"prefill-0", "decode-0"}},
		{4, Blocked, nil},
		{2, Blocked, nil},
	}
	for _, tc := range cases {
		p, err := Predict(svc, Uniform(tc.nodes, 8))
		require.NoError(t, err)
		assert.Equal(t, tc.status, p.Status, "%d GPUs", tc.nodes*8)
		assert.Equal(t, tc.scheduled, scheduled(p), "%d GPUs", tc.nodes*8)
		assert.EqualValues(t, 80, p.GPUsFull)
		assert.EqualValues(t, 48, p.GPUsMinimal)
	}
}

// TestWideEPCountsEveryRank: a data parallel replica is nodeCount pods of dataLocal x tensor GPUs,
// each pod on its own node, all placed together.
func TestWideEPCountsEveryRank(t *testing.T) {
	svc := manifest(t, "deepseek-wide-ep-pd.yaml")
	for _, tc := range []struct {
		nodes     int64
		status    ServiceStatus
		scheduled []string
	}{{4, Full, []string{"prefill-0", "decode-0"}}, {3, Blocked, nil}} {
		p, err := Predict(svc, Uniform(tc.nodes, 8))
		require.NoError(t, err)
		assert.Equal(t, tc.status, p.Status, "%d nodes", tc.nodes)
		assert.Equal(t, tc.scheduled, scheduled(p), "%d nodes", tc.nodes)
		assert.EqualValues(t, 32, p.GPUsFull, "2 roles x 2 pods x 8 ranks of 1 GPU")
		for _, r := range p.Replicas {
			assert.EqualValues(t, 2, r.Pods, r.Name())
		}
	}
}

func TestReplicasAreNeverPartlyPlaced(t *testing.T) {
	p, err := Predict(manifest(t, "story4-disaggregated-multinode.yaml"), Uniform(9, 8))
	require.NoError(t, err)
	for _, r := range p.Replicas {
		if r.Scheduled {
			assert.Len(t, r.Nodes, int(r.Pods), r.Name())
		} else {
			assert.Empty(t, r.Nodes, r.Name())
		}
	}
	assert.Equal(t, []string{"prefill-0", "decode-0"}, scheduled(p), "3 free nodes do not hold decode-1's 4 pods")
}

func TestHeterogeneousNodesAndNodesTooSmall(t *testing.T) {
	svc := manifest(t, "story4-disaggregated-multinode.yaml")
	mixed := Cluster{Nodes: []Node{
		{Name: "big-0", GPUs: 8}, {Name: "big-1", GPUs: 8},
		{Name: "small-0", GPUs: 4}, {Name: "small-1", GPUs: 4}, {Name: "small-2", GPUs: 4}, {Name: "small-3", GPUs: 4},
		{Name: "small-4", GPUs: 4}, {Name: "small-5", GPUs: 4}, {Name: "small-6", GPUs: 4}, {Name: "small-7", GPUs: 4},
	}}
	p, err := Predict(svc, mixed)
	require.NoError(t, err)
	assert.Equal(t, Blocked, p.Status, "48 GPUs, but no 4-GPU node takes an 8-GPU pod: decode-0 cannot join prefill-0")

	mixed.Nodes = append(mixed.Nodes, Node{Name: "big-2", GPUs: 16}, Node{Name: "big-3", GPUs: 16})
	p, err = Predict(svc, mixed)
	require.NoError(t, err)
	assert.Equal(t, Partial, p.Status)
	assert.Equal(t, []string{"prefill-0", "decode-0"}, scheduled(p), "two 16-GPU nodes take two pods each")
}

func TestMinRoleReplicasTwo(t *testing.T) {
	svc := manifest(t, "qwen-pd-nixl.yaml") // prefill 2, decode 6 replicas of one 2-GPU pod; min prefill 1, decode 2
	for _, tc := range []struct {
		nodes     int64
		status    ServiceStatus
		scheduled []string
	}{
		{1, Blocked, nil},
		{2, Blocked, nil},
		{3, Partial, []string{"prefill-0", "decode-0", "decode-1"}},
		{4, Partial, []string{"prefill-0", "prefill-1", "decode-0", "decode-1"}},
		{8, Full, []string{"prefill-0", "prefill-1", "decode-0", "decode-1", "decode-2", "decode-3", "decode-4", "decode-5"}},
	} {
		p, err := Predict(svc, Uniform(tc.nodes, 2))
		require.NoError(t, err)
		assert.Equal(t, tc.status, p.Status, "%d nodes", tc.nodes)
		assert.Equal(t, tc.scheduled, scheduled(p), "%d nodes", tc.nodes)
		assert.EqualValues(t, 6, p.GPUsMinimal)
	}
}

func TestLegacyTaskMemberIsAllOrNothing(t *testing.T) {
	svc := manifest(t, "legacy-taskmember.yaml") // 2 replicas x 4 nodes x 8 GPUs
	p, err := Predict(svc, Uniform(7, 8))
	require.NoError(t, err)
	assert.Equal(t, Blocked, p.Status, "one replica would fit, but the fusioninfer design's PodGroup wants every pod")
	p, err = Predict(svc, Uniform(8, 8))
	require.NoError(t, err)
	assert.Equal(t, Full, p.Status)
	assert.Equal(t, p.GPUsFull, p.GPUsMinimal, "the minimal set is the whole service")
}

func TestWithoutGangEveryReplicaIsOnItsOwn(t *testing.T) {
	svc := manifest(t, "story1-monolithic.yaml")
	svc.Spec.Roles[0].Replicas = ptr.To(3)
	p, err := Predict(svc, Uniform(2, 1))
	require.NoError(t, err)
	assert.Equal(t, Partial, p.Status)
	assert.Equal(t, []string{"inference-0", "inference-1"}, scheduled(p))
	assert.EqualValues(t, 0, p.GPUsMinimal, "no gang, no minimal set")
}

func topologyCluster() Cluster {
	var nodes []Node
	for i, leaf := range []string{"leaf-a", "leaf-a", "leaf-a", "leaf-b", "leaf-b", "leaf-b", "leaf-c", "leaf-c", "leaf-c", "leaf-c"} {
		spine := "spine-1"
		if leaf == "leaf-c" {
			spine = "spine-2"
		}
		nodes = append(nodes, Node{Name: "n" + string(rune('0'+i)), GPUs: 8, Topology: map[int]string{1: leaf, 2: spine}})
	}
	return Cluster{Nodes: nodes, TierNames: map[string]int{"leaf": 1, "spine": 2}}
}

func TestHardRolePolicyKeepsEachReplicaInOneDomain(t *testing.T) {
	svc := manifest(t, "story4-disaggregated-multinode.yaml")
	svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
		RolePolicy: &api.NetworkTopologyPolicy{HighestTierAllowed: ptr.To(1)},
	}}
	p, err := Predict(svc, topologyCluster())
	require.NoError(t, err)
	// Only leaf-c has 4 nodes: decode-0 goes there, prefill-0 in a 3-node leaf; decode-1 fits nowhere.
	assert.Equal(t, []string{"prefill-0", "decode-0"}, scheduled(p))
	for _, n := range p.Replicas[1].Nodes {
		assert.Contains(t, []string{"n6", "n7", "n8", "n9"}, n)
	}
	soft := *svc
	soft.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
		RolePolicy: &api.NetworkTopologyPolicy{Mode: api.NetworkTopologySoft, HighestTierAllowed: ptr.To(1)},
	}}
	p, err = Predict(&soft, topologyCluster())
	require.NoError(t, err)
	assert.Equal(t, Full, p.Status, "a soft policy is a preference, not a gang rule")
}

func TestHardGroupPolicyKeepsTheServiceInOneDomain(t *testing.T) {
	svc := manifest(t, "story4-disaggregated-multinode.yaml")
	svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
		GroupPolicy: &api.NetworkTopologyPolicy{HighestTierName: "spine"},
	}}
	p, err := Predict(svc, topologyCluster())
	require.NoError(t, err)
	// spine-1 has 6 nodes (leaf-a, leaf-b): the minimal set (6 pods), never decode-1 too.
	assert.Equal(t, Partial, p.Status)
	assert.Equal(t, []string{"prefill-0", "decode-0"}, scheduled(p))

	byNumber := *svc
	byNumber.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
		GroupPolicy: &api.NetworkTopologyPolicy{HighestTierAllowed: ptr.To(2)},
	}}
	p, err = Predict(&byNumber, Uniform(10, 8))
	require.NoError(t, err)
	assert.Equal(t, Blocked, p.Status, "no node says which spine it is under: nothing can honour the hard policy")
	assert.Len(t, p.Replicas, 3)

	svc.Spec.SchedulingStrategy.NetworkTopology.GroupPolicy.HighestTierName = "rack"
	_, err = Predict(svc, topologyCluster())
	assert.ErrorContains(t, err, `network tier "rack" is not named`)
}

func TestParseNodesFile(t *testing.T) {
	cluster, err := ParseNodesFile("nodes.yaml", []byte(`
tiers: {leaf: 1}
nodes:
  - {name: gpu-a, count: 3, gpus: 8, topology: {1: leaf-a}}
  - {name: cpu-0, gpus: 0, memory: 64Gi}
`))
	require.NoError(t, err)
	require.Len(t, cluster.Nodes, 2)
	assert.Equal(t, ptr.To(int64(64)<<30), cluster.Nodes[1].Memory, "a node's memory in bytes")
	_, err = ParseNodesFile("nodes.yaml", []byte("nodes:\n- {name: a, count: 3, gpus: 8}\n- {name: a-3, gpus: 8}\n- {name: a-01, gpus: 8}\n- {name: a-x, gpus: 8}"))
	assert.NoError(t, err, "a-0 .. a-2 only")
	assert.Equal(t, Node{Name: "gpu-a", Count: 3, GPUs: 8, Topology: map[int]string{1: "leaf-a"}}, cluster.Nodes[0], "gpu-a-0 .. gpu-a-2")
	assert.EqualValues(t, 24, cluster.GPUs())

	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown field":  {"nodes: [{name: a, gpu: 8}]", `nodes.yaml:1: unknown field "nodes[0].gpu" (did you mean "gpus"?)`},
		"bad yaml":       {"nodes: [{name: a", "nodes.yaml:1: yaml: line 1: "},
		"no nodes":       {"tiers: {}", "nodes.yaml:1: nodes: Required value"},
		"duplicate name": {"nodes:\n- {name: a, gpus: 8}\n- {name: a, gpus: 8}", `nodes.yaml:3: nodes[1].name: Duplicate value: "a": nodes[0] is named a too`},
		"two problems, each at its line": {"nodes:\n- {name: a, gpus: 8}\n- {name: a, gpus: 8}\n- {name: b, gpus: -1}",
			`nodes.yaml:3: nodes[1].name: Duplicate value: "a": nodes[0] is named a too; nodes.yaml:4: nodes[2].gpus: Invalid value: -1: must be 0 or more`},
		"counted names repeated, once": {"nodes:\n- {name: a, count: 3, gpus: 8}\n- {name: a, count: 2, gpus: 8}",
			`nodes.yaml:3: nodes[1].name: Duplicate value: "a-0": nodes[0] (count 3) names its nodes a-0 to a-2, and this one (count 2) names its nodes a-0 to a-1`},
		"a node named as a later counted group names one": {"nodes:\n- {name: a-1, gpus: 8}\n- {name: a, count: 3, gpus: 8}",
			`nodes.yaml:3: nodes[1].name: Duplicate value: "a-1": nodes[0] is named a-1 too, and this one (count 3) names its nodes a-0 to a-2`},
		"bad count":             {"nodes: [{name: a, count: 0, gpus: 8}]", "nodes.yaml:1: nodes[0].count: Invalid value: 0"},
		"bad tier":              {"nodes: [{name: a, gpus: 8, topology: {0: x}}]", "tiers start at 1"},
		"no memory":             {"nodes: [{name: a, gpus: 8, memory: 0}]", `nodes.yaml:1: nodes[0].memory: Invalid value: "0": must be more than 0 (a node's allocatable memory, e.g. 512Gi)`},
		"memory not a quantity": {"nodes: [{name: a, gpus: 8, memory: lots}]", `nodes.yaml:1: nodes[0].memory: must be a quantity such as 16Gi, 500m or 2, not "lots"`},
		// issue 55: a value of the wrong type or an unknown field hides no check of the rest
		"decoding and checks, each at its line": {"nodes:\n- {name: a, gpus: -1}\n- {name: b, gpus: \"x\"}\n- {name: a, gpus: 8}\n- {name: c, gpu: 8}",
			`nodes.yaml:2: nodes[0].gpus: Invalid value: -1: must be 0 or more; nodes.yaml:3: nodes[1].gpus: must be an integer, not string; ` +
				`nodes.yaml:4: nodes[2].name: Duplicate value: "a": nodes[0] is named a too; nodes.yaml:5: unknown field "nodes[3].gpu" (did you mean "gpus"?)`},
	} {
		_, err := ParseNodesFile("nodes.yaml", []byte(tc.yaml))
		assert.ErrorContains(t, err, tc.want, name)
		if name == "counted names repeated, once" {
			assert.Len(t, err.(*api.FileError).Problems, 1, "one problem a group")
		}
	}
}

// TestElasticReplicasComeAfterTheBase: an autoscaled role's elastic replicas are placed, whole,
// after every base replica, and the prediction counts the GPUs at maxReplicas.
func TestElasticReplicasComeAfterTheBase(t *testing.T) {
	svc := manifest(t, "autoscaling-pd.yaml") // prefill 1 (to 3) x 1 node, decode 2 (to 5) x 2 nodes
	cases := []struct {
		nodes     int64
		status    ServiceStatus
		scheduled []string
	}{
		{13, Full, []string{"prefill-0", "decode-0", "decode-1", "prefill-elastic-0", "prefill-elastic-1",
			"decode-elastic-0", "decode-elastic-1", "decode-elastic-2"}},
		{6, Partial, []string{"prefill-0", "decode-0", "decode-1", "prefill-elastic-0"}},
		{3, Partial, []string{"prefill-0", "decode-0"}},
		{2, Blocked, nil},
	}
	for _, tc := range cases {
		p, err := Predict(svc, Uniform(tc.nodes, 8))
		require.NoError(t, err)
		assert.Equal(t, tc.status, p.Status, "%d nodes", tc.nodes)
		assert.Equal(t, tc.scheduled, scheduled(p), "%d nodes", tc.nodes)
		assert.EqualValues(t, 104, p.GPUsFull, "prefill 3 x 8 + decode 5 x 16")
		assert.EqualValues(t, 40, p.GPUsBase, "prefill 1 x 8 + decode 2 x 16")
		assert.EqualValues(t, 24, p.GPUsMinimal)
	}
}
