// SPDX-License-Identifier: Apache-2.0

package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// metricsTimeout bounds the wait for one server's /metrics, or one query of a Prometheus.
const metricsTimeout = 5 * time.Second

// PodsMetricsSource is where ServerMetrics reads the load: what the status says.
const PodsMetricsSource = "the pods' /metrics, through the API server"

// ServerMetrics reads the /metrics of each running server of the service (diagnosis.ServerEndpoints:
// what its PodMonitors scrape) through the API server's pod proxy, as the LoRA loaders' state is
// read, and parses their load. A server that cannot be read is recorded with why; it fails nothing.
func (c *Clients) ServerMetrics(ctx context.Context, o *diagnosis.Observed, svc *api.InferenceService) {
	endpoints := diagnosis.ServerEndpoints(o, svc)
	said := make([]diagnosis.PodMetrics, len(endpoints))
	queries := make(chan struct{}, loaderQueries)
	var wg sync.WaitGroup
	for i := range endpoints {
		wg.Go(func() {
			queries <- struct{}{}
			defer func() { <-queries }()
			said[i] = c.podMetrics(ctx, endpoints[i])
		})
	}
	wg.Wait()
	o.Metrics = &diagnosis.Metrics{Source: PodsMetricsSource, Pods: map[string]diagnosis.PodMetrics{}}
	for i, e := range endpoints {
		o.Metrics.Pods[e.Pod] = said[i]
	}
}

// podMetrics are one pod's servers' loads, a port each, or why one could not be read.
func (c *Clients) podMetrics(ctx context.Context, e diagnosis.ServerEndpoint) diagnosis.PodMetrics {
	var out diagnosis.PodMetrics
	for _, port := range e.Ports {
		load, err := c.serverLoad(ctx, e, strconv.Itoa(int(port)))
		if err != nil {
			return diagnosis.PodMetrics{Err: err.Error()}
		}
		out.Servers = append(out.Servers, load)
	}
	return out
}

func (c *Clients) serverLoad(ctx context.Context, e diagnosis.ServerEndpoint, port string) (diagnosis.ServerLoad, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	result := c.core.Get().Namespace(e.Namespace).Resource("pods").SubResource("proxy").
		Name(utilnet.JoinSchemeNamePort("", e.Pod, port)).Suffix("/metrics").Do(ctx)
	body, _ := result.Raw()
	err := result.Error() // the API server's Status, with its message (Raw's error has none)
	switch {
	case apierrors.IsForbidden(err):
		// the API server's own words too: it also forbids a proxy to an address it will not dial
		return diagnosis.ServerLoad{}, fmt.Errorf("GET /metrics on port %s through the API server: forbidden: %s (kubectl auth can-i get pods/proxy -n %s)",
			port, firstLine(err.Error()), e.Namespace)
	case err != nil:
		return diagnosis.ServerLoad{}, fmt.Errorf("GET /metrics on port %s through the API server: %s", port, firstLine(err.Error()))
	}
	load, err := diagnosis.ServerLoadFromText(bytes.NewReader(body))
	if err != nil {
		return diagnosis.ServerLoad{}, fmt.Errorf("port %s: %v", port, err)
	}
	return load, nil
}

// PrometheusMetrics reads the load of a service's servers from a Prometheus that scrapes its
// PodMonitors: an instant query of each gauge, selected by the namespace and the service label
// the PodMonitors add (Prometheus' HTTP API, GET /api/v1/query). A Prometheus that does not
// answer is recorded with why; it fails nothing.
func PrometheusMetrics(ctx context.Context, client *http.Client, prometheusURL, namespace, service string) *diagnosis.Metrics {
	source := "Prometheus at " + prometheusURL
	var series []diagnosis.Series
	for _, metric := range []string{vllm.MetricRequestsRunning, vllm.MetricRequestsWaiting, vllm.MetricKVCacheUsage} {
		query := fmt.Sprintf(`%s{namespace=%q,%s=%q}`, metric, namespace, render.MetricLabelService, service)
		got, err := InstantQuery(ctx, client, prometheusURL, query)
		if err != nil {
			return &diagnosis.Metrics{Source: source, Err: err.Error()}
		}
		for _, s := range got {
			series = append(series, diagnosis.Series{Metric: metric, Labels: s.Labels, Value: s.Value})
		}
	}
	return diagnosis.MetricsFromSeries(source, series)
}

// Sample is one series of an instant query's vector: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// InstantQuery asks a Prometheus for the vector of a query now (its HTTP API's
// /api/v1/query, https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries);
// a scalar answer is one sample without labels. Its error says what the Prometheus said.
func InstantQuery(ctx context.Context, client *http.Client, prometheusURL, query string) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	endpoint := strings.TrimSuffix(prometheusURL, "/") + "/api/v1/query"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(url.Values{"query": {query}}.Encode()))
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %v; give the Prometheus' URL, such as http://localhost:9090", prometheusURL, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the Prometheus at %s did not answer: %v", prometheusURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("the Prometheus at %s: reading its answer: %v", prometheusURL, err)
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("the answer of %s is not Prometheus' API (HTTP %d): %s", endpoint, resp.StatusCode, firstLine(string(body)))
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("the Prometheus at %s refused %s: %s", prometheusURL, query, answer.Error)
	}
	switch answer.Data.ResultType {
	case "vector":
		var vector []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(answer.Data.Result, &vector); err != nil {
			return nil, fmt.Errorf("the Prometheus at %s: its vector: %v", prometheusURL, err)
		}
		var out []Sample
		for _, v := range vector {
			value, err := sampleValue(v.Value)
			if err != nil {
				return nil, fmt.Errorf("the Prometheus at %s: %v", prometheusURL, err)
			}
			out = append(out, Sample{Labels: v.Metric, Value: value})
		}
		return out, nil
	case "scalar":
		var scalar [2]any
		if err := json.Unmarshal(answer.Data.Result, &scalar); err != nil {
			return nil, fmt.Errorf("the Prometheus at %s: its scalar: %v", prometheusURL, err)
		}
		value, err := sampleValue(scalar)
		if err != nil {
			return nil, fmt.Errorf("the Prometheus at %s: %v", prometheusURL, err)
		}
		return []Sample{{Labels: map[string]string{}, Value: value}}, nil
	}
	return nil, fmt.Errorf("the Prometheus at %s answered %s with a %s, not a vector", prometheusURL, query, answer.Data.ResultType)
}

// sampleValue is a sample's value: Prometheus' API writes [time, "value"], the value a string.
func sampleValue(v [2]any) (float64, error) {
	s, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("a sample's value %v is not a string", v[1])
	}
	return strconv.ParseFloat(s, 64)
}
