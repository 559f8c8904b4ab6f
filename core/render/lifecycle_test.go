// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// story4With is story 4 of the fusioninfer InferenceService design with a change, built.
func story4With(t *testing.T, change func(svc *api.InferenceService)) *render.Tree {
	t.Helper()
	svc := story(t, "story4-disaggregated-multinode.yaml").Service
	svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
	change(svc)
	return build(t, svc)
}

func byName(tree *render.Tree) map[string]*lwsv1.LeaderWorkerSet {
	out := map[string]*lwsv1.LeaderWorkerSet{}
	for _, lws := range leaderWorkerSets(tree) {
		out[lws.Name] = lws
	}
	return out
}

func TestRestartAndStartupPolicies(t *testing.T) {
	tree := story4With(t, func(svc *api.InferenceService) {
		svc.Spec.Roles[0].RestartPolicy = lwsv1.NoneRestartPolicy
		// LeaderReady is refused on every role (validation: a multi-node leader's server, always
		// probed, is ready only once its workers joined), so the one value that renders is LeaderCreated
		svc.Spec.Roles[0].StartupPolicy = lwsv1.LeaderCreatedStartupPolicy
	})
	lwss := byName(tree)
	prefill, decode := lwss["deepseek-r1-disagg-prefill-0"], lwss["deepseek-r1-disagg-decode-0"]
	assert.Equal(t, lwsv1.NoneRestartPolicy, prefill.Spec.LeaderWorkerTemplate.RestartPolicy)
	assert.Equal(t, lwsv1.LeaderCreatedStartupPolicy, prefill.Spec.StartupPolicy)
	assert.Equal(t, lwsv1.RecreateGroupOnPodRestart, decode.Spec.LeaderWorkerTemplate.RestartPolicy, "default: a replica restarts whole")
	assert.Equal(t, lwsv1.LeaderCreatedStartupPolicy, decode.Spec.StartupPolicy, "default: workers with the leader")
}

// TestAwaitTimeout: every awaited LWS tells the kubernetes provider how long to wait for it: the
// role's awaitTimeout, else the spec's, else an hour; replicas nobody awaits carry none.
func TestAwaitTimeout(t *testing.T) {
	timeouts := func(change func(svc *api.InferenceService)) map[string]string {
		out := map[string]string{}
		for name, lws := range byName(story4With(t, change)) {
			out[name] = lws.Annotations[render.AnnotationPulumiTimeoutSeconds]
		}
		return out
	}
	assert.Equal(t, map[string]string{"deepseek-r1-disagg-prefill-0": "3600", "deepseek-r1-disagg-decode-0": "3600", "deepseek-r1-disagg-decode-1": "3600"},
		timeouts(func(*api.InferenceService) {}), "an hour by default")
	assert.Equal(t, map[string]string{"deepseek-r1-disagg-prefill-0": "5400", "deepseek-r1-disagg-decode-0": "7200", "deepseek-r1-disagg-decode-1": "7200"},
		timeouts(func(svc *api.InferenceService) { svc.Spec.AwaitTimeout = "90m"; svc.Spec.Roles[1].AwaitTimeout = "2h" }))
	assert.Equal(t, map[string]string{"deepseek-r1-disagg-prefill-0": "3600", "deepseek-r1-disagg-decode-0": "3600", "deepseek-r1-disagg-decode-1": ""},
		timeouts(func(svc *api.InferenceService) { svc.Spec.Await = api.AwaitMinimal }), "the replicas beyond the minimal set are not awaited")
}

// TestTerminationGracePeriod: a role's drain time reaches the leader and worker pods of each of
// its replicas; other roles keep their templates' value.
func TestTerminationGracePeriod(t *testing.T) {
	lwss := byName(story4With(t, func(svc *api.InferenceService) {
		svc.Spec.Roles[1].TerminationGracePeriodSeconds = ptr.To(600)
	}))
	for _, name := range []string{"deepseek-r1-disagg-decode-0", "deepseek-r1-disagg-decode-1"} {
		tpl := lwss[name].Spec.LeaderWorkerTemplate
		assert.Equal(t, ptr.To[int64](600), tpl.LeaderTemplate.Spec.TerminationGracePeriodSeconds, name)
		assert.Equal(t, ptr.To[int64](600), tpl.WorkerTemplate.Spec.TerminationGracePeriodSeconds, name)
	}
	assert.Nil(t, lwss["deepseek-r1-disagg-prefill-0"].Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.TerminationGracePeriodSeconds)
}

