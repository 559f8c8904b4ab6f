// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache/kvblock"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"
	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// TestKVEventsArriveWhereThePickerDials: a data parallel service (a replica of 2 pods of 2 ranks)
// routed with strategy precise-prefix-cache, its servers publishing KV-cache events as the render
// configured them, and the picker's side of it as llm-d-router v0.10.0 runs it (kvIndexer):
// every rank's events arrive at the address and port the picker dials for the rank's endpoint of
// the pool, under a topic that names that endpoint and the served model, and the index keeps the
// rank's blocks under the endpoint the prefix scorer looks up. Each rank serves one prompt,
// sent to it directly (llm-d-router's picker is not on the module proxy: no picker runs here).
func TestKVEventsArriveWhereThePickerDials(t *testing.T) {
	const namespace = "routing-kv-events"
	const local = 2
	harness.AddNodes(t, testcluster.Nodes{Prefix: "kv-events", Count: 2, GPUs: 8})
	precise := router(eppconfig.StrategyPrecisePrefixCache)
	precise.EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseLLMDRouter}
	args := service(namespace, 1, precise)
	args.Roles[0].Multinode = &api.Multinode{NodeCount: 2}
	args.Roles[0].Parallelism = &api.Parallelism{Data: 4, DataLocal: local, Expert: true}
	template := serverWithGPUs(local).(*k8scorev1.PodTemplateSpecArgs)
	template.Metadata.(*k8smetav1.ObjectMetaArgs).Annotations = pulumi.StringMap{testcluster.ModelServerArgsAnnotation: pulumi.String(simulatedGPUOwnBlockSize)}
	args.Roles[0].Template = template
	deployOnly(t, "kv", args)

	servers := pods(t, namespace, "kv", "server")
	require.Len(t, servers, 2, "one replica of 2 pods")
	ranks := dataParallelRanks(t, namespace, servers, local)
	require.Len(t, ranks, 4, "DP=4: 4 ranks")
	indexer := startKVIndexer(t, namespace, "kv", ranks)

	for _, endpoint := range sortedByRank(ranks) {
		indexer.hear(t, endpoint, func(attempt int) error {
			prompt := strings.Repeat(fmt.Sprintf("attempt %d: rank %s keeps these blocks. ", attempt, endpoint), 60)
			return complete("http://"+endpoint, prompt, 1, false).err
		})
		testcluster.Progress("kv events: %s: %d messages, %d blocks indexed", endpoint, indexer.messagesOf(endpoint), indexer.blocks(endpoint))
	}
	indexer.mu.Lock()
	defer indexer.mu.Unlock()
	for pod, models := range indexer.messages {
		_, isRank := ranks[pod]
		assert.True(t, isRank, "a topic names %s, an endpoint of the pool", pod)
		for served := range models {
			assert.Equal(t, model, served, "the topic of %s names the served model", pod)
		}
	}
	for endpoint, keys := range indexer.added {
		found, err := indexer.index.Lookup(context.Background(), keys, nil)
		require.NoError(t, err)
		for _, key := range keys {
			assert.Contains(t, found[key], kvblock.PodEntry{PodIdentifier: endpoint, DeviceTier: "gpu"},
				"a block %s stored is found under its endpoint, on the GPU", endpoint)
		}
	}
}

