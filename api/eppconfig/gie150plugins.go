// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gie150Kind is what a plugin is to GIE v1.5.0's loader: the interfaces its instances implement
// (a plugin may be several, the saturation detectors are filters too). gie150_test.go holds each
// plugin's kinds to what the EPP's own factories make.
type gie150Kind uint32

const (
	gie150Filter gie150Kind = 1 << iota
	gie150Scorer
	gie150Picker
	gie150ProfileHandler
	gie150DataSource
	gie150Extractor
	gie150Parser
	gie150SaturationDetector
	gie150FairnessPolicy
	gie150OrderingPolicy
	gie150UsageLimitPolicy
	gie150PrepareData
	gie150Admission
	gie150PreRequest
	gie150ResponseHeader
)

// gie150KindNames name the kinds as the oracle reports them.
var gie150KindNames = map[gie150Kind]string{
	gie150Filter: "filter", gie150Scorer: "scorer", gie150Picker: "picker", gie150ProfileHandler: "profileHandler",
	gie150DataSource: "dataSource", gie150Extractor: "extractor", gie150Parser: "parser",
	gie150SaturationDetector: "saturationDetector", gie150FairnessPolicy: "fairnessPolicy",
	gie150OrderingPolicy: "orderingPolicy", gie150UsageLimitPolicy: "usageLimitPolicy", gie150PrepareData: "prepareData",
	gie150Admission: "admission", gie150PreRequest: "preRequest", gie150ResponseHeader: "responseHeader",
}

// Plugin types of GIE v1.5.0 the loader's defaults name.
const (
	MetricsDataSource         = "metrics-data-source"
	CoreMetricsExtractor      = "core-metrics-extractor"
	defaultParser             = "openai-parser"        // loader/defaults.go ensureParser
	defaultSaturationDetector = "utilization-detector" // loader/defaults.go ensureSaturationDetector
	gie150DefaultOrdering     = "fcfs-ordering-policy" // flowcontrol/registry/config.go DefaultOrderingPolicyRef
	gie150DefaultFairness     = "global-strict-fairness-policy"
	gie150DefaultUsageLimit   = "static-usage-limit-policy"
)

// gie150Plugin is a plugin type of GIE v1.5.0: its kinds and its factory's check of its parameters
// (nil: absent). The factories decode with encoding/json, not strictly: an unknown parameter
// passes, a value of the wrong type fails.
type gie150Plugin struct {
	kinds      gie150Kind
	parameters func(raw json.RawMessage) error
	// extractors, of a data source, are the extractor types its data layer accepts under it.
	extractors []string
	// produces and consumes are the data keys of the data layer's dependency graph
	// (datalayer/data_graph.go ValidateAndOrderDataDependencies).
	produces, consumes []string
}

// Data keys of GIE v1.5.0's plugins (framework/plugins/datalayer/attribute/...).
const (
	keyPrefixMatch = "PrefixCacheMatchInfoKey"
	keyLatency     = "LatencyPredictionInfoKey"
	keyInFlight    = "InFlightLoadKey"
)

// pointerDataKeys are the keys whose data the plugins declare as pointers: buildDAG compares a
// producer's and a consumer's declared data with !=, so two pointers never match and the EPP
// refuses the pair ("data type mismatch between produced and consumed data").
var pointerDataKeys = map[string]bool{keyInFlight: true}

// ignores is a factory that reads no parameters.
func ignores(json.RawMessage) error { return nil }

// lenient decodes parameters over defaults as the factories do (json.Unmarshal when there are
// any), then validates them.
func lenient[T any](defaults T, validate func(*T) error) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		params := defaults
		if raw != nil {
			if err := json.Unmarshal(raw, &params); err != nil {
				return err
			}
		}
		if validate == nil {
			return nil
		}
		return validate(&params)
	}
}

