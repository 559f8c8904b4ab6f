// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/dashboards"
)

const (
	namespace = "metrics"
	model     = "Qwen/Qwen3-8B"
	// slowServer makes requests wait (llm-d-inference-sim's flags, pkg/common/parser.go): one runs
	// at a time (max-num-seqs), each takes 1 s to its first token and 50 ms a further token; the
	// others are counted in vllm:num_requests_waiting.
	slowServer = "--max-num-seqs=1 --time-to-first-token=1s --inter-token-latency=50ms"
)

var podMonitors = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}

// serverWithoutPorts is a vLLM pod template that declares no port: the render declares the
// serving port it scrapes and routes to (core/render serverpod.go serveOnDeclaredPort). Its
// annotations tell the suite how its simulated server behaves.
func serverWithoutPorts(image string, annotations pulumi.StringMap) k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{
		Metadata: &k8smetav1.ObjectMetaArgs{Annotations: annotations},
		Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
			Name: pulumi.String("vllm"), Image: pulumi.String(image),
			Args:      pulumi.ToStringArray([]string{"--model", model, "--max-model-len", "8192"}),
			Resources: &k8scorev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")}},
		}}},
	}
}

// TestLoadThroughTheRouterScalesTheRole: a service whose server template declares no port, with
// a router, PodMonitors and a role autoscaled on waiting requests (base 1, at most 2, 2 waiting a
// replica). Prometheus scrapes both PodMonitors' pods; load through the router makes requests
// wait; KEDA reads the scraped series and adds the elastic replica, which becomes Ready; when the
// load stops it goes again.
func TestLoadThroughTheRouterScalesTheRole(t *testing.T) {
	harness.EnsureNamespace(t, namespace)
	harness.AddGPUNodes(t, "metrics", 2)
	s := harness.NewStack(t, harness.ComponentProgram("chat", func() *inferenceservice.Args {
		return &inferenceservice.Args{Namespace: namespace,
			Monitoring: &api.Monitoring{PodMonitors: true, Dashboard: true, PrometheusAddress: harness.Cluster.PrometheusURL},
			Roles: []inferenceservice.RoleArgs{{
				Name: "server", ComponentType: api.ComponentTypeWorker, Replicas: ptr.To(1), Template: serverWithoutPorts("vllm/vllm-openai:v0.33.0", pulumi.StringMap{testcluster.ModelServerArgsAnnotation: pulumi.String(slowServer)}),
				Autoscaling: &api.Autoscaling{MinReplicas: ptr.To(1), MaxReplicas: 2, Metric: api.MetricRequestsWaiting, Target: 2, ScaleDownDelay: "30s"},
			}, {
				Name: "router", ComponentType: api.ComponentTypeRouter,
				EndpointPicker: &api.EndpointPicker{Release: api.EPPReleaseGIE150},
				HTTPRoute:      map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}},
			}}}
	}))
	s.Up()
	t.Cleanup(s.Destroy)

	// The picker's metrics token: kube-controller-manager's token controller fills the Secret.
	tokenName := api.EndpointPickerMetricsTokenName("chat")
	var token string
	waitFor(t, "the picker's metrics token Secret holds a token", time.Minute, func() error {
		secret, err := harness.Cluster.Clientset.CoreV1().Secrets(namespace).Get(context.Background(), tokenName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if token = string(secret.Data["token"]); token == "" {
			return fmt.Errorf("%s has no token yet", tokenName)
		}
		return nil
	})

	// Both PodMonitors have their pod as a target, scraped up: the server on the port the render
	// declared, the Endpoint Picker on its metrics port.
	serverPool := fmt.Sprintf("podMonitor/%s/%s/0", namespace, api.PodMonitorName("chat", "server"))
	eppPool := fmt.Sprintf("podMonitor/%s/%s/0", namespace, api.PodMonitorName("chat", "router"))
	harness.ScrapedPrometheus(t, serverPool, eppPool)
	pools := map[string][]harness.ScrapeTarget{}
	for _, target := range harness.ScrapeTargets(t) {
		pools[target.ScrapePool] = append(pools[target.ScrapePool], target)
	}
	server := pools[serverPool]
	require.Len(t, server, 1, "the server's PodMonitor has the base replica's pod as its one target: %v", pools)
	assert.Equal(t, "chat-server-0-0", server[0].Labels["pod"])
	assert.Equal(t, map[string]string{"service": "chat", "role": "server", "replica": "0"},
		map[string]string{"service": server[0].Labels["service"], "role": server[0].Labels["role"], "replica": server[0].Labels["replica"]},
		"the PodMonitor's relabelings name the service, role and replica")
	epp := pools[eppPool]
	require.Len(t, epp, 1, "the router's PodMonitor has the Endpoint Picker as its one target: %v", pools)
	// The picker reviews who reads its metrics (--metrics-endpoint-auth on): Prometheus, scraping
	// with the token its PodMonitor names, is let in (the target is up, above); without a token,
	// or with one of an account not granted /metrics, a reader is refused.
	assert.Equal(t, http.StatusOK, metricsStatus(t, epp[0].ScrapeURL, token), "with the PodMonitor's token")
	assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, metricsStatus(t, epp[0].ScrapeURL, ""),
		"without a token the picker refuses its metrics")
	assert.Equal(t, http.StatusForbidden, metricsStatus(t, epp[0].ScrapeURL, unprivilegedToken(t)),
		"an account not granted /metrics is refused")
	require.NotEmpty(t, harness.PromQuery(t, `vllm:num_requests_waiting{namespace="metrics",pod="chat-server-0-0"}`),
		"the server's vLLM metrics are scraped")

	// A PodMonitor on a port the pod does not declare has no target: Prometheus' pod discovery
	// makes one a declared port (what the render's declared port is for). Its discovery sees the
	// server's pod, and its relabeling drops it: the pool is configured and has looked.
	undeclared := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
		"metadata": map[string]any{"name": "undeclared-port", "namespace": namespace},
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": map[string]any{render.LabelService: "chat", render.LabelRoleName: "server"}},
			"podMetricsEndpoints": []any{map[string]any{"portNumber": int64(8999), "path": "/metrics"}},
		},
	}}
	_, err := harness.Cluster.Dynamic.Resource(podMonitors).Namespace(namespace).Create(context.Background(), undeclared, metav1.CreateOptions{})
	require.NoError(t, err)
	harness.ScrapedPrometheus(t, serverPool, eppPool)
	undeclaredPool := fmt.Sprintf("podMonitor/%s/undeclared-port/0", namespace)
	require.Eventually(t, func() bool {
		for _, target := range harness.DroppedTargets(t) {
			if target.ScrapePool == undeclaredPool && target.DiscoveredLabels["__meta_kubernetes_pod_name"] == "chat-server-0-0" {
				return true
			}
		}
		return false
	}, time.Minute, time.Second, "the PodMonitor on an undeclared port discovers the server's pod and drops it")
	for _, target := range harness.ScrapeTargets(t) {
		assert.NotEqual(t, undeclaredPool, target.ScrapePool, "a target on an undeclared port: %+v", target)
	}
	require.NoError(t, harness.Cluster.Dynamic.Resource(podMonitors).Namespace(namespace).Delete(context.Background(), "undeclared-port", metav1.DeleteOptions{}))

	gw, err := gateway.Start(context.Background(), harness.Cluster.Clientset, harness.Cluster.Dynamic,
		gateway.Options{Namespace: namespace, Pool: api.PoolName("chat")})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	require.Eventually(t, func() bool { return complete(gw.URL, 2) == nil }, 90*time.Second, 500*time.Millisecond,
		"a request through the gateway is served")
	waitFor(t, "KEDA's ScaledObject is Ready", 2*time.Minute, func() error { return scaledObjectReady(namespace, api.ElasticLeaderWorkerSetName("chat", "server")) })

	// Load: 8 clients, each sending a 20-token completion after the other, through the router.
	// One runs on the server at a time, so about 7 wait: at 2 a replica, 1 elastic replica (the most).
	start := time.Now()
	stop := sendLoad(gw.URL, 8, 20)
	waitFor(t, "the scraped vllm:num_requests_waiting rises", time.Minute, func() error {
		for _, v := range harness.PromQuery(t, `sum(vllm:num_requests_waiting{namespace="metrics"})`) {
			if v >= 3 {
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	waitFor(t, "KEDA adds the elastic replica and it becomes Ready", 4*time.Minute, func() error {
		return elasticReplicasReady(t, 1)
	})
	toReady := time.Since(start)
	testcluster.Progress("the elastic replica was Ready %s after the load started", toReady.Round(time.Second))
	// The new replica is scraped too (the PodMonitor selects it), and serves through the router.
	scrapedAgain := func() error {
		require.NoError(t, harness.Cluster.ScrapePodMonitors(context.Background()))
		if len(harness.PromQuery(t, `up{namespace="metrics",pod=~"chat-server-elastic-.*"} == 1`)) == 0 {
			return fmt.Errorf("the elastic replica's pod is not scraped up")
		}
		return nil
	}
	waitFor(t, "the elastic replica is scraped", time.Minute, scrapedAgain)
	// The Endpoint Picker's own series, scraped from its metrics port, count it in the pool.
	waitFor(t, "the scraped Endpoint Picker counts 2 ready pods in its pool", time.Minute, func() error {
		got := harness.PromQuery(t, `inference_pool_ready_pods{namespace="metrics",role="router"}`)
		for _, v := range got {
			if v == 2 {
				return nil
			}
		}
		return fmt.Errorf("inference_pool_ready_pods: %v", got)
	})
	// Every panel of the deployed dashboard answers from what Prometheus scraped under load.
	boards := deployedDashboards(t)
	require.NoError(t, harness.Cluster.ScrapePodMonitors(context.Background()))
	dashboards.PanelsAnswer(t, harness.Cluster.PrometheusURL, boards)
	if os.Getenv("FUSIONINFER_WRITE_PICTURE") == "1" {
		// Two more minutes of load, so the picture's rates and quantiles have a window to show.
		time.Sleep(2 * time.Minute)
		writePicture(t, boards[0], start.Add(-time.Minute), time.Now())
	}
	failed := stop()
	assert.Empty(t, failed, "every request of the load was served")

	stopped := time.Now()
	waitFor(t, "the elastic replica goes once the load stopped", 4*time.Minute, func() error { return elasticReplicasReady(t, 0) })
	toGone := time.Since(stopped)
	testcluster.Progress("the elastic replica went %s after the load stopped", toGone.Round(time.Second))
	t.Logf("figures: load start -> elastic replica Ready %s; load stop -> elastic replica gone %s",
		toReady.Round(time.Second), toGone.Round(time.Second))
}

// complete sends one completion through the gateway.
func complete(url string, maxTokens int) error {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": "Tell me about the weather.", "max_tokens": maxTokens})
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(out.String()))
	}
	return nil
}

// sendLoad keeps clients sending completions one after the other until the returned function is
// called, which waits for those under way and returns the failures.
func sendLoad(url string, clients, maxTokens int) func() []string {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := complete(url, maxTokens); err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	return func() []string { close(done); wg.Wait(); return failed }
}

func waitFor(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	var mu sync.Mutex
	var last error
	if !assert.Eventually(t, func() bool {
		err := check()
		mu.Lock()
		defer mu.Unlock()
		last = err
		return err == nil
	}, timeout, time.Second, what) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s: %v", what, last) // the last check's error (Eventually's message is formatted before it runs)
	}
	testcluster.Progress("%s", what)
}

