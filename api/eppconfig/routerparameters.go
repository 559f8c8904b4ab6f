// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The parameters of every plugin llm-d-router v0.10.0 registers as Beta (Alpha ones are refused
// before their parameters matter), as their factories read them: the loader hands each factory a
// fwkplugin.StrictDecoder over its parameters (pkg/epp/config/loader/configloader.go
// instantiatePlugins), so a factory that decodes refuses an unknown field, and one that takes
// `_ *json.Decoder` reads none and ignores whatever is given. Each check names the file and
// function of github.com/llm-d/llm-d-router at v0.10.0 (under pkg/epp/framework/plugins/) it
// mirrors. Not modelled, left to the EPP at start-up: the nested llm-d-kv-cache configurations of
// the precise prefix-cache plugins (tokenProcessorConfig, indexerConfig, kvEventsConfig), the CEL
// syntax of request-attribute-reporter's expressions, and files a parameter names (certificates,
// file-discovery's path), which only exist in the EPP's container.

// routerParamCheck is a factory's check of its parameters; raw is nil when there are none.
type routerParamCheck func(raw json.RawMessage, byName map[string]routerInstance) ([]string, error)

// strictParams decodes parameters over a factory's defaults as the strict decoder does, then
// applies the factory's checks.
func strictParams[T any](pluginType, errPrefix string, defaults T, validate func(*T) error) routerParamCheck {
	return func(raw json.RawMessage, _ map[string]routerInstance) ([]string, error) {
		params := defaults
		if err := strict(pluginType, raw, &params); err != nil {
			if errPrefix != "" {
				return nil, fmt.Errorf("%s: %w", errPrefix, err)
			}
			return nil, err
		}
		if validate == nil {
			return nil, nil
		}
		return nil, validate(&params)
	}
}