// gie150Plugins are the plugin types cmd/epp/runner/runner.go registerInTreePlugins registers in
// GIE v1.5.0, with the factories' parameter rules (each in the plugin's package, named).
var gie150Plugins = map[string]gie150Plugin{
	// scheduling/scorer/prefix/plugin.go PrefixCachePluginFactory reads none: its parameters go to
	// the approx-prefix-cache-producer the loader adds (configloader.go instantiatePlugins).
	PrefixCacheScorer:              {kinds: gie150Scorer, parameters: ignores, consumes: []string{keyPrefixMatch}},
	MaxScorePicker:                 {kinds: gie150Picker, parameters: lenient(pickerParameters{}, nil)},
	RandomPicker:                   {kinds: gie150Picker, parameters: lenient(pickerParameters{}, nil)},
	WeightedRandomPicker:           {kinds: gie150Picker, parameters: lenient(pickerParameters{}, nil)},
	SingleProfileHandler:           {kinds: gie150ProfileHandler, parameters: ignores},
	KVCacheUtilizationScorer:       {kinds: gie150Scorer, parameters: ignores, consumes: []string{"KVCacheUsagePercent"}},
	QueueScorer:                    {kinds: gie150Scorer, parameters: ignores, consumes: []string{"WaitingQueueSize"}},
	"running-requests-size-scorer": {kinds: gie150Scorer, parameters: ignores, consumes: []string{"RunningRequestsSize"}},
	LoRAAffinityScorer:             {kinds: gie150Scorer, parameters: ignores, consumes: []string{"ActiveModels", "WaitingModels"}},
	// scheduling/scorer/tokenload/token_load.go TokenLoadScorerFactory (a threshold <= 0 is defaulted).
	"token-load-scorer": {kinds: gie150Scorer, consumes: []string{keyInFlight}, parameters: lenient(struct {
		QueueThresholdTokens int64 `json:"queueThresholdTokens"`
	}{}, nil)},
	"global-strict-fairness-policy": {kinds: gie150FairnessPolicy, parameters: ignores},
	"round-robin-fairness-policy":   {kinds: gie150FairnessPolicy, parameters: ignores},
	"fcfs-ordering-policy":          {kinds: gie150OrderingPolicy, parameters: ignores},
	"edf-ordering-policy":           {kinds: gie150OrderingPolicy, parameters: ignores},
	"slo-deadline-ordering-policy":  {kinds: gie150OrderingPolicy, parameters: ignores},
	// flowcontrol/usagelimits/usagelimitpolicy.go StaticPolicyFactory.
	"static-usage-limit-policy": {kinds: gie150UsageLimitPolicy, parameters: lenient(struct {
		Threshold *float64 `json:"threshold,omitempty"`
	}{}, nil)},
	ApproxPrefixProducer: {kinds: gie150PrepareData | gie150PreRequest, parameters: gie150ApproxPrefix, produces: []string{keyPrefixMatch}},
	// scheduling/scorer/predictedlatency/scorer.go PredictedLatencyFactory and Config.validate.
	"predicted-latency-scorer": {kinds: gie150Admission | gie150PreRequest | gie150PrepareData | gie150ResponseHeader | gie150Scorer,
		produces: []string{keyLatency}, consumes: []string{keyPrefixMatch},
		parameters: lenient(predictedLatencyScorerDefaults, validatePredictedLatencyScorer)},
	// requestcontrol/requestdataproducer/predictedlatency/plugin.go PredictedLatencyFactory and Config.validate.
	"predicted-latency-producer": {kinds: gie150PreRequest | gie150PrepareData | gie150ResponseHeader,
		produces: []string{keyLatency}, consumes: []string{keyPrefixMatch},
		parameters: lenient(predictedLatencyProducer{SamplingMean: 1000, SLOBufferFactor: 1, ContextTTL: 5 * time.Minute, PredictInPrepareData: true},
			func(c *predictedLatencyProducer) error {
				var errs []error
				if c.SamplingMean <= 0 {
					errs = append(errs, fmt.Errorf("samplingMean must be > 0, got %f", c.SamplingMean))
				}
				if c.MaxDecodeTokenSamplesForPrediction < 0 {
					errs = append(errs, fmt.Errorf("maxDecodeTokenSamplesForPrediction must be >= 0, got %d", c.MaxDecodeTokenSamplesForPrediction))
				}
				if c.SLOBufferFactor <= 0 {
					errs = append(errs, fmt.Errorf("sloBufferFactor must be > 0, got %f", c.SLOBufferFactor))
				}
				return errors.Join(errs...)
			})},
	// requestcontrol/admitter/latencyslo/plugin.go LatencyAdmissionFactory: an empty config object.
	"latency-slo-admitter": {kinds: gie150Admission, consumes: []string{keyLatency}, parameters: lenient(struct{}{}, nil)},
	// scheduling/filter/prefixcacheaffinity/plugin.go Factory and Config.validate.
	"prefix-cache-affinity-filter": {kinds: gie150Filter, consumes: []string{keyLatency, keyPrefixMatch}, parameters: lenient(struct {
		AffinityThreshold      float64 `json:"affinityThreshold,omitempty"`
		ExplorationProbability float64 `json:"explorationProbability,omitempty"`
		MaxTTFTPenaltyMs       float64 `json:"maxTTFTPenaltyMs,omitempty"`
	}{0.80, 0.01, 5000}, func(c *struct {
		AffinityThreshold      float64 `json:"affinityThreshold,omitempty"`
		ExplorationProbability float64 `json:"explorationProbability,omitempty"`
		MaxTTFTPenaltyMs       float64 `json:"maxTTFTPenaltyMs,omitempty"`
	}) error {
		switch {
		case c.AffinityThreshold > 1:
			return fmt.Errorf("affinityThreshold must be <= 1.0, got %f", c.AffinityThreshold)
		case c.ExplorationProbability < 0 || c.ExplorationProbability > 1:
			return fmt.Errorf("explorationProbability must be in [0, 1], got %f", c.ExplorationProbability)
		case c.MaxTTFTPenaltyMs < 0:
			return fmt.Errorf("maxTTFTPenaltyMs must be >= 0, got %f", c.MaxTTFTPenaltyMs)
		}
		return nil
	})},
	// scheduling/filter/sloheadroomtier/plugin.go Factory.
	"slo-headroom-tier-filter": {kinds: gie150Filter, consumes: []string{keyLatency}, parameters: lenient(struct {
		EpsilonExploreNeg float64 `json:"epsilonExploreNeg,omitempty"`
	}{0.01}, func(c *struct {
		EpsilonExploreNeg float64 `json:"epsilonExploreNeg,omitempty"`
	}) error {
		if c.EpsilonExploreNeg < 0 || c.EpsilonExploreNeg > 1 {
			return fmt.Errorf("epsilonExploreNeg must be in [0, 1], got %f", c.EpsilonExploreNeg)
		}
		return nil
	})},
	// scheduling/scorer/latency/plugin.go Factory: decoded, not validated.
	"latency-scorer": {kinds: gie150Scorer, consumes: []string{keyLatency, keyPrefixMatch}, parameters: lenient(struct {
		TTFTWeight                float64 `json:"ttftWeight,omitempty"`
		TPOTWeight                float64 `json:"tpotWeight,omitempty"`
		HeadroomSelectionStrategy string  `json:"headroomSelectionStrategy,omitempty"`
		CompositeKVWeight         float64 `json:"compositeKVWeight,omitempty"`
		CompositeQueueWeight      float64 `json:"compositeQueueWeight,omitempty"`
		CompositePrefixWeight     float64 `json:"compositePrefixWeight,omitempty"`
	}{}, nil)},
	"inflight-load-producer":               {kinds: gie150Extractor | gie150PreRequest | gie150PrepareData, parameters: ignores, produces: []string{keyInFlight}},
	"header-based-testing-filter":          {kinds: gie150Filter, parameters: ignores},
	"destination-endpoint-served-verifier": {kinds: gie150ResponseHeader, parameters: ignores},
	// datalayer/source/metrics/datasource.go MetricsDataSourceFactory and http.NewHTTPDataSource.
	MetricsDataSource: {kinds: gie150DataSource, extractors: []string{CoreMetricsExtractor}, parameters: lenient(struct {
		Scheme             string `json:"scheme"`
		Path               string `json:"path"`
		InsecureSkipVerify bool   `json:"insecureSkipVerify"`
	}{Scheme: "http", Path: "/metrics", InsecureSkipVerify: true}, func(c *struct {
		Scheme             string `json:"scheme"`
		Path               string `json:"path"`
		InsecureSkipVerify bool   `json:"insecureSkipVerify"`
	}) error {
		if c.Scheme != "http" && c.Scheme != "https" {
			return fmt.Errorf("unsupported scheme: %s", c.Scheme)
		}
		return nil
	})},
	CoreMetricsExtractor: {kinds: gie150Extractor, parameters: gie150CoreMetricsExtractor},
	// datalayer/source/notifications/factory.go NotificationSourceFactory: parameters required.
	"k8s-notification-source": {kinds: gie150DataSource, parameters: func(raw json.RawMessage) error {
		if raw == nil {
			return errors.New("k8s-notification-source requires parameters (group, version, kind)")
		}
		var gvk struct {
			Group   string `json:"group"`
			Version string `json:"version"`
			Kind    string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &gvk); err != nil {
			return fmt.Errorf("failed to parse notification source parameters: %w", err)
		}
		if gvk.Version == "" || gvk.Kind == "" {
			return errors.New("version and kind are required for k8s-notification-source")
		}
		return nil
	}},
	"endpoint-notification-source": {kinds: gie150DataSource, parameters: ignores},
	// requestcontrol/requestattributereporter/plugin.go RequestAttributeReporterPluginFactory and New:
	// parameters required, one attribute with a name and an expression. The expressions' CEL syntax
	// is not modelled: the EPP compiles them at start-up.
	"request-attribute-reporter": {kinds: 0, parameters: func(raw json.RawMessage) error {
		var cfg requestAttributeReporter
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("failed to unmarshal config: %w", err)
		}
		return cfg.check()
	}},
	"openai-parser":      {kinds: gie150Parser, parameters: ignores},
	"vllmgrpc-parser":    {kinds: gie150Parser, parameters: ignores},
	"passthrough-parser": {kinds: gie150Parser, parameters: ignores},
	// flowcontrol/saturationdetector/concurrency/config.go buildConfig.
	"concurrency-detector": {kinds: gie150Filter | gie150SaturationDetector, parameters: lenient(concurrencyDetector{}, func(c *concurrencyDetector) error {
		return c.check("requests", "tokens")
	})},
	// flowcontrol/saturationdetector/utilization/config.go buildConfig.
	"utilization-detector": {kinds: gie150Filter | gie150SaturationDetector, parameters: lenient(utilizationDetector{}, (*utilizationDetector).check)},
}