// TestKVEventsKeyAnAdaptersBlocksByItsName: with LoRA adapters, a server's blocks for a request
// to an adapter are indexed under the adapter, apart from the base model's: vLLM names the
// adapter in its events (BlockStored lora_name, as llm-d-inference-sim does:
// pkg/kv-cache/block_cache.go), kv-cache keys such blocks by it (pkg/kvevents/pool.go
// processEventBatch: effectiveModelName), and the picker keys a request's prompt by its target
// model, the adapter name the loader registered (the render's adapters.json) and the request or
// the split's rewrite names. Two servers, one prompt: to one as adapter sql, to the other as the
// base model; each is found where it was served and only there.
func TestKVEventsKeyAnAdaptersBlocksByItsName(t *testing.T) {
	const namespace = "routing-kv-events-lora"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "kv-events-lora", Count: 1, GPUs: 8})
	precise := router(eppconfig.StrategyPrecisePrefixCache)
	precise.EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseLLMDRouter}
	args := loraService(namespace, precise)
	args.Roles[0].Template = serverOf(map[string]string{testcluster.ModelServerArgsAnnotation: simulatedGPUOwnBlockSize})
	prepareLoRA(t, namespace, "lora", args)
	deployOnly(t, "lora", args)

	servers := pods(t, namespace, "lora", "server")
	require.Len(t, servers, 4)
	ranks := map[string]rank{}
	for _, pod := range servers {
		endpoint := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(servingPort))
		ranks[endpoint] = rank{pod: pod.Name, endpoint: endpoint, port: servingPort}
	}
	require.Eventually(t, func() bool { return slices.Contains(loadedAdapters(t, namespace, servers[0].Name), "sql") },
		30*time.Second, 200*time.Millisecond, "the loader loads adapter sql")
	indexer := startKVIndexer(t, namespace, "lora", ranks)
	adapterServer := net.JoinHostPort(servers[0].Status.PodIP, strconv.Itoa(servingPort))
	baseServer := net.JoinHostPort(servers[1].Status.PodIP, strconv.Itoa(servingPort))
	for _, endpoint := range []string{adapterServer, baseServer} { // their subscribers hear them
		indexer.hear(t, endpoint, func(attempt int) error {
			prompt := strings.Repeat(fmt.Sprintf("attempt %d: a warm-up of %s. ", attempt, endpoint), 60)
			return complete("http://"+endpoint, prompt, 1, false).err
		})
	}
	prompt := strings.Repeat("the same prompt, to an adapter and to the base model. ", 60)
	for endpoint, target := range map[string]string{adapterServer: "sql", baseServer: model} {
		res := post("http://"+endpoint+"/v1/completions", map[string]any{"model": target, "prompt": prompt, "max_tokens": 1}, false)
		require.NoError(t, res.err, "%s serves %s", endpoint, target)
	}
	require.Eventually(t, func() bool {
		return len(indexer.storedTokens(adapterServer, "sql")) > 0 && len(indexer.storedTokens(baseServer, "")) > len(indexer.storedTokens(adapterServer, ""))
	}, 30*time.Second, 100*time.Millisecond, "both servers' blocks of the prompt are indexed, one's under the adapter")

	tokens := indexer.storedTokens(adapterServer, "sql")
	assert.Equal(t, map[string]bool{adapterServer: true}, indexer.holders(t, tokens, "sql"),
		"the prompt keyed for adapter sql is found on the server that served it as sql")
	assert.Equal(t, map[string]bool{baseServer: true}, indexer.holders(t, tokens, model),
		"the same prompt keyed for the base model is found on the server that served it so")
}

// kvIndexer is the picker's side of precise prefix-cache routing as llm-d-router v0.10.0 runs it,
// on llm-d-kv-cache v0.9.0 (the release's library, at the version the module proxy serves): the
// precise-prefix-cache-producer's kvEventsConfig and tokenProcessorConfig read from the rendered
// configuration into kv-cache's own types, over its defaults (kvevents.DefaultConfig); for each
// endpoint of the pool a subscriber at the pod's address and SocketPort + the endpoint's rank
// index (v0.10.0 preciseprefixcache/extractor.go ensureSubscriber: the rank index is the
// endpoint's place among the pool's targetPorts, here servingPort + i); kv-cache's event Pool with
// its vLLM adapter and an in-memory index. It records what the adapter read from each message
// (the topic's endpoint and model) and the blocks the Pool added to the index, by endpoint.
type kvIndexer struct {
	mu       sync.Mutex
	messages map[string]map[string]int      // endpoint -> model -> messages
	added    map[string][]kvblock.BlockHash // endpoint -> request keys added
	// stored are the tokens of the blocks each endpoint's server stored, by the LoRA adapter
	// the event names ("" for the base model).
	stored    map[string]map[string][]uint32
	index     kvblock.Index
	processor kvblock.TokenProcessor
}

// hear sends endpoint's server a request (send, with a new prompt each attempt) until its blocks
// are indexed: a subscriber hears only what is published after it has connected (ZMQ's PUB drops
// a message no subscriber has joined for yet), and it connects on its own time.
func (x *kvIndexer) hear(t *testing.T, endpoint string, send func(attempt int) error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var lastErr error
	for attempt := 1; ; attempt++ {
		if time.Now().After(deadline) {
			t.Fatalf("the blocks %s's server stores are never indexed under its endpoint (%d requests; the last one's error: %v)", endpoint, attempt-1, lastErr)
		}
		lastErr = send(attempt)
		for wait := time.Now().Add(time.Second); time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
			if x.blocks(endpoint) > 0 {
				return
			}
		}
	}
}

func startKVIndexer(t *testing.T, namespace, service string, ranks map[string]rank) *kvIndexer {
	t.Helper()
	config, tokens := producerConfig(t, namespace, service)
	require.True(t, config.DiscoverPods, "the picker discovers the pool's pods")
	memory, err := kvblock.NewInMemoryIndex(kvblock.DefaultInMemoryIndexConfig())
	require.NoError(t, err)
	processor, err := kvblock.NewChunkedTokenDatabase(tokens)
	require.NoError(t, err)
	x := &kvIndexer{messages: map[string]map[string]int{}, added: map[string][]kvblock.BlockHash{},
		stored: map[string]map[string][]uint32{}, index: memory, processor: processor}
	ctx, cancel := context.WithCancel(context.Background())
	pool := kvevents.NewPool(config, recordingIndex{memory, x}, processor, recordingAdapter{engineadapter.NewVLLMAdapter(), x})
	pool.Start(ctx)
	subscribers := kvevents.NewSubscriberManager(pool)
	t.Cleanup(func() {
		subscribers.Shutdown(ctx)
		pool.Shutdown(ctx)
		cancel()
	})
	for endpoint, r := range ranks {
		host, _, err := net.SplitHostPort(endpoint)
		require.NoError(t, err)
		rankIndex := int(r.port - servingPort)
		dial := "tcp://" + net.JoinHostPort(host, strconv.Itoa(config.PodDiscoveryConfig.SocketPort+rankIndex))
		require.NoError(t, subscribers.EnsureSubscriber(ctx, endpoint, dial, config.TopicFilter, true))
	}
	return x
}

