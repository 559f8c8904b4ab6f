// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// TestSharedServicesNeverOvercommitANode: whatever services a file holds and whatever the
// cluster, the services placed in order on the cluster they share never put more GPUs on a node
// than it has, nor more memory than a node that says its memory has, and the later ones see what
// the earlier took: the same services and cluster with room for all place every replica.
func TestSharedServicesNeverOvercommitANode(t *testing.T) {
	data, err := os.ReadFile("../../examples/manifests/story1-monolithic.yaml")
	require.NoError(t, err)
	rapid.Check(t, func(rt *rapid.T) {
		var services []*api.InferenceService
		for i := range rapid.IntRange(1, 4).Draw(rt, "services") {
			docs, errs := api.Decode(data)
			require.Empty(rt, errs)
			svc := docs[0].Service
			svc.Name = fmt.Sprintf("svc-%d", i)
			role := &svc.Spec.Roles[0]
			role.Replicas = ptr.To(rapid.IntRange(1, 3).Draw(rt, "replicas"))
			gpus := rapid.SampledFrom([]int64{1, 2, 4, 8}).Draw(rt, "gpus")
			memory := rapid.SampledFrom([]int64{0, 16, 48}).Draw(rt, "memory Gi")
			role.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{api.GPUResourceName: *resource.NewQuantity(gpus, resource.DecimalSI)}
			if memory > 0 {
				role.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(memory<<30, resource.BinarySI)}
			}
			require.Empty(rt, api.Validate(svc))
			services = append(services, svc)
		}
		var cluster Cluster
		size := map[string]Node{}
		for e := range rapid.IntRange(1, 3).Draw(rt, "entries") {
			n := Node{Name: fmt.Sprintf("n%d", e), Count: rapid.Int64Range(0, 4).Draw(rt, "count"), GPUs: rapid.SampledFrom([]int64{1, 2, 4, 8}).Draw(rt, "node gpus")}
			if memory := rapid.SampledFrom([]int64{0, 32, 64, 128}).Draw(rt, "node memory Gi"); memory > 0 {
				n.Memory = ptr.To(memory << 30)
			}
			cluster.Nodes = append(cluster.Nodes, n)
			for j := range n.nodes() {
				size[n.nodeName(j)] = n
			}
		}
		predictions, err := PredictShared(services, cluster)
		require.NoError(rt, err)
		taken := map[string]room{}
		for _, p := range predictions {
			for _, r := range p.Replicas {
				if r.Scheduled {
					for _, node := range r.Nodes {
						taken[node] = room{taken[node].gpus + r.GPUsPerPod, taken[node].memory + r.MemoryPerPod}
					}
				}
			}
		}
		for node, took := range taken {
			require.Contains(rt, size, node, "a pod on a node the cluster has")
			assert.LessOrEqual(rt, took.gpus, size[node].GPUs, "%s holds %d GPUs of %d", node, took.gpus, size[node].GPUs)
			if memory := size[node].Memory; memory != nil {
				assert.LessOrEqual(rt, took.memory, *memory, "%s holds %d bytes of memory of %d", node, took.memory, *memory)
			}
		}
		roomy := Cluster{Nodes: []Node{{Name: "big", Count: 12, GPUs: 8, Memory: ptr.To(int64(512) << 30)}}}
		all, err := PredictShared(services, roomy)
		require.NoError(rt, err)
		for _, p := range all {
			assert.Equal(rt, Full, p.Status, "room for every replica of every service")
		}
	})
}
