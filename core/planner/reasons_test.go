// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// TestReasons: every verdict that is not Full says why, with the numbers; a Full one says nothing.
func TestReasons(t *testing.T) {
	story4 := func(t *testing.T) *api.InferenceService { return manifest(t, "story4-disaggregated-multinode.yaml") }
	mixed := Cluster{Nodes: []Node{{Name: "a", GPUs: 8}, {Name: "b", GPUs: 8}, {Name: "c", GPUs: 8}, {Name: "d", GPUs: 8}, {Name: "e", GPUs: 8},
		{Name: "f", GPUs: 4}, {Name: "g", GPUs: 4}}}
	for _, tc := range []struct {
		name    string
		svc     func(t *testing.T) *api.InferenceService
		cluster Cluster
		status  ServiceStatus
		want    []string
	}{
		{"full", story4, Uniform(10, 8), Full, nil},
		{"a pod larger than every node", story4, Uniform(20, 4), Blocked, []string{
			"each prefill pod needs 8 nvidia.com/gpu on one node; the largest node has 4",
			"each decode pod needs 8 nvidia.com/gpu on one node; the largest node has 4"}},
		{"the minimal set needs more GPUs than the cluster has", story4, Uniform(5, 8), Blocked, []string{
			"the gang's minimal set (prefill-0 2 pods of 8 GPUs, decode-0 4 pods of 8 GPUs) must be placed together: it needs 48 GPUs, the cluster has 40"}},
		{"enough GPUs on nodes too small", story4, mixed, Blocked, []string{
			"the gang's minimal set (prefill-0 2 pods of 8 GPUs, decode-0 4 pods of 8 GPUs) must be placed together: " +
				"the cluster has the 48 GPUs it needs, but not on the right nodes (6 pods of 8 GPUs, the nodes hold 5 such pods)"}},
		{"partial: the extra replica waits", story4, Uniform(6, 8), Partial, []string{
			"decode-1 waits: it needs 4 pods of 8 GPUs, and 0 GPUs are free beside the placed replicas"}},
		{"taskMember needs the whole service", func(t *testing.T) *api.InferenceService {
			svc := story4(t)
			svc.Spec.GangPolicy = &api.GangPolicy{Mode: api.GangModeTaskMember}
			return svc
		}, Uniform(8, 8), Blocked, []string{
			"gangPolicy.mode taskMember: the whole service (prefill-0 2 pods of 8 GPUs, decode-0 4 pods of 8 GPUs, decode-1 4 pods of 8 GPUs) " +
				"must be placed together: it needs 80 GPUs, the cluster has 64"}},
		{"a hard group topology", func(t *testing.T) *api.InferenceService {
			svc := story4(t)
			svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{NetworkTopology: &api.NetworkTopology{
				GroupPolicy: &api.NetworkTopologyPolicy{HighestTierAllowed: ptr.To(2)}}}
			return svc
		}, Uniform(10, 8), Blocked, []string{
			"the gang's minimal set (prefill-0 2 pods of 8 GPUs, decode-0 4 pods of 8 GPUs) must be placed together within one domain " +
				"of the hard network topology (spec.schedulingStrategy.networkTopology.groupPolicy): no domain holds its 48 GPUs"}},
		{"no gang: each replica on its own, no word of a gang", func(t *testing.T) *api.InferenceService {
			svc := manifest(t, "story1-monolithic.yaml")
			svc.Spec.Roles[0].Replicas = ptr.To(3)
			return svc
		}, Uniform(2, 1), Partial, []string{
			"inference-2 waits: it needs 1 pod of 1 GPU, and 0 GPUs are free beside the placed replicas"}},
		{"free GPUs spread over too many nodes", func(t *testing.T) *api.InferenceService {
			svc := manifest(t, "story3-multinode.yaml")
			return svc
		}, Cluster{Nodes: append(Uniform(4, 8).Nodes, Node{Name: "x", GPUs: 4}, Node{Name: "y", GPUs: 4}, Node{Name: "z", GPUs: 4}, Node{Name: "w", GPUs: 4},
			Node{Name: "v", GPUs: 4}, Node{Name: "u", GPUs: 4}, Node{Name: "s", GPUs: 4}, Node{Name: "r", GPUs: 4})}, Partial, []string{
			"inference-1 waits: it needs 4 pods of 8 GPUs, and 32 GPUs are free beside the placed replicas, but not 8 on each of 4 nodes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Predict(tc.svc(t), tc.cluster)
			require.NoError(t, err)
			assert.Equal(t, tc.status, p.Status)
			assert.Equal(t, tc.want, p.Reasons)
		})
	}
}
