// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func maxUnavailable(v intstr.IntOrString) *RolloutStrategy {
	return &RolloutStrategy{MaxUnavailable: &v}
}

func TestRolloutRules(t *testing.T) {
	// validService's decode role (roles[1]) has 2 replicas; the service is gang scheduled with
	// one replica of each role in its minimal set.
	cases := []struct {
		name   string
		mutate func(*InferenceService)
		want   string
	}{
		{"maxUnavailable and maxSurge both zero", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromInt32(0)) },
			"spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: \"0\": may not be 0 when maxSurge is 0"},
		{"0% and no surge", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("0%")) },
			"spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: \"0%\": may not be 0 when maxSurge is 0"},
		{"percent above 100", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("150%")) },
			"spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: \"150%\": must not be more than 100%"},
		{"a percent too large for a number", func(s *InferenceService) {
			s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("99999999999999999999%"))
		}, "spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: \"99999999999999999999%\": must not be more than 100%"},
		{"a count is a number", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("2")) },
			`spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: "2": must be a count (2) or a percent of the replicas ("25%")`},
		{"a negative count", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromInt32(-1)) },
			"spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: \"-1\": must be >= 0"},
		{"batches need awaits", func(s *InferenceService) {
			s.Spec.Await = AwaitNone
			s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromInt32(1))
		}, "spec.roles[1].rolloutStrategy.maxUnavailable: Forbidden: batches need every replica awaited, and spec.await is none"},
		{"batches smaller than the gang's minimal set", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{MinRoleReplicas: map[string]int{"decode": 2}}
			s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromInt32(1))
		}, "spec.roles[1].rolloutStrategy.maxUnavailable: Invalid value: \"1\": the gang's minimal set holds 2 replicas of this role (spec.gangPolicy.minRoleReplicas)"},
		{"taskMember gangs every replica", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{Mode: GangModeTaskMember}
			s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("50%"))
		}, "spec.gangPolicy.mode taskMember needs every replica"},
		{"an unknown rolloutOrder role", func(s *InferenceService) { s.Spec.RolloutOrder = []string{"decode", "prefil"} },
			`spec.rolloutOrder[1]: Unsupported value: "prefil": supported values: "prefill", "decode"`},
		{"a role ordered twice", func(s *InferenceService) { s.Spec.RolloutOrder = []string{"decode", "decode"} },
			`spec.rolloutOrder[1]: Duplicate value: "decode"`},
		{"an order needs awaits", func(s *InferenceService) {
			s.Spec.Await = AwaitMinimal
			s.Spec.RolloutOrder = []string{"prefill"}
		}, "spec.rolloutOrder: Forbidden: an order needs every replica awaited, and spec.await is minimal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, validService, tc.mutate, tc.want) })
	}
}

func TestRolloutSettingsThatPass(t *testing.T) {
	for name, mutate := range map[string]func(*InferenceService){
		"maxUnavailable 0 with a surge": func(s *InferenceService) {
			s.Spec.Roles[1].RolloutStrategy = &RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(1)}
		},
		"a percent":                  func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("50%")) },
		"100%":                       func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromString("100%")) },
		"a count above the replicas": func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = maxUnavailable(intstr.FromInt32(5)) },
		"a partial order":            func(s *InferenceService) { s.Spec.RolloutOrder = []string{"prefill"} },
	} {
		t.Run(name, func(t *testing.T) {
			svc := validService()
			mutate(svc)
			assert.Empty(t, Validate(svc))
		})
	}
}

func TestRolloutBatchSize(t *testing.T) {
	cases := []struct {
		replicas       int32
		maxUnavailable *intstr.IntOrString
		want           int32
	}{
		{replicas: 1, want: 1},
		{replicas: 3, want: 1},  // 25% of 3 rounds down to 0, at least 1
		{replicas: 8, want: 2},  // 25% of 8
		{replicas: 10, want: 2}, // 25% of 10 rounds down
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromInt32(2)), want: 2},
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromString("50%")), want: 3},
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromString("10%")), want: 1},
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromInt32(0)), want: 1}, // with a surge: one at a time
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromInt32(9)), want: 6},
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromString("100%")), want: 6},
		// A role no validation has seen (a Go program calls the method): the default's, no panic.
		{replicas: 8, maxUnavailable: ptr.To(intstr.FromString("half")), want: 2},
	}
	for _, tc := range cases {
		role := Role{Replicas: ptr.To(int(tc.replicas))}
		if tc.maxUnavailable != nil {
			role.RolloutStrategy = &RolloutStrategy{MaxUnavailable: tc.maxUnavailable, MaxSurge: ptr.To(1)}
		}
		assert.Equal(t, tc.want, role.RolloutBatchSize(), "replicas %d maxUnavailable %v", tc.replicas, tc.maxUnavailable)
	}
	autoscaled := Role{ComponentType: ComponentTypeWorker, Replicas: ptr.To(2), Autoscaling: &Autoscaling{MinReplicas: ptr.To(2), MaxReplicas: 10},
		RolloutStrategy: &RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromString("half"))}}
	assert.Equal(t, int32(2), autoscaled.ElasticMaxUnavailable(), "25% of 8 elastic replicas")
}
