// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"slices"
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
			if (strategy == StrategyPDDisaggregation) != disaggregated && strategy != StrategyDefault && strategy != StrategyPrecisePrefixCache {
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
		{name: "a plugin GIE v1.5.0 had and llm-d-router v0.10.0 removed, with its replacement", raw: `plugins:
- type: predicted-latency-scorer`,
			wantErr: []string{"plugins[0]: plugin type 'predicted-latency-scorer' was removed from llm-d-router: use predicted-latency-producer with latency-scorer"}},
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
		// defaults.go ensureParsers: an undeclared parser is registered by its type; refused only when
		// no such type is registered. configloader.go buildParserRegistry: it must be a parser.
		{name: "a parser naming an undeclared plugin of a registered type", raw: "plugins: [{type: queue-scorer}]\nrequestHandler: {parsers: [{pluginRef: openai-parser}, {pluginRef: vertexai-parser}]}"},
		{name: "a parser naming an unregistered type", raw: "plugins: [{type: queue-scorer}]\nrequestHandler: {parsers: [{pluginRef: openai-parser}, {pluginRef: openai}]}",
			wantErr: []string{"requestHandler.parsers[1]: plugin type 'openai' not found in registry"}},
		{name: "a parser naming a plugin that is no parser", raw: "plugins: [{type: queue-scorer}]\nrequestHandler: {parsers: [{pluginRef: queue-scorer}]}",
			wantErr: []string{"requestHandler.parsers[0]: the plugin \"queue-scorer\" is not a parser plugin"}},
		{name: "the deprecated top-level parser, undeclared", raw: "plugins: [{type: queue-scorer}]\nparser: {pluginRef: passthrough-parser}",
			wantWarnings: []string{"parser: deprecated at the top level: use requestHandler.parsers"}},
		{name: "the deprecated top-level parser, of an unregistered type", raw: "plugins: [{type: queue-scorer}]\nparser: {pluginRef: grpc-parser}",
			wantErr: []string{"parser: plugin type 'grpc-parser' not found in registry"}},
		{name: "the deprecated top-level parser gives way to requestHandler.parsers", raw: "plugins: [{type: queue-scorer}]\nparser: {pluginRef: grpc-parser}\nrequestHandler: {parsers: [{pluginRef: openai-parser}]}",
			wantWarnings: []string{"parser: deprecated at the top level: use requestHandler.parsers"}},
		// defaults.go ensureSaturationDetector registers utilization-detector only; validation.go
		// validateSaturationDetector refuses any other undeclared one.
		{name: "an undeclared utilization-detector", raw: "plugins: [{type: queue-scorer}]\nflowControl: {saturationDetector: {pluginRef: utilization-detector}}"},
		{name: "an undeclared concurrency-detector", raw: "plugins: [{type: queue-scorer}]\nflowControl: {saturationDetector: {pluginRef: concurrency-detector}}",
			wantErr: []string{"flowControl.saturationDetector: saturation detector references undefined plugin 'concurrency-detector'"}},
		{name: "a saturation detector that is no detector", raw: "plugins: [{type: queue-scorer}]\nflowControl: {saturationDetector: {pluginRef: queue-scorer}}",
			wantErr: []string{"flowControl.saturationDetector: plugin 'queue-scorer' is not a fwkfc.SaturationDetector"}},
		{name: "the deprecated top-level saturation detector under a flowControl without one", raw: "plugins: [{type: queue-scorer}]\nflowControl: {}\nsaturationDetector: {pluginRef: concurrency-detector}",
			wantErr: []string{"saturationDetector: saturation detector references undefined plugin 'concurrency-detector'"}},
		{name: "the deprecated top-level saturation detector", raw: "plugins: [{type: queue-scorer}, {type: concurrency-detector}]\nsaturationDetector: {pluginRef: concurrency-detector}",
			wantWarnings: []string{"saturationDetector: deprecated at the top level: use flowControl.saturationDetector"}},
		// configloader.go decodeRawConfig: FlowControlConfig and DataLayerConfig are decoded strictly,
		// with their types (resource.Quantity, metav1.Duration).
		{name: "a flowControl of every field", raw: `plugins: [{type: queue-scorer}]
flowControl:
  maxBytes: 1Gi
  maxRequests: 1k
  defaultRequestTTL: 30s
  defaultPriorityBand: {maxRequests: 100}
  defaultNegativePriorityBand: {maxBytes: 500M}
  priorityBands: [{priority: 1, maxBytes: 2Gi, fairnessPolicyRef: f, orderingPolicyRef: o}]
  usageLimitPolicyPluginRef: p
  enableEviction: true
  saturationDetector: {pluginRef: utilization-detector}`},
		{name: "an unknown field under flowControl", raw: "plugins: [{type: queue-scorer}]\nflowControl: {bogus: true}",
			wantErr: []string{`strict decoding error: unknown field "flowControl.bogus"`}},
		{name: "an unknown field in a priority band", raw: "plugins: [{type: queue-scorer}]\nflowControl: {priorityBands: [{priority: 1, maxRequest: 10}]}",
			wantErr: []string{`unknown field "flowControl.priorityBands[0].maxRequest"`}},
		{name: "a band priority that is not a number", raw: "plugins: [{type: queue-scorer}]\nflowControl: {priorityBands: [{priority: high}]}",
			wantErr: []string{"flowControl: ", "cannot unmarshal string", "priorityBands.priority"}},
		{name: "a request TTL that is not a duration", raw: "plugins: [{type: queue-scorer}]\nflowControl: {defaultRequestTTL: soon}",
			wantErr: []string{"flowControl.defaultRequestTTL: ", "invalid duration"}},
		{name: "a band's maxBytes that is not a quantity", raw: "plugins: [{type: queue-scorer}]\nflowControl: {defaultPriorityBand: {maxBytes: lots}}",
			wantErr: []string{"flowControl.defaultPriorityBand.maxBytes: ", "quantities must match"}},
		{name: "a cross-replica sync interval", raw: "plugins: [{type: queue-scorer}]\ndataLayer: {crossReplicaSyncInterval: 500ms}"},
		{name: "a cross-replica sync interval that is not a duration", raw: "plugins: [{type: queue-scorer}]\ndataLayer: {crossReplicaSyncInterval: often}",
			wantErr: []string{"dataLayer.crossReplicaSyncInterval: ", "invalid duration"}},
		{name: "an unknown field in a data layer source", raw: "plugins: [{type: metrics-data-source}]\ndataLayer: {sources: [{pluginRef: metrics-data-source, extractor: []}]}",
			wantErr: []string{`unknown field "dataLayer.sources[0].extractor"`}},
		// runner.go dlRuntime.Configure, datalayer/runtime.go registerSource: a source is a polling,
		// notification or endpoint source.
		{name: "notification and endpoint sources", raw: `plugins:
- type: queue-scorer
- type: endpoint-notification-source
- type: k8s-notification-source
  parameters: {version: v1, kind: ConfigMap}
dataLayer:
  sources: [{pluginRef: endpoint-notification-source}, {pluginRef: k8s-notification-source}]`},
		{name: "a data layer source that is not a data source", raw: "plugins: [{type: queue-scorer}]\ndataLayer: {sources: [{pluginRef: queue-scorer}]}",
			wantErr: []string{"dataLayer.sources[0]: failed to configure datalayer: skipping unknown datasource plugin type queue-scorer/queue-scorer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select("", routerHeader+tc.raw, false, ReleaseRouter, "")
			if err == nil { // the strict decode refuses at Select, the loader's rules at Check
				err = sel.Check()
			}
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
	assert.ErrorContains(t, err, "one of llm-d-router-v0.10.0, gie-v1.5.0, gie-v1.2.0, gie-lwepp-v1.6.0")

	sel, err = Select("", "", false, ReleaseGIE, "")
	require.Nil(t, err)
	assert.Equal(t, ImageGIE, sel.Image, "the older release stays selectable")
}

// routerIgnoresParameters are the Beta plugins of llm-d-router v0.10.0 whose factories take
// `_ *json.Decoder`: they read no parameters and ignore what they are given.
var routerIgnoresParameters = []string{
	"models-data-extractor", "endpoint-notification-source", "global-strict-fairness-policy", "round-robin-fairness-policy",
	"fcfs-ordering-policy", "edf-ordering-policy", "slo-deadline-ordering-policy", "destination-endpoint-served-verifier",
	"anthropic-parser", "openai-parser", "passthrough-parser", "vertexai-parser", "vllmgrpc-parser", "vllmhttp-parser",
	DecodeFilter, PrefillFilter, "encode-filter", "always-disagg-multimodal-decider", AlwaysDisaggPDDecider, SingleProfileHandler,
	KVCacheUtilizationScorer, LoRAAffinityScorer, QueueScorer, "running-requests-size-scorer", "header-based-testing-filter",
}

// TestEveryRouterPluginsParametersAreModelled: every Beta plugin of v0.10.0 either reads no
// parameters or has its factory's check; none has both.
func TestEveryRouterPluginsParametersAreModelled(t *testing.T) {
	for name, spec := range routerPlugins {
		if spec.alpha {
			assert.Nil(t, spec.parameters, "%s is refused as Alpha before its parameters matter", name)
			continue
		}
		ignores := slices.Contains(routerIgnoresParameters, name)
		assert.NotEqual(t, ignores, spec.parameters != nil, "%s: ignores its parameters (%v) or has a check (%v)", name, ignores, spec.parameters != nil)
	}
	for name := range routerParameters {
		assert.Contains(t, routerPlugins, name)
	}
}

// TestRouterPluginParameters: the strict parameters of llm-d-router v0.10.0's Beta plugins, each
// case a plugin's parameters that its factory refuses (with the path and the factory's words) or
// accepts.
func TestRouterPluginParameters(t *testing.T) {
	cases := []struct {
		plugin, parameters string
		want               string // empty: accepted
	}{
		{"label-selector-filter", `{matchLabels: {tier: gold}}`, ""},
		{"label-selector-filter", `{matchExpressions: [{key: tier, operator: Near}]}`, `"Near" is not a valid label selector operator`},
		{"label-selector-filter", `{label: tier}`, `unknown field "label"`},
		{"by-label", `{label: tier}`, "either 'validValues' must be non-empty or 'allowsNoLabel' must be true"},
		{"by-label", ``, "'label' must be specified"},
		{"data-parallel-profile-handler", `{primaryPort: 70000}`, "invalid primaryPort: must be between 1 and 65535, got 70000"},
		{"disagg-headers-handler", `{prefillProfile: p, decodeProfile: d}`, `unknown field "decodeProfile"`},
		{"load-aware-scorer", `{threshold: 64}`, ""},
		{"load-aware-scorer", `{queueThreshold: 64}`, `unknown field "queueThreshold"`},
		{"active-request-scorer", `{requestTimeout: 2m, idleThreshold: 2, maxBusyScore: 0.5}`, ""},
		{"active-request-scorer", `{idleThreshold: two}`, "cannot unmarshal string"},
		{"context-length-aware", `{label: ""}`, "'label' must be specified"},
		{"no-hit-lru-scorer", `{lruSize: 1024}`, ""},
		{"no-hit-lru-scorer", `{lruCapacity: 1024}`, `unknown field "lruCapacity"`},
		{"mm-embeddings-cache-scorer", `{producer: x}`, `unknown field "producer"`},
		{"precise-prefix-cache-producer", `{indexerConfig: {tokenizersPoolConfig: {modelName: m}}}`, "tokenizersPoolConfig is not supported; configure a token-producer plugin instead"},
		{"precise-prefix-cache-producer", `{indexerConfig: null}`, "indexerConfig is required"},
		{"precise-prefix-cache-producer", `{speculativeIndexing: true, cacheSize: 1}`, `unknown field "cacheSize"`},
		{"approx-prefix-cache-producer", `{autoTune: false, blockSizeTokens: 0}`, "BlockSizeTokens must be > 0 when AutoTune is disabled"},
		{"approx-prefix-cache-producer", `{blockSize: 64}`, ""},
		{"approx-prefix-cache-producer", `{maxPrefixTokensToMatch: -1}`, "MaxPrefixTokensToMatch must be >= 0"},
		{"inflight-load-producer", `{outputRatio: -0.5}`, "outputRatio must be non-negative"},
		{"inflight-load-producer", `{maxEstimatedOutputTokens: -1}`, "maxEstimatedOutputTokens must be non-negative"},
		{"predicted-latency-producer", `{sloBufferFactor: 0}`, "sloBufferFactor must be > 0, got 0"}, // an explicit 0 replaces the default
		{"predicted-latency-producer", `{sloBufferFactor: -1}`, "sloBufferFactor must be > 0"},
		{"predicted-latency-producer", `{predictInPrepareData: true}`, `unknown field "predictInPrepareData": llm-d-router v0.10.0 removed it from predicted-latency-producer; use predictInProduce`},
		{"mm-embeddings-cache-producer", `{cacheSizeInMBPerServer: 512}`, ""},
		{"session-id-producer", ``, "requires exactly one of headerName or cookieName to be set"},
		{"session-id-producer", `{headerName: x-session, cookieName: sid}`, "not both"},
		{"session-id-producer", `{headerName: x-session}`, ""},
		{"token-producer", `{modelName: m, estimate: {}}`, "only one of 'estimate', 'vllm', or 'udsTokenizerConfig' may be set"},
		{"token-producer", `{vllm: {url: "http://localhost:8200"}}`, "'modelName' must be specified"},
		{"token-producer", `{modelName: m, vllm: {timeout: soon}}`, "invalid 'timeout'"},
		{"token-producer", `{estimate: {image: {mode: exact}}}`, `estimate.image.mode must be "dynamic" or "static"`},
		{"token-producer", `{estimate: {video: {frames: {mode: sampled, sampled: {sampleFPS: 2}}}}}`, ""},
		{"latency-slo-admitter", `{latencyPredictionInfoProducerName: p}`, ""},
		{"latency-slo-admitter", `{threshold: 1}`, `unknown field "threshold"`},
		{"probabilistic-admitter", `{power: 0}`, "power must be > 0"},
		{"probabilistic-admitter", `{k: -1}`, "k must be > 0"},
		{"request-attribute-reporter", ``, "attributes must contain exactly one entry"},
		{"request-attribute-reporter", `{attributes: [{key: {name: tokens}, expression: usage.total_tokens}]}`, ""},
		{"request-attribute-reporter", `{attributes: [{key: {name: tokens}}]}`, "attributes[0].expression cannot be empty"},
		{"program-aware-fairness", `{strategy: wfq}`, `unknown scoring strategy "wfq"`},
		{"program-aware-fairness", `{lasDecayFactor: 1.5}`, "lasDecayFactor must be in (0, 1]"},
		{"static-usage-limit-policy", `{threshold: 0.9}`, ""},
		{"concurrency-detector", `{concurrencyMode: hybrid}`, ""},
		{"concurrency-detector", `{concurrencyMode: bytes}`, `unsupported concurrencyMode: "bytes"`},
		{"utilization-detector", `{kvCacheUtilThreshold: 1.5}`, "kvCacheUtilThreshold must be in (0.0, 1.0]"},
		{"utilization-detector", `{metricsStalenessThreshold: 1m}`, ""},
		{"metrics-data-source", `{scheme: https, port: 8443, interval: 100ms}`, ""},
		{"metrics-data-source", `{port: 0}`, "invalid port 0"},
		{"metrics-data-source", `{interval: often}`, `invalid interval "often"`},
		{"models-data-source", `{port: 8000}`, `unknown field "port"`},
		{"core-metrics-extractor", `{engineConfigs: [{name: sim, kvUsageSpec: "kv_usage{tier=gold}", customMetrics: [{attributeKey: k, metricSpec: "m1"}]}], defaultEngine: sim}`, ""},
		{"core-metrics-extractor", `{engineConfigs: [{name: sim, kvUsageSpec: "rate(kv[5m])"}]}`, "not a valid metric specification"},
		{"core-metrics-extractor", `{defaultEngine: tgi}`, `defaultEngine "tgi" not found in engineConfigs`},
		{"k8s-notification-source", ``, "requires parameters (group, version, kind)"},
		{"k8s-notification-source", `{version: v1, kind: ConfigMap}`, ""},
		{"file-discovery", `{watchFile: true}`, "'path' parameter is required"},
		{"prefix-cache-affinity-filter", `{ttftSource: latencyPredictor}`, ""},
		{"prefix-cache-affinity-filter", `{ttftSource: guess}`, "ttftSource must be"},
		{"prefix-cache-affinity-filter", `{peakPrefillThroughput: 0, maxTTFTPenaltyMs: 100}`, "peakPrefillThroughput must be > 0 when ttftSource is prefillThroughput"},
		{"slo-headroom-tier-filter", `{epsilonExploreNeg: 2}`, "epsilonExploreNeg must be in [0, 1]"},
		{"latency-scorer", `{ttftWeight: 0.5, headroomSelectionStrategy: most}`, ""},
		{"token-load-scorer", `{queueThresholdTokens: many}`, "cannot unmarshal string"},
		{"queue-scorer", `{anything: 1}`, ""}, // its factory reads none
	}
	for _, tc := range cases {
		t.Run(tc.plugin+" "+tc.parameters, func(t *testing.T) {
			raw := routerHeader + "plugins:\n- type: queue-scorer\n  name: q\n- type: " + tc.plugin + "\n"
			if tc.parameters != "" {
				raw += "  parameters: " + tc.parameters + "\n"
			}
			raw += "schedulingProfiles: [{name: default, plugins: [{pluginRef: q}]}]\n"
			sel, selErr := Select("", raw, false, ReleaseRouter, "")
			require.Nil(t, selErr)
			err := sel.Check()
			if tc.want == "" {
				require.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.ErrorContains(t, err, "plugins[1]")
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