// producerConfig is the precise-prefix-cache-producer's kvEventsConfig and tokenProcessorConfig in
// the service's rendered Endpoint Picker configuration (its ConfigMap {service}-epp-config).
func producerConfig(t *testing.T, namespace, service string) (*kvevents.Config, *kvblock.TokenProcessorConfig) {
	t.Helper()
	cm, err := harness.Cluster.Clientset.CoreV1().ConfigMaps(namespace).Get(context.Background(), service+"-epp-config", metav1.GetOptions{})
	require.NoError(t, err)
	var file struct {
		Plugins []struct {
			Type       string `json:"type"`
			Parameters struct {
				KVEventsConfig       json.RawMessage `json:"kvEventsConfig"`
				TokenProcessorConfig json.RawMessage `json:"tokenProcessorConfig"`
			} `json:"parameters"`
		} `json:"plugins"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &file))
	for _, p := range file.Plugins {
		if p.Type != "precise-prefix-cache-producer" {
			continue
		}
		// What the configuration gives, over kv-cache's defaults, as the producer reads it.
		config, tokens := kvevents.DefaultConfig(), kvblock.DefaultTokenProcessorConfig()
		if p.Parameters.KVEventsConfig != nil {
			require.NoError(t, json.Unmarshal(p.Parameters.KVEventsConfig, config))
		}
		if p.Parameters.TokenProcessorConfig != nil {
			require.NoError(t, json.Unmarshal(p.Parameters.TokenProcessorConfig, tokens))
		}
		return config, tokens
	}
	t.Fatal("the picker's configuration has no precise-prefix-cache-producer")
	return nil, nil
}

// holders are the endpoints the index finds the blocks of tokens under, keyed for a model (or an
// adapter) as the picker keys a request's prompt for the request's target model
// (preciseprefixcache/blockkeys.go computeBlockKeysForTokens: request.TargetModel).
func (x *kvIndexer) holders(t *testing.T, tokens []uint32, model string) map[string]bool {
	t.Helper()
	keys, err := x.processor.TokensToKVBlockKeys(kvblock.EmptyBlockHash, tokens, model, nil)
	require.NoError(t, err)
	require.NotEmpty(t, keys, "the tokens fill a block")
	found, err := x.index.Lookup(context.Background(), keys, nil)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, entries := range found {
		for _, e := range entries {
			out[e.PodIdentifier] = true
		}
	}
	return out
}

// storedTokens are the tokens of the blocks endpoint's server stored for adapter ("" the base model).
func (x *kvIndexer) storedTokens(endpoint, adapter string) []uint32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stored[endpoint][adapter]
}

func (x *kvIndexer) blocks(endpoint string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.added[endpoint])
}

func (x *kvIndexer) messagesOf(endpoint string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, count := range x.messages[endpoint] {
		n += count
	}
	return n
}

// recordingAdapter is kv-cache's vLLM adapter, recording the endpoint and model each message's
// topic names.
type recordingAdapter struct {
	kvevents.EngineAdapter
	x *kvIndexer
}

func (a recordingAdapter) ParseMessage(msg *kvevents.RawMessage) (string, string, kvevents.EventBatch, error) {
	pod, served, batch, err := a.EngineAdapter.ParseMessage(msg)
	if err == nil {
		a.x.mu.Lock()
		if a.x.messages[pod] == nil {
			a.x.messages[pod], a.x.stored[pod] = map[string]int{}, map[string][]uint32{}
		}
		a.x.messages[pod][served]++
		for _, e := range batch.Events {
			if stored, ok := e.(*kvevents.BlockStoredEvent); ok {
				adapter := ""
				if stored.LoraName != nil {
					adapter = *stored.LoraName
				}
				a.x.stored[pod][adapter] = append(a.x.stored[pod][adapter], stored.Tokens...)
			}
		}
		a.x.mu.Unlock()
	}
	return pod, served, batch, err
}

// recordingIndex is kv-cache's in-memory index, recording the blocks added, by endpoint.
type recordingIndex struct {
	kvblock.Index
	x *kvIndexer
}

func (i recordingIndex) Add(ctx context.Context, engineKeys, requestKeys []kvblock.BlockHash, entries []kvblock.PodEntry) error {
	i.x.mu.Lock()
	for _, e := range entries {
		i.x.added[e.PodIdentifier] = append(i.x.added[e.PodIdentifier], requestKeys...)
	}
	i.x.mu.Unlock()
	return i.Index.Add(ctx, engineKeys, requestKeys, entries)
}
