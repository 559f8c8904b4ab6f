// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKVEventsPublisherBindsAsVLLM: the stand-in for vLLM's publisher binds the configured port,
// offset by the server's data parallel rank as vllm/distributed/kv_events.py
// ZmqEventPublisher.offset_endpoint_port offsets it (rank 0 keeps it, rank r adds r), under the
// configured topic; a configuration it cannot stand for is refused rather than run otherwise.
func TestKVEventsPublisherBindsAsVLLM(t *testing.T) {
	config := func(text string) []string { return []string{"vllm", "serve", "m", "--kv-events-config", text} }
	const events = `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5555","topic":"kv@10.0.0.1:8000@m"}`
	for name, tc := range map[string]struct {
		words []string
		rank  int
		port  int32
	}{
		"no rank":  {config(events), noRank, 5555},
		"rank 0":   {config(events), 0, 5555},
		"rank 3":   {config(events), 3, 5558},
		"rank 100": {config(events), 100, 5655},
	} {
		p, err := kvEventsOf(tc.words, tc.rank)
		require.NoError(t, err, name)
		require.NotNil(t, p, name)
		assert.Equal(t, tc.port, p.port, name)
		assert.Equal(t, "kv@10.0.0.1:8000@m", p.topic, name)
	}
	for name, words := range map[string][]string{
		"no flag":    {"vllm", "serve", "m"},
		"events off": config(`{"enable_kv_cache_events":false,"publisher":"zmq","endpoint":"tcp://*:5557"}`),
	} {
		p, err := kvEventsOf(words, 0)
		assert.NoError(t, err, name)
		assert.Nil(t, p, name)
	}
	for name, words := range map[string][]string{
		"not JSON":          config(`{`),
		"another publisher": config(`{"enable_kv_cache_events":true,"publisher":"null","endpoint":"tcp://*:5557"}`),
		"a dialed endpoint": config(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://indexer:5557"}`),
		"ipc":               config(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"ipc:///tmp/kv"}`),
	} {
		_, err := kvEventsOf(words, 0)
		assert.Error(t, err, name)
	}
}
