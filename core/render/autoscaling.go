// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
)

// An autoscaled role (docs/design/0014-autoscaling.md) keeps its base replicas, one LWS each, and
// adds one elastic LWS, "{service}-{role}-elastic", whose spec.replicas KEDA's ScaledObject
// owns: Pulumi creates it with none and never sets it again (ElasticFields). Each of its groups
// is a whole replica in the shared PodGroup, selected by the InferencePool like any other leader,
// and rolled by LWS's own rolling update after the base replicas' batches.

// KindScaledObject is KEDA's ScaledObject.
var KindScaledObject = TypeMeta{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject"}

// ElasticFields are the fields of an elastic LWS that the autoscaler owns once it exists.
var ElasticFields = []string{"spec.replicas"}

func elasticSuffix(roleName string) string      { return api.ElasticTaskName(roleName) }
func scaledObjectSuffix(roleName string) string { return roleName + "-scaledobject" }

// A role at zero replicas wakes when KEDA sees the picker's load, after the picker's series are
// scraped and KEDA's next look: every 5 s each, not their defaults' 30 s (KEDA's pollingInterval;
// Prometheus' scrape interval as prometheus-operator configures it), which would add up to a
// minute before the replica is even asked for.
const (
	wakePollingSeconds = 5
	wakeScrapeInterval = monitoringv1.Duration("5s")
)

// elasticRefs are an autoscaled role's elastic LWS and its ScaledObject.
func elasticRefs(svc *api.InferenceService, role *api.Role, dependsOn []string) []Ref {
	name := api.ElasticLeaderWorkerSetName(svc.Name, role.Name)
	return []Ref{
		{TypeMeta: KindLeaderWorkerSet, Name: name, Namespace: svc.Namespace, Suffix: elasticSuffix(role.Name),
			Role: role.Name, Elastic: true, DependsOn: dependsOn},
		{TypeMeta: KindScaledObject, Name: name, Namespace: svc.Namespace, Suffix: scaledObjectSuffix(role.Name),
			Role: role.Name, DependsOn: []string{elasticSuffix(role.Name)}},
	}
}

// elasticLabels are the labels of an elastic LWS and its pods: the role's, without a replica
// index (LWS labels each group with its own, leaderworkerset.sigs.k8s.io/group-index).
func elasticLabels(serviceName string, role *api.Role, revision string) map[string]string {
	labels := roleLabels(serviceName, role)
	labels[LabelRevision] = revision
	labels[LabelAppInstance] = api.ElasticLeaderWorkerSetName(serviceName, role.Name)
	return labels
}

// buildElasticLeaderWorkerSet is the LWS of a role's elastic replicas: created with none, each a
// group of nodeCount pods, rolled by LWS with the role's maxUnavailable and maxSurge.
func buildElasticLeaderWorkerSet(svc *api.InferenceService, role *api.Role, templates roleTemplates, awaited bool) *lwsv1.LeaderWorkerSet {
	rollout := &lwsv1.RollingUpdateConfiguration{
		Partition:      ptr.To[int32](0),
		MaxUnavailable: intstr.FromInt32(role.ElasticMaxUnavailable()),
		MaxSurge:       intstr.FromInt32(role.MaxSurge()),
	}
	return newLeaderWorkerSet(svc, role, leaderWorkerSetOf{
		name: api.ElasticLeaderWorkerSetName(svc.Name, role.Name), task: api.ElasticTaskName(role.Name),
		labels: elasticLabels(svc.Name, role, templates.revision), replicas: 0, rollout: rollout,
	}, templates, awaited)
}

// elasticSubGroup is the PodGroup's policy for a role's elastic replicas: each LWS group whole,
// none required (the base replicas are the gang's minimal set).
func elasticSubGroup(svc *api.InferenceService, role *api.Role) volcanov1beta1.SubGroupPolicySpec {
	return volcanov1beta1.SubGroupPolicySpec{
		Name:         api.ElasticTaskName(role.Name),
		SubGroupSize: ptr.To(role.NodeCount()),
		MinSubGroups: ptr.To[int32](0),
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			LabelService:          svc.Name,
			LabelRoleName:         role.Name,
			lwsv1.SetNameLabelKey: api.ElasticLeaderWorkerSetName(svc.Name, role.Name),
		}},
		MatchLabelKeys:  []string{lwsv1.GroupIndexLabelKey},
		NetworkTopology: networkTopologySpec(svc.Spec.RoleTopologyPolicy(role)),
	}
}

// baseReplicasOnly narrows a role's subgroup policy to its base replicas, which carry a replica
// index; the elastic replicas have a policy of their own.
func baseReplicasOnly(selector *metav1.LabelSelector) {
	selector.MatchExpressions = append(selector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: LabelReplicaIndex, Operator: metav1.LabelSelectorOpExists})
}

