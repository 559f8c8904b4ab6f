// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Plugin types of llm-d-router v0.10.0 that the project's presets use beside the ones above.
const (
	DisaggProfileHandler  = "disagg-profile-handler"
	PrefixBasedPDDecider  = "prefix-based-pd-decider"
	AlwaysDisaggPDDecider = "always-disagg-pd-decider"
	DisaggHeadersHandler  = "disagg-headers-handler"
	LabelSelectorFilter   = "label-selector-filter"
	ApproxPrefixProducer  = "approx-prefix-cache-producer"
)

// routerPluginSpec is a plugin type of llm-d-router v0.10.0 as its loader sees it.
type routerPluginSpec struct {
	kind kind
	// alpha plugins are refused without --allow-experimental-plugins (registry.go ValidatePluginStability).
	alpha bool
	// replacement and removedIn: a deprecated plugin (registry.go RegisterDeprecated), which loads with a warning.
	replacement, removedIn string
	// parameters is the factory's check of its parameters, decoded strictly (routerparameters.go);
	// nil when the factory reads none (it takes `_ *json.Decoder` and ignores what it is given).
	parameters routerParamCheck
	// needsDefaults: the factory checks something even without parameters (a default dependency).
	needsDefaults bool
}

// routerPlugins are the plugin types cmd/epp/runner/runner.go registerInTreePlugins registers in
// llm-d-router v0.10.0, with their stability (fwkplugin.StabilityAlpha or Beta), deprecations and
// the checks of every Beta factory that reads parameters (routerparameters.go).
var routerPlugins = func() map[string]routerPluginSpec {
	specs := map[string]routerPluginSpec{}
	for _, name := range []string{
		"label-selector-filter", "by-label-selector", "by-label", "encode-filter", "decode-filter",
		"prefill-filter", "data-parallel-profile-handler", "load-aware-scorer", "context-length-aware",
		"models-data-source", "models-data-extractor", "prefix-cache-scorer", "max-score-picker",
		"random-picker", "weighted-random-picker", "single-profile-handler", "disagg-headers-handler",
		"prefill-header-handler", "pd-profile-handler", "disagg-profile-handler",
		"always-disagg-pd-decider", "prefix-based-pd-decider", "always-disagg-multimodal-decider",
		"kv-cache-utilization-scorer", "queue-scorer", "running-requests-size-scorer",
		"lora-affinity-scorer", "token-load-scorer", "no-hit-lru-scorer", "active-request-scorer",
		"precise-prefix-cache-scorer", "mm-embeddings-cache-scorer", "precise-prefix-cache-producer",
		"global-strict-fairness-policy", "round-robin-fairness-policy", "program-aware-fairness",
		"fcfs-ordering-policy", "edf-ordering-policy", "slo-deadline-ordering-policy",
		"static-usage-limit-policy", "approx-prefix-cache-producer", "inflight-load-producer",
		"predicted-latency-producer", "tokenizer", "mm-embeddings-cache-producer", "token-producer",
		"session-id-producer", "latency-slo-admitter", "probabilistic-admitter",
		"prefix-cache-affinity-filter", "slo-headroom-tier-filter", "latency-scorer",
		"header-based-testing-filter", "destination-endpoint-served-verifier", "metrics-data-source",
		"core-metrics-extractor", "k8s-notification-source", "endpoint-notification-source",
		"request-attribute-reporter", "openai-parser", "vllmgrpc-parser", "passthrough-parser",
		"anthropic-parser", "vllmhttp-parser", "vertexai-parser", "concurrency-detector",
		"utilization-detector", "file-discovery",
	} {
		specs[name] = routerPluginSpec{kind: otherKind}
	}
	for _, name := range []string{
		"disaggregatedset-rollout-screener", "session-affinity-filter", "endpoint-attribute-filter",
		"topology-affinity-filter", "utilization-filter", "session-affinity-scorer",
		"header-label-affinity-scorer", "topology-extractor", "dcgm-data-source", "dcgm-extractor",
		"header-profile-handler", "endpoint-attribute-scorer", "topology-affinity-scorer",
		"burst-prefix-cache-producer", "p2p-source-producer", "multicluster-session-affinity-filter",
		"multicluster-queue-scorer", "multicluster-kv-cache-utilization-scorer",
		"multicluster-prefix-cache-scorer", "multicluster-approx-prefix-cache-producer",
		"sheddable-eviction-filter", "priority-then-time-eviction-order-policy",
		"priority-holdback-policy", "soft-reflective-ceiling-policy", "multicluster-metrics-data-source",
		"multicluster-metrics-extractor", "multicluster-file-discovery", "agent-identity",
	} {
		specs[name] = routerPluginSpec{kind: otherKind, alpha: true}
	}
	for name, k := range map[string]kind{
		MaxScorePicker: pickerKind, RandomPicker: pickerKind, WeightedRandomPicker: pickerKind,
		SingleProfileHandler: profileHandlerKind, PDProfileHandler: profileHandlerKind, DisaggProfileHandler: profileHandlerKind,
		DataParallelProfileHandler: profileHandlerKind, "header-profile-handler": profileHandlerKind,
		PrefillFilter: filterKind, DecodeFilter: filterKind, "encode-filter": filterKind, LabelSelectorFilter: filterKind,
		ByLabelFilter: filterKind, ByLabelSelectorFilter: filterKind,
		PrefixCacheScorer: scorerKind, QueueScorer: scorerKind, KVCacheUtilizationScorer: scorerKind, LoRAAffinityScorer: scorerKind,
		PrefixBasedPDDecider: deciderKind, AlwaysDisaggPDDecider: deciderKind, "always-disagg-multimodal-decider": deciderKind,
		// The types implementing requesthandling.Parser (framework/plugins/requesthandling/parsers/*:
		// ParseRequest) and flowcontrol.SaturationDetector (plugins/flowcontrol/saturationdetector/*:
		// Saturation).
		"anthropic-parser": parserKind, "openai-parser": parserKind, "passthrough-parser": parserKind,
		"vertexai-parser": parserKind, "vllmgrpc-parser": parserKind, "vllmhttp-parser": parserKind,
		"concurrency-detector": saturationDetectorKind, routerDefaultSaturationDetector: saturationDetectorKind,
		// The data layer's sources, the variants pkg/epp/datalayer/runtime.go registerSource accepts:
		// fwkdl.PollingDispatcher (source/http HTTPDataSource), fwkdl.NotificationSource
		// (source/notifications K8sNotificationSource) and fwkdl.EndpointSource (EndpointDataSource).
		"metrics-data-source": dataSourceKind, "models-data-source": dataSourceKind, "dcgm-data-source": dataSourceKind,
		"multicluster-metrics-data-source": dataSourceKind, "k8s-notification-source": dataSourceKind,
		"endpoint-notification-source": dataSourceKind,
	} {
		spec := specs[name]
		spec.kind = k
		specs[name] = spec
	}
	deprecate := func(name, replacement, removedIn string) {
		spec := specs[name]
		spec.replacement, spec.removedIn = replacement, removedIn
		specs[name] = spec
	}
	// runner.go: RegisterDeprecated(..., deprecatedIn, scheduledRemovalIn, replacementType).
	deprecate(ByLabelSelectorFilter, LabelSelectorFilter, "v0.11.0")
	deprecate(ByLabelFilter, LabelSelectorFilter, "v0.11.0")
	deprecate(DisaggHeadersHandler, DisaggProfileHandler, "v0.11.0")
	deprecate(PrefillHeaderHandler, DisaggProfileHandler+" (it sets the prefill header itself)", "v0.11.0")
	deprecate(PDProfileHandler, DisaggProfileHandler+" with a "+PrefixBasedPDDecider, "v0.9.0 (still registered in v0.10.0)")
	deprecate("tokenizer", "token-producer", "v0.11.0")
	for name, check := range routerParameters {
		spec := specs[name]
		spec.parameters, spec.needsDefaults = check, needsParameters[name]
		specs[name] = spec
	}
	return specs
}()

