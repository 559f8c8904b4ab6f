// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/utils/ptr"
	configapi "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
)

// Strategies a router role may name; the empty strategy is the upstream chart's default mix.
const (
	StrategyDefault            = ""
	StrategyPrefixCache        = "prefix-cache"
	StrategyKVCacheUtilization = "kv-cache-utilization"
	StrategyQueueSize          = "queue-size"
	StrategyLoRAAffinity       = "lora-affinity"
	StrategyPDDisaggregation   = "pd-disaggregation"
	// StrategyPrecisePrefixCache routes on the KV-cache events the servers publish (kvevents.go),
	// with llm-d-router v0.10.0 only; on prefill/decode too.
	StrategyPrecisePrefixCache = "precise-prefix-cache"
)

// weighted is one scorer of a single scheduling profile, with its weight.
type weighted struct {
	pluginType string
	weight     int
}

// singleProfile presets: one "default" profile of weighted scorers; the EPP adds the max-score
// picker and the single-profile handler (its phase-one defaults).
var singleProfile = map[string][]weighted{
	// The inferencepool chart's default-plugins.yaml of GIE v1.2.0.
	StrategyDefault: {
		{QueueScorer, 2}, {KVCacheUtilizationScorer, 2}, {PrefixCacheScorer, 3},
	},
	StrategyPrefixCache:        {{PrefixCacheScorer, 1}},
	StrategyKVCacheUtilization: {{KVCacheUtilizationScorer, 1}},
	StrategyQueueSize:          {{QueueScorer, 1}},
	StrategyLoRAAffinity:       {{LoRAAffinityScorer, 1}},
}

