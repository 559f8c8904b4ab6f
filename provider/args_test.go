package provider

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestMaxUnavailableFromAnySDK(t *testing.T) {
	for _, tc := range []struct {
		sent any
		want *intstr.IntOrString
		err  string
	}{
		{sent: nil},
		{sent: 2.0, want: &intstr.IntOrString{Type: intstr.Int, IntVal: 2}}, // TypeScript and Python numbers
		{sent: 3, want: &intstr.IntOrString{Type: intstr.Int, IntVal: 3}},
		{sent: "25%", want: &intstr.IntOrString{Type: intstr.String, StrVal: "25%"}},
		{sent: 1.5, err: "spec.roles[0].rolloutStrategy.maxUnavailable: want a whole number or a percent, got 1.5"},
		{sent: true, err: "spec.roles[0].rolloutStrategy.maxUnavailable: want a number or a percent string, got bool"},
	} {
		args := Args{Roles: []RoleArgs{{Name: "chat", ComponentType: "worker", RolloutStrategy: &RolloutStrategyArgs{MaxUnavailable: tc.sent}}}}
		got, err := args.componentArgs()
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got.Roles[0].RolloutStrategy.MaxUnavailable, "%v", tc.sent)
	}
}