// TestScalingLeavesExistingReplicasAlone: each replica is its own LWS, so a change of replicas
// adds or removes whole LWSs at the end and does not touch the others (Pulumi sees no diff).
func TestScalingLeavesExistingReplicasAlone(t *testing.T) {
	base := byName(story4With(t, func(*api.InferenceService) {}))
	up := byName(story4With(t, func(svc *api.InferenceService) { svc.Spec.Roles[1].Replicas = ptr.To(4) }))
	down := byName(story4With(t, func(svc *api.InferenceService) { svc.Spec.Roles[1].Replicas = ptr.To(1) }))
	require.Len(t, up, 5)
	for name, lws := range base {
		assert.Equal(t, lws, up[name], "scaling up leaves %s as it was", name)
	}
	assert.Contains(t, up, "deepseek-r1-disagg-decode-3")
	assert.Equal(t, []string{"deepseek-r1-disagg-decode-0", "deepseek-r1-disagg-prefill-0"}, sortedKeys(down),
		"scaling down removes the highest indexes")
	assert.Equal(t, base["deepseek-r1-disagg-decode-0"], down["deepseek-r1-disagg-decode-0"])
}

// TestResizingUpdatesInPlace: a new nodeCount keeps every LWS's name (an update, not a
// replacement) and changes its size and the PodGroup's subgroup size with it.
func TestResizingUpdatesInPlace(t *testing.T) {
	tree := story4With(t, func(svc *api.InferenceService) {
		svc.Spec.Roles[1].Multinode = &api.Multinode{NodeCount: 2}
		svc.Spec.Roles[1].Template = svc.Spec.Roles[1].Template.DeepCopy()
		svc.Spec.Roles[1].Template.Spec.Containers[0].Args = []string{"--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "16"}
	})
	lwss := byName(tree)
	require.Contains(t, lwss, "deepseek-r1-disagg-decode-1")
	assert.Equal(t, int32(2), *lwss["deepseek-r1-disagg-decode-1"].Spec.LeaderWorkerTemplate.Size)
	for _, sg := range podGroup(tree).Spec.SubGroupPolicy {
		if sg.Name == "decode" {
			assert.Equal(t, int32(2), *sg.SubGroupSize)
		}
	}
}

func sortedKeys(m map[string]*lwsv1.LeaderWorkerSet) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRolloutStrategy(t *testing.T) {
	tree := story4With(t, func(svc *api.InferenceService) {
		svc.Spec.Roles[1].RolloutStrategy = &api.RolloutStrategy{MaxSurge: ptr.To(1), Partition: ptr.To(1)}
	})
	lwss := byName(tree)
	assert.Equal(t, 1, lwss["deepseek-r1-disagg-decode-0"].Spec.RolloutStrategy.RollingUpdateConfiguration.MaxSurge.IntValue(),
		"a decode replica brings its new group up before the old one goes")
	assert.Equal(t, 0, lwss["deepseek-r1-disagg-prefill-0"].Spec.RolloutStrategy.RollingUpdateConfiguration.MaxSurge.IntValue())
	pinned := map[string]bool{}
	for _, o := range tree.Objects {
		if o.TypeMeta == render.KindLeaderWorkerSet {
			pinned[o.Name] = o.Pinned
		}
	}
	assert.Equal(t, map[string]bool{"deepseek-r1-disagg-prefill-0": false, "deepseek-r1-disagg-decode-0": true,
		"deepseek-r1-disagg-decode-1": false}, pinned, "replicas below the partition keep their template")
}

func TestSurgeRaisesTheNodePoolLimit(t *testing.T) {
	svc := story(t, "pd-gpu-node-pools.yaml").Service
	svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
	for i := range svc.Spec.Roles {
		if svc.Spec.Roles[i].Name == "decode" {
			svc.Spec.Roles[i].RolloutStrategy = &api.RolloutStrategy{MaxSurge: ptr.To(1)}
		}
	}
	limit := func() string {
		q := build(t, svc).Objects[0].Object.(*karpenter.NodePool).Spec.Limits[api.GPUResourceName]
		return q.String()
	}
	assert.Equal(t, "96", limit(), "(2 decode replicas + 1 surge group, as batches of 1 update) x 4 nodes x 8 GPUs: room for the new group")
	svc.Spec.Await = api.AwaitNone
	assert.Equal(t, "128", limit(), "unawaited, every replica updates and surges at once")
}
