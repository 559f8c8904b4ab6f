package eppconfig

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRouterPresetsLoad: every preset of the default release passes llm-d-router v0.10.0's rules,
// and so does the ConfigMap's text read back.
func TestRouterPresetsLoad(t *testing.T) {
	for _, disaggregated := range []bool{false, true} {
		for _, strategy := range append(Strategies(), StrategyDefault) {
			if (strategy == StrategyPDDisaggregation) != disaggregated && strategy != StrategyDefault {
				continue
			}
			sel, selErr := Select(strategy, "", disaggregated, "", "")
			require.Nil(t, selErr)
			require.Nil(t, sel.Check(), "strategy %q", strategy)
			assert.Empty(t, sel.Warnings, "a preset uses nothing deprecated")
			text, err := sel.Text()
			require.NoError(t, err)
			assert.Contains(t, text, "apiVersion: "+RouterGroupVersion)
			cfg, warnings, err := ParseRouter(text)
			require.NoError(t, err, text)
			assert.Empty(t, warnings)
			_, err = CheckRouter(cfg)
			require.NoError(t, err, text)
		}
	}
}

const routerHeader = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\n"

// TestCheckRouter: llm-d-router v0.10.0's loader rules, each case a configuration it would
// refuse (with the path of what it refuses and, for a removed name, its replacement) or load
// (with the warnings it logs).
func TestCheckRouter(t *testing.T) {
	cases := []struct {
		name, raw    string
		wantErr      []string // all in the error; none: accepted
		wantWarnings []string // each in one of the warnings
	}{
		{name: "a custom mix", raw: `plugins:
- type: queue-scorer
- type: prefix-cache-scorer
  parameters: {matchLengthWeight: 0.5, matchLengthScaleTokens: 4096}
- type: random-picker
  parameters: {maxNumOfEndpoints: 2}
schedulingProfiles:
- name: default
  plugins: [{pluginRef: queue-scorer, weight: 1.5}, {pluginRef: prefix-cache-scorer}, {pluginRef: random-picker}]`},
		{name: "an unknown parameter (strict decoding)", raw: `plugins:
- type: prefix-cache-scorer
  parameters: {matchLengthWeigth: 0.5}`,
			wantErr: []string{"plugins[0].parameters", "prefix-cache-scorer", `unknown field "matchLengthWeigth"`}},
		{name: "a parameter GIE v1.2.0 had, moved to the producer", raw: `plugins:
- type: prefix-cache-scorer
  parameters: {blockSize: 64}`,
			wantErr: []string{"plugins[0].parameters", `"blockSize"`, "use approx-prefix-cache-producer"}},
		{name: "a parameter out of range", raw: `plugins:
- type: prefix-cache-scorer
  parameters: {matchLengthWeight: 2}`,
			wantErr: []string{"plugins[0].parameters", "matchLengthWeight must be between 0.0 and 1.0"}},
		{name: "a picker's unknown parameter", raw: `plugins:
- type: max-score-picker
  parameters: {maxEndpoints: 2}`,
			wantErr: []string{"plugins[0].parameters", `unknown field "maxEndpoints"`}},
		{name: "the llm-d-inference-scheduler v0.4.0 prefill/decode config", raw: `plugins:
- type: prefill-header-handler
- type: prefill-filter
- type: decode-filter
- type: prefix-cache-scorer
- type: max-score-picker
- type: pd-profile-handler
  parameters: {threshold: 0}
schedulingProfiles:
- {name: prefill, plugins: [{pluginRef: prefill-filter}, {pluginRef: prefix-cache-scorer, weight: 1}, {pluginRef: max-score-picker}]}
- {name: decode, plugins: [{pluginRef: decode-filter}, {pluginRef: prefix-cache-scorer, weight: 1}, {pluginRef: max-score-picker}]}`,
			wantErr: []string{"plugins[5].parameters", `"threshold"`, "prefix-based-pd-decider's nonCachedTokens"}},
		{name: "deprecated pd-profile-handler without its decider", raw: `plugins:
- type: pd-profile-handler
schedulingProfiles: [{name: prefill}, {name: decode}]`,
			wantErr: []string{"plugins[0]", "unregistered plugin prefix-based-pd-decider"}},
		{name: "deprecated plugins load with warnings naming the replacement", raw: `plugins:
- type: prefill-header-handler
- type: by-label
  parameters: {label: tier, validValues: [gold]}
- type: prefix-based-pd-decider
- type: pd-profile-handler
schedulingProfiles: [{name: prefill}, {name: decode}]`,
			wantWarnings: []string{
				"plugins[0]: plugin type 'prefill-header-handler' is deprecated (removed in v0.11.0): use disagg-profile-handler",
				"plugins[1]: plugin type 'by-label' is deprecated (removed in v0.11.0): use label-selector-filter",
				"plugins[3]: plugin type 'pd-profile-handler' is deprecated", "use disagg-profile-handler with a prefix-based-pd-decider",
			}},
		{name: "disagg-profile-handler's flat parameters are deprecated", raw: `plugins:
- type: always-disagg-pd-decider
- type: disagg-profile-handler
  parameters: {deciderPluginName: always-disagg-pd-decider}
schedulingProfiles: [{name: prefill}, {name: decode}]`,
			wantWarnings: []string{"plugins[1].parameters: disagg-profile-handler's flat parameters"}},
		{name: "disagg-profile-handler mixing the schemas", raw: `plugins:
- type: always-disagg-pd-decider
- type: disagg-profile-handler
  parameters: {deciderPluginName: always-disagg-pd-decider, deciders: {prefill: always-disagg-pd-decider}}`,
			wantErr: []string{"plugins[1].parameters", "use one format exclusively"}},
		{name: "a decider that is not defined", raw: `plugins:
- type: disagg-profile-handler
  parameters: {deciders: {prefill: prefix-based-pd-decider}}`,
			wantErr: []string{"plugins[0].parameters", "unregistered plugin prefix-based-pd-decider"}},
		{name: "a decider that is not a decider", raw: `plugins:
- type: queue-scorer
- type: disagg-profile-handler
  parameters: {deciders: {prefill: queue-scorer}}`,
			wantErr: []string{"plugins[1].parameters", "queue-scorer does not implement prefillDeciderPlugin"}},
		{name: "a prefill decider in prefill-first order", raw: `plugins:
- type: always-disagg-pd-decider
- type: disagg-profile-handler
  parameters: {stageOrder: prefill-first, deciders: {prefill: always-disagg-pd-decider}}`,
			wantErr: []string{"plugins[1].parameters", "prefill decider is not supported in prefill-first stage order"}},
		{name: "a negative decider threshold", raw: `plugins:
- type: prefix-based-pd-decider
  parameters: {nonCachedTokens: -1}`,
			wantErr: []string{"plugins[0].parameters", "nonCachedTokens parameter of prefix disaggregation decider cannot be negative"}},
		{name: "an unknown plugin", raw: `plugins:
- type: prefix-scorer`,
			wantErr: []string{"plugins[0]", "plugin type 'prefix-scorer' is not registered in llm-d-router v0.10.0", "prefix-cache-scorer"}},
		{name: "an Alpha plugin", raw: `plugins:
- type: session-affinity-scorer`,
			wantErr: []string{"plugins[0]", "Alpha stability level", "--allow-experimental-plugins"}},
		{name: "a duplicate name", raw: `plugins:
- type: queue-scorer
- type: queue-scorer`,
			wantErr: []string{"plugins[1]: duplicate plugin name 'queue-scorer'"}},
		{name: "an undefined plugin in a profile", raw: `plugins: [{type: queue-scorer}]
schedulingProfiles: [{name: default, plugins: [{pluginRef: kv-cache-utilization-scorer}]}]`,
			wantErr: []string{"schedulingProfiles[0].plugins[0]", "undefined plugin 'kv-cache-utilization-scorer'"}},
		{name: "two profiles without a profile handler", raw: `plugins: [{type: queue-scorer}]
schedulingProfiles: [{name: a}, {name: b}]`,
			wantErr: []string{"no profile handler configured"}},
		{name: "the single-profile handler with two profiles", raw: `plugins: [{type: single-profile-handler}]
schedulingProfiles: [{name: a}, {name: b}]`,
			wantErr: []string{"SingleProfileHandler cannot support multiple scheduling profiles"}},
		{name: "two pickers in a profile", raw: `plugins: [{type: max-score-picker}, {type: random-picker}]
schedulingProfiles: [{name: a, plugins: [{pluginRef: max-score-picker}, {pluginRef: random-picker}]}]`,
			wantErr: []string{"schedulingProfiles[0]", "2 pickers"}},
		{name: "a removed feature gate", raw: "featureGates: [enableLegacyMetrics]\nplugins: [{type: queue-scorer}]",
			wantErr: []string{"featureGates[0]", "enableLegacyMetrics was removed", "dataLayer.sources"}},
		{name: "an unknown feature gate", raw: "featureGates: [fastPath]\nplugins: [{type: queue-scorer}]",
			wantErr: []string{"featureGates[0]", "'fastPath' is unknown"}},
		{name: "a data layer naming its metrics", raw: `plugins:
- type: queue-scorer
- type: metrics-data-source
- type: core-metrics-extractor
dataLayer:
  sources: [{pluginRef: metrics-data-source, extractors: [{pluginRef: core-metrics-extractor}]}]`},
		{name: "a data layer naming an undefined extractor", raw: `plugins: [{type: metrics-data-source}]
dataLayer:
  sources: [{pluginRef: metrics-data-source, extractors: [{pluginRef: core-metrics-extractor}]}]`,
			wantErr: []string{"dataLayer.sources[0].extractors[0]", "undefined plugin 'core-metrics-extractor'"}},
		{name: "a parser naming an undefined plugin", raw: "plugins: [{type: queue-scorer}]\nrequestHandler: {parsers: [{pluginRef: openai-parser}]}",
			wantErr: []string{"requestHandler.parsers[0]", "undefined plugin 'openai-parser'"}},
		{name: "the deprecated top-level saturation detector", raw: "plugins: [{type: queue-scorer}, {type: concurrency-detector}]\nsaturationDetector: {pluginRef: concurrency-detector}",
			wantWarnings: []string{"saturationDetector: deprecated at the top level: use flowControl.saturationDetector"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, selErr := Select("", routerHeader+tc.raw, false, ReleaseRouter, "")
			require.Nil(t, selErr)
			err := sel.Check()
			if len(tc.wantErr) > 0 {
				require.NotNil(t, err, "llm-d-router v0.10.0 refuses it")
				assert.Equal(t, FieldEndpointPickerConfig, err.Field)
				for _, want := range tc.wantErr {
					assert.ErrorContains(t, err, want)
				}
				return
			}
			require.Nil(t, err)
			all := strings.Join(sel.Warnings, "\n")
			for _, want := range tc.wantWarnings {
				assert.Contains(t, all, want)
			}
			if len(tc.wantWarnings) == 0 {
				assert.Empty(t, sel.Warnings)
			}
		})
	}
}