// routerParameters are the decoding factories' checks by plugin type; needsParameters are the
// types whose factory refuses to run without parameters.
var (
	routerParameters = map[string]routerParamCheck{
		// scheduling/scorer/prefix/plugin.go PrefixCachePluginFactory.
		PrefixCacheScorer: routerPrefixCacheScorer,
		// scheduling/picker/{maxscore,random,weightedrandom}/picker.go: picker.PickerParameters.
		MaxScorePicker:       strictParams(MaxScorePicker, "failed to parse the parameters of the 'max-score-picker' picker", pickerParameters{}, nil),
		RandomPicker:         strictParams(RandomPicker, "failed to parse the parameters of the 'random-picker' picker", pickerParameters{}, nil),
		WeightedRandomPicker: strictParams(WeightedRandomPicker, "failed to parse the parameters of the 'weighted-random-picker' picker", pickerParameters{}, nil),
		PrefixBasedPDDecider: routerPrefixBasedDecider,
		DisaggProfileHandler: routerDisaggProfileHandler,
		PDProfileHandler:     routerPDProfileHandler,
		// scheduling/profilehandler/disagg/disagg_headers_handler.go HeadersHandlerFactory.
		DisaggHeadersHandler: strictParams(DisaggHeadersHandler, "failed to parse the parameters", struct {
			PrefillProfile string `json:"prefillProfile"`
			EncodeProfile  string `json:"encodeProfile"`
		}{}, nil),
		PrefillHeaderHandler: strictParams(PrefillHeaderHandler, "failed to parse the parameters", struct {
			PrefillProfile string `json:"prefillProfile"`
			EncodeProfile  string `json:"encodeProfile"`
		}{}, nil),
		// scheduling/profilehandler/dataparallel/dp_profile_handler.go ProfileHandlerFactory.
		DataParallelProfileHandler: strictParams(DataParallelProfileHandler, "failed to parse the parameters of the 'data-parallel-profile-handler' profile handler",
			struct {
				PrimaryPort int `json:"primaryPort"`
			}{8000}, func(p *struct {
				PrimaryPort int `json:"primaryPort"`
			}) error {
				return checkPort(p.PrimaryPort)
			}),
		// scheduling/filter/bylabel/filter.go Factory (deprecated): a label, and values or no label allowed.
		ByLabelFilter: strictParams(ByLabelFilter, "failed to parse the parameters of the 'by-label' filter", byLabelParameters{}, func(p *byLabelParameters) error {
			switch {
			case p.Label == "":
				return errors.New("invalid configuration for 'by-label' filter: 'label' must be specified")
			case len(p.ValidValues) == 0 && !p.AllowsNoLabel:
				return errors.New("invalid configuration for 'by-label' filter: either 'validValues' must be non-empty or 'allowsNoLabel' must be true")
			}
			return nil
		}),
		// scheduling/filter/bylabel/selector.go SelectorFactory and NewSelector: a metav1.LabelSelector.
		LabelSelectorFilter:   labelSelectorParameters(LabelSelectorFilter),
		ByLabelSelectorFilter: labelSelectorParameters(ByLabelSelectorFilter),
		// scheduling/filter/prefixcacheaffinity/plugin.go Factory and Config.validate.
		"prefix-cache-affinity-filter": strictParams("prefix-cache-affinity-filter", "failed to unmarshal config", prefixCacheAffinityFilter{
			AffinityThreshold: 0.80, MaxTTFTPenaltyMs: 18000, TTFTSource: "prefillThroughput", PeakPrefillThroughput: 15928,
		}, func(c *prefixCacheAffinityFilter) error {
			switch {
			case c.AffinityThreshold > 1:
				return fmt.Errorf("invalid config: affinityThreshold must be <= 1.0, got %f", c.AffinityThreshold)
			case c.ExplorationProbability < 0 || c.ExplorationProbability > 1:
				return fmt.Errorf("invalid config: explorationProbability must be in [0, 1], got %f", c.ExplorationProbability)
			case c.MaxTTFTPenaltyMs < 0:
				return fmt.Errorf("invalid config: maxTTFTPenaltyMs must be >= 0, got %f", c.MaxTTFTPenaltyMs)
			case c.PeakPrefillThroughput < 0:
				return fmt.Errorf("invalid config: peakPrefillThroughput must be >= 0, got %f", c.PeakPrefillThroughput)
			case c.TTFTSource != "latencyPredictor" && c.TTFTSource != "prefillThroughput":
				return fmt.Errorf(`invalid config: ttftSource must be "latencyPredictor" or "prefillThroughput", got %q`, c.TTFTSource)
			case c.TTFTSource != "latencyPredictor" && c.MaxTTFTPenaltyMs > 0 && c.PeakPrefillThroughput == 0:
				return errors.New("invalid config: peakPrefillThroughput must be > 0 when ttftSource is prefillThroughput")
			}
			return nil
		}),
		// scheduling/filter/sloheadroomtier/plugin.go Factory.
		"slo-headroom-tier-filter": strictParams("slo-headroom-tier-filter", "failed to unmarshal config", struct {
			EpsilonExploreNeg                 float64 `json:"epsilonExploreNeg,omitempty"`
			LatencyPredictionInfoProducerName string  `json:"latencyPredictionInfoProducerName,omitempty"`
		}{EpsilonExploreNeg: 0.01}, func(c *struct {
			EpsilonExploreNeg                 float64 `json:"epsilonExploreNeg,omitempty"`
			LatencyPredictionInfoProducerName string  `json:"latencyPredictionInfoProducerName,omitempty"`
		}) error {
			if c.EpsilonExploreNeg < 0 || c.EpsilonExploreNeg > 1 {
				return fmt.Errorf("epsilonExploreNeg must be in [0, 1], got %f", c.EpsilonExploreNeg)
			}
			return nil
		}),
		// scheduling/scorer/latency/plugin.go Factory: decoded, not validated.
		"latency-scorer": strictParams("latency-scorer", "failed to unmarshal config", struct {
			TTFTWeight                        float64 `json:"ttftWeight,omitempty"`
			TPOTWeight                        float64 `json:"tpotWeight,omitempty"`
			HeadroomSelectionStrategy         string  `json:"headroomSelectionStrategy,omitempty"`
			CompositeKVWeight                 float64 `json:"compositeKVWeight,omitempty"`
			CompositeQueueWeight              float64 `json:"compositeQueueWeight,omitempty"`
			CompositePrefixWeight             float64 `json:"compositePrefixWeight,omitempty"`
			LatencyPredictionInfoProducerName string  `json:"latencyPredictionInfoProducerName,omitempty"`
			PrefixMatchInfoProducerName       string  `json:"prefixMatchInfoProducerName,omitempty"`
		}{}, nil),
		// scheduling/scorer/tokenload/token_load.go TokenLoadScorerFactory (a threshold <= 0 is defaulted).
		"token-load-scorer": strictParams("token-load-scorer", "failed to unmarshal token load scorer config", struct {
			QueueThresholdTokens     int64  `json:"queueThresholdTokens"`
			InFlightLoadProducerName string `json:"inFlightLoadProducerName,omitempty"`
		}{}, nil),
		// scheduling/scorer/loadaware/load_aware.go Factory (a threshold <= 0 is defaulted).
		"load-aware-scorer": strictParams("load-aware-scorer", "failed to parse the parameters of the 'load-aware-scorer' scorer", struct {
			Threshold int `json:"threshold"`
		}{}, nil),
		// scheduling/scorer/activerequest/active_request.go Factory and NewActiveRequest: out-of-range
		// values are logged and defaulted; requestTimeout is read and ignored.
		"active-request-scorer": strictParams("active-request-scorer", "failed to parse the parameters of the 'active-request-scorer' scorer", struct {
			RequestTimeout           string   `json:"requestTimeout"`
			IdleThreshold            int      `json:"idleThreshold"`
			MaxBusyScore             *float64 `json:"maxBusyScore,omitempty"`
			InFlightLoadProducerName string   `json:"inFlightLoadProducerName,omitempty"`
		}{}, nil),
		// scheduling/scorer/contextlengthaware/context_length_aware.go Factory: a label (default llm-d.ai/context-length-range).
		"context-length-aware": strictParams("context-length-aware", "failed to parse the parameters of the 'context-length-aware' plugin", struct {
			Label           string `json:"label"`
			EnableFiltering bool   `json:"enableFiltering"`
		}{Label: "llm-d.ai/context-length-range"}, func(p *struct {
			Label           string `json:"label"`
			EnableFiltering bool   `json:"enableFiltering"`
		}) error {
			if p.Label == "" {
				return errors.New("invalid configuration for 'context-length-aware' plugin: 'label' must be specified")
			}
			return nil
		}),
		// scheduling/scorer/mmcacheaffinity/scorer.go Factory.
		"mm-embeddings-cache-scorer": strictParams("mm-embeddings-cache-scorer", "failed to parse parameters", struct {
			ProducerName string `json:"producerName,omitempty"`
		}{}, nil),
		// scheduling/scorer/nohitlru/no_hit_lru.go Factory (an lruSize <= 0 is defaulted).
		"no-hit-lru-scorer": strictParams("no-hit-lru-scorer", "failed to parse the parameters of the 'no-hit-lru-scorer' scorer", struct {
			PrefixPluginType            string `json:"prefixPluginType"`
			PrefixPluginName            string `json:"prefixPluginName"`
			LRUSize                     int    `json:"lruSize"`
			PrefixMatchInfoProducerName string `json:"prefixMatchInfoProducerName,omitempty"`
		}{}, nil),
		// scheduling/scorer/preciseprefixcache/precise_prefix_cache.go PluginFactory (deprecated path)
		// and requestcontrol/dataproducer/preciseprefixcache/producer.go PluginFactory.
		"precise-prefix-cache-scorer":   strictParams("precise-prefix-cache-scorer", "failed to parse precise-prefix-cache-scorer config", precisePrefixCache{}, nil),
		"precise-prefix-cache-producer": strictParams("precise-prefix-cache-producer", "failed to parse precise-prefix-cache-producer plugin config", precisePrefixCache{}, checkPrecisePrefixProducer),
		// requestcontrol/dataproducer/approximateprefix/plugin.go ApproxPrefixCacheFactory and
		// newDataProducer (blockSize is deprecated and folded into blockSizeTokens).
		ApproxPrefixProducer: strictParams(ApproxPrefixProducer, "failed to unmarshal prefix cache parameters", approxPrefixParameters{
			AutoTune: true, BlockSizeTokens: 16, MaxPrefixBlocksToMatch: 256, LRUCapacityPerServer: 31250,
		}, func(c *approxPrefixParameters) error {
			if c.BlockSize > 0 && c.BlockSizeTokens == 16 {
				c.BlockSizeTokens = c.BlockSize
			}
			switch {
			case !c.AutoTune && c.BlockSizeTokens <= 0:
				return fmt.Errorf("invalid configuration: BlockSizeTokens must be > 0 when AutoTune is disabled (current value: %d)", c.BlockSizeTokens)
			case c.MaxPrefixTokensToMatch < 0:
				return fmt.Errorf("invalid configuration: MaxPrefixTokensToMatch must be >= 0 (current value: %d)", c.MaxPrefixTokensToMatch)
			}
			return nil
		}),
		// requestcontrol/dataproducer/inflightload/producer.go InFlightLoadProducerFactory.
		"inflight-load-producer": strictParams("inflight-load-producer", "failed to decode inflight-load-producer parameters", inFlightLoadParameters{}, func(c *inFlightLoadParameters) error {
			switch {
			case c.OutputRatio != nil && *c.OutputRatio < 0:
				return fmt.Errorf("outputRatio must be non-negative, got %v", *c.OutputRatio)
			case c.MaxEstimatedOutputTokens != nil && *c.MaxEstimatedOutputTokens < 0:
				return fmt.Errorf("maxEstimatedOutputTokens must be non-negative, got %v", *c.MaxEstimatedOutputTokens)
			}
			return nil
		}),
		// requestcontrol/dataproducer/predictedlatency/plugin.go PredictedLatencyFactory and Config.validate.
		"predicted-latency-producer": strictParams("predicted-latency-producer", "failed to unmarshal config for PredictedLatency", predictedLatencyProducerV010{
			SamplingMean: 1000, SLOBufferFactor: 1, ContextTTL: 5 * time.Minute,
		}, func(c *predictedLatencyProducerV010) error {
			if c.SLOBufferFactor <= 0 {
				return fmt.Errorf("invalid PredictedLatency config: sloBufferFactor must be > 0, got %f", c.SLOBufferFactor)
			}
			return nil
		}),
		// requestcontrol/dataproducer/multimodal/producer.go Factory.
		"mm-embeddings-cache-producer": strictParams("mm-embeddings-cache-producer", "failed to parse the parameters of the 'mm-embeddings-cache-producer' plugin", struct {
			CacheSizeInMBPerServer int `json:"cacheSizeInMBPerServer"`
		}{}, nil),
		// requestcontrol/dataproducer/sessionid/producer.go Factory: exactly one of a header and a cookie.
		"session-id-producer": strictParams("session-id-producer", "failed to parse the parameters of the 'session-id-producer' producer", struct {
			HeaderName string `json:"headerName"`
			CookieName string `json:"cookieName"`
		}{}, func(p *struct {
			HeaderName string `json:"headerName"`
			CookieName string `json:"cookieName"`
		}) error {
			header, cookie := strings.TrimSpace(p.HeaderName), strings.TrimSpace(p.CookieName)
			switch {
			case header == "" && cookie == "":
				return errors.New("'session-id-producer' requires exactly one of headerName or cookieName to be set")
			case header != "" && cookie != "":
				return errors.New("'session-id-producer' requires exactly one of headerName or cookieName to be set, not both")
			}
			return nil
		}),
		// requestcontrol/dataproducer/tokenizer/tokenizer.go PluginFactory (and LegacyPluginFactory, deprecated).
		"token-producer": strictParams("token-producer", "failed to parse the parameters of the 'token-producer' plugin", tokenProducerParameters{}, checkTokenProducer),
		"tokenizer":      strictParams("tokenizer", "failed to parse the parameters of the 'token-producer' plugin", tokenProducerParameters{}, checkTokenProducer),
		// requestcontrol/admitter/latencyslo/plugin.go LatencyAdmissionFactory.
		"latency-slo-admitter": strictParams("latency-slo-admitter", "failed to unmarshal config for LatencyAdmission", struct {
			LatencyPredictionInfoProducerName string `json:"latencyPredictionInfoProducerName,omitempty"`
		}{}, nil),
		// requestcontrol/admitter/probabilisticadmitter/plugin.go Factory.
		"probabilistic-admitter": strictParams("probabilistic-admitter", "failed to parse parameters for 'probabilistic-admitter' plugin", probabilisticAdmitter{
			QueueDepthThreshold: 5, KVCacheUtilThreshold: 0.8, Power: 5, K: 300,
		}, func(p *probabilisticAdmitter) error {
			switch {
			case p.QueueDepthThreshold <= 0:
				return fmt.Errorf("plugin 'probabilistic-admitter': queueDepthThreshold must be > 0, got %d", p.QueueDepthThreshold)
			case p.KVCacheUtilThreshold <= 0:
				return fmt.Errorf("plugin 'probabilistic-admitter': kvCacheUtilThreshold must be > 0, got %g", p.KVCacheUtilThreshold)
			case p.Power <= 0:
				return fmt.Errorf("plugin 'probabilistic-admitter': power must be > 0, got %g", p.Power)
			case p.K <= 0:
				return fmt.Errorf("plugin 'probabilistic-admitter': k must be > 0, got %g", p.K)
			}
			return nil
		}),
		// requestcontrol/requestattributereporter/plugin.go RequestAttributeReporterPluginFactory and New.
		"request-attribute-reporter": strictParams("request-attribute-reporter", "failed to unmarshal config", requestAttributeReporter{}, (*requestAttributeReporter).check),
		// flowcontrol/fairness/program-aware/plugin.go ProgramAwarePluginFactory, Config.validate, newStrategy.
		"program-aware-fairness": strictParams("program-aware-fairness", "invalid config for program-aware-fairness plugin", programAware{
			Strategy: "las", EvictionTTLSeconds: 3600, EvictionSweepSeconds: 300, LASWeightService: 0.8, LASWeightHeadWait: 0.2, LASDecayFactor: 0.99997,
		}, func(c *programAware) error {
			switch {
			case c.EvictionTTLSeconds < 0:
				return fmt.Errorf("evictionTtlSeconds must be >= 0, got %v", c.EvictionTTLSeconds)
			case c.EvictionSweepSeconds <= 0:
				return fmt.Errorf("evictionSweepSeconds must be > 0, got %v", c.EvictionSweepSeconds)
			case c.LASWeightService < 0:
				return fmt.Errorf("lasWeightService must be >= 0, got %v", c.LASWeightService)
			case c.LASWeightHeadWait < 0:
				return fmt.Errorf("lasWeightHeadWait must be >= 0, got %v", c.LASWeightHeadWait)
			case c.LASDecayFactor <= 0 || c.LASDecayFactor > 1:
				return fmt.Errorf("lasDecayFactor must be in (0, 1], got %v", c.LASDecayFactor)
			case c.LASHalfLifeSeconds < 0:
				return fmt.Errorf("lasHalfLifeSeconds must be >= 0, got %v", c.LASHalfLifeSeconds)
			case c.Strategy != "" && c.Strategy != "las":
				return fmt.Errorf(`unknown scoring strategy %q: only "las" is supported`, c.Strategy)
			}
			return nil
		}),
		// flowcontrol/usagelimits/usagelimitpolicy.go StaticPolicyFactory.
		"static-usage-limit-policy": strictParams("static-usage-limit-policy", "failed to parse static usage limit policy config", struct {
			Threshold *float64 `json:"threshold,omitempty"`
		}{}, nil),
		// flowcontrol/saturationdetector/concurrency/config.go buildConfig and validateConfig.
		"concurrency-detector": strictParams("concurrency-detector", "failed to unmarshal concurrency detector config", struct {
			concurrencyDetector
			InFlightLoadProducerName string `json:"inFlightLoadProducerName,omitempty"`
		}{}, func(c *struct {
			concurrencyDetector
			InFlightLoadProducerName string `json:"inFlightLoadProducerName,omitempty"`
		}) error {
			return c.check("requests", "tokens", "hybrid")
		}),
		// flowcontrol/saturationdetector/utilization/config.go buildConfig and validateConfig.
		"utilization-detector": strictParams("utilization-detector", "failed to unmarshal utilization detector config", utilizationDetector{}, (*utilizationDetector).check),
		// datalayer/source/metrics/datasource.go MetricsDataSourceFactory, http.ParseIntervalOption, NewHTTPDataSource.
		MetricsDataSource: strictParams(MetricsDataSource, "", metricsSource{httpSource: httpSource{Scheme: "http", Path: "/metrics", InsecureSkipVerify: true}},
			func(c *metricsSource) error {
				if c.Port != nil && (*c.Port < 1 || *c.Port > 65535) {
					return fmt.Errorf("invalid port %d: must be between 1 and 65535", *c.Port)
				}
				return c.check()
			}),
		// datalayer/source/models/datasource.go ModelDataSourceFactory.
		"models-data-source": strictParams("models-data-source", "", httpSource{Scheme: "http", Path: "/v1/models", InsecureSkipVerify: true}, (*httpSource).check),
		// datalayer/extractor/metrics/factories.go CoreMetricsExtractorFactory and newCoreMetricsExtractorPlugin.
		CoreMetricsExtractor: func(raw json.RawMessage, _ map[string]routerInstance) ([]string, error) {
			return nil, routerCoreMetricsExtractor(raw)
		},
		// datalayer/source/notifications/factory.go NotificationSourceFactory: parameters required.
		"k8s-notification-source": func(raw json.RawMessage, _ map[string]routerInstance) ([]string, error) {
			if raw == nil {
				return nil, errors.New("k8s-notification-source requires parameters (group, version, kind)")
			}
			var gvk struct {
				Group   string `json:"group"`
				Version string `json:"version"`
				Kind    string `json:"kind"`
			}
			if err := strict("k8s-notification-source", raw, &gvk); err != nil {
				return nil, fmt.Errorf("failed to parse notification source parameters: %w", err)
			}
			if gvk.Version == "" || gvk.Kind == "" {
				return nil, errors.New("version and kind are required for k8s-notification-source")
			}
			return nil, nil
		},
		// datalayer/discovery/file/plugin.go Factory and newFileDiscovery: a path is required.
		"file-discovery": strictParams("file-discovery", "file-discovery: failed to parse parameters", struct {
			Path      string `json:"path"`
			WatchFile bool   `json:"watchFile"`
		}{}, func(p *struct {
			Path      string `json:"path"`
			WatchFile bool   `json:"watchFile"`
		}) error {
			if p.Path == "" {
				return errors.New("file-discovery: 'path' parameter is required")
			}
			return nil
		}),
	}
	// needsParameters: factories that check their parameters even when there are none.
	needsParameters = map[string]bool{
		"k8s-notification-source": true, "file-discovery": true, "session-id-producer": true,
		"request-attribute-reporter": true, ByLabelFilter: true, PDProfileHandler: true,
	}
)

