// SPDX-License-Identifier: Apache-2.0

package diagnosis

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// The load of the servers, from vLLM's own gauges (api/vllm/metrics.go): what `fusioninfer
// status` shows per replica so that a user sees load without opening Grafana
// (docs/design/0037-dashboards-built-typed-and-status-from-metrics.md).

// ServerLoad is what one model server's gauges say now: requests running and waiting (summed
// over its series: vLLM labels them by model and, with in-process data parallel, by engine) and
// the fraction of its KV cache in use, 0 to 1 (their mean).
type ServerLoad struct {
	RequestsRunning float64
	RequestsWaiting float64
	KVCacheUsage    float64
}

// PodMetrics are the loads of one pod's servers (a data-parallel pod runs one a rank), or why
// they could not be read.
type PodMetrics struct {
	Servers []ServerLoad
	Err     string
}

// Metrics are the servers' loads as read from one source, by pod name.
type Metrics struct {
	// Source says where they were read: a Prometheus, or the pods' own /metrics.
	Source string
	Pods   map[string]PodMetrics
	// Err is why none could be read (the Prometheus did not answer).
	Err string
}

// Load is a replica's load now: requests running and waiting summed over its servers, the mean
// of their KV-cache usage (0 to 1); or why it is not known.
type Load struct {
	RequestsRunning float64 `json:"requestsRunning"`
	RequestsWaiting float64 `json:"requestsWaiting"`
	KVCacheUsage    float64 `json:"kvCacheUsage"`
	// Servers is how many servers' gauges were read.
	Servers int    `json:"servers"`
	Unknown string `json:"unknown,omitempty"`
}

// loadMetrics are the gauges a server's load is read from.
var loadMetrics = []string{vllm.MetricRequestsRunning, vllm.MetricRequestsWaiting, vllm.MetricKVCacheUsage}

// ServerLoadFromText reads a server's load from its /metrics in Prometheus' text format. Every
// one of the three gauges must be there: a server without them is not vLLM's (>= 0.10, which
// renamed the KV-cache gauge from vllm:gpu_cache_usage_perc).
func ServerLoadFromText(text io.Reader) (ServerLoad, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(text)
	if err != nil {
		return ServerLoad{}, fmt.Errorf("its /metrics is not Prometheus' text format: %v", err)
	}
	values := map[string][]float64{}
	for _, name := range loadMetrics {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return ServerLoad{}, fmt.Errorf("its /metrics has no %s: not vLLM's server (>= 0.10)", name)
		}
		for _, m := range f.GetMetric() {
			values[name] = append(values[name], gaugeValue(f.GetType(), m))
		}
	}
	return serverLoad(values), nil
}

// gaugeValue is a sample's value: a gauge's, or an untyped one's (a family without # TYPE).
func gaugeValue(t dto.MetricType, m *dto.Metric) float64 {
	if t == dto.MetricType_UNTYPED {
		return m.GetUntyped().GetValue()
	}
	return m.GetGauge().GetValue()
}

// serverLoad is one server's load from the values of its series of each gauge.
func serverLoad(values map[string][]float64) ServerLoad {
	var l ServerLoad
	for _, v := range values[vllm.MetricRequestsRunning] {
		l.RequestsRunning += v
	}
	for _, v := range values[vllm.MetricRequestsWaiting] {
		l.RequestsWaiting += v
	}
	kv := values[vllm.MetricKVCacheUsage]
	for _, v := range kv {
		l.KVCacheUsage += v / float64(len(kv))
	}
	return l
}

// Series is one series of a Prometheus instant query's answer: its metric, labels and value.
type Series struct {
	Metric string
	Labels map[string]string
	Value  float64
}

