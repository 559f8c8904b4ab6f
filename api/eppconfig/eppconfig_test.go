// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryPresetLoadsInItsEPP: each preset passes Check, and its ConfigMap's text goes through
// the EPP's own loader with the plugins of the image that runs it, as at start-up.
func TestEveryPresetLoadsInItsEPP(t *testing.T) {
	for _, strategy := range append(Strategies(), StrategyDefault) {
		if strategy == StrategyPrecisePrefixCache {
			continue // llm-d-router's alone (TestPreciseStrategyIsLLMDRoutersAlone)
		}
		t.Run("strategy="+strategy, func(t *testing.T) {
			cfg, image, err := Preset(strategy, false)
			require.NoError(t, err)
			require.NoError(t, Check(cfg, image))
			raw, err := Marshal(cfg)
			require.NoError(t, err)
			reparsed, err := Parse(raw)
			require.NoError(t, err, raw)
			require.NoError(t, Check(reparsed, image), "the ConfigMap's text loads too")
			require.NoError(t, epp(raw, image), "the EPP loads it")
		})
	}
}

func TestDisaggregatedServicesRouteWithPDProfiles(t *testing.T) {
	cfg, image, err := Preset(StrategyPrefixCache, true)
	require.NoError(t, err)
	assert.Equal(t, FlavorLLMD, image)
	var profiles []string
	for _, p := range cfg.SchedulingProfiles {
		profiles = append(profiles, p.Name)
	}
	assert.Equal(t, []string{"prefill", "decode"}, profiles)
	assert.Error(t, Check(cfg, FlavorGIE), "the reference EPP has no prefill/decode plugins")
	raw, err := Marshal(cfg)
	require.NoError(t, err)
	assert.NoError(t, epp(raw, FlavorLLMD), "llm-d's EPP loads it")
}

func TestUnknownStrategy(t *testing.T) {
	_, _, err := Preset("round-robin", false)
	assert.ErrorContains(t, err, `unknown strategy "round-robin": one of kv-cache-utilization, lora-affinity, pd-disaggregation, precise-prefix-cache, prefix-cache, queue-size`)
	assert.ErrorIs(t, err, ErrUnknownStrategy, "api refuses it as a value not supported")
}

func TestRawConfigurations(t *testing.T) {
	cases := []struct {
		name   string
		raw    string
		flavor Flavor
		want   string // empty: accepted
	}{
		{"a valid custom mix", `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: prefix-cache-scorer
  parameters: {blockSize: 32, maxPrefixBlocksToMatch: 512}
- type: random-picker
schedulingProfiles:
- name: default
  plugins:
  - {pluginRef: queue-scorer, weight: 1}
  - {pluginRef: prefix-cache-scorer, weight: 4}
  - {pluginRef: random-picker}
`, FlavorGIE, ""},
		{"an unknown field", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugin: []\n", FlavorGIE, `unknown field "plugin"`},
		{"not YAML", "plugins: [", FlavorGIE, "invalid"},
		{"a plugin the image does not have", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: round-robin-picker\n", FlavorGIE,
			"plugin types not in gateway-api-inference-extension (registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0): round-robin-picker"},
		{"a llm-d plugin on the reference EPP", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: decode-filter\n", FlavorGIE,
			"plugin types not in"},
		{"a profile naming a plugin that is not declared", `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
schedulingProfiles:
- name: default
  plugins:
  - {pluginRef: prefix-cache-scorer, weight: 1}
`, FlavorGIE, "prefix-cache-scorer"},
		{"bad plugin parameters", `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefix-cache-scorer
  parameters: {blockSize: "big"}
`, FlavorGIE, "prefix-cache-scorer"},
		{"a llm-d scorer on the llm-d EPP (name checked)", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: load-aware-scorer\n", FlavorLLMD, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(tc.raw)
			if err == nil {
				err = Check(cfg, tc.flavor)
			}
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tc.want), err.Error())
		})
	}
}