type (
	byLabelParameters struct {
		Label         string   `json:"label"`
		ValidValues   []string `json:"validValues"`
		AllowsNoLabel bool     `json:"allowsNoLabel"`
	}
	prefixCacheAffinityFilter struct {
		AffinityThreshold                 float64 `json:"affinityThreshold,omitempty"`
		ExplorationProbability            float64 `json:"explorationProbability,omitempty"`
		MaxTTFTPenaltyMs                  float64 `json:"maxTTFTPenaltyMs,omitempty"`
		TTFTSource                        string  `json:"ttftSource,omitempty"`
		PeakPrefillThroughput             float64 `json:"peakPrefillThroughput,omitempty"`
		PrefixMatchInfoProducerName       string  `json:"prefixMatchInfoProducerName,omitempty"`
		LatencyPredictionInfoProducerName string  `json:"latencyPredictionInfoProducerName,omitempty"`
		InFlightLoadProducerName          string  `json:"inFlightLoadProducerName,omitempty"`
	}
	// precisePrefixCache: the llm-d-kv-cache configurations are kept as written (see above).
	precisePrefixCache struct {
		TokenProcessorConfig json.RawMessage `json:"tokenProcessorConfig"`
		IndexerConfig        json.RawMessage `json:"indexerConfig"`
		KVEventsConfig       json.RawMessage `json:"kvEventsConfig"`
		SpeculativeIndexing  bool            `json:"speculativeIndexing"`
		SpeculativeTTL       string          `json:"speculativeTTL"`
	}
	approxPrefixParameters struct {
		AutoTune               bool `json:"autoTune"`
		BlockSizeTokens        int  `json:"blockSizeTokens"`
		BlockSize              int  `json:"blockSize"`
		MaxPrefixBlocksToMatch int  `json:"maxPrefixBlocksToMatch"`
		MaxPrefixTokensToMatch int  `json:"maxPrefixTokensToMatch"`
		LRUCapacityPerServer   int  `json:"lruCapacityPerServer"`
	}
	inFlightLoadParameters struct {
		AddEstimatedOutputTokens    bool     `json:"addEstimatedOutputTokens"`
		OutputRatio                 *float64 `json:"outputRatio,omitempty"`
		MaxEstimatedOutputTokens    *int64   `json:"maxEstimatedOutputTokens,omitempty"`
		PrefixMatchInfoProducerName string   `json:"prefixMatchInfoProducerName,omitempty"`
		SyncCrossReplicaState       *bool    `json:"syncCrossReplicaState,omitempty"`
	}
	predictedLatencyProducerV010 struct {
		SamplingMean                       float64       `json:"samplingMean,omitempty"`
		MaxDecodeTokenSamplesForPrediction int           `json:"maxDecodeTokenSamplesForPrediction,omitempty"`
		SLOBufferFactor                    float64       `json:"sloBufferFactor,omitempty"`
		ContextTTL                         time.Duration `json:"contextTTL,omitempty"`
		StreamingMode                      bool          `json:"streamingMode,omitempty"`
		EndpointRoleLabel                  string        `json:"endpointRoleLabel,omitempty"`
		PredictInProduce                   bool          `json:"predictInProduce,omitempty"`
		PrefixMatchInfoProducerName        string        `json:"prefixMatchInfoProducerName,omitempty"`
		InFlightLoadProducerName           string        `json:"inFlightLoadProducerName,omitempty"`
		UseEncoderCacheFeatures            bool          `json:"useEncoderCacheFeatures,omitempty"`
		EncoderCacheMatchInfoProducerName  string        `json:"encoderCacheMatchInfoProducerName,omitempty"`
	}
	tokenProducerParameters struct {
		UDSTokenizerConfig json.RawMessage `json:"udsTokenizerConfig,omitempty"`
		VLLM               *struct {
			URL       string `json:"url,omitempty"`
			Timeout   string `json:"timeout,omitempty"`
			MMTimeout string `json:"mmTimeout,omitempty"`
		} `json:"vllm,omitempty"`
		Estimate *struct {
			Image *struct {
				Mode              string      `json:"mode,omitempty"`
				DefaultResolution *resolution `json:"defaultResolution,omitempty"`
				Static            *struct {
					StaticToken int `json:"staticToken,omitempty"`
				} `json:"static,omitempty"`
				Dynamic *struct {
					Factor int `json:"factor,omitempty"`
				} `json:"dynamic,omitempty"`
			} `json:"image,omitempty"`
			Video *struct {
				DefaultResolution *resolution `json:"defaultResolution,omitempty"`
				DefaultDuration   float64     `json:"defaultDuration,omitempty"`
				TokensPerFrame    *struct {
					Mode   string `json:"mode,omitempty"`
					Static *struct {
						NumTokensPerFrame int `json:"numTokensPerFrame,omitempty"`
					} `json:"static,omitempty"`
					Dynamic *struct {
						Factor int `json:"factor,omitempty"`
					} `json:"dynamic,omitempty"`
				} `json:"tokensPerFrame,omitempty"`
				Frames *struct {
					Mode      string `json:"mode,omitempty"`
					MinFrames int    `json:"minFrames,omitempty"`
					MaxFrames int    `json:"maxFrames,omitempty"`
					Sampled   *struct {
						SampleFPS         float64 `json:"sampleFPS,omitempty"`
						TemporalPatchSize int     `json:"temporalPatchSize,omitempty"`
					} `json:"sampled,omitempty"`
					Strided *struct {
						DefaultSourceFPS float64 `json:"defaultSourceFPS,omitempty"`
						FrameStride      int     `json:"frameStride,omitempty"`
					} `json:"strided,omitempty"`
				} `json:"frames,omitempty"`
				MaxVideoTokens int `json:"maxVideoTokens,omitempty"`
			} `json:"video,omitempty"`
		} `json:"estimate,omitempty"`
		ModelName string `json:"modelName"`
	}
	resolution struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	}
	probabilisticAdmitter struct {
		QueueDepthThreshold  int     `json:"queueDepthThreshold"`
		KVCacheUtilThreshold float64 `json:"kvCacheUtilThreshold"`
		Power                float64 `json:"power"`
		K                    float64 `json:"k"`
	}
	programAware struct {
		Strategy             string  `json:"strategy,omitempty"`
		EvictionTTLSeconds   float64 `json:"evictionTtlSeconds,omitempty"`
		EvictionSweepSeconds float64 `json:"evictionSweepSeconds,omitempty"`
		LASWeightService     float64 `json:"lasWeightService,omitempty"`
		LASWeightHeadWait    float64 `json:"lasWeightHeadWait,omitempty"`
		LASDecayFactor       float64 `json:"lasDecayFactor,omitempty"`
		LASHalfLifeSeconds   float64 `json:"lasHalfLifeSeconds,omitempty"`
	}
	// httpSource is the parameters of the HTTP data sources (modelsDatasourceParams;
	// metricsDatasourceParams adds a port).
	httpSource struct {
		Scheme             string `json:"scheme"`
		Path               string `json:"path"`
		InsecureSkipVerify bool   `json:"insecureSkipVerify"`
		CACertPath         string `json:"caCertPath"`
		ClientCertPath     string `json:"clientCertPath"`
		ClientKeyPath      string `json:"clientKeyPath"`
		Interval           string `json:"interval"`
	}
)

