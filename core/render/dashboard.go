// SPDX-License-Identifier: Apache-2.0

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// The metrics the dashboard reads, by their exporters' own names (docs/monitoring.md):
// vLLM's /metrics (its V1 engine, vLLM >= 0.10; vllm/v1/metrics/loggers.py), the Endpoint
// Picker's (gateway-api-inference-extension v1.2.0, pkg/epp/metrics/metrics.go; a test checks
// them against its registry), kube-state-metrics' StatefulSets, and Prometheus' own up.
var (
	VLLMMetrics = []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	}
	EndpointPickerMetrics = []string{
		"inference_extension_scheduler_e2e_duration_seconds_bucket", "inference_extension_scheduler_e2e_duration_seconds_count",
		"inference_objective_request_total", "inference_pool_ready_pods",
	}
	ClusterMetrics = []string{"kube_statefulset_replicas", "kube_statefulset_status_replicas_ready", "up"}
)

// dashboard is the part of Grafana's dashboard JSON model the service's dashboard uses.
type dashboard struct {
	Title         string         `json:"title"`
	UID           string         `json:"uid"`
	Tags          []string       `json:"tags"`
	SchemaVersion int            `json:"schemaVersion"`
	Time          map[string]any `json:"time"`
	Refresh       string         `json:"refresh"`
	Panels        []panel        `json:"panels"`
}

type panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	GridPos     map[string]int `json:"gridPos"`
	FieldConfig map[string]any `json:"fieldConfig"`
	Targets     []target       `json:"targets"`
}

type target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
}

// Dashboard is the Grafana dashboard of a service, as JSON: per role, its servers' requests,
// KV cache, latencies and tokens, its replicas, and the router's scheduling. Every query selects
// the service by the label its PodMonitors add.
func Dashboard(svc *api.InferenceService) (string, error) {
	sel := fmt.Sprintf(`%s=%q`, MetricLabelService, svc.Name)
	byRole := func(agg, metric string) string {
		return fmt.Sprintf("%s by (%s) (%s{%s})", agg, MetricLabelRole, metric, sel)
	}
	quantiles := func(histogram string) []target {
		var out []target
		for _, q := range []string{"0.5", "0.95"} {
			out = append(out, target{Expr: fmt.Sprintf("histogram_quantile(%s, sum by (le, %s) (rate(%s{%s}[5m])))", q, MetricLabelRole, histogram, sel),
				LegendFormat: "{{role}} p" + q[2:]})
		}
		return out
	}
	role := "{{" + MetricLabelRole + "}}"
	panels := []panel{
		newPanel("Requests running", "", "short", target{Expr: byRole("sum", "vllm:num_requests_running"), LegendFormat: role}),
		newPanel("Requests waiting", "Queued in the servers' schedulers: what the autoscaler's vllm:num_requests_waiting reads.", "short",
			target{Expr: byRole("sum", "vllm:num_requests_waiting"), LegendFormat: role}),
		newPanel("KV-cache usage", "Mean over the role's servers, 0 to 1.", "percentunit",
			target{Expr: byRole("avg", "vllm:kv_cache_usage_perc"), LegendFormat: role}),
		newPanel("Time to first token", "", "s", quantiles("vllm:time_to_first_token_seconds_bucket")...),
		newPanel("Inter-token latency", "", "s", quantiles("vllm:inter_token_latency_seconds_bucket")...),
		newPanel("Tokens/s", "", "short",
			target{Expr: fmt.Sprintf("sum by (%s) (rate(vllm:generation_tokens_total{%s}[1m]))", MetricLabelRole, sel), LegendFormat: role + " generated"},
			target{Expr: fmt.Sprintf("sum by (%s) (rate(vllm:prompt_tokens_total{%s}[1m]))", MetricLabelRole, sel), LegendFormat: role + " prompt"}),
	}
	var replicas []target
	for i := range svc.Spec.Roles {
		r := &svc.Spec.Roles[i]
		if !r.ComponentType.Serving() {
			continue
		}
		// A replica's leader StatefulSet has the LWS's name and one pod a replica (kube-state-metrics).
		sts := fmt.Sprintf(`namespace=%q,statefulset=~%q`, svc.Namespace, fmt.Sprintf("%s-%s-([0-9]+|elastic)", svc.Name, r.Name))
		replicas = append(replicas,
			target{Expr: fmt.Sprintf("sum(kube_statefulset_replicas{%s})", sts), LegendFormat: r.Name + " desired"},
			target{Expr: fmt.Sprintf("sum(kube_statefulset_status_replicas_ready{%s})", sts), LegendFormat: r.Name + " ready"})
	}
	replicas = append(replicas, target{Expr: byRole("sum", "up"), LegendFormat: role + " servers scraped up"})
	panels = append(panels, newPanel("Replicas ready / desired", "Desired and ready from kube-state-metrics (each replica's leader "+
		"StatefulSet: an autoscaled role's elastic LWS counts its replicas); servers up from Prometheus' scrapes.", "short", replicas...))
	if router := svc.Spec.Router(); router != nil {
		eppSel := fmt.Sprintf(`%s=%q,%s=%q`, MetricLabelService, svc.Name, MetricLabelRole, router.Name)
		panels = append(panels,
			newPanel("Endpoint Picker: scheduling decisions/s and latency", "", "short",
				target{Expr: fmt.Sprintf("sum(rate(inference_extension_scheduler_e2e_duration_seconds_count{%s}[1m]))", eppSel), LegendFormat: "decisions/s"},
				target{Expr: fmt.Sprintf("histogram_quantile(0.95, sum by (le) (rate(inference_extension_scheduler_e2e_duration_seconds_bucket{%s}[5m])))", eppSel),
					LegendFormat: "p95 seconds"}),
			newPanel("Endpoint Picker: requests and ready pods", "", "short",
				target{Expr: fmt.Sprintf("sum by (model_name) (rate(inference_objective_request_total{%s}[1m]))", eppSel), LegendFormat: "{{model_name}} requests/s"},
				target{Expr: fmt.Sprintf("max(inference_pool_ready_pods{%s})", eppSel), LegendFormat: "ready pods in the pool"}))
	}
	for i := range panels {
		panels[i].ID = i + 1
		panels[i].GridPos = map[string]int{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8}
		for j := range panels[i].Targets {
			panels[i].Targets[j].RefID = string(rune('A' + j))
		}
	}
	uid := sha256.Sum256([]byte(svc.Namespace + "/" + svc.Name)) // Grafana's UIDs are at most 40 characters
	d := dashboard{Title: "InferenceService " + svc.Namespace + "/" + svc.Name, UID: "fusioninfer-" + hex.EncodeToString(uid[:8]),
		Tags: []string{"fusioninfer", "vllm"}, SchemaVersion: 39, Refresh: "30s",
		Time: map[string]any{"from": "now-1h", "to": "now"}, Panels: panels}
	data, err := json.MarshalIndent(d, "", "  ")
	return string(data), err
}

func newPanel(title, description, unit string, targets ...target) panel {
	return panel{Type: "timeseries", Title: title, Description: description, Targets: targets,
		FieldConfig: map[string]any{"defaults": map[string]any{"unit": unit}, "overrides": []any{}}}
}
