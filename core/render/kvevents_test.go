// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// precise is a story with its router on strategy precise-prefix-cache.
func precise(t *testing.T, file string) *render.Tree {
	t.Helper()
	svc := story(t, file).Service
	svc.Spec.Router().Strategy = eppconfig.StrategyPrecisePrefixCache
	return build(t, svc)
}

// argValue is the word after a flag in an argv of "[word]" lines (runRanks').
func argValue(argv, flag string) string {
	_, after, _ := strings.Cut(argv, "["+flag+"]\n[")
	value, _, _ := strings.Cut(after, "]\n")
	return value
}

// vllmBinds is the port vLLM binds for a --kv-events-config endpoint in a server of a global data
// parallel rank: its port plus the rank (vllm/distributed/kv_events.py
// ZmqEventPublisher.offset_endpoint_port, which the scheduler calls with its data parallel rank).
func vllmBinds(t *testing.T, endpoint string, rank int) int {
	t.Helper()
	port, err := strconv.Atoi(endpoint[strings.LastIndex(endpoint, ":")+1:])
	require.NoError(t, err, endpoint)
	return port + rank
}

// TestEveryRankPublishesWhereThePickerDials: in every pod of a wide-EP replica (16 ranks over two
// pods, decode behind the routing sidecar), each rank's server, run by the rendered script in a
// real shell, binds its events socket at the picker's socketPort + its local rank, the port the
// picker dials for that endpoint of the pool, and names the endpoint the pool knows it by (its
// address and the pool's port of the rank, not the port a decode rank moved to) and the model.
func TestEveryRankPublishesWhereThePickerDials(t *testing.T) {
	tree := precise(t, wideEP)
	for _, lws := range leaderWorkerSets(tree) {
		for worker, tpl := range podTemplates(lws) {
			server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
			for i := range 8 {
				assert.Contains(t, server.Ports, corev1.ContainerPort{Name: api.KVEventsPortName(i), ContainerPort: int32(5557 + i), Protocol: corev1.ProtocolTCP})
			}
			ranks := runRanks(t, 8, server.Args[len(server.Args)-1], "LWS_WORKER_INDEX="+strconv.Itoa(worker), "LWS_LEADER_ADDRESS=r-0.r.llm", "POD_IP=10.1.2.3")
			for _, argv := range ranks {
				var config struct {
					Enable    bool   `json:"enable_kv_cache_events"`
					Publisher string `json:"publisher"`
					Endpoint  string `json:"endpoint"`
					Topic     string `json:"topic"`
				}
				require.NoError(t, json.Unmarshal([]byte(argValue(argv, "--kv-events-config")), &config), argv)
				global, err := strconv.Atoi(argValue(argv, "--data-parallel-rank"))
				require.NoError(t, err)
				local := global - 8*worker
				assert.Equal(t, 5557+local, vllmBinds(t, config.Endpoint, global), "%s pod %d rank %d", lws.Name, worker, local)
				assert.Equal(t, fmt.Sprintf("kv@10.1.2.3:%d@deepseek-ai/DeepSeek-R1", 8000+local), config.Topic)
				assert.True(t, config.Enable)
				assert.Equal(t, "zmq", config.Publisher)
				assert.Equal(t, "64", argValue(argv, "--block-size"))
			}
		}
	}
}

// TestADecodeServerNamesThePoolsEndpoint: one rank a pod, the decode server moved behind the
// routing sidecar still names the endpoint the pool has, the sidecar's port, and binds the
// picker's socket port; every server has the agreed seed and its address.
func TestADecodeServerNamesThePoolsEndpoint(t *testing.T) {
	tree := precise(t, "qwen-pd-router.yaml")
	for _, lws := range leaderWorkerSets(tree) {
		tpl := podTemplates(lws)[0]
		server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
		value := ""
		for i, w := range server.Args {
			if w == "--kv-events-config" {
				value = server.Args[i+1]
			}
		}
		require.NotEmpty(t, value, lws.Name)
		assert.Contains(t, value, `"endpoint":"tcp://*:5557"`)
		assert.Contains(t, value, `"topic":"kv@$(POD_IP):8000@`, "%s: the pool's port", lws.Name)
		assert.Contains(t, server.Env, corev1.EnvVar{Name: api.PythonHashSeedVariable, Value: eppconfig.DefaultKVHashSeed})
		assert.Contains(t, server.Env, corev1.EnvVar{Name: api.PodIPVariable,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	}
}

// TestTheTokenizerIsNoServerOfThePool: the tokenizer serves the servers' model on CPU, sized as
// llm-d's render pool by default, and neither the pool, the picker's Service nor anything that
// selects the servers selects its pods (the picker would subscribe to events they never publish).
func TestTheTokenizerIsNoServerOfThePool(t *testing.T) {
	tree := precise(t, "qwen-pd-router.yaml")
	tokenizer := objectOf[*appsv1.Deployment](t, tree, "qwen3-32b-pd-tokenizer")
	assert.Equal(t, int32(3), *tokenizer.Spec.Replicas)
	c := tokenizer.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"vllm", "launch", "render"}, c.Command)
	assert.Equal(t, render.TokenizerImage, c.Image)
	assert.Equal(t, resource.MustParse("1"), c.Resources.Requests[corev1.ResourceCPU])
	assert.Equal(t, resource.MustParse("4Gi"), c.Resources.Requests[corev1.ResourceMemory])
	assert.NotContains(t, c.Resources.Limits, api.GPUResourceName)
	podLabels := labels.Set(tokenizer.Spec.Template.Labels)
	assert.False(t, render.InPool(podLabels), "not in the pool")
	picker := objectOf[*corev1.Service](t, tree, api.EndpointPickerName("qwen3-32b-pd"))
	assert.False(t, labels.SelectorFromSet(picker.Spec.Selector).Matches(podLabels), "not the picker's")
	service := objectOf[*corev1.Service](t, tree, "qwen3-32b-pd-tokenizer")
	assert.True(t, labels.SelectorFromSet(service.Spec.Selector).Matches(podLabels))
	for _, lws := range leaderWorkerSets(tree) {
		assert.False(t, labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(podTemplates(lws)[0].Labels)), "no server is the tokenizer's")
	}
}
