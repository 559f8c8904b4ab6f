// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// role is a one-role service's inputs as a language SDK sends them, with one role field set.
func role(key string, v property.Value) property.Map {
	return property.NewMap(map[string]property.Value{"roles": property.New(property.NewArray([]property.Value{
		property.New(property.NewMap(map[string]property.Value{"name": property.New("chat"), "componentType": property.New("worker"), key: v})),
	}))})
}

func TestMaxUnavailableFromAnySDK(t *testing.T) {
	for _, tc := range []struct {
		sent property.Value
		want *intstr.IntOrString
		err  string
	}{
		{sent: property.New(2.0), want: &intstr.IntOrString{Type: intstr.Int, IntVal: 2}}, // TypeScript and Python numbers
		{sent: property.New("25%"), want: &intstr.IntOrString{Type: intstr.String, StrVal: "25%"}},
		{sent: property.New(1.5), err: "rolloutStrategy.maxUnavailable"},
		{sent: property.New(true), err: "rolloutStrategy.maxUnavailable"},
	} {
		svc, _, err := serviceOf("svc", role("rolloutStrategy", property.New(property.NewMap(map[string]property.Value{"maxUnavailable": tc.sent}))))
		if tc.err != "" {
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, svc.Spec.Roles[0].RolloutStrategy.MaxUnavailable, "%v", tc.sent)
	}
}

// TestIntegersAreNotNarrowedBeforeValidation: a number too large for the Kubernetes field it ends
// in reaches validation whole and is refused there with its path, never wrapped.
func TestIntegersAreNotNarrowedBeforeValidation(t *testing.T) {
	svc, _, err := serviceOf("svc", role("replicas", property.New(4294967297.0)))
	require.NoError(t, err)
	assert.Equal(t, 4294967297, *svc.Spec.Roles[0].Replicas)
	_, errs := api.ResolveShape(svc)
	require.NotEmpty(t, errs)
	assert.Contains(t, errs.ToAggregate().Error(), "spec.roles[0].replicas: Invalid value: 4294967297: must be >= 1 and <= 10000")
}

// TestUnknownShapeIsRefused: only pod templates may be unknown at preview.
func TestUnknownShapeIsRefused(t *testing.T) {
	_, _, err := serviceOf("svc", role("replicas", property.New(property.Computed)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.roles[0].replicas: Invalid value: \"(unknown)\": must be known at preview")
}

func TestTemplatesWithUnknownsInside(t *testing.T) {
	tpl := property.New(property.NewMap(map[string]property.Value{"spec": property.New(property.NewMap(map[string]property.Value{
		"containers": property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{
			"name": property.New("vllm"), "env": property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{
				"name": property.New("MODEL_CONFIGMAP"), "value": property.New(property.Computed)}))})),
		}))})),
	}))}))
	_, templates, err := serviceOf("svc", role("template", tpl))
	require.NoError(t, err)
	assert.Equal(t, map[int]bool{0: true}, templates, "the nested unknown is seen")
}