// deciderKind: a disaggregation decider, which a disagg-profile-handler names; parserKind: a
// request parser (requestHandler.parsers); saturationDetectorKind: a saturation detector
// (flowControl.saturationDetector); dataSourceKind: a data layer source (dataLayer.sources).
const (
	deciderKind kind = otherKind + 1 + iota
	parserKind
	saturationDetectorKind
	dataSourceKind
)

// The parsers and the saturation detector llm-d-router v0.10.0 configures when none is
// (loader/defaults.go ensureParsers: openai.OpenAIParserType, anthropic.AnthropicParserType,
// vllmhttp.VllmHTTPParserType; ensureSaturationDetector: utilization.UtilizationDetectorType).
var routerDefaultParsers = []string{"openai-parser", "anthropic-parser", "vllmhttp-parser"}

const routerDefaultSaturationDetector = "utilization-detector"

// removedRouterPlugins are plugin types earlier targets had and llm-d-router v0.10.0 no longer
// registers, with what replaces them. (Every plugin of GIE v1.2.0 and of llm-d-inference-scheduler
// v0.4.0 is still registered in v0.10.0; the ones deprecated there are warned of above.)
var removedRouterPlugins = map[string]string{
	// GIE v1.5.0's monolithic latency scorer; llm-d-router v0.10.0's runner registers its parts
	// (GIE v1.5.0's chart, latencyPredictor.enabled, configures the same parts).
	"predicted-latency-scorer": "predicted-latency-producer with latency-scorer (and slo-headroom-tier-filter, prefix-cache-affinity-filter to filter by predicted latency)",
}

