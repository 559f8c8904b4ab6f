// SPDX-License-Identifier: Apache-2.0

package render

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// TestPoolSelectsServingPodsOnly: the guard on the labels the code places. Users cannot reach it
// (the fusioninfer.io/ labels are refused on templates), so the test breaks built trees: without
// the serving label no model server is in the pool; with the pool's labels on the Endpoint
// Picker's pods, pods that serve no model would be. Every example passes it (TestGoldenTrees).
func TestPoolSelectsServingPodsOnly(t *testing.T) {
	build := func(file string) *Tree {
		data, err := os.ReadFile("../../examples/manifests/" + file)
		require.NoError(t, err)
		docs, errs := api.Decode(data)
		require.Empty(t, errs)
		tree, verrs := Build(docs[0].Service)
		require.Empty(t, verrs)
		return tree
	}
	tree := build("llama-router.yaml")
	for _, o := range tree.Objects {
		if lws, ok := o.Object.(*lwsv1.LeaderWorkerSet); ok {
			delete(lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels, LabelServing)
		}
	}
	errs := checkPoolReach(tree)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "matches no serving pod of the service")

	tree = build("llama-router.yaml")
	for _, o := range tree.Objects {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			d.Spec.Template.Labels = merged(d.Spec.Template.Labels, tree.routing.poolSelector())
		}
	}
	errs = checkPoolReach(tree)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "matches the pods of Deployment/llama-8b-epp, which serve no model")

	// A dual-pods requester is not in the pool, FMA's server-running pod made from it is, until
	// FMA puts it to sleep as a standby.
	tree = build("granite-sleep-wake.yaml")
	templates, err := treePodTemplates(tree)
	require.NoError(t, err)
	var servers, requesters, standbys int
	for _, tpl := range templates {
		if !strings.HasPrefix(tpl.object, "LeaderWorkerSet/") {
			continue
		}
		switch {
		case tpl.serving:
			servers++
			assert.Equal(t, "true", tpl.labels[LabelServing], tpl.object)
			assert.Equal(t, "false", tpl.labels[LabelDualPodsSleeping], tpl.object)
			assert.NotContains(t, tpl.labels, LabelReplicaIndex, "FMA's server pod drops the per-pod labels")
		case tpl.labels[LabelDualPodsSleeping] == "true":
			standbys++
			assert.False(t, InPool(tpl.labels), tpl.object)
		default:
			requesters++
			assert.NotContains(t, tpl.labels, LabelServing, tpl.object)
		}
	}
	assert.NotZero(t, servers)
	assert.Equal(t, servers, requesters)
	assert.Equal(t, servers, standbys)
}
