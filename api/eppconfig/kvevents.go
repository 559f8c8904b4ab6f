// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Precise prefix-cache routing (strategy precise-prefix-cache): every model server publishes its
// KV-cache events (blocks stored, blocks removed) over ZMQ, and llm-d-router v0.10.0's
// precise-prefix-cache-producer subscribes to each pod of the pool, keeps an index of which pod
// holds which block, and scores pods by the blocks of a request's prompt they hold, instead of
// guessing from where it routed before (the approx-prefix-cache-producer of prefix-cache). The
// pipeline is the release's own sample, deploy/config/epp-precise-prefix-cache-config.yaml:
// token-producer -> precise-prefix-cache-producer -> prefix-cache-scorer. The producer's
// parameters are llm-d-kv-cache's (v0.9.0, the version llm-d-router v0.10.0's go.mod requires):
// tokenProcessorConfig (pkg/kvcache/kvblock/token_processor.go TokenProcessorConfig) and
// kvEventsConfig (pkg/kvevents/pool.go Config, PodDiscoveryConfig).

// Plugin types of the precise pipeline (cmd/epp/runner/runner.go registerInTreePlugins).
const (
	PrecisePrefixProducer      = "precise-prefix-cache-producer"
	TokenProducer              = "token-producer"
	NoHitLRUScorer             = "no-hit-lru-scorer"
	EndpointNotificationSource = "endpoint-notification-source"
	// deprecatedPreciseScorer is the producer and scorer in one, deprecated in v0.10.0
	// (runner.go RegisterDeprecated); it reads the same parameters.
	deprecatedPreciseScorer = "precise-prefix-cache-scorer"
)

// Defaults of what the servers and the picker agree on.
const (
	// DefaultKVEventsPort is where a pod's first rank publishes its events: llm-d-kv-cache's
	// default socket port (pkg/kvevents/pool.go DefaultPodReconcilerConfig, 5557); rank i
	// publishes on the port after it by i (the producer dials SocketPort + RankIndex:
	// preciseprefixcache/extractor.go ensureSubscriber).
	DefaultKVEventsPort = 5557
	// DefaultKVBlockSize is the tokens of a KV block, the servers' --block-size and the
	// producer's blockSizeTokens: llm-d's precise-prefix-cache-routing guide runs 64 on both ("must
	// match the precise-prefix-cache-producer's tokenProcessorConfig.blockSizeTokens").
	DefaultKVBlockSize = 64
	// DefaultKVHashSeed is the servers' PYTHONHASHSEED and the producer's hashSeed: the seed of
	// the release's sample (deploy/config/sim-epp-tokenizer-vllm-http-config.yaml). llm-d-kv-cache
	// hashes the first block of a prompt from it, "similarly to vLLM's NONE_HASH", and asks the
	// deployer to align it with the servers' PYTHONHASHSEED (TokenProcessorConfig.HashSeed).
	DefaultKVHashSeed = "42"
	// kvTopicFilter is the producer's subscription prefix, llm-d-kv-cache's default (pool.go
	// DefaultConfig): a server's topic must begin with it.
	kvTopicFilter = "kv@"
	// kvDefaultBlockSizeTokens is the producer's block size when its configuration gives none
	// (token_processor.go: zero resolves to 16).
	kvDefaultBlockSizeTokens = 16
)

// KVEvents is what a router's servers and its picker agree on for precise prefix-cache routing.
type KVEvents struct {
	// Model is the model's served name: every server's events topic ends with it, the token
	// producer tokenizes for it, and a request for it is looked up under it (an adapter's under
	// its own name, which vLLM puts in the events it publishes).
	Model string
	// TokenizerURL is the base URL of the render (tokenizer) Service the token producer calls;
	// empty for a configuration of the user's, which names its own.
	TokenizerURL string
	// BlockSize is the tokens of a KV block: the servers' --block-size and the producer's
	// tokenProcessorConfig.blockSizeTokens.
	BlockSize int
	// HashSeed is the servers' PYTHONHASHSEED and the producer's tokenProcessorConfig.hashSeed.
	HashSeed string
	// SocketPort is where a pod's first rank publishes; rank i publishes on SocketPort + i.
	SocketPort int
	// TopicFilter is the prefix of the topics the producer subscribes to.
	TopicFilter string
}