type (
	concurrencyDetector struct {
		MaxConcurrency      *int64   `json:"maxConcurrency,omitempty"`
		Headroom            *float64 `json:"headroom,omitempty"`
		ConcurrencyMode     *string  `json:"concurrencyMode,omitempty"`
		MaxTokenConcurrency *int64   `json:"maxTokenConcurrency,omitempty"`
	}
	utilizationDetector struct {
		QueueDepthThreshold       *int             `json:"queueDepthThreshold,omitempty"`
		KVCacheUtilThreshold      *float64         `json:"kvCacheUtilThreshold,omitempty"`
		MetricsStalenessThreshold *metav1.Duration `json:"metricsStalenessThreshold,omitempty"`
		Headroom                  *float64         `json:"headroom,omitempty"`
	}
	predictedLatencyProducer struct {
		SamplingMean                       float64       `json:"samplingMean,omitempty"`
		MaxDecodeTokenSamplesForPrediction int           `json:"maxDecodeTokenSamplesForPrediction,omitempty"`
		SLOBufferFactor                    float64       `json:"sloBufferFactor,omitempty"`
		ContextTTL                         time.Duration `json:"contextTTL,omitempty"`
		StreamingMode                      bool          `json:"streamingMode,omitempty"`
		EndpointRoleLabel                  string        `json:"endpointRoleLabel,omitempty"`
		PredictInPrepareData               bool          `json:"predictInPrepareData,omitempty"`
	}
	predictedLatencyScorer struct {
		SamplingMean              float64       `json:"samplingMean,omitempty"`
		MaxSampledTokens          int           `json:"maxSampledTokens,omitempty"`
		SLOBufferFactor           float64       `json:"sloBufferFactor,omitempty"`
		NegHeadroomTTFTWeight     float64       `json:"negHeadroomTTFTWeight,omitempty"`
		NegHeadroomTPOTWeight     float64       `json:"negHeadroomTPOTWeight,omitempty"`
		HeadroomTTFTWeight        float64       `json:"headroomTTFTWeight,omitempty"`
		HeadroomTPOTWeight        float64       `json:"headroomTPOTWeight,omitempty"`
		HeadroomSelectionStrategy string        `json:"headroomSelectionStrategy,omitempty"`
		CompositeKVWeight         float64       `json:"compositeKVWeight,omitempty"`
		CompositeQueueWeight      float64       `json:"compositeQueueWeight,omitempty"`
		CompositePrefixWeight     float64       `json:"compositePrefixWeight,omitempty"`
		EpsilonExploreSticky      float64       `json:"epsilonExploreSticky,omitempty"`
		EpsilonExploreNeg         float64       `json:"epsilonExploreNeg,omitempty"`
		AffinityGateTau           float64       `json:"affinityGateTau,omitempty"`
		AffinityGateTauGlobal     float64       `json:"affinityGateTauGlobal,omitempty"`
		AffinityMaxTTFTPenaltyMs  float64       `json:"affinityMaxTTFTPenaltyMs,omitempty"`
		ContextTTL                time.Duration `json:"contextTTL,omitempty"`
		SelectionMode             string        `json:"selectionMode,omitempty"`
		StreamingMode             bool          `json:"streamingMode,omitempty"`
		EndpointRoleLabel         string        `json:"endpointRoleLabel,omitempty"`
	}
)

// check: flowcontrol/saturationdetector/concurrency/config.go validateConfig, with the modes of
// the release (llm-d-router v0.10.0 adds "hybrid").
func (c *concurrencyDetector) check(modes ...string) error {
	var errs []error
	if c.MaxConcurrency != nil && *c.MaxConcurrency <= 0 {
		errs = append(errs, fmt.Errorf("maxConcurrency must be strictly positive, got %d", *c.MaxConcurrency))
	}
	if c.Headroom != nil && *c.Headroom < 0 {
		errs = append(errs, fmt.Errorf("headroom must be a non-negative value, got %f", *c.Headroom))
	}
	if c.MaxTokenConcurrency != nil && *c.MaxTokenConcurrency <= 0 {
		errs = append(errs, fmt.Errorf("maxTokenConcurrency must be strictly positive, got %d", *c.MaxTokenConcurrency))
	}
	if c.ConcurrencyMode != nil && !slices.Contains(modes, *c.ConcurrencyMode) {
		errs = append(errs, fmt.Errorf("unsupported concurrencyMode: %q", *c.ConcurrencyMode))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid concurrency detector configuration: %w", errors.Join(errs...))
	}
	return nil
}

// check: flowcontrol/saturationdetector/utilization/config.go validateConfig (the same in both releases).
func (c *utilizationDetector) check() error {
	var errs []error
	if c.QueueDepthThreshold != nil && *c.QueueDepthThreshold <= 0 {
		errs = append(errs, fmt.Errorf("queueDepthThreshold must be strictly positive, got %d", *c.QueueDepthThreshold))
	}
	if c.KVCacheUtilThreshold != nil && (*c.KVCacheUtilThreshold <= 0 || *c.KVCacheUtilThreshold > 1) {
		errs = append(errs, fmt.Errorf("kvCacheUtilThreshold must be in (0.0, 1.0], got %f", *c.KVCacheUtilThreshold))
	}
	if c.MetricsStalenessThreshold != nil && c.MetricsStalenessThreshold.Duration <= 0 {
		errs = append(errs, fmt.Errorf("metricsStalenessThreshold must be strictly positive, got %v", c.MetricsStalenessThreshold.Duration))
	}
	if c.Headroom != nil && *c.Headroom < 0 {
		errs = append(errs, fmt.Errorf("headroom must be a non-negative value, got %f", *c.Headroom))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid utilization detector configuration: %w", errors.Join(errs...))
	}
	return nil
}

