// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// waves groups the tree's LWSs and Endpoint Picker Deployment by how many of them stand before
// each in its dependency chain: what Pulumi can update together, in order.
func waves(t *testing.T, tree *render.Tree) [][]string {
	t.Helper()
	bySuffix := map[string]render.Object{}
	for _, o := range tree.Objects {
		bySuffix[o.Suffix] = o
	}
	staged := func(o render.Object) bool {
		return o.TypeMeta == render.KindLeaderWorkerSet || o.Suffix == "epp-deployment"
	}
	after := rolloutAfter(tree)
	depth := map[string]int{}
	var out [][]string
	for _, o := range tree.Objects { // dependencies come first
		if !staged(o) {
			continue
		}
		d := 0
		for _, dep := range append(append([]string{}, o.DependsOn...), after[o.Suffix]...) {
			if before, ok := bySuffix[dep]; ok && staged(before) {
				d = max(d, depth[dep]+1)
			}
		}
		depth[o.Suffix] = d
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], o.Suffix)
	}
	return out
}

// rolloutAfter is, by suffix, the objects whose update must be done before the object's: the
// members of the barrier its RolloutAfter names.
func rolloutAfter(tree *render.Tree) map[string][]string {
	refs := make([]render.Ref, len(tree.Objects))
	for i, o := range tree.Objects {
		refs[i] = o.Ref
	}
	members := map[int][]string{}
	for _, b := range render.RolloutBarriers(refs) {
		members[b.Batch] = b.Members
	}
	out := map[string][]string{}
	for _, o := range tree.Objects {
		if o.RolloutAfter > 0 {
			out[o.Suffix] = members[o.RolloutAfter]
		}
	}
	return out
}

// workers is story 1 (one single-node worker role, no gang scheduling) with replicas and a
// rollout strategy.
func workers(t *testing.T, replicas int32, strategy *api.RolloutStrategy) *render.Tree {
	t.Helper()
	svc := story(t, "story1-monolithic.yaml").Service
	svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
	svc.Spec.Roles[0].Replicas = ptr.To(int(replicas))
	svc.Spec.Roles[0].RolloutStrategy = strategy
	return build(t, svc)
}

func TestRolloutBatchesOfOneRole(t *testing.T) {
	two := ptr.To(intstr.FromInt32(2))
	cases := []struct {
		name     string
		replicas int32
		strategy *api.RolloutStrategy
		want     [][]string
	}{
		{"6 replicas, maxUnavailable 2: three batches", 6, &api.RolloutStrategy{MaxUnavailable: two},
			[][]string{{"inference-0", "inference-1"}, {"inference-2", "inference-3"}, {"inference-4", "inference-5"}}},
		{"the default, 25% of 8", 8, nil,
			[][]string{{"inference-0", "inference-1"}, {"inference-2", "inference-3"}, {"inference-4", "inference-5"}, {"inference-6", "inference-7"}}},
		{"25% of 3 rounds down to 0: at least 1", 3, nil,
			[][]string{{"inference-0"}, {"inference-1"}, {"inference-2"}}},
		{"a last batch smaller than the others", 5, &api.RolloutStrategy{MaxUnavailable: two},
			[][]string{{"inference-0", "inference-1"}, {"inference-2", "inference-3"}, {"inference-4"}}},
		{"50%", 4, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromString("50%"))},
			[][]string{{"inference-0", "inference-1"}, {"inference-2", "inference-3"}}},
		{"100%: all at once", 3, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromString("100%"))},
			[][]string{{"inference-0", "inference-1", "inference-2"}}},
		{"maxUnavailable 0 with a surge: one at a time", 3, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(1)},
			[][]string{{"inference-0"}, {"inference-1"}, {"inference-2"}}},
		{"pinned replicas keep their place in the chain", 4, &api.RolloutStrategy{MaxUnavailable: two, Partition: ptr.To(2)},
			[][]string{{"inference-0", "inference-1"}, {"inference-2", "inference-3"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree := workers(t, tc.replicas, tc.strategy)
			assert.Equal(t, tc.want, waves(t, tree))
			refs, largest := make([]render.Ref, len(tree.Objects)), 0
			for i, o := range tree.Objects {
				refs[i] = o.Ref
			}
			for _, batch := range tc.want {
				largest = max(largest, len(batch))
			}
			creation, batch := render.AwaitedAtOnce(refs)
			assert.Zero(t, creation, "every replica is created without a wait: none holds another's creation back")
			assert.Equal(t, largest, batch)
			for _, o := range tree.Objects {
				assert.True(t, o.Awaited, "%s: a batch holds the next back only while Pulumi waits for it", o.Name)
				assert.Equal(t, render.WaitForAvailable, o.Object.(interface{ GetAnnotations() map[string]string }).GetAnnotations()[render.AnnotationPulumiWaitFor])
			}
			checkDependsOnEarlier(t, tree)
		})
	}
}

