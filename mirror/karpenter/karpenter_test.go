// SPDX-License-Identifier: Apache-2.0

package karpenter_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/mirrortest"
)

// TestKarpenterMirrorsAgreeWithKarpenter: every field of the Karpenter mirrors, set, decodes
// strictly into Karpenter's own type and comes back the same, so no field has a JSON name or a
// shape Karpenter does not have.
func TestKarpenterMirrorsAgreeWithKarpenter(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		f := mirrortest.Filler(seed)

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

// TestDeepCopiesShareNothing: a filled mirror's deep copy is equal to it, and changing every
// string, map and slice element of the copy in place leaves the original as it was (no map, slice
// or pointer shared), as informers and clients rely on when they hand out copies.
func TestDeepCopiesShareNothing(t *testing.T) {
	mirrortest.RequireDeepCopiesShareNothing(t, func() []runtime.Object {
		return []runtime.Object{&karpenter.NodePool{}, &karpenter.NodeClaim{}, &karpenter.NodeClaimList{}}
	})
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
