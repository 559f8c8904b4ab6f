package karpenter_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/randfill"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// TestKarpenterMirrorsAgreeWithKarpenter: every field of the Karpenter mirrors, set, decodes
// strictly into Karpenter's own type and comes back the same, so no field has a JSON name or a
// shape Karpenter does not have.
func TestKarpenterMirrorsAgreeWithKarpenter(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		f := filler(seed)

		pool := &karpenter.NodePool{}
		f.Fill(pool)
		pool.Spec.Template.Spec.ExpireAfter = []string{karpenter.Never, "720h0m0s"}[seed%2]
		pool.Spec.Disruption.ConsolidateAfter = []string{"10m0s", karpenter.Never}[seed%2]
		requireSameInUpstream(t, pool, &karpv1.NodePool{})

		claim := &karpenter.NodeClaim{}
		f.Fill(claim)
		requireSameInUpstream(t, claim, &karpv1.NodeClaim{})
	}
}

// TestRenderedNodePoolsAreKarpenters: the NodePools the examples render (the topology goldens)
// are Karpenter NodePools, field for field.
func TestRenderedNodePoolsAreKarpenters(t *testing.T) {
	goldens, err := filepath.Glob("../../core/render/testdata/golden/*.yaml")
	require.NoError(t, err)
	pools := 0
	for _, golden := range goldens {
		data, err := os.ReadFile(golden)
		require.NoError(t, err)
		decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc map[string]any
			if decoder.Decode(&doc) != nil {
				break
			}
			if doc["kind"] != "NodePool" {
				continue
			}
			pools++
			ours := &karpenter.NodePool{}
			raw, err := json.Marshal(doc)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, ours), golden)
			requireSameInUpstream(t, ours, &karpv1.NodePool{})
		}
	}
	require.NotZero(t, pools, "the goldens have node pools")
}

// requireSameInUpstream: ours, as JSON, decodes strictly into upstream (every field of ours is one
// of upstream's), and upstream's JSON holds every value ours has, at the same path (upstream may
// write more: its fields this project does not set, and their defaults).
func requireSameInUpstream(t *testing.T, ours, upstream any) {
	t.Helper()
	data, err := json.Marshal(ours)
	require.NoError(t, err)
	strict, err := sigsjson.UnmarshalStrict(data, upstream)
	require.NoError(t, err)
	require.Empty(t, strict, "fields %T does not have", upstream)
	back, err := json.Marshal(upstream)
	require.NoError(t, err)
	var want, got any
	require.NoError(t, json.Unmarshal(data, &want))
	require.NoError(t, json.Unmarshal(back, &got))
	require.Equal(t, want, restrictTo(got, want), "%T loses or changes a value of %T", upstream, ours)
}

// restrictTo is got with only the map keys want has, recursively.
func restrictTo(got, want any) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for k, child := range w {
			if value, ok := g[k]; ok {
				out[k] = restrictTo(value, child)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return got
		}
		out := make([]any, len(g))
		for i := range g {
			out[i] = restrictTo(g[i], w[i])
		}
		return out
	}
	return got
}

// filler sets every field, with values both sides can carry (quantities, timestamps to the second).
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 2).Funcs(
		func(s *string, c randfill.Continue) { *s = "v" + c.String(6) },
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Intn(1000)+1), resource.DecimalSI)
		},
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(int64(c.Int31()), 0).Rfc3339Copy() },
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			*m = metav1.ObjectMeta{Name: "v" + c.String(6), Labels: map[string]string{"a": c.String(4)}}
		},
		func(s *metav1.ConditionStatus, c randfill.Continue) { *s = metav1.ConditionFalse },
		func(e *corev1.TaintEffect, c randfill.Continue) { *e = corev1.TaintEffectNoSchedule },
		func(op *corev1.NodeSelectorOperator, c randfill.Continue) { *op = corev1.NodeSelectorOpIn },
	)
}

// TestDeepCopiesShareNothing: a filled mirror's deep copy is equal to it, and changing every
// string, map and slice element of the copy in place leaves the original as it was (no map, slice
// or pointer shared), as informers and clients rely on when they hand out copies.
func TestDeepCopiesShareNothing(t *testing.T) {
	for seed := int64(0); seed < 10; seed++ {
		for _, obj := range []runtime.Object{&karpenter.NodePool{}, &karpenter.NodeClaim{}, &karpenter.NodeClaimList{}} {
			filler(seed).Fill(obj)
			before, err := json.Marshal(obj)
			require.NoError(t, err)
			cp := obj.DeepCopyObject()
			require.Equal(t, obj, cp)
			changeInPlace(reflect.ValueOf(cp))
			require.NotEqual(t, obj, cp)
			after, err := json.Marshal(obj)
			require.NoError(t, err)
			require.JSONEq(t, string(before), string(after), "%T: changing the copy changed the original", obj)
		}
	}
}

// changeInPlace changes every exported string under v where it is stored and adds a key to every
// map, so whatever v shares with another object changes there too.
func changeInPlace(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			changeInPlace(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				changeInPlace(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			changeInPlace(v.Index(i))
		}
	case reflect.Map:
		if !v.IsNil() {
			v.SetMapIndex(reflect.ValueOf("added").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		}
	case reflect.String:
		v.SetString(v.String() + "-changed")
	}
}

// TestKarpenterNodeLabelRuleIsKarpenters: for every key of a table (each restricted domain, its
// subdomains and the exceptions, the well-known labels, keys without a domain, and domains that
// only end like a restricted one) KarpenterRefusesNodeLabel refuses exactly the keys Karpenter's
// own NodePool validation refuses as a label of the pool's nodes ((*NodePool).RuntimeValidate).
func TestKarpenterNodeLabelRuleIsKarpenters(t *testing.T) {
	keys := append([]string{"team", "example.com/team", "kubernetes.io/hostname", "kubernetes.io/arch",
		"beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zones",
		"karpenter.sh/nodepool", "karpenter.sh/capacity-type", "karpenter.sh/initialized", "karpenter.k8s.aws/instance-family",
		"notkubernetes.io/x", "nvidia.com/gpu.product", "fusioninfer.io/node-pool"}, karpenter.KarpenterWellKnownLabels...)
	for _, domain := range append(append([]string{}, karpenter.KarpenterRestrictedLabelDomains...), "kops.k8s.io", "node.kubernetes.io",
		"node-restriction.kubernetes.io", "example.com") {
		for _, sub := range []string{"", "a.", "team."} {
			keys = append(keys, sub+domain+"/x")
		}
	}
	refused := 0
	for _, key := range keys {
		pool := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
			ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{key: "v"}}}}}
		karpenterRefuses := pool.RuntimeValidate(t.Context()) != nil
		require.Equal(t, karpenterRefuses, karpenter.KarpenterRefusesNodeLabel(key), "label %q", key)
		if karpenterRefuses {
			refused++
		}
	}
	require.Greater(t, refused, 10, "the table has keys Karpenter refuses")
	require.Less(t, refused, len(keys)-10, "and keys it takes")
}

// TestCapacityTypesAreKarpenters: the capacity types validation allows are Karpenter's own.
func TestCapacityTypesAreKarpenters(t *testing.T) {
	require.Equal(t, []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot, karpv1.CapacityTypeReserved},
		[]string{karpenter.CapacityTypeOnDemand, karpenter.CapacityTypeSpot, karpenter.CapacityTypeReserved})
}