// predictedLatencyScorerDefaults: scheduling/scorer/predictedlatency/scorer.go DefaultConfig.
var predictedLatencyScorerDefaults = predictedLatencyScorer{
	SamplingMean: 1000, SLOBufferFactor: 1, NegHeadroomTTFTWeight: 0.8, NegHeadroomTPOTWeight: 0.2,
	HeadroomTTFTWeight: 0.8, HeadroomTPOTWeight: 0.2, HeadroomSelectionStrategy: "least",
	CompositeKVWeight: 1, CompositeQueueWeight: 1, CompositePrefixWeight: 1, EpsilonExploreSticky: 0.01,
	EpsilonExploreNeg: 0.01, AffinityGateTau: 0.80, AffinityGateTauGlobal: 0.99, AffinityMaxTTFTPenaltyMs: 5000,
	ContextTTL: 5 * time.Minute, SelectionMode: "linear", StreamingMode: true,
}

func validatePredictedLatencyScorer(c *predictedLatencyScorer) error {
	var errs []error
	in01 := func(name string, v float64) {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("%s must be in [0, 1], got %f", name, v))
		}
	}
	if c.SamplingMean <= 0 {
		errs = append(errs, fmt.Errorf("samplingMean must be > 0, got %f", c.SamplingMean))
	}
	if c.MaxSampledTokens < 0 {
		errs = append(errs, fmt.Errorf("maxSampledTokens must be >= 0, got %d", c.MaxSampledTokens))
	}
	if c.SLOBufferFactor <= 0 {
		errs = append(errs, fmt.Errorf("sloBufferFactor must be > 0, got %f", c.SLOBufferFactor))
	}
	if c.NegHeadroomTTFTWeight < 0 || c.NegHeadroomTPOTWeight < 0 || c.HeadroomTTFTWeight < 0 || c.HeadroomTPOTWeight < 0 {
		errs = append(errs, errors.New("all headroom weights must be >= 0"))
	}
	if c.CompositeKVWeight < 0 || c.CompositeQueueWeight < 0 || c.CompositePrefixWeight < 0 {
		errs = append(errs, errors.New("composite weights must be >= 0"))
	}
	in01("epsilonExploreSticky", c.EpsilonExploreSticky)
	in01("epsilonExploreNeg", c.EpsilonExploreNeg)
	in01("affinityGateTau", c.AffinityGateTau)
	in01("affinityGateTauGlobal", c.AffinityGateTauGlobal)
	if c.AffinityMaxTTFTPenaltyMs < 0 {
		errs = append(errs, fmt.Errorf("affinityMaxTTFTPenaltyMs must be >= 0, got %f", c.AffinityMaxTTFTPenaltyMs))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid PredictedLatency config: %w", err)
	}
	return nil
}