// metricsSource is metrics-data-source's metricsDatasourceParams.
type metricsSource struct {
	httpSource
	Port *int `json:"port,omitempty"`
}

// check: datalayer/source/http/datasource.go ParseIntervalOption and NewHTTPDataSource.
func (c *httpSource) check() error {
	if c.Scheme != "http" && c.Scheme != "https" {
		return fmt.Errorf("unsupported scheme: %s", c.Scheme)
	}
	if c.Interval != "" {
		d, err := time.ParseDuration(c.Interval)
		if err != nil {
			return fmt.Errorf("invalid interval %q: %w", c.Interval, err)
		}
		if d < 0 {
			return fmt.Errorf("interval must be non-negative, got %s", d)
		}
	}
	return nil
}

// labelSelectorParameters: scheduling/filter/bylabel/selector.go SelectorFactory and NewSelector.
func labelSelectorParameters(pluginType string) routerParamCheck {
	return strictParams(pluginType, "failed to parse the parameters of the '"+pluginType+"' filter", metav1.LabelSelector{}, func(s *metav1.LabelSelector) error {
		_, err := metav1.LabelSelectorAsSelector(s)
		return err
	})
}

// checkPrecisePrefixProducer: producer.go PluginFactory: an indexer configuration, without the
// tokenizers pool (a token-producer plugin tokenizes now).
func checkPrecisePrefixProducer(c *precisePrefixCache) error {
	if string(c.IndexerConfig) == "null" {
		return errors.New("indexerConfig is required")
	}
	var indexer map[string]json.RawMessage
	if len(c.IndexerConfig) > 0 && json.Unmarshal(c.IndexerConfig, &indexer) == nil {
		if pool, ok := indexer["tokenizersPoolConfig"]; ok && string(pool) != "null" {
			return errors.New("tokenizersPoolConfig is not supported; configure a token-producer plugin instead")
		}
	}
	return nil
}

