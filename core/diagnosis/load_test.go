// SPDX-License-Identifier: Apache-2.0

package diagnosis_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// The recorded /metrics are llm-d-inference-sim v0.10.2's (the e2e suite's vLLM, serving vLLM's
// names), run with --max-num-seqs 2 --enable-kvcache --kv-cache-size 16 --block-size 8: idle,
// then with five requests sent at once, two running and three waiting.

// TestServerLoadFromMetricsText: the three gauges read from a server's /metrics; a text without
// them, or not Prometheus' format, says what is wrong.
func TestServerLoadFromMetricsText(t *testing.T) {
	cases := []struct {
		name, file, text string
		want             diagnosis.ServerLoad
		err              string
	}{
		{name: "busy: two running, three waiting", file: "inference-sim-busy.txt",
			want: diagnosis.ServerLoad{RequestsRunning: 2, RequestsWaiting: 3, KVCacheUsage: 0.0625}},
		{name: "idle", file: "inference-sim-idle.txt", want: diagnosis.ServerLoad{}},
		{name: "two models' series are summed, the KV cache is their mean", text: `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 1
vllm:num_requests_running{model_name="b"} 4
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="a"} 2
vllm:num_requests_waiting{model_name="b"} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="a"} 0.5
vllm:kv_cache_usage_perc{model_name="b"} 0.25
`, want: diagnosis.ServerLoad{RequestsRunning: 5, RequestsWaiting: 2, KVCacheUsage: 0.375}},
		{name: "an older vLLM's KV-cache gauge is not read", text: `vllm:num_requests_running 1
vllm:num_requests_waiting 0
vllm:gpu_cache_usage_perc 0.5
`, err: "its /metrics has no vllm:kv_cache_usage_perc: not vLLM's server (>= 0.10)"},
		{name: "not a server's metrics (the Endpoint Picker's)", text: "# TYPE inference_pool_ready_pods gauge\ninference_pool_ready_pods{name=\"pool\"} 2\n",
			err: "its /metrics has no vllm:num_requests_running"},
		{name: "not Prometheus' text format", text: "<html>502 Bad Gateway</html>\n", err: "its /metrics is not Prometheus' text format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text
			if tc.file != "" {
				data, err := os.ReadFile("testdata/metrics/" + tc.file)
				require.NoError(t, err)
				text = string(data)
			}
			got, err := diagnosis.ServerLoadFromText(strings.NewReader(text))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestMetricsFromPrometheusSeries: a scrape target (pod and instance) is a server; a pod's ranks
// are its servers; a target that lacks a gauge is said so.
func TestMetricsFromPrometheusSeries(t *testing.T) {
	series := func(metric, pod, instance string, v float64) diagnosis.Series {
		return diagnosis.Series{Metric: metric, Labels: map[string]string{"pod": pod, "instance": instance, "model_name": "m"}, Value: v}
	}
	got := diagnosis.MetricsFromSeries("Prometheus at http://prom:9090", []diagnosis.Series{
		series("vllm:num_requests_running", "a-0", "10.0.0.1:8000", 2), series("vllm:num_requests_waiting", "a-0", "10.0.0.1:8000", 3),
		series("vllm:kv_cache_usage_perc", "a-0", "10.0.0.1:8000", 0.5),
		series("vllm:num_requests_running", "a-0", "10.0.0.1:8001", 1), series("vllm:num_requests_waiting", "a-0", "10.0.0.1:8001", 0),
		series("vllm:kv_cache_usage_perc", "a-0", "10.0.0.1:8001", 0.25),
		series("vllm:num_requests_running", "b-0", "10.0.0.2:8000", 1), series("vllm:num_requests_waiting", "b-0", "10.0.0.2:8000", 0),
		{Metric: "vllm:num_requests_running", Labels: map[string]string{"instance": "elsewhere:8000"}, Value: 9},
	})
	assert.Equal(t, &diagnosis.Metrics{Source: "Prometheus at http://prom:9090", Pods: map[string]diagnosis.PodMetrics{
		"a-0": {Servers: []diagnosis.ServerLoad{{RequestsRunning: 2, RequestsWaiting: 3, KVCacheUsage: 0.5}, {RequestsRunning: 1, KVCacheUsage: 0.25}}},
		"b-0": {Err: "the Prometheus has no [vllm:kv_cache_usage_perc] of 10.0.0.2:8000"},
	}}, got)
}

// TestStatusShowsEachReplicasLoad: the report gives each replica its servers' load, where it was
// read, and why it is not known when it is not.
func TestStatusShowsEachReplicasLoad(t *testing.T) {
	busy, err := os.ReadFile("testdata/metrics/inference-sim-busy.txt")
	require.NoError(t, err)
	load, err := diagnosis.ServerLoadFromText(strings.NewReader(string(busy)))
	require.NoError(t, err)
	cases := []struct {
		name    string
		metrics *diagnosis.Metrics
		want    *diagnosis.Load
		text    []string
	}{
		{name: "read from the pod", metrics: &diagnosis.Metrics{Source: "the pods' /metrics",
			Pods: map[string]diagnosis.PodMetrics{serverPod: {Servers: []diagnosis.ServerLoad{load}}}},
			want: &diagnosis.Load{RequestsRunning: 2, RequestsWaiting: 3, KVCacheUsage: 0.0625, Servers: 1},
			text: []string{"load, from the pods' /metrics:\n", "ROLE       REPLICA                     RUNNING  WAITING  KV-CACHE\n",
				"inference  qwen-inference-inference-0  2        3        6.2%\n"}},
		{name: "a pod that could not be read", metrics: &diagnosis.Metrics{Source: "the pods' /metrics",
			Pods: map[string]diagnosis.PodMetrics{serverPod: {Err: "GET /metrics on port 8000 through the API server: connection refused"}}},
			want: &diagnosis.Load{Unknown: serverPod + ": GET /metrics on port 8000 through the API server: connection refused"},
			text: []string{"not known: " + serverPod + ": GET /metrics on port 8000"}},
		{name: "a Prometheus that does not answer", metrics: &diagnosis.Metrics{Source: "Prometheus at http://prom:9090", Err: "it did not answer: connection refused"},
			want: &diagnosis.Load{Unknown: "it did not answer: connection refused"},
			text: []string{"load, from Prometheus at http://prom:9090:\n", "not known: it did not answer: connection refused"}},
		{name: "no server read", metrics: &diagnosis.Metrics{Source: "the pods' /metrics"},
			want: &diagnosis.Load{Unknown: "no server of it was read (none runs yet)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, "healthy")
			o.Metrics = tc.metrics
			report := diagnosis.Diagnose("qwen-inference", "status-healthy", story1(t, "status-healthy"), o)
			text := report.Text()
			assert.Equal(t, diagnosis.Running, report.Phase, "the load fails nothing: %s", text)
			require.Len(t, report.Roles, 1)
			assert.Equal(t, tc.want, report.Roles[0].Replicas[0].Load, text)
			for _, w := range tc.text {
				assert.Contains(t, text, w)
			}
		})
	}

	o := fixture(t, "healthy")
	report := diagnosis.Diagnose("qwen-inference", "status-healthy", story1(t, "status-healthy"), o)
	assert.NotContains(t, report.Text(), "load, from", "not read: not shown")
	assert.Nil(t, report.Roles[0].Replicas[0].Load)
}

// TestServerEndpointsAreWhatThePodMonitorsScrape: the healthy fixture's one server pod, on its
// serving port.
func TestServerEndpointsAreWhatThePodMonitorsScrape(t *testing.T) {
	o := fixture(t, "healthy")
	assert.Equal(t, []diagnosis.ServerEndpoint{{Pod: serverPod, Namespace: "status-healthy", Ports: []int32{8000}}},
		diagnosis.ServerEndpoints(o, story1(t, "status-healthy")))
	o.Pods[0].Status.PodIP = ""
	assert.Empty(t, diagnosis.ServerEndpoints(o, nil), "a pod without an address is not read")
}

// TestServerEndpointsOfEachKindOfPod: as the PodMonitors scrape them: a data-parallel pod, leader
// or worker, on every rank's port (known from the spec); a Ray worker not at all; FMA's server
// pod on its port, its requester not at all; the Endpoint Picker not at all.
func TestServerEndpointsOfEachKindOfPod(t *testing.T) {
	svc := manifest(t, "deepseek-wide-ep-pd.yaml", "llm")
	pod := func(name string, labels, annotations map[string]string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Labels: labels, Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}
	}
	role := func(name, worker string) map[string]string {
		return map[string]string{render.LabelService: svc.Name, render.LabelRoleName: name, "leaderworkerset.sigs.k8s.io/worker-index": worker}
	}
	o := &diagnosis.Observed{Pods: []corev1.Pod{
		pod("decode-0-1", role("decode", "1"), nil),
		pod("other-0-1", role("other", "1"), nil),
		pod("other-0-0", role("other", "0"), nil),
		pod("requester-0-0", role("other", "0"), map[string]string{render.AnnotationDualPodsServerPatch: "{}"}),
		pod("requester-0-0-dual-x", map[string]string{render.LabelService: svc.Name, render.LabelRoleName: "other", render.LabelServing: "true"}, nil),
		pod("epp-1", map[string]string{render.LabelService: svc.Name, render.LabelRoleName: "router"}, nil),
	}}
	assert.Equal(t, []diagnosis.ServerEndpoint{
		{Pod: "decode-0-1", Namespace: "llm", Ports: []int32{8000, 8001, 8002, 8003, 8004, 8005, 8006, 8007}},
		{Pod: "other-0-0", Namespace: "llm", Ports: []int32{8000}},
		{Pod: "requester-0-0-dual-x", Namespace: "llm", Ports: []int32{8000}},
	}, diagnosis.ServerEndpoints(o, svc))
}
