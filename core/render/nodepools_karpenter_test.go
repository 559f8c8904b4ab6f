// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// TestAcceptedNodePoolsPassKarpentersValidation: over karpenter pools with labels and taints
// drawn from keys Karpenter takes and keys it refuses (restricted domains, its own labels, taint
// values with spaces, the GPU taint again), every NodePool of a spec the project accepts passes
// Karpenter's own NodePool validation ((*NodePool).RuntimeValidate, which keeps a failing NodePool
// from ever being Ready), and the project refuses some of them: bad input is refused at render,
// not found by a NodePool that never launches a node.
func TestAcceptedNodePoolsPassKarpentersValidation(t *testing.T) {
	base, err := json.Marshal(story(t, "pd-gpu-node-pools.yaml").Service)
	require.NoError(t, err)
	labelKeys := []string{"workload", "example.com/team", "topology.kubernetes.io/zone", "kubernetes.io/hostname",
		"beta.kubernetes.io/arch", "karpenter.sh/nodepool", "karpenter.sh/initialized", "karpenter.sh/capacity-type",
		"node.kubernetes.io/instance-type", "node.kubernetes.io/pool", "k8s.io/x", "kops.k8s.io/group"}
	labelValues := []string{"a", "on-demand", "spot", "p5.48xlarge"}
	taintKeys := []string{"dedicated", "nvidia.com/gpu", "example.com/x"}
	taintValues := []string{"", "llm-serving", "llm serving"}
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute}
	rng := rand.New(rand.NewPCG(25, 1))
	accepted, refused := 0, 0
	for i := range 400 {
		svc := &api.InferenceService{}
		require.NoError(t, json.Unmarshal(base, svc))
		pool := &svc.Spec.NodePools[0]
		require.Equal(t, api.NodePoolKarpenter, pool.PoolKind())
		pool.Labels = map[string]string{}
		for range rng.IntN(3) {
			pool.Labels[labelKeys[rng.IntN(len(labelKeys))]] = labelValues[rng.IntN(len(labelValues))]
		}
		pool.Taints = nil
		for range rng.IntN(3) {
			pool.Taints = append(pool.Taints, api.Taint{Key: taintKeys[rng.IntN(len(taintKeys))],
				Value: taintValues[rng.IntN(len(taintValues))], Effect: effects[rng.IntN(len(effects))]})
		}
		tree, errs := render.Build(svc)
		if len(errs) > 0 {
			refused++
			continue
		}
		accepted++
		for _, o := range tree.Objects {
			np, ok := o.Object.(*karpenter.NodePool)
			if !ok {
				continue
			}
			data, err := json.Marshal(np)
			require.NoError(t, err)
			upstream := &karpv1.NodePool{}
			require.NoError(t, json.Unmarshal(data, upstream))
			require.NoError(t, upstream.RuntimeValidate(t.Context()), "case %d: labels %v, taints %v", i, pool.Labels, fmt.Sprint(pool.Taints))
		}
	}
	require.Greater(t, accepted, 50, "the draws include pools the project accepts")
	require.Greater(t, refused, 50, "and pools it refuses")
}