// removedParameters are parameters the v0.10.0 factories no longer read, which their strict
// decoders refuse, with where they went.
var removedParameters = map[string]map[string]string{
	// GIE v1.2.0's prefix-cache-scorer indexed prefixes itself; in v0.10.0 the indexing is
	// approx-prefix-cache-producer's (requestcontrol/dataproducer/approximateprefix).
	PrefixCacheScorer: {
		"autoTune": ApproxPrefixProducer, "blockSize": ApproxPrefixProducer,
		"maxPrefixBlocksToMatch": ApproxPrefixProducer, "lruCapacityPerServer": ApproxPrefixProducer,
	},
	// llm-d-inference-scheduler v0.4.0's pd-profile-handler decided by itself; v0.10.0's asks a decider.
	PDProfileHandler: {"threshold": PrefixBasedPDDecider + "'s nonCachedTokens", "hashBlockSize": PrefixBasedPDDecider},
	// GIE v1.5.0's predicted-latency-producer predicted in PrepareData; v0.10.0's in Produce.
	"predicted-latency-producer": {"predictInPrepareData": "predictInProduce"},
}

// strict decodes parameters as fwkplugin.StrictDecoder does (encoding/json with
// DisallowUnknownFields, one value), naming a removed parameter's replacement.
func strict(pluginType string, raw json.RawMessage, into any) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(into)
	if err == nil {
		return nil
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field = strings.Trim(field, "\"")
		if to, removed := removedParameters[pluginType][field]; removed {
			return fmt.Errorf("unknown field %q: llm-d-router v0.10.0 removed it from %s; use %s", field, pluginType, to)
		}
	}
	return err
}

// routerPrefixCacheScorer: scheduling/scorer/prefix/plugin.go PrefixCachePluginFactory.
func routerPrefixCacheScorer(raw json.RawMessage, _ map[string]routerInstance) ([]string, error) {
	params := struct {
		PrefixMatchInfoProducerName string  `json:"prefixMatchInfoProducerName,omitempty"`
		MatchLengthWeight           float64 `json:"matchLengthWeight,omitempty"`
		MatchLengthScaleTokens      int     `json:"matchLengthScaleTokens,omitempty"`
	}{MatchLengthScaleTokens: 8192}
	if err := strict(PrefixCacheScorer, raw, &params); err != nil {
		return nil, fmt.Errorf("failed to decode prefix cache scorer parameters: %w", err)
	}
	switch {
	case params.MatchLengthWeight < 0 || params.MatchLengthWeight > 1:
		return nil, fmt.Errorf("matchLengthWeight must be between 0.0 and 1.0, got %f", params.MatchLengthWeight)
	case params.MatchLengthWeight > 0 && params.MatchLengthScaleTokens <= 0:
		return nil, fmt.Errorf("matchLengthScaleTokens must be greater than 0 when matchLengthWeight is greater than 0, got %d", params.MatchLengthScaleTokens)
	}
	return nil, nil
}

// routerPrefixBasedDecider: scheduling/profilehandler/disagg/prefix_based_pd_decider.go
// PrefixBasedPDDeciderPluginFactory and PrefixBasedPDDeciderConfig.validate.
func routerPrefixBasedDecider(raw json.RawMessage, _ map[string]routerInstance) ([]string, error) {
	var params struct {
		NonCachedTokens int `json:"nonCachedTokens"`
		PromptTokens    int `json:"promptTokens"`
	}
	if err := strict(PrefixBasedPDDecider, raw, &params); err != nil {
		return nil, fmt.Errorf("failed to parse %s plugin config: %w", PrefixBasedPDDecider, err)
	}
	switch {
	case params.NonCachedTokens < 0:
		return nil, errors.New("nonCachedTokens parameter of prefix disaggregation decider cannot be negative")
	case params.PromptTokens < 0:
		return nil, errors.New("promptTokens parameter of prefix disaggregation decider cannot be negative")
	}
	return nil, nil
}

