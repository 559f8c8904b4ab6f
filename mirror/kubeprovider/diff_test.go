// SPDX-License-Identifier: Apache-2.0

package kubeprovider

import (
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The rules the traces do not exercise: what replaces, what ignoreChanges hides, and a Patch
// resource, which only a new name or namespace replaces.
func TestDiffReplacementsAndIgnoredChanges(t *testing.T) {
	job := func(image string, annotations map[string]any) map[string]any {
		return map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "svc-model-download", "namespace": "llm", "annotations": annotations},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "download", "image": image}}}}}}
	}
	lws := func(image string) map[string]any {
		return map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
			"metadata": map[string]any{"name": "svc-chat-0", "namespace": "llm"},
			"spec":     map[string]any{"leaderWorkerTemplate": map[string]any{"size": float64(2), "image": image}}}
	}
	jobURN := resource.NewURN("s", "p", "fusioninfer:index:InferenceService", "kubernetes:batch/v1:Job", "svc-model-download")
	lwsURN := resource.NewURN("s", "p", "", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "svc-chat-0")
	patchURN := resource.NewURN("s", "p", "", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch", "svc-chat-0-rollout")
	for _, tc := range []struct {
		name       string
		urn        resource.URN
		old, new   map[string]any
		ignore     []string
		want       map[string]plugin.DiffKind
		replaceDBR bool
	}{
		{name: "a Job's new template replaces it, the old one first", urn: jobURN, old: job("a", nil), new: job("b", nil),
			want: map[string]plugin.DiffKind{"spec.template.spec.containers[0].image": plugin.DiffUpdateReplace}, replaceDBR: true},
		{name: "a Job's new annotation updates it", urn: jobURN, old: job("a", nil), new: job("a", map[string]any{"x": "y"}),
			want: map[string]plugin.DiffKind{"metadata.annotations": plugin.DiffAdd}},
		{name: "an LWS's new image updates it in place", urn: lwsURN, old: lws("a"), new: lws("b"),
			want: map[string]plugin.DiffKind{"spec.leaderWorkerTemplate.image": plugin.DiffUpdate}},
		{name: "ignoreChanges hides a change under it", urn: lwsURN, old: lws("a"), new: lws("b"), ignore: []string{"spec"},
			want: nil},
		{name: "a Patch resource's image is updated in place", urn: patchURN, old: lws("a"), new: lws("b"),
			want: map[string]plugin.DiffKind{"spec.leaderWorkerTemplate.image": plugin.DiffUpdate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := &unstructured.Unstructured{Object: tc.old}
			live := old.DeepCopy()
			live.SetResourceVersion("7")
			live.SetUID("u")
			got, err := Diff(tc.urn, Checkpoint(old, live, old.GetAPIVersion(), "m"), resource.NewPropertyMapFromMap(tc.new), tc.ignore, true)
			require.NoError(t, err)
			var kinds map[string]plugin.DiffKind
			for path, d := range got.DetailedDiff {
				if kinds == nil {
					kinds = map[string]plugin.DiffKind{}
				}
				kinds[path] = d.Kind
			}
			assert.Equal(t, tc.want, kinds)
			assert.Equal(t, len(tc.want) > 0, got.Changes == plugin.DiffSome)
			assert.Equal(t, tc.replaceDBR, got.DeleteBeforeReplace)
			assert.Equal(t, tc.replaceDBR, len(got.ReplaceKeys) > 0)
		})
	}
}

// A type token the provider cannot read is refused by Check with the provider's words.
func TestCheckRefusesWhatTheProviderRefuses(t *testing.T) {
	news := resource.NewPropertyMapFromMap(map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "svc-chat-0"}})
	_, err := Check(resource.NewURN("s", "p", "", "kubernetes:apiextensions.k8s.io:CustomResourcePatch", "svc-chat-0-rollout"), news)
	assert.EqualError(t, err, `apiVersion does not have both a group and a version: "apiextensions.k8s.io"`)
	unnamed := resource.NewPropertyMapFromMap(map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"})
	_, err = Check(resource.NewURN("s", "p", "", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch", "r"), unnamed)
	assert.EqualError(t, err, "patch resources require the `.metadata.name` field to be set")
	checked, err := Check(resource.NewURN("s", "p", "", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch", "r"), news)
	require.NoError(t, err)
	assert.Equal(t, news, checked)
}
