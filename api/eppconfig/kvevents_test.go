// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreciseStrategyIsLLMDRoutersAlone: only llm-d-router has the precise producer; the other
// releases refuse the strategy at its field, naming the release that has it.
func TestPreciseStrategyIsLLMDRoutersAlone(t *testing.T) {
	for _, release := range []Release{ReleaseGIE150, ReleaseGIE, ReleaseLWEPP} {
		_, selErr := Select(StrategyPrecisePrefixCache, "", false, release, "")
		require.NotNil(t, selErr, release)
		assert.Equal(t, FieldStrategy, selErr.Field)
		assert.ErrorContains(t, selErr, "has no precise-prefix-cache-producer")
		assert.ErrorContains(t, selErr, "use endpointPicker.release llm-d-router-v0.10.0")
	}
	for _, disaggregated := range []bool{false, true} {
		sel, selErr := Select(StrategyPrecisePrefixCache, "", disaggregated, ReleaseRouter, "")
		require.Nil(t, selErr)
		require.Nil(t, sel.Check())
	}
}

// TestAPresetReadsBackAsItsServersPublish: what IndexKVEvents writes into a preset, read back
// from the ConfigMap's text as a user's configuration is read, is what the servers were told to
// publish: block size, seed, port and the topic's filter agree whichever side is read; the
// configuration loads with llm-d-router's rules; both profiles of prefill/decode score on the
// producer's matches.
func TestAPresetReadsBackAsItsServersPublish(t *testing.T) {
	for _, disaggregated := range []bool{false, true} {
		sel, selErr := Select(StrategyPrecisePrefixCache, "", disaggregated, ReleaseRouter, "")
		require.Nil(t, selErr)
		given := KVEvents{Model: "Qwen/Qwen3-8B", TokenizerURL: "http://chat-tokenizer:8000", BlockSize: 32, HashSeed: "7", SocketPort: 6100}
		require.NoError(t, sel.IndexKVEvents(&given))
		require.Nil(t, sel.Check())
		text, err := sel.Text()
		require.NoError(t, err)
		assert.Contains(t, text, "url: http://chat-tokenizer:8000")
		assert.Contains(t, text, "modelName: Qwen/Qwen3-8B")

		custom, selErr := Select(StrategyPrecisePrefixCache, text, disaggregated, ReleaseRouter, "")
		require.Nil(t, selErr)
		var read KVEvents
		require.NoError(t, custom.IndexKVEvents(&read), text)
		assert.Equal(t, KVEvents{BlockSize: 32, HashSeed: "7", SocketPort: 6100, TopicFilter: "kv@"}, read)
		assert.Equal(t, given.TopicFilter, read.TopicFilter)

		scorers := 0
		for _, profile := range sel.Router.SchedulingProfiles {
			for _, ref := range profile.Plugins {
				if ref.PluginRef == PrefixCacheScorer {
					scorers++
				}
			}
		}
		for _, p := range sel.Router.Plugins {
			if p.Type == PrefixCacheScorer {
				assert.JSONEq(t, `{"prefixMatchInfoProducerName":"precise-prefix-cache-producer"}`, string(p.Parameters))
			}
		}
		assert.Equal(t, map[bool]int{false: 1, true: 2}[disaggregated], scorers, "every profile scores on the index")
	}
}

// TestAUsersPreciseConfiguration: a user's own configuration is read for what it expects of the
// servers, and refused where no server could give it.
func TestAUsersPreciseConfiguration(t *testing.T) {
	const tokenizer = "- type: token-producer\n  parameters: {modelName: m, vllm: {url: 'http://t:8000'}}\n"
	const profile = "schedulingProfiles:\n- name: default\n  plugins: [{pluginRef: prefix-cache-scorer}]\n"
	const scorer = "- type: prefix-cache-scorer\n  parameters: {prefixMatchInfoProducerName: precise-prefix-cache-producer}\n"
	cases := []struct {
		name, plugins string
		want          KVEvents
		wantErr       string
	}{
		{name: "the producer's defaults", plugins: tokenizer + "- type: precise-prefix-cache-producer\n" + scorer,
			want: KVEvents{BlockSize: 16, SocketPort: 5557, TopicFilter: "kv@"}},
		{name: "the deprecated blockSize", plugins: tokenizer + "- type: precise-prefix-cache-producer\n  parameters: {tokenProcessorConfig: {blockSize: 128, hashSeed: '1'}}\n" + scorer,
			want: KVEvents{BlockSize: 128, HashSeed: "1", SocketPort: 5557, TopicFilter: "kv@"}},
		{name: "a port of its own", plugins: tokenizer + "- type: precise-prefix-cache-producer\n  parameters: {kvEventsConfig: {podDiscoveryConfig: {socketPort: 7000}}}\n" + scorer,
			want: KVEvents{BlockSize: 16, SocketPort: 7000, TopicFilter: "kv@"}},
		{name: "no producer", plugins: tokenizer + "- type: prefix-cache-scorer\n", wantErr: "the configuration has none"},
		{name: "a global socket", plugins: tokenizer + "- type: precise-prefix-cache-producer\n  parameters: {kvEventsConfig: {zmqEndpoint: 'tcp://*:5557'}}\n" + scorer,
			wantErr: "remove zmqEndpoint"},
		{name: "no pod discovery", plugins: tokenizer + "- type: precise-prefix-cache-producer\n  parameters: {kvEventsConfig: {discoverPods: false}}\n" + scorer,
			wantErr: "discoverPods is false"},
		{name: "a filter no topic matches", plugins: tokenizer + "- type: precise-prefix-cache-producer\n  parameters: {kvEventsConfig: {topicFilter: 'kv@10.'}}\n" + scorer,
			wantErr: `topicFilter "kv@10." does not match`},
		{name: "estimated tokens", plugins: "- type: precise-prefix-cache-producer\n" + scorer, wantErr: "no token-producer with a vllm backend"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sel, selErr := Select(StrategyPrecisePrefixCache, routerHeader+"plugins:\n"+c.plugins+profile, false, ReleaseRouter, "")
			require.Nil(t, selErr)
			var got KVEvents
			err := sel.IndexKVEvents(&got)
			if c.wantErr != "" {
				assert.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestTopicIsWhatTheIndexKeysEndpointsBy: host:port of the pool's endpoint between the filter and
// the model, as llm-d's guide writes kv@$(POD_IP):$(POD_PORT)@<model>.
func TestTopicIsWhatTheIndexKeysEndpointsBy(t *testing.T) {
	kv := KVEvents{Model: "Qwen/Qwen3-8B", TopicFilter: "kv@"}
	assert.Equal(t, "kv@$(POD_IP):8001@Qwen/Qwen3-8B", kv.Topic("$(POD_IP)", 8001))
}
