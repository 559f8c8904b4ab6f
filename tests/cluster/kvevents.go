// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	zmq4 "github.com/go-zeromq/zmq4"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// A vLLM server's KV-cache events, as the picker's precise-prefix-cache producer receives them.
//
// llm-d-inference-sim v0.10.2 produces vLLM's events (blocks stored and removed, msgpack batches
// of vLLM's layout: pkg/kv-cache/kv_cache_sender.go) but publishes them differently: it dials its
// --zmq-endpoint (pkg/common/publisher.go NewPublisher) and names its topic kv@<ip>@<model>
// (pkg/kv-cache/block_cache.go CreateKVEventsTopic). So beside each simulator that a vLLM command
// line with --kv-events-config stands for, the suite runs kvEventsPublisher, which stands for
// vLLM's publisher (vllm/distributed/kv_events.py ZmqEventPublisher): it binds the configured
// endpoint's port, offset by the server's data parallel rank (offset_endpoint_port), and sends
// each of the simulator's batches under the configured topic, with the simulator's sequence number
// and payload as they are (ZmqEventPublisher._publisher_thread sends topic, seq, payload).

// kvEventsConfig is vLLM's --kv-events-config (vllm/config/kv_events.py KVEventsConfig), read as
// vLLM reads it: kept apart from core/render's on purpose, so that a field the render misnames is
// one this stand-in does not find either.
type kvEventsConfig struct {
	EnableKVCacheEvents bool   `json:"enable_kv_cache_events"`
	Publisher           string `json:"publisher"`
	Endpoint            string `json:"endpoint"`
	Topic               string `json:"topic"`
}

// kvEventsPublisher relays a simulator's events to where vLLM would publish them.
type kvEventsPublisher struct {
	// port is the container port vLLM binds (the endpoint's, offset by the rank); topic is the
	// configured one.
	port  int32
	topic string
	// from is the port the simulator publishes to (it dials it), and to the loopback port of port.
	from, to int
	cancel   context.CancelFunc
	sockets  []zmq4.Socket
}

// kvEventsOf reads a server's --kv-events-config (nil without one, or with events off): the port
// it binds, per kv_events.py: tcp://*:PORT, plus the data parallel rank (offset_endpoint_port
// leaves rank 0's as it is and adds the rank to any other's).
func kvEventsOf(words []string, rank int) (*kvEventsPublisher, error) {
	text, found := vllm.FlagValue(words, vllm.FlagKVEventsConfig.Name)
	if !found {
		return nil, nil
	}
	var config kvEventsConfig
	if err := json.Unmarshal([]byte(text), &config); err != nil {
		return nil, fmt.Errorf("vLLM's %s %q: %w", vllm.FlagKVEventsConfig.Name, text, err)
	}
	if !config.EnableKVCacheEvents {
		return nil, nil
	}
	if config.Publisher != "zmq" {
		return nil, fmt.Errorf("vLLM's %s: publisher %q: the suite runs vLLM's zmq publisher only", vllm.FlagKVEventsConfig.Name, config.Publisher)
	}
	endpoint, err := url.Parse(config.Endpoint)
	if err != nil || endpoint.Scheme != "tcp" || endpoint.Hostname() != "*" {
		return nil, fmt.Errorf("vLLM's %s: endpoint %q: the suite runs a server that binds tcp://*:PORT", vllm.FlagKVEventsConfig.Name, config.Endpoint)
	}
	port, err := strconv.Atoi(endpoint.Port())
	if err != nil {
		return nil, fmt.Errorf("vLLM's %s: endpoint %q has no port", vllm.FlagKVEventsConfig.Name, config.Endpoint)
	}
	if rank > 0 {
		port += rank
	}
	return &kvEventsPublisher{port: int32(port), topic: config.Topic}, nil
}

// simulatorEndpoint is where the simulator publishes: its --zmq-endpoint.
func (p *kvEventsPublisher) simulatorEndpoint() string {
	return fmt.Sprintf("tcp://127.0.0.1:%d", p.from)
}

// start binds the publisher's sockets, to (the container port's loopback port, which the pod's
// address forwards to) and from (which the simulator dials), and relays until stop.
func (p *kvEventsPublisher) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	pub, sub := zmq4.NewPub(ctx), zmq4.NewSub(ctx)
	p.sockets = []zmq4.Socket{pub, sub}
	if err := pub.Listen(fmt.Sprintf("tcp://127.0.0.1:%d", p.to)); err != nil {
		p.stop()
		return fmt.Errorf("the KV-cache events' port %d: %w", p.port, err)
	}
	if err := sub.Listen(p.simulatorEndpoint()); err != nil {
		p.stop()
		return fmt.Errorf("the simulator's KV-cache events: %w", err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		p.stop()
		return err
	}
	go func() {
		for {
			msg, err := sub.Recv()
			if err != nil {
				return // stopped
			}
			if len(msg.Frames) != 3 || !strings.HasPrefix(string(msg.Frames[0]), "kv@") {
				continue
			}
			_ = pub.Send(zmq4.NewMsgFrom([]byte(p.topic), msg.Frames[1], msg.Frames[2]))
		}
	}()
	return nil
}

// stop closes the publisher's sockets.
func (p *kvEventsPublisher) stop() {
	if p == nil || p.cancel == nil {
		return
	}
	p.cancel()
	for _, s := range p.sockets {
		_ = s.Close()
	}
}