// routerDisaggProfileHandler: scheduling/profilehandler/disagg/disagg_profile_handler.go
// DisaggProfileHandlerConfigParser (the nested schema strictly, else the deprecated flat one
// strictly, with a warning; a stage order; no prefill decider in prefill-first order) and
// HandlerFactory (each decider names a defined decider plugin).
func routerDisaggProfileHandler(raw json.RawMessage, byName map[string]routerInstance) ([]string, error) {
	var nested struct {
		StageOrder string `json:"stageOrder,omitempty"`
		Profiles   struct {
			Decode  string `json:"decode,omitempty"`
			Prefill string `json:"prefill,omitempty"`
			Encode  string `json:"encode,omitempty"`
		} `json:"profiles"`
		Deciders struct {
			Prefill string `json:"prefill,omitempty"`
			Encode  string `json:"encode,omitempty"`
		} `json:"deciders"`
	}
	var warnings []string
	errNested := strict(DisaggProfileHandler, raw, &nested)
	if errNested != nil {
		var flat struct {
			StageOrder               string `json:"stageOrder,omitempty"`
			DecodeProfile            string `json:"decodeProfile"`
			PrefillProfile           string `json:"prefillProfile"`
			EncodeProfile            string `json:"encodeProfile"`
			PrefillDeciderPluginName string `json:"prefillDeciderPluginName"`
			EncodeDeciderPluginName  string `json:"encodeDeciderPluginName"`
			DeciderPluginName        string `json:"deciderPluginName"`
		}
		if errFlat := strict(DisaggProfileHandler, raw, &flat); errFlat != nil {
			return nil, fmt.Errorf("failed to parse parameters of the disagg-profile-handler: nested schema error: %w; legacy schema error: %v "+
				"(use one format exclusively: either nested profiles/deciders or the deprecated flat fields)", errNested, errFlat)
		}
		warnings = append(warnings, "disagg-profile-handler's flat parameters (decodeProfile, prefillProfile, ..., deciderPluginName) are deprecated: use profiles.{decode,prefill,encode} and deciders.{prefill,encode}")
		nested.StageOrder = flat.StageOrder
		nested.Deciders.Prefill = cmpOr(flat.PrefillDeciderPluginName, flat.DeciderPluginName)
		nested.Deciders.Encode = flat.EncodeDeciderPluginName
	}
	// ParseStageOrder: dashes and underscores ignored, any case.
	order := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(nested.StageOrder))
	switch order {
	case "", "decodefirst", "decode", "prefillfirst", "prefill":
	default:
		return nil, fmt.Errorf("invalid stage order %q, must be %q or %q", nested.StageOrder, "decode-first", "prefill-first")
	}
	if (order == "prefillfirst" || order == "prefill") && nested.Deciders.Prefill != "" {
		return nil, errors.New("prefill decider is not supported in prefill-first stage order")
	}
	for stage, decider := range map[string]string{"prefill": nested.Deciders.Prefill, "encode": nested.Deciders.Encode} {
		if decider == "" {
			continue
		}
		p, ok := byName[decider]
		switch {
		case !ok:
			return nil, fmt.Errorf("a plugin has a dependency on the unregistered plugin %s (deciders.%s)", decider, stage)
		case p.kind != deciderKind:
			return nil, fmt.Errorf("plugin %s does not implement %sDeciderPlugin", decider, stage)
		}
	}
	return warnings, nil
}

// routerPDProfileHandler: scheduling/profilehandler/disagg/pd_profile_handler.go
// PdProfileHandlerConfigParser and PdProfileHandlerFactory (deprecated): strict parameters, a
// primary port in range, and a decider (default prefix-based-pd-decider) that is defined.
func routerPDProfileHandler(raw json.RawMessage, byName map[string]routerInstance) ([]string, error) {
	params := struct {
		DecodeProfile               string `json:"decodeProfile"`
		PrefillProfile              string `json:"prefillProfile"`
		PrefixPluginType            string `json:"prefixPluginType"`
		PrefixPluginName            string `json:"prefixPluginName"`
		PrimaryPort                 int    `json:"primaryPort"`
		DeciderPluginName           string `json:"deciderPluginName"`
		PrefixMatchInfoProducerName string `json:"prefixMatchInfoProducerName"`
	}{DeciderPluginName: PrefixBasedPDDecider}
	if err := strict(PDProfileHandler, raw, &params); err != nil {
		return nil, fmt.Errorf("failed to parse the parameters of the '%s' profile handler - %w", PDProfileHandler, err)
	}
	if params.PrimaryPort != 0 && (params.PrimaryPort < 1 || params.PrimaryPort > 65535) {
		return nil, fmt.Errorf("invalid primaryPort: must be between 1 and 65535, got %d", params.PrimaryPort)
	}
	if params.DeciderPluginName == "" {
		return nil, errors.New("decider plugin name is not defined")
	}
	p, ok := byName[params.DeciderPluginName]
	switch {
	case !ok:
		return nil, fmt.Errorf("a plugin has a dependency on the unregistered plugin %s (deciderPluginName; declare a %s)", params.DeciderPluginName, PrefixBasedPDDecider)
	case p.kind != deciderKind:
		return nil, fmt.Errorf("decider plugin of type: %s does not implement pdDeciderPlugin", p.pluginType)
	}
	return nil, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
