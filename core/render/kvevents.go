// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// A server's KV-cache events (strategy precise-prefix-cache; api/kvevents.go agrees them with the
// picker). vLLM publishes them on a ZMQ PUB socket it binds (vllm/distributed/kv_events.py
// ZmqEventPublisher), and the picker's precise-prefix-cache-producer dials every endpoint of the
// pool at SocketPort + the endpoint's rank index, its position in the pool's targetPorts
// (llm-d-router v0.10.0 preciseprefixcache/extractor.go ensureSubscriber;
// pkg/epp/datastore/datastore.go podUpdateOrAddIfNotExist: RankIndex).

// kvEventsConfig is vLLM's --kv-events-config (vllm/config/kv_events.py KVEventsConfig).
type kvEventsConfig struct {
	EnableKVCacheEvents bool   `json:"enable_kv_cache_events"`
	Publisher           string `json:"publisher"`
	Endpoint            string `json:"endpoint"`
	Topic               string `json:"topic"`
}

func (c kvEventsConfig) text() string {
	data, _ := json.Marshal(c) // strings and a bool: it cannot fail
	return string(data)
}

// publishKVEvents gives a serving template's server what the picker indexes: the blocks' size
// (--block-size, unless the server gives it: validation made them agree) and hash seed
// (PYTHONHASHSEED), the pod's address for the topic (POD_IP), the events port of each rank
// declared, and, for a server of one rank, its --kv-events-config: it binds SocketPort and names
// itself by the pool's endpoint, $(POD_IP):poolPort (the kubelet expands $(POD_IP) in args). A
// data parallel pod's ranks get theirs in its script (rankKVEvents). A decode server behind the
// routing sidecar names the pool's port, not the one it moved to: the pool's endpoint is the
// sidecar's.
func publishKVEvents(tpl *corev1.PodTemplateSpec, role *api.Role, kv *eppconfig.KVEvents, poolPort int32) {
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	if !slices.ContainsFunc(server.Env, func(v corev1.EnvVar) bool { return v.Name == api.PodIPVariable }) {
		server.Env = append(server.Env, corev1.EnvVar{Name: api.PodIPVariable,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	}
	if kv.HashSeed != "" && !slices.ContainsFunc(server.Env, func(v corev1.EnvVar) bool { return v.Name == api.PythonHashSeedVariable }) {
		server.Env = append(server.Env, corev1.EnvVar{Name: api.PythonHashSeedVariable, Value: kv.HashSeed})
	}
	if !vllm.FlagBlockSize.In(vllm.CommandLine(server)) {
		server.Args = append(server.Args, vllm.FlagBlockSize.Name, strconv.Itoa(kv.BlockSize))
	}
	if !role.DataParallel() {
		server.Args = append(server.Args, vllm.FlagKVEventsConfig.Name, kvEventsConfig{EnableKVCacheEvents: true, Publisher: "zmq",
			Endpoint: fmt.Sprintf("tcp://*:%d", kv.SocketPort), Topic: kv.Topic("$("+api.PodIPVariable+")", poolPort)}.text())
	}
	for i, port := range api.KVEventsPorts(kv, role.LocalRanks()) {
		server.Ports = append(server.Ports, corev1.ContainerPort{Name: api.KVEventsPortName(i), ContainerPort: port, Protocol: corev1.ProtocolTCP})
	}
}

// rankEvents is what a data parallel pod's script needs to give its ranks their events.
type rankEvents struct {
	kv       *eppconfig.KVEvents
	poolPort int32
}

// kvEventsBaseVariable is the script's variable of the port vLLM offsets by the rank.
const kvEventsBaseVariable = "kv_events_base"

// baseLine sets the script's events base: vLLM binds its events endpoint's port plus its global
// data parallel rank (kv_events.py ZmqEventPublisher.offset_endpoint_port, with the scheduler's
// data parallel rank: vllm/v1/core/sched/scheduler.py), which is start + i for local rank i, so
// SocketPort - start puts local rank i on SocketPort + i, where the picker dials it.
func (e *rankEvents) baseLine() string {
	return fmt.Sprintf("%s=$(( %d - start ))", kvEventsBaseVariable, e.kv.SocketPort)
}

// words are local rank i's --kv-events-config, shell words: the endpoint's port and the topic's
// address expanded by the shell (the pod's POD_IP), the rest quoted; the topic names the rank's
// endpoint of the pool, its port poolPort + i.
func (e *rankEvents) words(i int32) string {
	const portMarker, hostMarker = "FUSIONINFERKVEVENTSPORT", "FUSIONINFERPODIP"
	text := kvEventsConfig{EnableKVCacheEvents: true, Publisher: "zmq", Endpoint: "tcp://*:" + portMarker,
		Topic: e.kv.Topic(hostMarker, e.poolPort+i)}.text()
	var quoted strings.Builder
	for j, part := range strings.Split(text, portMarker) {
		if j > 0 {
			quoted.WriteString(`"$` + kvEventsBaseVariable + `"`)
		}
		for k, piece := range strings.Split(part, hostMarker) {
			if k > 0 {
				quoted.WriteString(`"$` + api.PodIPVariable + `"`)
			}
			if piece != "" {
				quoted.WriteString(shellescape.Quote(piece))
			}
		}
	}
	return vllm.FlagKVEventsConfig.Name + " " + quoted.String()
}