// MetricsFromSeries are the servers' loads from the series a Prometheus holds of the three
// gauges: a server is a scrape target (its pod and instance labels, which prometheus-operator's
// PodMonitors set: the pod's name, its address and port); one without a series of each gauge is
// reported with what it lacks.
func MetricsFromSeries(source string, series []Series) *Metrics {
	type target struct{ pod, instance string }
	values := map[target]map[string][]float64{}
	for _, s := range series {
		t := target{s.Labels["pod"], s.Labels["instance"]}
		if t.pod == "" {
			continue // not a pod's: nothing to place it on
		}
		if values[t] == nil {
			values[t] = map[string][]float64{}
		}
		values[t][s.Metric] = append(values[t][s.Metric], s.Value)
	}
	out := &Metrics{Source: source, Pods: map[string]PodMetrics{}}
	targets := slices.SortedFunc(maps.Keys(values), func(a, b target) int {
		if a.pod != b.pod {
			return compare(a.pod, b.pod)
		}
		return compare(a.instance, b.instance)
	})
	for _, t := range targets {
		pm := out.Pods[t.pod]
		var missing []string
		for _, name := range loadMetrics {
			if len(values[t][name]) == 0 {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			pm.Err = fmt.Sprintf("the Prometheus has no %v of %s", missing, t.instance)
		} else {
			pm.Servers = append(pm.Servers, serverLoad(values[t]))
		}
		out.Pods[t.pod] = pm
	}
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ServerEndpoint is a pod whose servers' /metrics are read, and their ports.
type ServerEndpoint struct {
	Pod       string
	Namespace string
	Ports     []int32
}

// ServerEndpoints are the running pods of a service that run model servers, each with its
// servers' ports, as its PodMonitors scrape them (core/render/monitoring.go buildPodMonitor): an
// LWS replica's leader on the serving port; a data-parallel role's every pod on every rank's port
// (known from the spec only: without it, the leader's serving port); FMA's server-running pods
// (the serving label, no LWS worker index) on theirs. Dual-pods requesters serve no metrics.
func ServerEndpoints(o *Observed, svc *api.InferenceService) []ServerEndpoint {
	var out []ServerEndpoint
	for i := range o.Pods {
		pod := &o.Pods[i]
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || len(pod.Spec.Containers) == 0 {
			continue
		}
		if _, requester := pod.Annotations[render.AnnotationDualPodsServerPatch]; requester {
			continue
		}
		worker, inLWS := pod.Labels[lwsv1.WorkerIndexLabelKey]
		var role *api.Role
		if svc != nil {
			role = svc.Spec.RoleNamed(pod.Labels[render.LabelRoleName])
		}
		dataParallel := role != nil && role.DataParallel()
		switch {
		case inLWS && worker != "0" && !dataParallel: // a worker only joins its leader's Ray cluster
			continue
		case !inLWS && pod.Labels[render.LabelServing] != "true": // the Endpoint Picker, a Job
			continue
		}
		port, err := api.ServingPort(&pod.Spec.Containers[api.ServingContainerIndex(&pod.Spec)])
		if err != nil {
			continue // the pod would not have passed validation: nothing to read it on
		}
		ports := []int32{port}
		if dataParallel {
			ports = api.RankPorts(port, role.LocalRanks())
		}
		out = append(out, ServerEndpoint{Pod: pod.Name, Namespace: pod.Namespace, Ports: ports})
	}
	return out
}

// load is the load of an LWS's servers, from what was read of its pods.
func (d *diagnoser) load(lws string) *Load {
	m := d.o.Metrics
	if m == nil {
		return nil
	}
	if m.Err != "" {
		return &Load{Unknown: m.Err}
	}
	l := &Load{}
	var errs []string
	for _, pod := range d.pods[lws] {
		pm, ok := m.Pods[pod.Name]
		if !ok {
			continue
		}
		if pm.Err != "" {
			errs = append(errs, pod.Name+": "+pm.Err)
		}
		for _, s := range pm.Servers {
			l.Servers++
			l.RequestsRunning += s.RequestsRunning
			l.RequestsWaiting += s.RequestsWaiting
			l.KVCacheUsage += s.KVCacheUsage
		}
	}
	switch {
	case l.Servers > 0:
		l.KVCacheUsage /= float64(l.Servers)
	case len(errs) > 0:
		l.Unknown = errs[0]
	default:
		l.Unknown = "no server of it was read (none runs yet)"
	}
	return l
}

// percent is a fraction as a percentage, to one decimal.
func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }
