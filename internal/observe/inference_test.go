// SPDX-License-Identifier: Apache-2.0

package observe

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
)

// TestInferenceObjectsOfEveryGroup: the status reads the objectives and rewrites of each API
// group the cluster serves, with their group, and which groups serve each kind: a group the API
// server answers 404 for is not served; a list it forbids leaves the groups unknown.
func TestInferenceObjectsOfEveryGroup(t *testing.T) {
	gvr := func(group, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1alpha2", Resource: resource}
	}
	listKinds := map[schema.GroupVersionResource]string{}
	for _, g := range diagnosis.InferenceGroups {
		listKinds[gvr(g, eppconfig.ResourceObjectives)] = "InferenceObjectiveList"
		listKinds[gvr(g, eppconfig.ResourceModelRewrites)] = "InferenceModelRewriteList"
	}
	rewrite := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": eppconfig.GroupInferenceX + "/v1alpha2", "kind": eppconfig.KindModelRewrite,
		"metadata": map[string]any{"name": "svc-support", "namespace": "ns"},
		"spec":     map[string]any{"poolRef": map[string]any{"name": "svc-pool"}, "rules": []any{}},
	}}
	newClients := func(refuse func(group string) error) *Clients {
		fake := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, rewrite)
		fake.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
			if err := refuse(action.GetResource().Group); err != nil {
				return true, nil, err
			}
			return false, nil, nil
		})
		return &Clients{dynamic: fake, server: "https://cluster"}
	}

	// llm-d.ai's CRDs are not installed
	o := &diagnosis.Observed{}
	require.NoError(t, newClients(func(group string) error {
		if group == eppconfig.GroupLLMD {
			return apierrors.NewNotFound(schema.GroupResource{Group: group}, "")
		}
		return nil
	}).addInferenceObjects(context.Background(), o, "ns"))
	assert.Equal(t, map[string][]string{eppconfig.KindObjective: {eppconfig.GroupInferenceX}, eppconfig.KindModelRewrite: {eppconfig.GroupInferenceX}},
		o.InferenceGroups)
	require.Len(t, o.InferenceModelRewrites, 1)
	assert.Equal(t, eppconfig.GroupInferenceX+"/v1alpha2", o.InferenceModelRewrites[0].APIVersion, "its group is known")
	assert.Equal(t, "svc-pool", string(o.InferenceModelRewrites[0].Spec.PoolRef.Name))

	// both installed
	o = &diagnosis.Observed{}
	require.NoError(t, newClients(func(string) error { return nil }).addInferenceObjects(context.Background(), o, "ns"))
	assert.Equal(t, []string{eppconfig.GroupLLMD, eppconfig.GroupInferenceX}, o.InferenceGroups[eppconfig.KindModelRewrite])

	// not allowed to list llm-d.ai's: which groups it serves is not known
	o = &diagnosis.Observed{}
	require.NoError(t, newClients(func(group string) error {
		if group == eppconfig.GroupLLMD {
			return apierrors.NewForbidden(schema.GroupResource{Group: group}, "", nil)
		}
		return nil
	}).addInferenceObjects(context.Background(), o, "ns"))
	assert.Nil(t, o.InferenceGroups)
}