// Topic is the events topic of a server whose endpoint the pool knows as host:port: "kv@" (the
// producer's filter), the endpoint the producer's index keys the server's blocks by, and the
// model. llm-d-kv-cache reads the pod and the model from it (pkg/kvevents/engineadapter/common.go
// parseTopic: "kv@<pod-id>@<model-name>"), and the scorer looks a pod's endpoint up as
// "address:port" (preciseprefixcache/extractor.go: the index entries of an endpoint are
// "address:port"), as llm-d's guide writes it: kv@$(POD_IP):$(POD_PORT)@<model>.
func (k *KVEvents) Topic(host string, port int32) string {
	return fmt.Sprintf("%s%s:%d@%s", k.TopicFilter, host, port, k.Model)
}

// precisePluginParameters are the parameters of the producer that the agreement is about, as
// llm-d-kv-cache decodes them over its defaults.
type precisePluginParameters struct {
	TokenProcessorConfig *kvTokenProcessorConfig `json:"tokenProcessorConfig,omitempty"`
	KVEventsConfig       *kvEventsConfig         `json:"kvEventsConfig,omitempty"`
	IndexerConfig        json.RawMessage         `json:"indexerConfig,omitempty"`
}

// kvTokenProcessorConfig: llm-d-kv-cache pkg/kvcache/kvblock/token_processor.go TokenProcessorConfig.
type kvTokenProcessorConfig struct {
	BlockSize       int    `json:"blockSize,omitempty"` // deprecated: blockSizeTokens
	BlockSizeTokens int    `json:"blockSizeTokens"`
	HashSeed        string `json:"hashSeed"`
}

// kvEventsConfig: llm-d-kv-cache pkg/kvevents/pool.go Config and PodDiscoveryConfig.
type kvEventsConfig struct {
	ZMQEndpoint        string                `json:"zmqEndpoint,omitempty"`
	TopicFilter        string                `json:"topicFilter"`
	DiscoverPods       bool                  `json:"discoverPods"`
	PodDiscoveryConfig *kvPodDiscoveryConfig `json:"podDiscoveryConfig,omitempty"`
}

type kvPodDiscoveryConfig struct {
	SocketPort int `json:"socketPort"`
}

// IndexKVEvents gives the picker what its servers publish (strategy precise-prefix-cache): a
// preset's token producer calls the render Service for kv's model, and its producer dials each pod
// on kv's socket port and hashes blocks of kv's size and seed. A configuration of the user's is
// read, not changed: kv takes the block size, seed, port and filter its producer has, for the
// servers to publish as it expects (the caller then checks the servers' own flags against them).
func (s *Selection) IndexKVEvents(kv *KVEvents) error {
	if s.Router == nil {
		return fmt.Errorf("precise prefix-cache routing needs llm-d-router's %s: endpointPicker.release %s", PrecisePrefixProducer, ReleaseRouter)
	}
	if s.custom {
		return s.readKVEvents(kv)
	}
	params, err := json.Marshal(precisePluginParameters{
		TokenProcessorConfig: &kvTokenProcessorConfig{BlockSizeTokens: kv.BlockSize, HashSeed: kv.HashSeed},
		KVEventsConfig: &kvEventsConfig{TopicFilter: kvTopicFilter, DiscoverPods: true,
			PodDiscoveryConfig: &kvPodDiscoveryConfig{SocketPort: kv.SocketPort}},
		// the sample's: the index's Prometheus metrics on the picker's metrics port
		IndexerConfig: json.RawMessage(`{"kvBlockIndexConfig":{"enableMetrics":true}}`),
	})
	if err != nil {
		return err
	}
	tokenizer, err := json.Marshal(map[string]any{"modelName": kv.Model, "vllm": map[string]string{"url": kv.TokenizerURL}})
	if err != nil {
		return err
	}
	kv.TopicFilter = kvTopicFilter
	for i, p := range s.Router.Plugins {
		switch p.Type {
		case PrecisePrefixProducer:
			s.Router.Plugins[i].Parameters = params
		case TokenProducer:
			s.Router.Plugins[i].Parameters = tokenizer
		}
	}
	return nil
}

