// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// The scale-to-zero service: one worker role at no replica while idle, at most one, on the
// Endpoint Picker's requests (the default behind a router), on a Karpenter pool of 4-GPU kwok
// nodes; GIE v1.5.0's picker behind the standalone router's proxy.
const (
	zeroNamespace = "scale-to-zero"
	zeroService   = "idle"
	// modelLoad is how long a woken server takes to listen: vLLM listens once its model is loaded.
	modelLoad = 20 * time.Second
)

// zeroSample is the run at one instant, for docs/autoscaling.md's picture.
type zeroSample struct {
	at                     time.Duration
	replicas, ready, nodes int
	queued                 float64
}

// TestAnIdleRoleCostsNoGPUAndARequestWakesIt (issue 57): the role starts with no pod and its pool
// with no node. Requests sent through the router's Service are held by the picker's flow control;
// KEDA reads the picker's queued requests from the real Prometheus and wakes the role, Karpenter
// launches a node, the model loads (20 s), and every request is answered 200. With no request for
// the scale-down delay the role goes back to none, and Karpenter removes the node.
func TestAnIdleRoleCostsNoGPUAndARequestWakesIt(t *testing.T) {
	harness.EnsureNamespace(t, zeroNamespace)
	harness.AddNodes(t, testcluster.Nodes{Prefix: "zero-cpu", Count: 1}) // where the picker runs
	kwok := &api.NodeClassRef{Group: testcluster.KWOKNodeClass.Group, Kind: testcluster.KWOKNodeClass.Kind, Name: testcluster.KWOKNodeClass.Name}
	image := "vllm/vllm-openai:v0.33.0"
	router := inferenceservice.RoleArgs{Name: "router", ComponentType: api.ComponentTypeRouter, EndpointPicker: &api.EndpointPicker{Release: api.EPPReleaseGIE150}}
	s := harness.NewStack(t, harness.ComponentProgram(zeroService, func() *inferenceservice.Args {
		server := serverWithoutPorts(image, pulumi.StringMap{testcluster.ListenAfterAnnotation: pulumi.String(modelLoad.String())})
		return &inferenceservice.Args{Namespace: zeroNamespace,
			Monitoring: &api.Monitoring{PodMonitors: true, PrometheusAddress: harness.Cluster.PrometheusURL},
			NodePools: []api.NodePool{{Name: "l4", GPUsPerNode: 4, InstanceTypes: []string{"gpu-4x-l4"}, NodeClassRef: kwok,
				ConsolidateAfter: "10s"}},
			Roles: []inferenceservice.RoleArgs{{
				Name: "server", ComponentType: api.ComponentTypeWorker, NodePool: "l4", Template: server,
				Autoscaling: &api.Autoscaling{MinReplicas: ptr.To(0), MaxReplicas: 1, Target: 4, ScaleDownDelay: "30s", WakeTimeout: "3m"},
			}, router}}
	}))
	s.Up()
	t.Cleanup(s.Destroy)
	elastic := api.ElasticLeaderWorkerSetName(zeroService, "server")
	pool := api.KarpenterNodePoolName(zeroService, "l4")
	require.NoError(t, zeroState(elastic, pool, 0), "deployed idle: no server pod, no GPU node")
	assertStatusAtZero(t, "no request has woken it yet")

	eppPool := fmt.Sprintf("podMonitor/%s/%s/0", zeroNamespace, api.PodMonitorName(zeroService, "router"))
	harness.ScrapedPrometheus(t, eppPool)
	waitFor(t, "KEDA's ScaledObject is Ready", 2*time.Minute, func() error { return scaledObjectReady(zeroNamespace, elastic) })
	var door string
	waitFor(t, "the router's Service has a Ready door", time.Minute, func() error {
		slices, err := harness.Cluster.Clientset.DiscoveryV1().EndpointSlices(zeroNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		doors := gateway.ReadyEndpoints(gateway.Pointers(slices.Items), zeroNamespace, api.RouterServiceName(zeroService), "http")
		if len(doors) == 0 {
			return fmt.Errorf("none yet")
		}
		door = doors[0]
		return nil
	})

	// The run, sampled every second.
	start := time.Now()
	var mu sync.Mutex
	var samples []zeroSample
	sampling, stopSampling := context.WithCancel(context.Background())
	t.Cleanup(stopSampling)
	go func() {
		for sampling.Err() == nil {
			replicas, ready, nodes := zeroCounts(elastic, pool)
			queued := 0.0
			for _, v := range harness.PromQuery(t, fmt.Sprintf(`sum(inference_extension_flow_control_queue_size{namespace=%q})`, zeroNamespace)) {
				queued = v
			}
			mu.Lock()
			samples = append(samples, zeroSample{at: time.Since(start), replicas: replicas, ready: ready, nodes: nodes, queued: queued})
			mu.Unlock()
			time.Sleep(time.Second)
		}
	}()

	// Four clients send one streamed completion each at zero, a second apart.
	type answer struct {
		status     int
		firstToken time.Duration
		err        error
	}
	answers := make([]answer, 4)
	var clients sync.WaitGroup
	for i := range answers {
		clients.Go(func() {
			time.Sleep(time.Duration(i) * time.Second)
			sent := time.Now()
			status, first, err := streamedCompletion("http://"+door, fmt.Sprintf("Request %d: wake up.", i))
			answers[i] = answer{status: status, err: err}
			if err == nil {
				answers[i].firstToken = first.Sub(sent)
			}
		})
	}
	clients.Wait()
	firstToken := answers[0].firstToken
	for i, a := range answers {
		require.NoError(t, a.err, "request %d", i)
		assert.Equal(t, http.StatusOK, a.status, "request %d is answered, not dropped", i)
	}
	testcluster.Progress("the first request's first token came %s after it was sent, from zero", firstToken.Round(time.Second))
	require.NoError(t, zeroState(elastic, pool, 1), "woken: one replica on one node of the pool")
	assert.GreaterOrEqual(t, firstToken, modelLoad, "the request waited for the model to load, it was not answered before a server was up")
	mu.Lock()
	peakQueued := 0.0
	for _, sm := range samples {
		peakQueued = max(peakQueued, sm.queued)
	}
	mu.Unlock()
	assert.GreaterOrEqual(t, peakQueued, 1.0, "the scraped picker held requests in its queue while the role was at zero")

	// Idle again: after the scale-down delay (KEDA's cooldown) the role goes to none, and
	// Karpenter removes its empty node after consolidateAfter.
	idle := time.Now()
	waitFor(t, "the role and its node go back to zero", 4*time.Minute, func() error { return zeroState(elastic, pool, 0) })
	backToZero := time.Since(idle)
	stopSampling()
	testcluster.Progress("back to zero %s after the last answer", backToZero.Round(time.Second))
	assertStatusAtZero(t, "idle since ")
	t.Logf("figures: first request -> first token %s (model load %s); %d of %d requests answered 200; last answer -> zero replicas and nodes %s; peak queued %v",
		firstToken.Round(100*time.Millisecond), modelLoad, len(answers), len(answers), backToZero.Round(time.Second), peakQueued)
	mu.Lock()
	defer mu.Unlock()
	var timeline strings.Builder
	last := zeroSample{replicas: -1}
	for _, sm := range samples {
		if sm.replicas != last.replicas || sm.ready != last.ready || sm.nodes != last.nodes || sm.queued != last.queued {
			fmt.Fprintf(&timeline, "  +%3ds  replicas %d  ready %d  nodes %d  queued %v\n", int(sm.at.Seconds()), sm.replicas, sm.ready, sm.nodes, sm.queued)
			last = sm
		}
	}
	t.Logf("the run (changes only):\n%s", timeline.String())

	// A rollout of a role at zero changes nothing that runs: the elastic LWS's template changes,
	// no pod or node comes.
	image = "vllm/vllm-openai:v0.33.1"
	s.Up()
	require.NoError(t, zeroState(elastic, pool, 0), "a new image at zero starts nothing")
	lws, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(zeroNamespace).Get(context.Background(), elastic, metav1.GetOptions{})
	require.NoError(t, err)
	containers, _, _ := unstructured.NestedSlice(lws.Object, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers")
	require.NotEmpty(t, containers)
	assert.Equal(t, image, containers[0].(map[string]any)["image"], "the next replica starts with the new image")

	// Gateway mode: the same role woken through a Gateway's HTTPRoute, whose ext_proc waits for
	// the picker's answer longer than wakeTimeout (docs/autoscaling.md: the Gateway's own setting).
	router.RouterMode, router.HTTPRoute = api.RouterGateway, map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}
	s.Up()
	gw, err := gateway.Start(context.Background(), harness.Cluster.Clientset, harness.Cluster.Dynamic,
		gateway.Options{Namespace: zeroNamespace, Pool: api.PoolName(zeroService), MessageTimeout: 4 * time.Minute})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	require.NoError(t, zeroState(elastic, pool, 0), "still idle")
	sent := time.Now()
	status, first, err := streamedCompletion(gw.URL, "Through the gateway: wake up.")
	require.NoError(t, err, "a request through the gateway at zero")
	assert.Equal(t, http.StatusOK, status)
	testcluster.Progress("through the gateway, the first token came %s after the request, from zero", first.Sub(sent).Round(time.Second))
	require.NoError(t, zeroState(elastic, pool, 1), "woken through the gateway")
}

// assertStatusAtZero: `fusioninfer status` says the service is scaled to zero, why it is idle,
// and exits 0 (a script waiting for it goes on: a request wakes it).
func assertStatusAtZero(t *testing.T, idle string) {
	t.Helper()
	stdout, stderr, code := harness.StatusOf(t, zeroService, zeroNamespace)
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "InferenceService idle (namespace scale-to-zero): scaled to zero\n")
	assert.Contains(t, stdout, "role server: scaled to zero, "+idle)
	assert.NotContains(t, stdout, "NoReadyEndpoint")
}

