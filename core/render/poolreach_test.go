// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// TestEndpointPickerFiltersReachThePool: a scheduling profile whose label filters admit none of
// the InferencePool's pods (every request it schedules would fail) is refused at render, at the
// router's endpointPickerConfig; filters that admit a pod of the pool render.
func TestEndpointPickerFiltersReachThePool(t *testing.T) {
	const header = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\n"
	profile := func(filter string) string {
		return header + "plugins:\n" + filter + "- type: queue-scorer\nschedulingProfiles:\n- name: default\n  plugins: [{pluginRef: f}, {pluginRef: queue-scorer}]\n"
	}
	cases := []struct {
		name     string
		file     string
		change   func(svc *api.InferenceService, router *api.Role)
		wantErr  []string // empty: renders
		wantPath string
	}{
		{name: "a label no template carries", file: "llama-router.yaml", change: func(_ *api.InferenceService, r *api.Role) {
			r.Strategy, r.EndpointPickerConfig = "", profile("- {type: label-selector-filter, name: f, parameters: {matchLabels: {tier: gold}}}\n")
		}, wantErr: []string{"schedulingProfiles[0] 'default': its filters 'f' (label-selector-filter) admit none of the InferencePool's pods", "fusioninfer.io/role-name=server"},
			wantPath: "spec.roles[1].endpointPickerConfig"},
		{name: "the label on the template", file: "llama-router.yaml", change: func(svc *api.InferenceService, r *api.Role) {
			r.Strategy, r.EndpointPickerConfig = "", profile("- {type: label-selector-filter, name: f, parameters: {matchLabels: {tier: gold}}}\n")
			tpl := svc.Spec.Roles[0].Template.DeepCopy()
			tpl.Labels = map[string]string{"tier": "gold"}
			svc.Spec.Roles[0].Template = tpl
		}},
		{name: "a label of ours", file: "llama-router.yaml", change: func(_ *api.InferenceService, r *api.Role) {
			r.Strategy, r.EndpointPickerConfig = "", profile("- {type: by-label, name: f, parameters: {label: fusioninfer.io/role-name, validValues: [server]}}\n")
		}},
		{name: "prefill-filter on a service without prefillers", file: "llama-router.yaml", change: func(_ *api.InferenceService, r *api.Role) {
			r.Strategy, r.EndpointPickerConfig = "", profile("- {type: prefill-filter, name: f}\n")
		}, wantErr: []string{"its filters 'f' (prefill-filter) admit none"}, wantPath: "spec.roles[1].endpointPickerConfig"},
		{name: "decode-filter admits pods without the role label", file: "llama-router.yaml", change: func(_ *api.InferenceService, r *api.Role) {
			r.Strategy, r.EndpointPickerConfig = "", profile("- {type: decode-filter, name: f}\n")
		}},
		{name: "GIE v1.2.0's prefill-filter (llm-d-inference-scheduler v0.4.0) on a service without prefillers", file: "llama-router.yaml",
			change: func(_ *api.InferenceService, r *api.Role) {
				r.Strategy = ""
				r.EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseGIE}
				r.EndpointPickerConfig = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- {type: prefill-filter, name: f}\n- type: queue-scorer\nschedulingProfiles:\n- name: default\n  plugins: [{pluginRef: f}, {pluginRef: queue-scorer, weight: 1}]\n"
			}, wantErr: []string{"its filters 'f' (prefill-filter) admit none"}, wantPath: "spec.roles[1].endpointPickerConfig"},
		{name: "a prefill profile selecting decode pods", file: "qwen-pd-router.yaml", change: func(_ *api.InferenceService, r *api.Role) {
			r.Strategy = ""
			r.EndpointPickerConfig = header + `plugins:
- type: prefill-filter
- type: decode-filter
- {type: label-selector-filter, name: decoders, parameters: {matchLabels: {llm-d.ai/role: decode}}}
- type: max-score-picker
- type: prefix-based-pd-decider
- {type: disagg-profile-handler, parameters: {deciders: {prefill: prefix-based-pd-decider}}}
schedulingProfiles:
- {name: prefill, plugins: [{pluginRef: prefill-filter}, {pluginRef: decoders}, {pluginRef: max-score-picker}]}
- {name: decode, plugins: [{pluginRef: decode-filter}, {pluginRef: max-score-picker}]}
`
		}, wantErr: []string{"schedulingProfiles[0] 'prefill': its filters 'prefill-filter' (prefill-filter), 'decoders' (label-selector-filter) admit none", "llm-d.ai/role=prefill", "llm-d.ai/role=decode"},
			wantPath: "spec.roles[2].endpointPickerConfig"},
		{name: "dual pods: the pool is FMA's server-running pods", file: "granite-sleep-wake.yaml", change: func(_ *api.InferenceService, r *api.Role) {
			r.Strategy, r.EndpointPickerConfig = "", profile("- {type: label-selector-filter, name: f, parameters: {matchLabels: {fusioninfer.io/serving: \"true\"}}}\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := story(t, tc.file).Service
			svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
			tc.change(svc, svc.Spec.Router())
			_, errs := render.Build(svc)
			if len(tc.wantErr) == 0 {
				require.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, tc.wantPath, errs[0].Field)
			for _, want := range tc.wantErr {
				assert.Contains(t, errs[0].Error(), want)
			}
			assert.NotContains(t, errs[0].Error(), "replica-index", "the labels each replica differs by are left out")
			assert.False(t, strings.Contains(errs[0].Error(), "Internal error"))
		})
	}
}
