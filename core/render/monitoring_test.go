// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	eppmetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metrics"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

func podMonitors(tree *render.Tree) map[string]*monitoringv1.PodMonitor {
	out := map[string]*monitoringv1.PodMonitor{}
	for _, o := range tree.Objects {
		if pm, ok := o.Object.(*monitoringv1.PodMonitor); ok {
			out[o.Role] = pm
		}
	}
	return out
}

// TestPodMonitorsScrapeTheServersAndTheEndpointPicker: a role's leaders on their serving port,
// the Endpoint Picker on its metrics port, every series labelled with service, role and replica.
func TestPodMonitorsScrapeTheServersAndTheEndpointPicker(t *testing.T) {
	tree := story(t, "llama-router.yaml")
	monitors := podMonitors(tree)
	require.Len(t, monitors, 2)
	server := monitors["server"]
	assert.Equal(t, map[string]string{render.LabelService: "llama-8b", render.LabelRoleName: "server",
		"leaderworkerset.sigs.k8s.io/worker-index": "0"}, server.Spec.Selector.MatchLabels, "the leaders: a multi-node replica's workers serve nothing")
	endpoint := server.Spec.PodMetricsEndpoints[0]
	assert.EqualValues(t, 8000, *endpoint.PortNumber)
	assert.Equal(t, "/metrics", endpoint.Path)
	var targets []string
	for _, r := range endpoint.RelabelConfigs {
		targets = append(targets, string(r.SourceLabels[0])+"->"+r.TargetLabel)
	}
	assert.Equal(t, []string{
		"__meta_kubernetes_pod_label_fusioninfer_io_service->service",
		"__meta_kubernetes_pod_label_fusioninfer_io_role_name->role",
		"__meta_kubernetes_pod_label_fusioninfer_io_replica_index->replica",
	}, targets)

	router := monitors["router"]
	var epp *appsv1.Deployment
	for _, o := range tree.Objects {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			epp = d
		}
	}
	require.NotNil(t, epp)
	assert.Equal(t, epp.Spec.Selector.MatchLabels, router.Spec.Selector.MatchLabels, "the Endpoint Picker's pods")
	var ports []string
	for _, p := range epp.Spec.Template.Spec.Containers[0].Ports {
		ports = append(ports, p.Name)
	}
	assert.Contains(t, ports, *router.Spec.PodMetricsEndpoints[0].Port, "a port the Endpoint Picker's container names")

	// A multi-node role's PodMonitor is on its leaders too; dual-pods roles have none.
	autoscaled := podMonitors(story(t, "autoscaling-pd.yaml"))
	assert.Equal(t, "0", autoscaled["decode"].Spec.Selector.MatchLabels["leaderworkerset.sigs.k8s.io/worker-index"])
}

// TestDashboardShowsThePickerPanelsItsReleaseFeeds: the Endpoint Picker's panels read metrics
// lwepp never exports, so a router of gie-lwepp-v1.6.0 has none (issue 55); the other releases do.
func TestDashboardShowsThePickerPanelsItsReleaseFeeds(t *testing.T) {
	for _, release := range []api.EndpointPickerRelease{api.EPPReleaseLLMDRouter, api.EPPReleaseGIE150, api.EPPReleaseLWEPP} {
		t.Run(string(release), func(t *testing.T) {
			svc := story(t, "llama-router.yaml").Service
			router := svc.Spec.Router()
			router.EndpointPicker = &api.EndpointPicker{Release: release}
			if release == api.EPPReleaseLWEPP {
				router.Strategy = "" // lwepp has none
			}
			data, err := render.Dashboard(svc)
			require.NoError(t, err)
			assert.Equal(t, release != api.EPPReleaseLWEPP, strings.Contains(data, "Endpoint Picker:"))
			assert.Equal(t, release != api.EPPReleaseLWEPP, strings.Contains(data, "inference_extension_scheduler"))
		})
	}
}

// TestDashboardQueriesReadKnownMetrics: the dashboard is JSON Grafana loads, every query is
// PromQL, names a metric of the documented set and, for the servers' and the Endpoint Picker's
// metrics, selects the service by the label its PodMonitors add.
func TestDashboardQueriesReadKnownMetrics(t *testing.T) {
	known := slices.Concat(render.VLLMMetrics, render.EndpointPickerMetrics, render.ClusterMetrics)
	for _, file := range []string{"llama-router.yaml", "autoscaling-pd.yaml"} {
		tree := story(t, file)
		var data string
		for _, o := range tree.Objects {
			if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Name == api.DashboardName(tree.Service.Name) {
				assert.Equal(t, "1", cm.Labels[render.GrafanaDashboardLabel], "the Grafana chart's sidecar loads it")
				data = cm.Data[tree.Service.Name+".json"]
			}
		}
		require.NotEmpty(t, data, file)
		var dashboard struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &dashboard))
		assert.LessOrEqual(t, len(dashboard.UID), 40, "Grafana's limit")
		var titles []string
		for _, p := range dashboard.Panels {
			titles = append(titles, p.Title)
			require.NotEmpty(t, p.Targets, p.Title)
			for _, target := range p.Targets {
				expr, err := parser.ParseExpr(target.Expr)
				require.NoError(t, err, target.Expr)
				for _, sel := range parser.ExtractSelectors(expr) {
					var name string
					service := false
					for _, m := range sel {
						if m.Name == labels.MetricName {
							name = m.Value
						}
						service = service || (m.Name == render.MetricLabelService && m.Value == tree.Service.Name)
					}
					assert.Contains(t, known, name, "%s: %s", p.Title, target.Expr)
					if !strings.HasPrefix(name, "kube_") {
						assert.True(t, service, "%s selects the service: %s", p.Title, target.Expr)
					}
				}
			}
		}
		for _, want := range []string{"Requests running", "Requests waiting", "KV-cache usage", "Time to first token",
			"Inter-token latency", "Tokens/s", "Replicas ready / desired"} {
			assert.Contains(t, titles, want, file)
		}
		if tree.Service.Spec.Router() != nil {
			assert.Contains(t, titles, "Endpoint Picker: scheduling decisions/s and latency")
		}
	}
}

// TestEndpointPickerMetricsAreTheEndpointPickers: the names the dashboard reads are registered by
// the Endpoint Picker we deploy (gateway-api-inference-extension v1.2.0's metrics package).
func TestEndpointPickerMetricsAreTheEndpointPickers(t *testing.T) {
	eppmetrics.Register()
	// A vector shows in a gather once it has a sample: record one of each the dashboard reads.
	eppmetrics.RecordRequestCounter("llama", "llama")
	eppmetrics.RecordInferencePoolReadyPods("llama-8b-pool", 4)
	eppmetrics.RecordSchedulerE2ELatency(time.Millisecond)
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	var registered []string
	for _, f := range families {
		registered = append(registered, f.GetName())
		if f.GetName() == "inference_objective_request_total" {
			var labelNames []string
			for _, l := range f.GetMetric()[0].GetLabel() {
				labelNames = append(labelNames, l.GetName())
			}
			assert.Contains(t, labelNames, "model_name", "the dashboard sums requests by model_name")
		}
	}
	for _, name := range render.EndpointPickerMetrics {
		base := strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count")
		assert.Contains(t, registered, base, name)
	}
}