// streamedCompletion sends a streamed completion and returns its status and when its first
// token came.
func streamedCompletion(url, prompt string) (int, time.Time, error) {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 4, "stream": true})
	client := &http.Client{Timeout: 4 * time.Minute}
	resp, err := client.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, time.Time{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		return resp.StatusCode, time.Time{}, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(out.String()))
	}
	lines := bufio.NewScanner(resp.Body)
	var first time.Time
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "data: ") && first.IsZero() {
			first = time.Now()
		}
	}
	if first.IsZero() {
		return resp.StatusCode, first, fmt.Errorf("no token in the stream: %v", lines.Err())
	}
	return resp.StatusCode, first, lines.Err()
}

// zeroCounts are the elastic LWS's replicas and Ready pods, and the pool's nodes.
func zeroCounts(elastic, pool string) (replicas, ready, nodes int) {
	ctx := context.Background()
	if lws, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(zeroNamespace).Get(ctx, elastic, metav1.GetOptions{}); err == nil {
		n, _, _ := unstructured.NestedInt64(lws.Object, "spec", "replicas")
		replicas = int(n)
	}
	if pods, err := harness.Cluster.Clientset.CoreV1().Pods(zeroNamespace).List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + elastic}); err == nil {
		for _, pod := range pods.Items {
			if rolestatus.PodReady(&pod) && pod.DeletionTimestamp == nil {
				ready++
			}
		}
	}
	if list, err := harness.Cluster.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool}); err == nil {
		nodes = len(list.Items)
	}
	return replicas, ready, nodes
}

// zeroState: the elastic LWS asks for want replicas, has want Ready pods and no other, and the
// pool has want nodes (one replica a node: 1 GPU of 4).
func zeroState(elastic, pool string, want int) error {
	pods, err := harness.Cluster.Clientset.CoreV1().Pods(zeroNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	servers := 0
	for _, pod := range pods.Items {
		if strings.HasPrefix(pod.Name, zeroService+"-server-") {
			servers++
		}
	}
	replicas, ready, nodes := zeroCounts(elastic, pool)
	if replicas != want || ready != want || servers != want || nodes != want {
		return fmt.Errorf("%d replicas, %d server pods (%d Ready), %d nodes of %s; want %d each", replicas, servers, ready, nodes, pool, want)
	}
	return nil
}