// buildScaledObject is KEDA's ScaledObject for a role's elastic LWS: a Prometheus trigger whose
// query is the load the base replicas do not carry, so KEDA's HPA asks for
// ceil(load / target) - base elastic replicas, between 0 and maxReplicas - base.
func buildScaledObject(svc *api.InferenceService, role *api.Role) *keda.ScaledObject {
	as := role.Autoscaling
	load, target := roleLoad(svc, role)
	delay := int32(as.ScaleDownDelayOrDefault().Seconds())
	base := float64(role.ReplicaCount()) * target
	return &keda.ScaledObject{
		TypeMeta: metav1.TypeMeta{APIVersion: KindScaledObject.APIVersion, Kind: KindScaledObject.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        api.ElasticLeaderWorkerSetName(svc.Name, role.Name),
			Namespace:   svc.Namespace,
			Labels:      merged(svc.Labels, roleLabels(svc.Name, role)),
			Annotations: map[string]string{AnnotationPulumiSkipAwait: "true"}, // KEDA's readiness is its own
		},
		Spec: keda.ScaledObjectSpec{
			ScaleTargetRef: &keda.ScaleTarget{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet",
				Name: api.ElasticLeaderWorkerSetName(svc.Name, role.Name)},
			PollingInterval: pollingInterval(role),
			CooldownPeriod:  ptr.To(delay),
			MinReplicaCount: ptr.To[int32](0),
			MaxReplicaCount: ptr.To(role.ElasticReplicaLimit()),
			Advanced: &keda.AdvancedConfig{HorizontalPodAutoscalerConfig: &keda.HorizontalPodAutoscalerConfig{
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(delay)},
				},
			}},
			Triggers: []keda.ScaleTriggers{{
				Type:       "prometheus",
				MetricType: autoscalingv2.AverageValueMetricType,
				Metadata: map[string]string{
					"serverAddress": svc.Spec.Monitoring.PrometheusAddress,
					"query":         fmt.Sprintf("clamp_min((%s) - %s, 0)", load, formatFloat(base)),
					"threshold":     formatFloat(target),
				},
			}},
		},
	}
}

// pollingInterval is how often KEDA reads a role's load: KEDA's default but for a role at zero.
func pollingInterval(role *api.Role) *int32 {
	if role.ScalesToZero() {
		return ptr.To[int32](wakePollingSeconds)
	}
	return nil
}

// roleLoad is the PromQL of the load a role scales with and the target one replica carries: its
// own metric, summed over its servers, or a query of the user's; a role that follows another
// takes that role's load with its target divided by the ratio. A fraction of one server's
// (the KV-cache use) is averaged over a replica's servers, its data parallel ranks: a replica's
// use is their mean, and the sum over servers divided by the servers a replica runs is the sum
// of the replicas' means.
func roleLoad(svc *api.InferenceService, role *api.Role) (string, float64) {
	as := role.Autoscaling
	if as.Follow != nil {
		followed := svc.Spec.RoleNamed(as.Follow.Role)
		load, target := roleLoad(svc, followed)
		return load, target / as.Follow.Ratio
	}
	metric := svc.Spec.AutoscalingMetric(role)
	switch {
	case metric == api.MetricPickerRequests:
		return pickerLoad(svc), as.Target
	case api.IsKnownMetric(metric):
		load := fmt.Sprintf(`sum(%s{namespace=%q,pod=~%q})`, metric, svc.Namespace, servingPodPattern(svc.Name, role))
		if servers := replicaServers(role); metric == api.MetricKVCacheUsage && servers > 1 {
			load = fmt.Sprintf("%s / %d", load, servers)
		}
		return load, as.Target
	}
	return metric, as.Target
}

// pickerLoad is the PromQL of the requests the router's Endpoint Picker holds in its flow-control
// queue or has running on the servers, summed over its replicas (a standby's are 0): the one load
// that exists while a role has no server, for KEDA to wake it by. Before the first request the
// series are absent, which KEDA reads as 0 (the trigger's ignoreNullValues, true by default).
func pickerLoad(svc *api.InferenceService) string {
	series := svc.Spec.Router().EndpointPickerRelease().RequestSeries()
	// a Deployment's pods are named "{deployment}-{template hash}-{suffix}"
	pods := api.EndpointPickerName(svc.Name) + "-[a-z0-9]+-[a-z0-9]+"
	return fmt.Sprintf(`sum({__name__=~%q,namespace=%q,pod=~%q})`, strings.Join(series, "|"), svc.Namespace, pods)
}

// replicaServers are the vLLM servers of one replica, each with its own metrics: one a data
// parallel rank (parallelism.data), else one (under Ray only the leader serves).
func replicaServers(role *api.Role) int {
	if role.DataParallel() {
		return role.Parallelism.Data
	}
	return 1
}

// servingPodPattern matches the names of a role's pods that run servers: LWS names a group's
// leader "{lws}-{group}" and its workers "{lws}-{group}-{index}". Under Ray only the leader
// serves; under vLLM's own data parallel every pod runs ranks (dataparallel.go), so its workers'
// load counts too.
func servingPodPattern(serviceName string, role *api.Role) string {
	pattern := fmt.Sprintf("%s-%s-([0-9]+|elastic)-[0-9]+", serviceName, role.Name)
	if role.DataParallel() && role.MultiNode() {
		pattern += "(-[0-9]+)?"
	}
	return pattern
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
