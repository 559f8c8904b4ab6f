// SPDX-License-Identifier: Apache-2.0

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// The metrics the dashboard reads, by their exporters' own names (docs/monitoring.md):
// vLLM's /metrics (its V1 engine, vLLM >= 0.10; vllm/v1/metrics/loggers.py), the Endpoint
// Picker's (gateway-api-inference-extension v1.2.0, pkg/epp/metrics/metrics.go; a test checks
// them against its registry), kube-state-metrics' StatefulSets, and Prometheus' own up.
var (
	VLLMMetrics = []string{
		vllm.MetricRequestsRunning, vllm.MetricRequestsWaiting, vllm.MetricKVCacheUsage,
		"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	}
	EndpointPickerMetrics = []string{
		"inference_extension_scheduler_e2e_duration_seconds_bucket", "inference_extension_scheduler_e2e_duration_seconds_count",
		"inference_objective_request_total", "inference_pool_ready_pods",
	}
	ClusterMetrics = []string{"kube_statefulset_replicas", "kube_statefulset_status_replicas_ready", "up"}
)

// The grid: two panels a row, each half of Grafana's 24 columns and 8 rows high.
const (
	panelWidth  = 12
	panelHeight = 8
)

// query is one Prometheus query of a panel and the legend of its series.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend)
}

// Dashboard is the Grafana dashboard of a service, as JSON (the classic model the Grafana
// chart's sidecar loads), built with the Grafana Foundation SDK's typed builders: per role, its
// servers' requests, KV cache, latencies and tokens, its replicas, and the router's scheduling.
// Every query selects the service by the label its PodMonitors add
// (docs/design/0037-dashboards-built-typed-and-status-from-metrics.md).
func Dashboard(svc *api.InferenceService) (string, error) {
	sel := fmt.Sprintf(`%s=%q`, MetricLabelService, svc.Name)
	byRole := func(agg, metric string) string {
		return fmt.Sprintf("%s by (%s) (%s{%s})", agg, MetricLabelRole, metric, sel)
	}
	quantiles := func(histogram string) []*prometheus.DataqueryBuilder {
		var out []*prometheus.DataqueryBuilder
		for _, q := range []struct{ quantile, legend string }{{"0.5", "p50"}, {"0.95", "p95"}} {
			out = append(out, query(fmt.Sprintf("histogram_quantile(%s, sum by (le, %s) (rate(%s{%s}[5m])))", q.quantile, MetricLabelRole, histogram, sel),
				"{{role}} "+q.legend))
		}
		return out
	}
	role := "{{" + MetricLabelRole + "}}"
	panels := []*timeseries.PanelBuilder{
		panel("Requests running", "", "short", query(byRole("sum", vllm.MetricRequestsRunning), role)),
		panel("Requests waiting", "Queued in the servers' schedulers: what the autoscaler's vllm:num_requests_waiting reads.", "short",
			query(byRole("sum", vllm.MetricRequestsWaiting), role)),
		panel("KV-cache usage", "Mean over the role's servers, 0 to 1.", "percentunit",
			query(byRole("avg", vllm.MetricKVCacheUsage), role)),
		panel("Time to first token", "", "s", quantiles("vllm:time_to_first_token_seconds_bucket")...),
		panel("Inter-token latency", "", "s", quantiles("vllm:inter_token_latency_seconds_bucket")...),
		panel("Tokens/s", "", "short",
			query(fmt.Sprintf("sum by (%s) (rate(vllm:generation_tokens_total{%s}[1m]))", MetricLabelRole, sel), role+" generated"),
			query(fmt.Sprintf("sum by (%s) (rate(vllm:prompt_tokens_total{%s}[1m]))", MetricLabelRole, sel), role+" prompt")),
	}
	var replicas []*prometheus.DataqueryBuilder
	for i := range svc.Spec.Roles {
		r := &svc.Spec.Roles[i]
		if !r.ComponentType.Serving() {
			continue
		}
		// A replica's leader StatefulSet has the LWS's name and one pod a replica (kube-state-metrics).
		sts := fmt.Sprintf(`namespace=%q,statefulset=~%q`, svc.Namespace, fmt.Sprintf("%s-%s-([0-9]+|elastic)", svc.Name, r.Name))
		replicas = append(replicas,
			query(fmt.Sprintf("sum(kube_statefulset_replicas{%s})", sts), r.Name+" desired"),
			query(fmt.Sprintf("sum(kube_statefulset_status_replicas_ready{%s})", sts), r.Name+" ready"))
	}
	replicas = append(replicas, query(byRole("sum", "up"), role+" servers scraped up"))
	panels = append(panels, panel("Replicas ready / desired", "Desired and ready from kube-state-metrics (each replica's leader "+
		"StatefulSet: an autoscaled role's elastic LWS counts its replicas); servers up from Prometheus' scrapes.", "short", replicas...))
	if router := svc.Spec.Router(); router != nil && router.EndpointPickerRelease().PickerMetrics() { // lwepp exports none of them
		eppSel := fmt.Sprintf(`%s=%q,%s=%q`, MetricLabelService, svc.Name, MetricLabelRole, router.Name)
		panels = append(panels,
			panel("Endpoint Picker: scheduling decisions/s and latency", "", "short",
				query(fmt.Sprintf("sum(rate(inference_extension_scheduler_e2e_duration_seconds_count{%s}[1m]))", eppSel), "decisions/s"),
				query(fmt.Sprintf("histogram_quantile(0.95, sum by (le) (rate(inference_extension_scheduler_e2e_duration_seconds_bucket{%s}[5m])))", eppSel),
					"p95 seconds")),
			panel("Endpoint Picker: requests and ready pods", "", "short",
				query(fmt.Sprintf("sum by (model_name) (rate(inference_objective_request_total{%s}[1m]))", eppSel), "{{model_name}} requests/s"),
				query(fmt.Sprintf("max(inference_pool_ready_pods{%s})", eppSel), "ready pods in the pool")))
	}

	uid := sha256.Sum256([]byte(svc.Namespace + "/" + svc.Name)) // Grafana's UIDs are at most 40 characters
	//lint:ignore SA1019 the SDK prefers dashboardv2, which only Grafana 12's kubernetesDashboards reads; the chart's sidecar loads this model
	board := dashboard.NewDashboardBuilder("InferenceService "+svc.Namespace+"/"+svc.Name).
		Uid("fusioninfer-"+hex.EncodeToString(uid[:8])).
		Tags([]string{"fusioninfer", "vllm"}).
		Refresh("30s").
		Time("now-1h", "now")
	for i, p := range panels {
		// The SDK places a panel at the next free cell only when its position is (0, 0): place
		// every one, two a row, so that the layout is the dashboard's, not the builder's.
		board.WithPanel(p.Id(uint32(i + 1)).GridPos(dashboard.GridPos{H: panelHeight, W: panelWidth, X: uint32(i%2) * panelWidth, Y: uint32(i/2) * panelHeight}))
	}
	built, err := board.Build()
	if err != nil {
		return "", fmt.Errorf("the dashboard of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	data, err := json.MarshalIndent(built, "", "  ")
	return string(data), err
}

// panel is a time series panel of the given unit, its legend a list below it and its tooltip
// every series (the SDK's own defaults hide the legend); its queries get the reference IDs A, B, ...
func panel(title, description, unit string, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Unit(unit).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderNone))
	if description != "" {
		p.Description(description)
	}
	for i, q := range queries {
		p.WithTarget(q.RefId(string(rune('A' + i))))
	}
	return p
}