// readKVEvents reads what a user's configuration's producer expects of the servers: it must have
// one that dials the pods (the servers bind their events socket: vLLM's ZmqEventPublisher binds an
// endpoint of "*"), and a token producer of real tokens.
func (s *Selection) readKVEvents(kv *KVEvents) error {
	i := slices.IndexFunc(s.Router.Plugins, func(p RouterPlugin) bool {
		return p.Type == PrecisePrefixProducer || p.Type == deprecatedPreciseScorer
	})
	if i < 0 {
		return fmt.Errorf("strategy %s indexes the servers' KV-cache events with a %s: the configuration has none; add one, or remove the strategy",
			StrategyPrecisePrefixCache, PrecisePrefixProducer)
	}
	// decoded over llm-d-kv-cache's defaults, as the producer's factory does (producer.go PluginFactory)
	params := precisePluginParameters{
		TokenProcessorConfig: &kvTokenProcessorConfig{},
		KVEventsConfig:       &kvEventsConfig{TopicFilter: kvTopicFilter, DiscoverPods: true, PodDiscoveryConfig: &kvPodDiscoveryConfig{SocketPort: DefaultKVEventsPort}},
	}
	if len(s.Router.Plugins[i].Parameters) > 0 {
		if err := json.Unmarshal(s.Router.Plugins[i].Parameters, &params); err != nil {
			return fmt.Errorf("plugin %s: %w", s.Router.Plugins[i].Name, err)
		}
	}
	events := params.KVEventsConfig
	switch {
	case events == nil || events.ZMQEndpoint != "":
		return fmt.Errorf("plugin %s: kvEventsConfig.zmqEndpoint makes the picker bind one socket the servers dial, but vLLM binds its own "+
			"events socket on each pod: remove zmqEndpoint, so the picker dials every pod (kvEventsConfig.discoverPods)", s.Router.Plugins[i].Name)
	case !events.DiscoverPods || events.PodDiscoveryConfig == nil:
		return fmt.Errorf("plugin %s: kvEventsConfig.discoverPods is false: the picker would subscribe to no server; set it to true", s.Router.Plugins[i].Name)
	case events.PodDiscoveryConfig.SocketPort < 1 || events.PodDiscoveryConfig.SocketPort > 65535:
		return fmt.Errorf("plugin %s: kvEventsConfig.podDiscoveryConfig.socketPort %d is no port", s.Router.Plugins[i].Name, events.PodDiscoveryConfig.SocketPort)
	case !strings.HasPrefix(kvTopicFilter, events.TopicFilter):
		return fmt.Errorf("plugin %s: kvEventsConfig.topicFilter %q does not match the servers' topics, which begin %q: remove it",
			s.Router.Plugins[i].Name, events.TopicFilter, kvTopicFilter)
	}
	tp := params.TokenProcessorConfig
	if tp == nil {
		tp = &kvTokenProcessorConfig{}
	}
	kv.BlockSize = tp.BlockSizeTokens
	if kv.BlockSize == 0 {
		kv.BlockSize = tp.BlockSize
	}
	if kv.BlockSize == 0 {
		kv.BlockSize = kvDefaultBlockSizeTokens
	}
	kv.HashSeed, kv.SocketPort, kv.TopicFilter = tp.HashSeed, events.PodDiscoveryConfig.SocketPort, kvTopicFilter
	kv.TokenizerURL = ""
	if !slices.ContainsFunc(s.Router.Plugins, isRealTokenizer) {
		return errors.New("the configuration has no token-producer with a vllm backend (modelName and vllm.url): the default estimate " +
			"backend's token IDs are not the servers', and the index matches nothing (the token producer's README); add one")
	}
	return nil
}