// checkTokenProducer: requestcontrol/dataproducer/tokenizer/tokenizer.go PluginFactory and
// newVLLMHTTPRenderer (its durations).
func checkTokenProducer(c *tokenProducerParameters) error {
	estimate := c.Estimate != nil
	uds := len(c.UDSTokenizerConfig) > 0 && string(c.UDSTokenizerConfig) != "null" && string(c.UDSTokenizerConfig) != "{}"
	vllm := c.VLLM != nil || c.ModelName != ""
	switch {
	case (estimate && (uds || vllm)) || (uds && vllm):
		return errors.New("invalid configuration for 'token-producer' plugin: only one of 'estimate', 'vllm', or 'udsTokenizerConfig' may be set")
	case (uds || vllm) && c.ModelName == "":
		return errors.New("invalid configuration for 'token-producer' plugin: 'modelName' must be specified")
	}
	if c.Estimate != nil && c.Estimate.Image != nil {
		if m := c.Estimate.Image.Mode; m != "" && m != "dynamic" && m != "static" {
			return errors.New(`invalid configuration for 'token-producer' plugin: estimate.image.mode must be "dynamic" or "static"`)
		}
	}
	if c.Estimate != nil && c.Estimate.Video != nil {
		if tpf := c.Estimate.Video.TokensPerFrame; tpf != nil && tpf.Mode != "" && tpf.Mode != "dynamic" && tpf.Mode != "static" {
			return errors.New(`invalid configuration for 'token-producer' plugin: estimate.video.tokensPerFrame.mode must be "dynamic" or "static"`)
		}
		if f := c.Estimate.Video.Frames; f != nil && f.Mode != "" && f.Mode != "sampled" && f.Mode != "strided" {
			return errors.New(`invalid configuration for 'token-producer' plugin: estimate.video.frames.mode must be "sampled" or "strided"`)
		}
	}
	if c.VLLM != nil {
		for name, d := range map[string]string{"timeout": c.VLLM.Timeout, "mmTimeout": c.VLLM.MMTimeout} {
			if d == "" {
				continue
			}
			if _, err := time.ParseDuration(d); err != nil {
				return fmt.Errorf("failed to initialize vLLM HTTP renderer for 'token-producer' plugin - invalid '%s': %w", name, err)
			}
		}
	}
	return nil
}