// gie150ApproxPrefix: requestcontrol/dataproducer/approximateprefix/plugin.go
// ApproxPrefixCacheFactory (over types.go defaultConfig) and newPrepareData.
func gie150ApproxPrefix(raw json.RawMessage) error {
	return lenient(struct {
		AutoTune               bool `json:"autoTune"`
		BlockSizeTokens        int  `json:"blockSizeTokens"`
		BlockSize              int  `json:"blockSize"`
		MaxPrefixBlocksToMatch int  `json:"maxPrefixBlocksToMatch"`
		MaxPrefixTokensToMatch int  `json:"maxPrefixTokensToMatch"`
		LRUCapacityPerServer   int  `json:"lruCapacityPerServer"`
	}{AutoTune: true, BlockSizeTokens: 16, MaxPrefixBlocksToMatch: 256, LRUCapacityPerServer: 31250}, func(c *struct {
		AutoTune               bool `json:"autoTune"`
		BlockSizeTokens        int  `json:"blockSizeTokens"`
		BlockSize              int  `json:"blockSize"`
		MaxPrefixBlocksToMatch int  `json:"maxPrefixBlocksToMatch"`
		MaxPrefixTokensToMatch int  `json:"maxPrefixTokensToMatch"`
		LRUCapacityPerServer   int  `json:"lruCapacityPerServer"`
	}) error {
		switch {
		case c.BlockSize > 0 && c.BlockSizeTokens <= 0:
			return fmt.Errorf("invalid configuration: BlockSize (%d) is deprecated; please use BlockSizeTokens instead to define the cache block size in tokens", c.BlockSize)
		case !c.AutoTune && c.BlockSizeTokens <= 0:
			return fmt.Errorf("invalid configuration: BlockSizeTokens must be > 0 when AutoTune is disabled (current value: %d)", c.BlockSizeTokens)
		case c.MaxPrefixTokensToMatch < 0:
			return fmt.Errorf("invalid configuration: MaxPrefixTokensToMatch must be >= 0 (current value: %d)", c.MaxPrefixTokensToMatch)
		}
		return nil
	})(raw)
}