// TestParseRouter: the loader's strict codec of its one kind; the old apiVersion loads with a warning.
func TestParseRouter(t *testing.T) {
	cases := []struct {
		name, raw, wantErr, wantWarning string
	}{
		{name: "an unknown top-level field", raw: routerHeader + "plugin: []", wantErr: `unknown field "plugin"`},
		{name: "an unknown field in a profile", raw: routerHeader + "schedulingProfiles: [{name: a, plugin: []}]", wantErr: `unknown field "plugin"`},
		{name: "another kind", raw: "apiVersion: llm-d.ai/v1alpha1\nkind: Config\n", wantErr: "want llm-d.ai/v1alpha1 and EndpointPickerConfig"},
		{name: "the deprecated apiVersion", raw: "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins: [{type: queue-scorer}]",
			wantWarning: "apiVersion inference.networking.x-k8s.io/v1alpha1 is deprecated: use llm-d.ai/v1alpha1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := ParseRouter(tc.raw)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Contains(t, strings.Join(warnings, "\n"), tc.wantWarning)
		})
	}
}

// TestSelectRouter: the default release is llm-d-router v0.10.0 whatever the strategy; the
// release is named, never guessed from an image.
func TestSelectRouter(t *testing.T) {
	sel, err := Select(StrategyPDDisaggregation, "", true, "", "")
	require.Nil(t, err)
	assert.Equal(t, ReleaseRouter, sel.Release)
	assert.Equal(t, FlavorRouter, sel.Flavor)
	assert.Equal(t, ImageRouter, sel.Image)

	sel, err = Select("", "", false, ReleaseRouter, "mirror.example.com/llm-d/llm-d-router-endpoint-picker@sha256:abc")
	require.Nil(t, err)
	assert.Equal(t, "mirror.example.com/llm-d/llm-d-router-endpoint-picker@sha256:abc", sel.Image)

	_, err = Select("", "", false, ReleaseRouter, ImageGIE)
	require.NotNil(t, err)
	assert.Equal(t, FieldImage, err.Field)
	assert.ErrorContains(t, err, "set the release to gie-v1.5.0 or gie-v1.2.0")

	_, err = Select("", "", false, "llm-d-router-v0.9.0", "")
	require.NotNil(t, err)
	assert.Equal(t, FieldRelease, err.Field)
	assert.ErrorContains(t, err, "one of [llm-d-router-v0.10.0 gie-v1.5.0 gie-v1.2.0 gie-lwepp-v1.6.0]")

	sel, err = Select("", "", false, ReleaseGIE, "")
	require.Nil(t, err)
	assert.Equal(t, ImageGIE, sel.Image, "the older release stays selectable")
}