// Metric specifications of llm-d-router v0.10.0 (datalayer/extractor/metrics/spec.go: a metric
// name and optional equality label matchers, parsed with these patterns, not PromQL).
var (
	metricSpecRE  = regexp.MustCompile(`^\s*(\S+?)\s*(?:\{([^}]*)\})?\s*$`)
	labelPairRE   = regexp.MustCompile(`^\s*(\S+?)\s*=\s*"([^"]*)"\s*$`)
	addQuotesToRE = regexp.MustCompile(`(\w+)\s*=\s*([^",}\s]+)`)
)

// checkRouterMetricSpec: spec.go parseStringToSpec.
func checkRouterMetricSpec(spec string) error {
	if spec == "" {
		return nil
	}
	quoted := addQuotesToRE.ReplaceAllString(spec, `$1="$2"`)
	m := metricSpecRE.FindStringSubmatch(quoted)
	if m == nil || !model.LegacyValidation.IsValidMetricName(m[1]) {
		return fmt.Errorf("not a valid metric specification: %q", spec)
	}
	if block := strings.TrimSpace(m[2]); block != "" {
		for _, pair := range strings.Split(block, ",") {
			lm := labelPairRE.FindStringSubmatch(pair)
			if lm == nil || !model.LegacyValidation.IsValidLabelName(lm[1]) {
				return fmt.Errorf("invalid label pair %q in specification: %q", pair, spec)
			}
		}
	}
	return nil
}