// isRealTokenizer: a token producer that tokenizes with the model's tokenizer, by vLLM's render
// endpoint (requestcontrol/dataproducer/tokenizer/README.md: the vllm backend, chosen by vllm or
// modelName; the estimate backend "silently degrades precise cache correlation").
func isRealTokenizer(p RouterPlugin) bool {
	if p.Type != TokenProducer && p.Type != "tokenizer" {
		return false
	}
	var params struct {
		ModelName string          `json:"modelName"`
		VLLM      json.RawMessage `json:"vllm"`
	}
	return json.Unmarshal(p.Parameters, &params) == nil && params.ModelName != ""
}

// precisePreset is the configuration of strategy precise-prefix-cache for llm-d-router v0.10.0,
// its parameters given later (IndexKVEvents). One profile: the release's sample
// (epp-precise-prefix-cache-config.yaml: prefix-cache-scorer 2 on the producer's matches,
// kv-cache-utilization 1, queue 1, max-score-picker; the data layer's metrics source and the
// endpoint notifications that add and remove each pod's subscriber), with the no-hit-lru-scorer
// (weight 1, as the release's sim-epp-no-hit-lru.yaml) on the same matches, which spreads
// prompts no pod has cached over the pods least recently sent one. Prefill/decode: its own
// preset with both profiles' prefix-cache-scorer on the producer's matches (the prefill decider,
// prefix-based-pd-decider, reads only the approximate producer's matches in v0.10.0:
// disagg/prefix_based_pd_decider.go disaggregate, disagg_profile_handler.go Consumes).
func precisePreset(cfg *RouterConfig, disaggregated bool) {
	matches := json.RawMessage(`{"prefixMatchInfoProducerName":"` + PrecisePrefixProducer + `"}`)
	pipeline := []RouterPlugin{
		{Type: TokenProducer, Name: TokenProducer},
		{Type: EndpointNotificationSource, Name: EndpointNotificationSource},
		{Type: MetricsDataSource, Name: MetricsDataSource},
		{Type: CoreMetricsExtractor, Name: CoreMetricsExtractor},
		{Type: PrecisePrefixProducer, Name: PrecisePrefixProducer},
	}
	cfg.DataLayer = &RouterDataLayer{Sources: []RouterDataSource{
		{PluginRef: MetricsDataSource, Extractors: []RouterPluginRef{{PluginRef: CoreMetricsExtractor}}},
		{PluginRef: EndpointNotificationSource, Extractors: []RouterPluginRef{{PluginRef: PrecisePrefixProducer}}},
	}}
	if disaggregated {
		for i, p := range cfg.Plugins {
			if p.Type == PrefixCacheScorer {
				cfg.Plugins[i].Parameters = matches
			}
		}
		cfg.Plugins = append(pipeline, cfg.Plugins...)
		return
	}
	weight := func(w float64) *float64 { return &w }
	cfg.Plugins = append(pipeline,
		RouterPlugin{Type: PrefixCacheScorer, Name: PrefixCacheScorer, Parameters: matches},
		RouterPlugin{Type: NoHitLRUScorer, Name: NoHitLRUScorer, Parameters: matches},
		RouterPlugin{Type: KVCacheUtilizationScorer, Name: KVCacheUtilizationScorer},
		RouterPlugin{Type: QueueScorer, Name: QueueScorer},
		RouterPlugin{Type: MaxScorePicker, Name: MaxScorePicker},
	)
	cfg.SchedulingProfiles = []RouterSchedulingProfile{{Name: "default", Plugins: []RouterSchedulingPlugin{
		{PluginRef: PrefixCacheScorer, Weight: weight(2)},
		{PluginRef: NoHitLRUScorer, Weight: weight(1)},
		{PluginRef: KVCacheUtilizationScorer, Weight: weight(1)},
		{PluginRef: QueueScorer, Weight: weight(1)},
		{PluginRef: MaxScorePicker},
	}}}
}
