// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	giev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

const negativeNamespace = "conformance-negative"

func objectOf(t *testing.T, objects []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() == kind {
			return o.DeepCopy()
		}
	}
	t.Fatalf("no %s", kind)
	return nil
}

func inferencePool(ports ...int32) *giev1.InferencePool {
	pool := &giev1.InferencePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: giev1.GroupVersion.String(), Kind: "InferencePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "negative-pool", Namespace: negativeNamespace},
		Spec: giev1.InferencePoolSpec{
			Selector:          giev1.LabelSelector{MatchLabels: map[giev1.LabelKey]giev1.LabelValue{"fusioninfer.io/service": "negative"}},
			EndpointPickerRef: giev1.EndpointPickerRef{Name: "negative-epp", Port: &giev1.Port{Number: 9002}},
		},
	}
	for _, p := range ports {
		pool.Spec.TargetPorts = append(pool.Spec.TargetPorts, giev1.Port{Number: giev1.PortNumber(p)})
	}
	return pool
}

func httpRoute(backendKind string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Name: "negative-route", Namespace: negativeNamespace},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "inference-gateway"}}},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{
					Group: ptr.To[gwv1.Group]("inference.networking.k8s.io"),
					Kind:  ptr.To(gwv1.Kind(backendKind)),
					Name:  "negative-pool",
				},
			}}}}},
		},
	}
}

// TestServerRefusesBrokenObjects proves the suite can fail: for each kind, a valid object is
// accepted and the same object with one broken field is refused by the API server.
func TestServerRefusesBrokenObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, testCluster.ensureNamespace(ctx, negativeNamespace))
	story4 := exampleObjects(t)["story4-disaggregated-multinode.yaml"]

	cases := []struct {
		name          string
		valid, broken func(t *testing.T) *unstructured.Unstructured
		refusal       string
	}{
		{
			name:  "PodGroup with subGroupSize 0",
			valid: func(t *testing.T) *unstructured.Unstructured { return objectOf(t, story4, "PodGroup") },
			broken: func(t *testing.T) *unstructured.Unstructured {
				pg := objectOf(t, story4, "PodGroup")
				policies, _, _ := unstructured.NestedSlice(pg.Object, "spec", "subGroupPolicy")
				policies[0].(map[string]any)["subGroupSize"] = int64(0)
				require.NoError(t, unstructured.SetNestedSlice(pg.Object, policies, "spec", "subGroupPolicy"))
				return pg
			},
			refusal: "subGroupSize",
		},
		{
			name:  "LeaderWorkerSet with an unknown restartPolicy",
			valid: func(t *testing.T) *unstructured.Unstructured { return objectOf(t, story4, "LeaderWorkerSet") },
			broken: func(t *testing.T) *unstructured.Unstructured {
				lws := objectOf(t, story4, "LeaderWorkerSet")
				require.NoError(t, unstructured.SetNestedField(lws.Object, "RestartWhenever", "spec", "leaderWorkerTemplate", "restartPolicy"))
				return lws
			},
			refusal: "restartPolicy",
		},
		{
			name:    "InferencePool with duplicate target ports",
			valid:   func(t *testing.T) *unstructured.Unstructured { return mustUnstructured(t, inferencePool(8000, 8200)) },
			broken:  func(t *testing.T) *unstructured.Unstructured { return mustUnstructured(t, inferencePool(8000, 8000)) },
			refusal: "port number must be unique",
		},
		{
			name:  "HTTPRoute with a bad backendRef kind",
			valid: func(t *testing.T) *unstructured.Unstructured { return mustUnstructured(t, httpRoute("InferencePool")) },
			broken: func(t *testing.T) *unstructured.Unstructured {
				return mustUnstructured(t, httpRoute("Inference Pool!"))
			},
			refusal: "kind",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			valid := tc.valid(t)
			valid.SetNamespace(negativeNamespace)
			_, err := testCluster.apply(ctx, valid)
			require.NoError(t, err, "the valid twin is accepted")
			require.NoError(t, testCluster.delete(ctx, valid))

			broken := tc.broken(t)
			broken.SetNamespace(negativeNamespace)
			_, err = testCluster.apply(ctx, broken)
			require.Error(t, err, "the API server refuses it")
			assert.Contains(t, err.Error(), tc.refusal)
			progress("refused as it should be: %s", tc.name)
		})
	}
}

func mustUnstructured(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	u, err := toUnstructured(obj)
	require.NoError(t, err)
	return u
}