// A batch is updated after the whole batch before, but created with it: no LWS depends on
// another for its creation.
func TestRolloutBatchIsUpdatedAfterTheWholeBatchBefore(t *testing.T) {
	tree := workers(t, 6, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))})
	after := rolloutAfter(tree)
	for i, want := range [][]string{nil, nil, {"inference-0", "inference-1"}, {"inference-0", "inference-1"}, {"inference-2", "inference-3"}, {"inference-2", "inference-3"}} {
		assert.Equal(t, want, after[tree.Objects[i].Suffix], tree.Objects[i].Name)
		assert.Empty(t, tree.Objects[i].DependsOn, "%s is created with every other replica", tree.Objects[i].Name)
	}
}

func TestRolloutOrderAcrossRoles(t *testing.T) {
	pd := func(t *testing.T, change func(svc *api.InferenceService)) *render.Tree {
		svc := story(t, "qwen-pd-router.yaml").Service
		svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
		for i := range svc.Spec.Roles {
			if svc.Spec.Roles[i].ComponentType.Serving() {
				svc.Spec.Roles[i].Replicas = ptr.To(3)
			}
		}
		svc.Spec.Await = api.AwaitAll // the example awaits its minimal set only
		change(svc)
		return build(t, svc)
	}
	t.Run("default: the gang's minimal set, decoders, prefillers, router", func(t *testing.T) {
		tree := pd(t, func(*api.InferenceService) {})
		assert.Equal(t, [][]string{{"decode-0", "prefill-0"}, {"decode-1"}, {"decode-2"}, {"prefill-1"}, {"prefill-2"}, {"epp-deployment"}}, waves(t, tree))
		route := tree.Objects[len(tree.Objects)-1]
		assert.Equal(t, "httproute", route.Suffix)
		assert.Subset(t, route.DependsOn, []string{"decode-0", "decode-1", "decode-2", "prefill-0", "prefill-1", "prefill-2"},
			"the route attaches once every replica is up")
		checkDependsOnEarlier(t, tree)
	})
	t.Run("a declared order, the rest after it", func(t *testing.T) {
		tree := pd(t, func(svc *api.InferenceService) { svc.Spec.RolloutOrder = []string{"router", "prefill"} })
		assert.Equal(t, [][]string{{"prefill-0", "decode-0"}, {"epp-deployment"}, {"prefill-1"}, {"prefill-2"}, {"decode-1"}, {"decode-2"}}, waves(t, tree))
		checkDependsOnEarlier(t, tree)
	})
	t.Run("a larger minimal set", func(t *testing.T) {
		tree := pd(t, func(svc *api.InferenceService) {
			svc.Spec.GangPolicy = &api.GangPolicy{MinRoleReplicas: map[string]int{"decode": 2}}
		})
		assert.Equal(t, [][]string{{"decode-0", "decode-1", "prefill-0"}, {"decode-2"}, {"prefill-1"}, {"prefill-2"}, {"epp-deployment"}}, waves(t, tree))
	})
}

func TestNoBatchesWithoutAwaits(t *testing.T) {
	for mode, want := range map[api.AwaitMode][][]string{
		api.AwaitNone: {{"inference-0", "inference-1", "inference-2", "inference-3"}},
		// the minimal set first, then every other replica at once, unawaited
		api.AwaitMinimal: {{"inference-0"}, {"inference-1", "inference-2", "inference-3"}},
	} {
		svc := workers(t, 4, nil).Service
		svc.Spec.Await = mode
		assert.Equal(t, want, waves(t, build(t, svc)), "%s: a batch would hold nothing back", mode)
	}
}

// Each batch but the last ends at a barrier that names its objects; the batch after names the
// barrier alone, so the chain is one dependency per object. Barrier 0 names every rolled replica:
// the first batch waits until all are created.
func TestRolloutBarriersEndEachBatchButTheLast(t *testing.T) {
	tree := workers(t, 6, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))})
	refs := make([]render.Ref, len(tree.Objects))
	for i, o := range tree.Objects {
		refs[i] = o.Ref
	}
	assert.Equal(t, []render.RolloutBarrier{
		{Batch: 0, Suffix: "batch-0-done", Members: []string{"inference-0", "inference-1", "inference-2", "inference-3", "inference-4", "inference-5"},
			Description: "created: inference 0-5"},
		{Batch: 1, Suffix: "batch-1-done", Members: []string{"inference-0", "inference-1"}, Description: "inference 0-1"},
		{Batch: 2, Suffix: "batch-2-done", Members: []string{"inference-2", "inference-3"}, Description: "inference 2-3"},
	}, render.RolloutBarriers(refs))
	for i, want := range []int{0, 0, 1, 1, 2, 2} {
		assert.Equal(t, want, tree.Objects[i].RolloutAfter, tree.Objects[i].Name)
	}
}
