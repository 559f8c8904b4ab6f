// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

// TestPlanCountsTheMemoryAnOffloadTakes: a server that offloads its KV cache to the pod's memory
// (kvCacheOffload, held by its memory request) fits only where a node has that memory left; a
// cluster that says no memory is planned on GPUs alone, as before.
func TestPlanCountsTheMemoryAnOffloadTakes(t *testing.T) {
	svc := manifest(t, "qwen-precise-prefix-cache.yaml") // 4 servers of 1 GPU, 48Gi each (32Gi offloaded)
	gi := int64(1) << 30
	node := func(name string, memory int64) Node {
		n := Node{Name: name, GPUs: 8}
		if memory > 0 {
			n.Memory = ptr.To(memory * gi)
		}
		return n
	}
	for name, tc := range map[string]struct {
		nodes     []Node
		status    ServiceStatus
		scheduled []string
		reasons   []string
	}{
		"memory not said: GPUs alone": {[]Node{node("a", 0)}, Full, []string{"server-0", "server-1", "server-2", "server-3"}, nil},
		"room for all":                {[]Node{node("a", 200)}, Full, []string{"server-0", "server-1", "server-2", "server-3"}, nil},
		"the memory of two": {[]Node{node("a", 100)}, Partial, []string{"server-0", "server-1"}, []string{
			"server-2, server-3 wait: each needs 1 pod of 1 GPU and 48Gi of memory, and 6 GPUs are free beside the placed replicas, but not 1 with 48Gi of memory on each of 1 nodes"}},
		"two nodes, each of one": {[]Node{node("a", 64), node("b", 64)}, Partial, []string{"server-0", "server-1"}, []string{
			"server-2, server-3 wait: each needs 1 pod of 1 GPU and 48Gi of memory, and 14 GPUs are free beside the placed replicas, but not 1 with 48Gi of memory on each of 1 nodes"}},
		"no node large enough": {[]Node{node("a", 32), node("b", 32)}, Blocked, nil, []string{
			"each server pod requests 48Gi of memory on one node; the largest node has 32Gi"}},
		"the memory on a node without GPUs": {[]Node{{Name: "a", GPUs: 8, Memory: ptr.To(16 * gi)}, {Name: "cpu", GPUs: 0, Memory: ptr.To(512 * gi)}}, Blocked, nil, []string{
			"each server pod needs 1 nvidia.com/gpu and 48Gi of memory on one node; no node has both"}},
	} {
		p, err := Predict(svc, Cluster{Nodes: tc.nodes})
		require.NoError(t, err, name)
		assert.Equal(t, tc.status, p.Status, name)
		assert.Equal(t, tc.scheduled, scheduled(p), name)
		assert.Equal(t, tc.reasons, p.Reasons, name)
	}
}
