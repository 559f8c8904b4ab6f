// SPDX-License-Identifier: Apache-2.0

package render

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/util/strutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// KindPodMonitor is prometheus-operator's PodMonitor.
var KindPodMonitor = TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PodMonitorsKind}

const suffixDashboard = "dashboard"

// The labels the PodMonitors give every series, from the pods' labels: what the dashboard groups by.
const (
	MetricLabelService = "service"
	MetricLabelRole    = "role"
	MetricLabelReplica = "replica"
)

func podMonitorSuffix(roleName string) string { return roleName + "-podmonitor" }

// monitoringRefs are the service's PodMonitors (a serving role's servers, the router's Endpoint
// Picker) and its dashboard, when spec.monitoring asks for them. Nothing depends on them; the
// router's waits for its token Secret.
func monitoringRefs(svc *api.InferenceService) []Ref {
	m := svc.Spec.Monitoring
	if m == nil {
		return nil
	}
	var refs []Ref
	if m.PodMonitors {
		for i := range svc.Spec.Roles {
			role := &svc.Spec.Roles[i]
			ref := Ref{TypeMeta: KindPodMonitor, Name: api.PodMonitorName(svc.Name, role.Name), Namespace: svc.Namespace,
				Suffix: podMonitorSuffix(role.Name), Role: role.Name}
			if role.ComponentType == api.ComponentTypeRouter && role.EndpointPickerRelease().MetricsAuth() {
				ref.DependsOn = []string{suffixEPPMetricsToken} // the scraper's token (routerauth.go)
			}
			refs = append(refs, ref)
		}
	}
	if m.Dashboard {
		refs = append(refs, Ref{TypeMeta: KindConfigMap, Name: api.DashboardName(svc.Name), Namespace: svc.Namespace, Suffix: suffixDashboard})
	}
	return refs
}

// buildPodMonitor scrapes /metrics of a role's servers (the leader of each replica: workers only
// join its Ray cluster; every pod and rank with parallelism; FMA's server-running pods of a
// dual-pods role) on their serving port, or of the router's Endpoint Picker on its metrics
// port (and a standalone router's proxy on its stats port), and labels every series with the
// service, role and replica.
func buildPodMonitor(svc *api.InferenceService, role *api.Role, routing *routing, servingPort int32) *monitoringv1.PodMonitor {
	endpoint := monitoringv1.PodMetricsEndpoint{Path: "/metrics", RelabelConfigs: []monitoringv1.RelabelConfig{
		fromPodLabel(LabelService, MetricLabelService),
		fromPodLabel(LabelRoleName, MetricLabelRole),
		fromPodLabel(LabelReplicaIndex, MetricLabelReplica),
	}}
	var selector map[string]string
	var endpoints []monitoringv1.PodMetricsEndpoint
	switch {
	case role.ComponentType == api.ComponentTypeRouter:
		selector = routing.eppSelector()
		endpoint.Port = ptr.To(eppMetricsPortName)
		if svc.Spec.WakeTimeout() > 0 { // its series wake a role at zero: read them soon (autoscaling.go)
			endpoint.Interval = wakeScrapeInterval
		}
		if routing.release().MetricsAuth() { // routerauth.go: a token the picker's review accepts
			endpoint.Authorization = &monitoringv1.SafeAuthorization{Credentials: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: api.EndpointPickerMetricsTokenName(svc.Name)}, Key: eppTokenKey}}
		}
		endpoints = append(endpoints, endpoint)
		if role.Standalone() { // the proxy's own stats, served on its ready listener (standalone.go)
			proxy := *endpoint.DeepCopy()
			proxy.Port, proxy.Path, proxy.Authorization = ptr.To(routerProxyMetricsPortName), routerProxyStatsPath, nil
			endpoints = append(endpoints, proxy)
		}
	case role.DataParallel():
		// Every pod runs ranks, each its own server with its own metrics, on port + local rank
		// (docs/design/0026-wide-expert-parallelism.md); a series' instance says which.
		selector = map[string]string{LabelService: svc.Name, LabelRoleName: role.Name}
		for _, port := range api.RankPorts(servingPort, role.LocalRanks()) {
			rank := *endpoint.DeepCopy()
			rank.PortNumber = ptr.To(port)
			endpoints = append(endpoints, rank)
		}
	case role.DualPods():
		// The servers run in the pods FMA makes from the requesters (dualpods.go serverPatch):
		// they keep the service's and role's labels, lose the per-pod ones (a replica's too) and
		// carry the serving label; the requesters themselves serve no metrics.
		selector = map[string]string{LabelService: svc.Name, LabelRoleName: role.Name, LabelServing: "true"}
		endpoint.PortNumber = ptr.To(servingPort)
		endpoints = append(endpoints, endpoint)
	default:
		selector = map[string]string{LabelService: svc.Name, LabelRoleName: role.Name, lwsv1.WorkerIndexLabelKey: "0"}
		endpoint.PortNumber = ptr.To(servingPort)
		endpoints = append(endpoints, endpoint)
	}
	return &monitoringv1.PodMonitor{
		TypeMeta: metav1.TypeMeta{APIVersion: KindPodMonitor.APIVersion, Kind: KindPodMonitor.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: api.PodMonitorName(svc.Name, role.Name), Namespace: svc.Namespace,
			Labels: merged(serviceObjectLabels(svc), map[string]string{LabelRoleName: role.Name})},
		Spec: monitoringv1.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: selector},
			PodMetricsEndpoints: endpoints,
		},
	}
}

// fromPodLabel copies a pod label onto the series as target: Prometheus' kubernetes discovery
// names it __meta_kubernetes_pod_label_<name>, the name sanitized by strutil.SanitizeLabelName.
func fromPodLabel(podLabel, target string) monitoringv1.RelabelConfig {
	return monitoringv1.RelabelConfig{
		SourceLabels: []monitoringv1.LabelName{monitoringv1.LabelName("__meta_kubernetes_pod_label_" + strutil.SanitizeLabelName(podLabel))},
		TargetLabel:  target,
		Action:       "replace",
	}
}

// buildDashboard is the ConfigMap of the service's Grafana dashboard, labelled for the Grafana
// chart's dashboard sidecar.
func buildDashboard(svc *api.InferenceService) (*corev1.ConfigMap, error) {
	dashboard, err := Dashboard(svc)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		TypeMeta: typeMeta(KindConfigMap),
		ObjectMeta: metav1.ObjectMeta{Name: api.DashboardName(svc.Name), Namespace: svc.Namespace,
			Labels: merged(serviceObjectLabels(svc), map[string]string{GrafanaDashboardLabel: "1"})},
		Data: map[string]string{svc.Name + ".json": dashboard},
	}, nil
}

// GrafanaDashboardLabel is the label the Grafana chart's sidecar loads dashboards from
// (sidecar.dashboards.label, default grafana_dashboard).
const GrafanaDashboardLabel = "grafana_dashboard"