// routerCoreMetricsExtractor: factories.go CoreMetricsExtractorFactory and
// newCoreMetricsExtractorPlugin; GIE v1.5.0's rules, with custom metrics and v0.10.0's metric
// specifications.
func routerCoreMetricsExtractor(raw json.RawMessage) error {
	var params struct {
		EngineLabelKey string `json:"engineLabelKey"`
		DefaultEngine  string `json:"defaultEngine"`
		EngineConfigs  []struct {
			engineConfig
			CustomMetrics []struct {
				AttributeKey string `json:"attributeKey"`
				MetricSpec   string `json:"metricSpec"`
			} `json:"customMetrics,omitempty"`
		} `json:"engineConfigs"`
	}
	if err := strict(CoreMetricsExtractor, raw, &params); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, e := range params.EngineConfigs {
		switch {
		case e.Name == "":
			return errors.New("engine config name cannot be empty")
		case e.Name == "default":
			return errors.New(`engine config name cannot be "default" (reserved)`)
		}
		var errs []error
		for _, custom := range e.CustomMetrics {
			if err := checkRouterMetricSpec(custom.MetricSpec); err != nil {
				errs = append(errs, fmt.Errorf("custom metric %q: %w", custom.AttributeKey, err))
			}
		}
		for _, spec := range []string{e.QueuedRequestsSpec, e.RunningRequestsSpec, e.KVUsageSpec, e.LoRASpec, e.CacheInfoSpec, e.CacheBlockSizeSpec, e.CacheNumBlocksSpec} {
			if err := checkRouterMetricSpec(spec); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("failed to create mapping for engine %q: %w", e.Name, err)
		}
		if names[e.Name] {
			return fmt.Errorf("failed to register engine mapping for %q: mapping for engine type %q already exists", e.Name, e.Name)
		}
		names[e.Name] = true
	}
	for _, name := range defaultEngines {
		names[name] = true
	}
	if defaultEngine := cmpOr(params.DefaultEngine, "vllm"); !names[defaultEngine] {
		return fmt.Errorf("defaultEngine %q not found in engineConfigs", defaultEngine)
	}
	return nil
}

// requestAttributeReporter is request-attribute-reporter's configuration, the same in llm-d-router
// v0.10.0 and GIE v1.5.0 (requestcontrol/requestattributereporter/plugin.go).
type requestAttributeReporter struct {
	Attributes []struct {
		Key struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"key"`
		Expression string `json:"expression"`
		Condition  string `json:"condition,omitempty"`
	} `json:"attributes"`
}

// check is New's: one attribute, with a name and an expression (the expression's CEL syntax is the
// EPP's to compile at start-up).
func (c *requestAttributeReporter) check() error {
	switch {
	case len(c.Attributes) != 1:
		return errors.New("attributes must contain exactly one entry")
	case c.Attributes[0].Key.Name == "":
		return errors.New("attributeKey.name cannot be empty")
	case c.Attributes[0].Expression == "":
		return errors.New("attributes[0].expression cannot be empty")
	}
	return nil
}
