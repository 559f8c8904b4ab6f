// SPDX-License-Identifier: Apache-2.0

package api

import "strconv"

// The names of every object a service creates, in one place: validation checks their lengths, the
// core gives them. They follow the fusioninfer controller's names
// (docs/design/0000-the-fusioninfer-design.md, docs/design/0008-router.md).

// LeaderWorkerSetName is the name of the LWS of one replica of a role: {service}-{role}-{i}.
func LeaderWorkerSetName(serviceName, roleName string, replica int32) string {
	return serviceName + "-" + TaskName(roleName, replica)
}

// PodMonitorName is the PodMonitor of a role's servers (or of the router's Endpoint Picker):
// {service}-{role}.
func PodMonitorName(serviceName, roleName string) string { return serviceName + "-" + roleName }

// DashboardName is the ConfigMap of the service's Grafana dashboard: {service}-dashboard.
func DashboardName(serviceName string) string { return serviceName + "-dashboard" }

// ElasticSuffix ends the names of an autoscaled role's elastic objects.
const ElasticSuffix = "-elastic"

// ElasticLeaderWorkerSetName is the LWS of an autoscaled role's elastic replicas, whose replicas
// KEDA sets: {service}-{role}-elastic. Its ScaledObject has the same name.
func ElasticLeaderWorkerSetName(serviceName, roleName string) string {
	return serviceName + "-" + ElasticTaskName(roleName)
}

// ElasticTaskName is the Volcano task key of an autoscaled role's elastic replicas: {role}-elastic.
func ElasticTaskName(roleName string) string { return roleName + ElasticSuffix }

// TaskName is a replica's Volcano task key: {role}-{i}.
func TaskName(roleName string, replica int32) string {
	return roleName + "-" + strconv.Itoa(int(replica))
}

// PodGroupName is the name of the service's shared PodGroup: the service name.
func PodGroupName(serviceName string) string { return serviceName }

// KarpenterNodePoolName is the name of a pool's Karpenter NodePool: {service}-{pool}.
func KarpenterNodePoolName(serviceName, poolName string) string { return serviceName + "-" + poolName }

// Names of a router's objects.
func PoolName(serviceName string) string           { return serviceName + "-pool" }
func EndpointPickerName(serviceName string) string { return serviceName + "-epp" }

// EndpointPickerMetricsTokenName is the Secret holding a token of the Endpoint Picker's
// ServiceAccount, which its PodMonitor scrapes /metrics with: {service}-epp-metrics-token.
func EndpointPickerMetricsTokenName(serviceName string) string {
	return serviceName + "-epp-metrics-token"
}
func EndpointPickerConfigName(serviceName string) string { return serviceName + "-epp-config" }
func HTTPRouteName(serviceName string) string            { return serviceName + "-httproute" }
func ShadowServiceName(serviceName string) string        { return serviceName + "-shadow" }

// RouterServiceName is the Service clients call in standalone mode (the proxy beside the
// Endpoint Picker): {service}-router. RouterProxyConfigName is its Envoy bootstrap's ConfigMap:
// {service}-router-proxy.
func RouterServiceName(serviceName string) string     { return serviceName + "-router" }
func RouterProxyConfigName(serviceName string) string { return serviceName + "-router-proxy" }

// DisaggSidecarName names the service account, Role and RoleBinding of the decode leaders'
// disaggregation sidecar: {service}-disagg-sidecar.
func DisaggSidecarName(serviceName string) string { return serviceName + "-disagg-sidecar" }

// DualPodsControllerName names FMA's controller Deployment: {service}-dual-pods-controller.
func DualPodsControllerName(serviceName string) string { return serviceName + "-dual-pods-controller" }

// FMAServiceAccountName names FMA's controller account: {service}-fma-controllers.
func FMAServiceAccountName(serviceName string) string { return serviceName + FMAServiceAccountSuffix }

// The names of a model's objects: {service}-model (the cache claim), {service}-model-download
// (the Job that fills it), {service}-compile-cache; with the role's name after the service's for
// a role that sets its own model (owner, see ModelOwner).
func ModelCacheName(serviceName, owner string) string {
	return modelPrefix(serviceName, owner) + "model"
}
func ModelDownloadJobName(serviceName, owner string) string {
	return modelPrefix(serviceName, owner) + "model-download"
}
func CompileCacheName(serviceName, owner string) string {
	return modelPrefix(serviceName, owner) + "compile-cache"
}

// AdaptersConfigMapName is the ConfigMap of a model's LoRA adapter list, which the servers'
// loader sidecars read: {service}-adapters ({service}-{role}-adapters for a role's own model).
func AdaptersConfigMapName(serviceName, owner string) string {
	return modelPrefix(serviceName, owner) + "adapters"
}

// ModelRewriteName is the InferenceModelRewrite of a model's adapter split: {service}-{split}
// ({service}-{role}-{split} for a role's own model).
func ModelRewriteName(serviceName, owner, split string) string {
	return modelPrefix(serviceName, owner) + split
}

func modelPrefix(serviceName, owner string) string {
	if owner == "" {
		return serviceName + "-"
	}
	return serviceName + "-" + owner + "-"
}

// Kubernetes' recommended labels, which the render sets on the objects it builds (core/render
// labels.go: every LWS, pod and service-wide object), in place of a user's own of the same key:
// Warnings says so where a user gives one.
const (
	LabelAppName      = "app.kubernetes.io/name"
	LabelAppInstance  = "app.kubernetes.io/instance"
	LabelAppComponent = "app.kubernetes.io/component"
	LabelAppPartOf    = "app.kubernetes.io/part-of"
	LabelAppManagedBy = "app.kubernetes.io/managed-by"
)

// AppLabels are those labels' keys.
var AppLabels = []string{LabelAppName, LabelAppInstance, LabelAppComponent, LabelAppPartOf, LabelAppManagedBy}