var scaledObjects = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

func scaledObjectReady(namespace, name string) error {
	so, err := harness.Cluster.Dynamic.Resource(scaledObjects).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ok, why, _ := harness.HasCondition(so, "Ready", "True"); !ok {
		return fmt.Errorf("%s", why)
	}
	return nil
}

// elasticReplicasReady: the elastic LWS asks for want replicas and has want Ready pods, no other.
func elasticReplicasReady(t *testing.T, want int) error {
	name := api.ElasticLeaderWorkerSetName("chat", "server")
	lws, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	replicas, _, _ := unstructured.NestedInt64(lws.Object, "spec", "replicas")
	pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + name})
	if err != nil {
		return err
	}
	ready := 0
	for _, pod := range pods.Items {
		if rolestatus.PodReady(&pod) && pod.DeletionTimestamp == nil {
			ready++
		}
	}
	if replicas != int64(want) || ready != want || len(pods.Items) != want {
		return fmt.Errorf("%s: %d replicas, %d pods, %d Ready", name, replicas, len(pods.Items), ready)
	}
	return nil
}

// deployedDashboards are the dashboards of the deployed service, read back from its ConfigMap
// (the one the Grafana sidecar loads).
func deployedDashboards(t *testing.T) []string {
	t.Helper()
	cm, err := harness.Cluster.Clientset.CoreV1().ConfigMaps(namespace).Get(context.Background(), api.DashboardName("chat"), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "1", cm.Labels[render.GrafanaDashboardLabel])
	var out []string
	for _, v := range cm.Data {
		out = append(out, v)
	}
	require.NotEmpty(t, out)
	return out
}

// writePicture draws the dashboard from Prometheus' range queries over the load into
// docs/images/monitoring.png (make monitoring-picture).
func writePicture(t *testing.T, board string, from, to time.Time) {
	t.Helper()
	png, err := dashboards.Picture(context.Background(), harness.Cluster.PrometheusURL, board, from, to, 5*time.Second)
	require.NoError(t, err)
	out := filepath.Join("..", "..", "..", "docs", "images", "monitoring.png")
	require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
	require.NoError(t, os.WriteFile(out, png, 0o644))
	t.Logf("wrote %s (%d bytes)", out, len(png))
}

// metricsStatus is the status of a GET of url with token as bearer (none if empty).
func metricsStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

// unprivilegedToken is a token (TokenRequest) of a ServiceAccount "reader" of the namespace: an
// account the API server authenticates that no role grants /metrics.
func unprivilegedToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	accounts := harness.Cluster.Clientset.CoreV1().ServiceAccounts(namespace)
	if _, err := accounts.Get(ctx, "reader", metav1.GetOptions{}); err != nil {
		_, err = accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	tr, err := accounts.CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}
