// SPDX-License-Identifier: Apache-2.0

package observe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/promtest"
)

// TestLoadFromPrometheus: the three gauges of the service's servers, selected by namespace and
// service, from Prometheus' own PromQL engine over series as a PodMonitor labels them; another
// service's and another namespace's are left out; a Prometheus that does not answer is said so.
func TestLoadFromPrometheus(t *testing.T) {
	prom := promtest.New(t)
	now := time.Now()
	set := func(metric, namespace, service, pod string, v float64) {
		prom.Append(t, map[string]string{"__name__": metric, "namespace": namespace, render.MetricLabelService: service, "pod": pod,
			"instance": pod + ":8000", "model_name": "m"}, now, v)
	}
	set("vllm:num_requests_running", "llm", "llama", "llama-server-0-0", 2)
	set("vllm:num_requests_waiting", "llm", "llama", "llama-server-0-0", 7)
	set("vllm:kv_cache_usage_perc", "llm", "llama", "llama-server-0-0", 0.5)
	set("vllm:num_requests_running", "llm", "other", "other-server-0-0", 9)
	set("vllm:num_requests_running", "elsewhere", "llama", "llama-server-0-0", 9)

	got := PrometheusMetrics(context.Background(), http.DefaultClient, prom.URL, "llm", "llama")
	assert.Equal(t, &diagnosis.Metrics{Source: "Prometheus at " + prom.URL, Pods: map[string]diagnosis.PodMetrics{
		"llama-server-0-0": {Servers: []diagnosis.ServerLoad{{RequestsRunning: 2, RequestsWaiting: 7, KVCacheUsage: 0.5}}},
	}}, got)
	assert.Contains(t, prom.Queries(), `vllm:num_requests_waiting{namespace="llm",service="llama"}`)

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	got = PrometheusMetrics(context.Background(), http.DefaultClient, gone.URL, "llm", "llama")
	assert.Contains(t, got.Err, "the Prometheus at "+gone.URL+" did not answer")

	notProm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>login</html>")) }))
	defer notProm.Close()
	got = PrometheusMetrics(context.Background(), http.DefaultClient, notProm.URL, "llm", "llama")
	assert.Contains(t, got.Err, "is not Prometheus' API (HTTP 200): <html>login</html>")
}

// TestLoadFromThePodsThroughTheAPIServer: without a Prometheus, each server pod's /metrics is
// read through the API server's pod proxy (GET /api/v1/namespaces/NS/pods/POD:PORT/proxy/metrics)
// and parsed; a pod whose proxy fails is said so, and the others still read.
func TestLoadFromThePodsThroughTheAPIServer(t *testing.T) {
	busy, err := os.ReadFile("../../core/diagnosis/testdata/metrics/inference-sim-busy.txt")
	require.NoError(t, err)
	var mu sync.Mutex
	var paths []string
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/api/v1/namespaces/llm/pods/llama-server-0-0:8000/proxy/metrics" {
			_, _ = w.Write(busy)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "llama-server-2-0") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"llama-server-2-0:8000\" is forbidden: User \"viewer\" cannot get resource \"pods/proxy\" in API group \"\" in the namespace \"llm\"","reason":"Forbidden","code":403}`))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"error trying to reach service: dial tcp 10.0.0.2:8000: connect: connection refused","reason":"ServiceUnavailable","code":503}`))
	}))
	defer apiServer.Close()
	core, err := coreClient(&rest.Config{Host: apiServer.URL})
	require.NoError(t, err)
	c := &Clients{core: core}

	leader := func(name, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Labels: map[string]string{
			render.LabelService: "llama", render.LabelRoleName: "server", "leaderworkerset.sigs.k8s.io/worker-index": "0"}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	o := &diagnosis.Observed{Pods: []corev1.Pod{leader("llama-server-0-0", "10.0.0.1"), leader("llama-server-1-0", "10.0.0.2"), leader("llama-server-2-0", "10.0.0.3")}}
	c.ServerMetrics(context.Background(), o, nil)
	assert.Equal(t, &diagnosis.Metrics{Source: PodsMetricsSource, Pods: map[string]diagnosis.PodMetrics{
		"llama-server-0-0": {Servers: []diagnosis.ServerLoad{{RequestsRunning: 2, RequestsWaiting: 3, KVCacheUsage: 0.0625}}},
		"llama-server-1-0": {Err: "GET /metrics on port 8000 through the API server: error trying to reach service: dial tcp 10.0.0.2:8000: connect: connection refused"},
		"llama-server-2-0": {Err: `GET /metrics on port 8000 through the API server: forbidden: pods "llama-server-2-0:8000" is forbidden: User "viewer" cannot get resource "pods/proxy" in API group "" in the namespace "llm" (kubectl auth can-i get pods/proxy -n llm)`},
	}}, o.Metrics)
	assert.Len(t, paths, 3)
}
