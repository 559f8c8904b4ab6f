// SPDX-License-Identifier: Apache-2.0

package dashboards_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/dashboards"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/promtest"
)

// llamaRouter is the example with monitoring: a server role and a router.
func llamaRouter(t testing.TB) *render.Tree {
	t.Helper()
	file := "../../../examples/manifests/llama-router.yaml"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	trees, _, problems := render.LoadManifest(file, data, nil)
	require.Empty(t, problems)
	require.Len(t, trees, 1)
	return trees[0]
}

// scraped appends, over the last ten minutes, the series a Prometheus scraping llama-router's
// PodMonitors and kube-state-metrics holds after traffic: each exporter's own metric names and
// labels, with the labels the PodMonitors add (service, role, replica, and prometheus-operator's
// namespace, pod, instance), as if scraped every 15 s; skip leaves metrics out.
func scraped(t testing.TB, prom *promtest.Server, tree *render.Tree, skip ...string) {
	t.Helper()
	svc := tree.Service
	server := map[string]string{"namespace": svc.Namespace, "pod": svc.Name + "-server-0-0", "instance": "10.0.0.1:8000",
		render.MetricLabelService: svc.Name, render.MetricLabelRole: "server", render.MetricLabelReplica: "0", "model_name": "llama"}
	epp := map[string]string{"namespace": svc.Namespace, "pod": svc.Name + "-epp-1", "instance": "10.0.0.9:9090",
		render.MetricLabelService: svc.Name, render.MetricLabelRole: "router"}
	ksm := map[string]string{"namespace": svc.Namespace, "statefulset": svc.Name + "-server-0", "instance": "ksm:8080"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	now := time.Now()
	for i := 40; i >= 0; i-- {
		at, n := now.Add(-time.Duration(i)*15*time.Second), float64(40-i)
		set := func(metric string, labels map[string]string, v float64) {
			for _, s := range skip {
				if s == metric {
					return
				}
			}
			prom.Append(t, with(labels, "__name__", metric), at, v)
		}
		set("vllm:num_requests_running", server, 2)
		set("vllm:num_requests_waiting", server, float64(i%4))
		set("vllm:kv_cache_usage_perc", server, 0.3)
		for _, h := range []string{"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket"} {
			set(h, with(server, "le", "0.1"), n*3)
			set(h, with(server, "le", "1"), n*9)
			set(h, with(server, "le", "+Inf"), n*10)
		}
		set("vllm:prompt_tokens_total", server, n*500)
		set("vllm:generation_tokens_total", server, n*200)
		set("up", with(server, "job", "llm/llama-8b-server"), 1)
		set("kube_statefulset_replicas", ksm, 1)
		set("kube_statefulset_status_replicas_ready", ksm, 1)
		set("inference_extension_scheduler_e2e_duration_seconds_bucket", with(epp, "le", "0.01"), n*10)
		set("inference_extension_scheduler_e2e_duration_seconds_bucket", with(epp, "le", "+Inf"), n*10)
		set("inference_extension_scheduler_e2e_duration_seconds_count", epp, n*10)
		set("inference_objective_request_total", with(epp, "model_name", "llama", "target_model_name", "llama"), n*10)
		set("inference_pool_ready_pods", with(epp, "name", svc.Name+"-pool"), 1)
	}
}

// failures records what PanelsAnswer reports, for the test of a failing case.
type failures struct {
	testing.TB
	errs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, a ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, a...))
}

// TestEveryPanelAnswers: every query of every panel of the rendered dashboard returns series from
// Prometheus' own PromQL engine over what the PodMonitors' scrapes hold.
func TestEveryPanelAnswers(t *testing.T) {
	tree := llamaRouter(t)
	prom := promtest.New(t)
	scraped(t, prom, tree)
	boards := dashboards.Of(tree)
	require.Len(t, boards, 1)
	dashboards.PanelsAnswer(t, prom.URL, boards)
	panels, err := dashboards.Panels(boards[0], time.Minute)
	require.NoError(t, err)
	queries := 0
	for _, p := range panels {
		queries += len(p.Queries)
	}
	assert.Len(t, prom.Queries(), queries, "every query was asked")
	assert.Equal(t, 16, queries, "llama-router's dashboard: 9 panels, 16 queries")
}

// TestAPanelThatDoesNotAnswerIsNamed: a metric no exporter gave fails the panel that reads it,
// naming its title and query; the others pass.
func TestAPanelThatDoesNotAnswerIsNamed(t *testing.T) {
	tree := llamaRouter(t)
	prom := promtest.New(t)
	scraped(t, prom, tree, "inference_pool_ready_pods")
	f := &failures{TB: t}
	dashboards.PanelsAnswer(f, prom.URL, dashboards.Of(tree))
	require.Len(t, f.errs, 1, strings.Join(f.errs, "\n"))
	assert.Equal(t, `dashboard "InferenceService llm/llama-8b", panel "Endpoint Picker: requests and ready pods": `+
		`the query max(inference_pool_ready_pods{service="llama-8b",role="router"}) returns no series`, f.errs[0])

	f = &failures{TB: t}
	dashboards.PanelsAnswer(f, prom.URL, []string{`{"title": "broken", "panels": [{"type": "timeseries", "title": "A typo",
		"targets": [{"expr": "sum(rate(vllm:num_requests_running{service=\"llama-8b\"}[$__rate_interval])"}]}]}`})
	require.Len(t, f.errs, 1)
	assert.Contains(t, f.errs[0], `dashboard "broken", panel "A typo": the query sum(rate(vllm:num_requests_running{service="llama-8b"}[60s]): the Prometheus at`)
}

// TestVariablesAreSubstitutedAsGrafanaDoes: a dashboard's variables by their current value, in
// every syntax Grafana reads, and its global intervals; an unknown variable is an error.
func TestVariablesAreSubstitutedAsGrafanaDoes(t *testing.T) {
	vars := map[string]string{"namespace": "llm", "service": "llama-8b"}
	for expr, want := range map[string]string{
		`up{namespace="$namespace",service="${service}"}`:                      `up{namespace="llm",service="llama-8b"}`,
		`up{namespace="[[namespace]]",service="${service:raw}"}`:               `up{namespace="llm",service="llama-8b"}`,
		`rate(vllm:prompt_tokens_total{service="$service"}[$__rate_interval])`: `rate(vllm:prompt_tokens_total{service="llama-8b"}[75s])`,
		`rate(x[$__interval])`: `rate(x[60s])`,
	} {
		got, err := dashboards.Interpolate(expr, vars, time.Minute)
		require.NoError(t, err, expr)
		assert.Equal(t, want, got, expr)
	}
	_, err := dashboards.Interpolate(`up{pod="$pod"}`, vars, time.Minute)
	assert.ErrorContains(t, err, `names [$pod], which is no variable of the dashboard nor of Grafana`)

	panels, err := dashboards.Panels(`{"title": "d", "templating": {"list": [{"name": "namespace", "type": "custom", "current": {"value": "llm"}},
		{"name": "service", "type": "constant", "query": "llama-8b"}]},
		"panels": [{"type": "row", "title": "r", "panels": [{"type": "timeseries", "title": "Up", "targets": [{"expr": "up{namespace=\"$namespace\",service=\"$service\"}"},
		{"expr": "hidden", "hide": true}]}]}]}`, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []dashboards.Panel{{Dashboard: "d", Title: "Up", Queries: []dashboards.Query{{Expr: `up{namespace="llm",service="llama-8b"}`}}}}, panels)
}