// Strategies are the strategy names, sorted, for error messages.
func Strategies() []string {
	out := []string{StrategyPDDisaggregation, StrategyPrecisePrefixCache}
	for name := range singleProfile {
		if name != StrategyDefault {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// ErrUnknownStrategy is the error of a strategy that is none of Strategies: validation says so
// as a value not supported, with the supported ones.
var ErrUnknownStrategy = errors.New("unknown strategy")

func unknownStrategy(strategy string) error {
	return fmt.Errorf("%w %q: one of %s", ErrUnknownStrategy, strategy, strings.Join(Strategies(), ", "))
}

// Preset is the configuration of a strategy and the EPP flavor that runs it. A service with
// prefillers and decoders always routes with pd-disaggregation: only its profiles send a request
// to a prefill pod and then a decode pod.
func Preset(strategy string, disaggregated bool) (*configapi.EndpointPickerConfig, Flavor, error) {
	if disaggregated || strategy == StrategyPDDisaggregation {
		return pdDisaggregation(), FlavorLLMD, nil
	}
	scorers, ok := singleProfile[strategy]
	if !ok {
		return nil, "", unknownStrategy(strategy)
	}
	cfg := &configapi.EndpointPickerConfig{SchedulingProfiles: []configapi.SchedulingProfile{{Name: "default"}}}
	for _, s := range scorers {
		cfg.Plugins = append(cfg.Plugins, configapi.PluginSpec{Type: s.pluginType})
		cfg.SchedulingProfiles[0].Plugins = append(cfg.SchedulingProfiles[0].Plugins,
			configapi.SchedulingPlugin{PluginRef: s.pluginType, Weight: ptr.To(s.weight)})
	}
	return cfg, FlavorGIE, nil
}

// pdDisaggregation routes each request through a prefill pod and then a decode pod (llm-d): the
// prefill and decode profiles filter the pool's pods by their llm-d.ai/role label, prefer pods
// with the prompt's prefix cached, and pick the best; the pd-profile-handler runs the prefill
// profile for every prompt (threshold 0) and the prefill-header-handler tells the decode pod's
// routing sidecar which prefill pod to use.
func pdDisaggregation() *configapi.EndpointPickerConfig {
	profile := func(name, filterType string) configapi.SchedulingProfile {
		return configapi.SchedulingProfile{Name: name, Plugins: []configapi.SchedulingPlugin{
			{PluginRef: filterType}, {PluginRef: PrefixCacheScorer, Weight: ptr.To(1)}, {PluginRef: MaxScorePicker},
		}}
	}
	return &configapi.EndpointPickerConfig{
		Plugins: []configapi.PluginSpec{
			{Type: PrefillHeaderHandler},
			{Type: PrefillFilter},
			{Type: DecodeFilter},
			{Type: PrefixCacheScorer},
			{Type: MaxScorePicker},
			{Type: PDProfileHandler, Parameters: json.RawMessage(`{"threshold":0}`)},
		},
		SchedulingProfiles: []configapi.SchedulingProfile{
			profile("prefill", PrefillFilter),
			profile("decode", DecodeFilter),
		},
	}
}

// RouterPreset is a strategy's configuration for llm-d-router v0.10.0. The single-profile
// strategies are the same scorers and weights as for GIE v1.2.0 (the default mix is v0.10.0's
// own: loader/defaults.go loadDefaultConfig); the data layer is left to the loader, which adds
// the metrics source and the core metrics extractor with vLLM's metric names
// (defaults.go ensureDataLayer; extractor/metrics/factories.go: vllm:kv_cache_usage_perc, ...).
// Prefill/decode follows v0.10.0's sample, deploy/config/pd-epp-config.yaml: a
// disagg-profile-handler whose prefill decider is a prefix-based-pd-decider (a request is
// prefilled on a prefill pod when at least 16 of its prompt's tokens are not cached on the
// decode pod), prefill and decode profiles filtering by llm-d.ai/role.
func RouterPreset(strategy string, disaggregated bool) (*RouterConfig, error) {
	cfg := &RouterConfig{APIVersion: RouterGroupVersion, Kind: kindEndpointPickerConfig}
	if disaggregated || strategy == StrategyPDDisaggregation {
		weight := func(w float64) *float64 { return &w }
		profile := func(name, filter string) RouterSchedulingProfile {
			return RouterSchedulingProfile{Name: name, Plugins: []RouterSchedulingPlugin{
				{PluginRef: filter}, {PluginRef: MaxScorePicker},
				{PluginRef: PrefixCacheScorer, Weight: weight(2)}, {PluginRef: QueueScorer, Weight: weight(1)},
			}}
		}
		cfg.Plugins = []RouterPlugin{
			{Type: PrefixCacheScorer, Name: PrefixCacheScorer},
			{Type: QueueScorer, Name: QueueScorer},
			{Type: PrefillFilter, Name: PrefillFilter},
			{Type: DecodeFilter, Name: DecodeFilter},
			{Type: MaxScorePicker, Name: MaxScorePicker},
			{Type: DisaggProfileHandler, Name: DisaggProfileHandler, Parameters: json.RawMessage(`{"deciders":{"prefill":"` + PrefixBasedPDDecider + `"}}`)},
			{Type: PrefixBasedPDDecider, Name: PrefixBasedPDDecider, Parameters: json.RawMessage(`{"nonCachedTokens":16}`)},
		}
		cfg.SchedulingProfiles = []RouterSchedulingProfile{profile("prefill", PrefillFilter), profile("decode", DecodeFilter)}
		if strategy == StrategyPrecisePrefixCache {
			precisePreset(cfg, disaggregated)
		}
		return cfg, nil
	}
	if strategy == StrategyPrecisePrefixCache {
		precisePreset(cfg, false)
		return cfg, nil
	}
	plugins, profiles, err := singleProfilePreset(strategy)
	if err != nil {
		return nil, err
	}
	cfg.Plugins, cfg.SchedulingProfiles = plugins, profiles
	return cfg, nil
}

// GIE150Preset is a strategy's configuration for GIE v1.5.0's EPP: the single-profile strategies'
// scorers and weights (the unset strategy is its chart's default-plugins.yaml mix); the data layer
// is left to the loader (defaults.go ensureDataLayer: metrics-data-source and
// core-metrics-extractor with vLLM's metric names). It has no prefill/decode plugins.
func GIE150Preset(strategy string) (*GIE150Config, error) {
	plugins, profiles, err := singleProfilePreset(strategy)
	if err != nil {
		return nil, err
	}
	return &GIE150Config{APIVersion: GIE150GroupVersion, Kind: kindEndpointPickerConfig, Plugins: plugins, SchedulingProfiles: profiles}, nil
}

// singleProfilePreset is a single-profile strategy's scorers, in one "default" profile with their
// weights; the loader adds the picker and the profile handler.
func singleProfilePreset(strategy string) ([]RouterPlugin, []RouterSchedulingProfile, error) {
	scorers, ok := singleProfile[strategy]
	if !ok || strategy == StrategyPDDisaggregation {
		return nil, nil, unknownStrategy(strategy)
	}
	var plugins []RouterPlugin
	profile := RouterSchedulingProfile{Name: "default"}
	for _, s := range scorers {
		w := float64(s.weight)
		plugins = append(plugins, RouterPlugin{Type: s.pluginType, Name: s.pluginType})
		profile.Plugins = append(profile.Plugins, RouterSchedulingPlugin{PluginRef: s.pluginType, Weight: &w})
	}
	return plugins, []RouterSchedulingProfile{profile}, nil
}