// engineConfig is one of core-metrics-extractor's engineConfigs.
type engineConfig struct {
	Name                    string `json:"name"`
	QueuedRequestsSpec      string `json:"queuedRequestsSpec"`
	RunningRequestsSpec     string `json:"runningRequestsSpec"`
	KVUsageSpec             string `json:"kvUsageSpec"`
	LoRASpec                string `json:"loraSpec"`
	CacheInfoSpec           string `json:"cacheInfoSpec"`
	CacheBlockSizeLabelName string `json:"cacheBlockSizeLabelName,omitempty"`
	CacheNumBlocksLabelName string `json:"cacheNumBlocksLabelName,omitempty"`
	CacheBlockSizeSpec      string `json:"cacheBlockSizeSpec,omitempty"`
	CacheNumBlocksSpec      string `json:"cacheNumBlocksSpec,omitempty"`
}

// defaultEngines are the engines core-metrics-extractor knows (datalayer/extractor/metrics/
// factories.go defaultEngineConfigs).
var defaultEngines = []string{"vllm", "sglang", "trtllm-serve", "triton-tensorrt-llm"}

// gie150CoreMetricsExtractor: datalayer/extractor/metrics/factories.go CoreMetricsExtractorFactory
// and newCoreMetricsExtractorPlugin: each engine named (not "default"), once, its metric specs
// PromQL vector selectors with a metric name (spec.go parseStringToSpec), the default engine among them.
func gie150CoreMetricsExtractor(raw json.RawMessage) error {
	var params struct {
		EngineLabelKey string         `json:"engineLabelKey"`
		DefaultEngine  string         `json:"defaultEngine"`
		EngineConfigs  []engineConfig `json:"engineConfigs"`
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &params); err != nil {
			return err
		}
	}
	defaultEngine := cmpOr(params.DefaultEngine, "vllm")
	names := map[string]bool{}
	for _, e := range params.EngineConfigs {
		switch {
		case e.Name == "":
			return errors.New("engine config name cannot be empty")
		case e.Name == "default":
			return errors.New(`engine config name cannot be "default" (reserved)`)
		case names[e.Name]:
			return fmt.Errorf("failed to register engine mapping for %q: mapping for engine type %q already exists", e.Name, e.Name)
		}
		names[e.Name] = true
		var errs []error
		for _, spec := range []string{e.QueuedRequestsSpec, e.RunningRequestsSpec, e.KVUsageSpec, e.LoRASpec, e.CacheInfoSpec, e.CacheBlockSizeSpec, e.CacheNumBlocksSpec} {
			if err := checkMetricSpec(spec); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("failed to create mapping for engine %q: %w", e.Name, err)
		}
	}
	for _, name := range defaultEngines {
		names[name] = true
	}
	if !names[defaultEngine] {
		return fmt.Errorf("defaultEngine %q not found in engineConfigs", defaultEngine)
	}
	return nil
}

// labelValue is spec.go addQuotesToLabelValues' pattern: unquoted label values get quotes.
var labelValue = regexp.MustCompile(`(\w+)\s*=\s*([^",}\s]+)`)

// checkMetricSpec: spec.go parseStringToSpec, with Prometheus' own PromQL parser.
func checkMetricSpec(spec string) error {
	if spec == "" {
		return nil
	}
	expr, err := parser.ParseExpr(labelValue.ReplaceAllString(spec, `$1="$2"`))
	if err != nil {
		return err
	}
	vs, ok := expr.(*parser.VectorSelector)
	if !ok {
		return errors.New("not a valid metric specification")
	}
	if vs.Name == "" {
		return fmt.Errorf("empty metric name in specification: %q", spec)
	}
	return nil
}

// gie150KindList names a plugin's kinds, sorted, as the oracle reports them.
func gie150KindList(k gie150Kind) []string {
	var out []string
	for bit, name := range gie150KindNames {
		if k&bit != 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
