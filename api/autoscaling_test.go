// SPDX-License-Identifier: Apache-2.0

package api

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
)

// autoscaledService is story 4 with decode autoscaled 2..5 on waiting requests and prefill
// following it.
func autoscaledService() *InferenceService {
	s := validService()
	s.Spec.Monitoring = &Monitoring{PrometheusAddress: "http://prometheus.monitoring:9090"}
	s.Spec.Roles[1].Autoscaling = &Autoscaling{MaxReplicas: 5, Metric: MetricRequestsWaiting, Target: 4, ScaleDownDelay: "10m"}
	s.Spec.Roles[0].Autoscaling = &Autoscaling{MaxReplicas: 3, Follow: &AutoscalingFollow{Role: "decode", Ratio: 0.5}}
	return s
}

func TestAutoscaledServicePasses(t *testing.T) {
	assert.Empty(t, Validate(autoscaledService()))
	s := autoscaledService()
	s.Spec.Roles[1].Autoscaling.Metric = `sum(rate(vllm:request_success_total{namespace="llm"}[2m]))`
	assert.Empty(t, Validate(s), "a PromQL query of the user's")
	assert.Equal(t, int32(2), s.Spec.Roles[1].ReplicaCount(), "replicas are the base")
	assert.Equal(t, int32(3), s.Spec.Roles[1].ElasticReplicaLimit())
}

func TestAutoscalingRules(t *testing.T) {
	decode := func(s *InferenceService) *Autoscaling { return s.Spec.Roles[1].Autoscaling }
	routerOf := func(s *InferenceService) *Role { return &s.Spec.Roles[2] } // atZero's
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"minReplicas above maxReplicas", func(s *InferenceService) {
			s.Spec.Roles[1].Replicas = nil
			decode(s).MinReplicas, decode(s).MaxReplicas = ptr.To(4), 3
		}, "spec.roles[1].autoscaling.maxReplicas: Invalid value: 3: must be above minReplicas (4): the autoscaler adds replicas above them; without room for one, remove autoscaling"},
		{"maxReplicas at minReplicas: no room for an elastic replica", func(s *InferenceService) {
			s.Spec.Roles[1].Replicas = nil
			decode(s).MinReplicas, decode(s).MaxReplicas = ptr.To(3), 3
		}, "spec.roles[1].autoscaling.maxReplicas: Invalid value: 3: must be above minReplicas (3): the autoscaler adds replicas above them; without room for one, remove autoscaling"},
		{"maxReplicas above the replica bound", func(s *InferenceService) { decode(s).MaxReplicas = 4294967297 },
			"spec.roles[1].autoscaling.maxReplicas: Invalid value: 4294967297: must be >= 1 and <= 10000"},
		{"minReplicas above the replica bound, not wrapped", func(s *InferenceService) {
			s.Spec.Roles[1].Replicas = nil
			decode(s).MinReplicas = ptr.To(4294967297)
		}, "spec.roles[1].autoscaling.maxReplicas: Invalid value: 5: must be above minReplicas (4294967297): the autoscaler adds replicas above them; without room for one, remove autoscaling"},
		{"maxReplicas required", func(s *InferenceService) { decode(s).MaxReplicas = 0 },
			"spec.roles[1].autoscaling.maxReplicas: Invalid value: 0: must be >= 1 and <= 10000"},
		{"minReplicas not negative", func(s *InferenceService) { s.Spec.Roles[1].Replicas = nil; decode(s).MinReplicas = ptr.To(-1) },
			"spec.roles[1].autoscaling.minReplicas: Invalid value: -1: must be >= 0 and <= 10000"},
		{"at zero only behind a router", func(s *InferenceService) { s.Spec.Roles[1].Replicas = nil; decode(s).MinReplicas = ptr.To(0) },
			"spec.roles[1].autoscaling.minReplicas: Invalid value: 0: a role at zero replicas has no server to answer: it needs a router whose Endpoint Picker holds requests until it wakes; add a router role (endpointPicker.release one of llm-d-router-v0.10.0, gie-v1.5.0), or set minReplicas >= 1"},
		{"at zero only behind a picker that holds requests", func(s *InferenceService) {
			atZero(s, 1)
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE}
		}, "spec.roles[1].autoscaling.minReplicas: Invalid value: 0: the Endpoint Picker of gie-v1.2.0 has no flow control to hold a request while the role has no server"},
		{"at zero not on vLLM's series", func(s *InferenceService) { atZero(s, 1); decode(s).Metric = MetricKVCacheUsage },
			`spec.roles[1].autoscaling.metric: Invalid value: "vllm:kv_cache_usage_perc": is a series of vLLM's servers, and at zero replicas none runs to report it`},
		{"the picker's load needs a picker", func(s *InferenceService) { decode(s).Metric = MetricPickerRequests },
			`spec.roles[1].autoscaling.metric: Invalid value: "epp:requests": is the router's Endpoint Picker's load and the service has no router: add a router role with endpointPicker.release one of llm-d-router-v0.10.0, gie-v1.5.0`},
		{"the picker's load needs a picker that exports it", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter, EndpointPicker: &EndpointPicker{Release: EPPReleaseGIE}})
			decode(s).Metric = MetricPickerRequests
		}, `spec.roles[1].autoscaling.metric: Invalid value: "epp:requests": is the router's Endpoint Picker's load and the Endpoint Picker of gie-v1.2.0 does not export it`},
		{"wakeTimeout a duration", func(s *InferenceService) { atZero(s, 1); decode(s).WakeTimeout = "5 minutes" },
			`spec.roles[1].autoscaling.wakeTimeout: Invalid value: "5 minutes": must be a duration such as "10m", above 0 and at most 1h0m0s`},
		{"wakeTimeout at most an hour", func(s *InferenceService) { atZero(s, 1); decode(s).WakeTimeout = "2h" },
			`spec.roles[1].autoscaling.wakeTimeout: Invalid value: "2h": must be a duration such as "10m", above 0 and at most 1h0m0s`},
		{"a picker configuration of the user's holds requests", func(s *InferenceService) {
			atZero(s, 1)
			routerOf(s).EndpointPickerConfig = routerConfig(t, "")
		}, `spec.roles[2].endpointPickerConfig: Invalid value: "(the configuration)": a role at zero replicas needs the picker to hold requests until it wakes: add "flowControl" to featureGates, and flowControl.defaultRequestTTL of at least 10m0s (its wakeTimeout)`},
		{"a picker configuration of the user's holds requests long enough", func(s *InferenceService) {
			atZero(s, 1)
			routerOf(s).EndpointPickerConfig = routerConfig(t, "featureGates: [flowControl]\n")
		}, `spec.roles[2].endpointPickerConfig: Invalid value: "(the configuration)": flowControl.defaultRequestTTL is 1m0s: a request that arrives while a role is at zero replicas would be dropped before the role wakes; set it to at least 10m0s (its wakeTimeout)`},
		{"minReplicas and replicas agree", func(s *InferenceService) { decode(s).MinReplicas = ptr.To(3) },
			"spec.roles[1].autoscaling.minReplicas: Invalid value: 3: differs from replicas (2)"},
		{"not on a router", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter, Autoscaling: &Autoscaling{MaxReplicas: 2},
				RouterMode: RouterGateway, HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}})
		}, "spec.roles[2].autoscaling: Forbidden: a router's Endpoint Picker replicas elect one leader"},
		{"not on a standalone router", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter, Autoscaling: &Autoscaling{MaxReplicas: 2}})
		}, "spec.roles[2].autoscaling: Forbidden: a standalone router's Endpoint Picker replicas all serve"},
		{"not on a dual-pods role", func(s *InferenceService) {
			s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server(),
				ModelFlexibility: &ModelFlexibility{Mode: DualPods}, Autoscaling: &Autoscaling{MaxReplicas: 2, Metric: MetricKVCacheUsage, Target: 0.8}}}
		}, "spec.roles[0].autoscaling: Forbidden: a dual-pods role's servers are run by FMA's dual-pods controller"},
		{"not with gang mode taskMember", func(s *InferenceService) { s.Spec.GangPolicy = &GangPolicy{Mode: GangModeTaskMember} },
			"spec.roles[1].autoscaling: Forbidden: spec.gangPolicy.mode taskMember requires every replica in the gang"},
		{"a metric name that is not known", func(s *InferenceService) { decode(s).Metric = "vllm:num_requests_queued" },
			`spec.roles[1].autoscaling.metric: Unsupported value: "vllm:num_requests_queued": supported values: "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "epp:requests", "a PromQL query"`},
		{"a query that does not parse", func(s *InferenceService) { decode(s).Metric = "sum(vllm:num_requests_waiting" },
			`spec.roles[1].autoscaling.metric: Invalid value: "sum(vllm:num_requests_waiting": neither a known metric nor a PromQL query`},
		{"a metric required", func(s *InferenceService) { decode(s).Metric = "" },
			"spec.roles[1].autoscaling.metric: Required value: vllm:num_requests_waiting, vllm:kv_cache_usage_perc, epp:requests or a PromQL query (or set follow instead)"},
		{"target 0", func(s *InferenceService) { decode(s).Target = 0 },
			"spec.roles[1].autoscaling.target: Invalid value: 0: must be > 0"},
		{"target negative", func(s *InferenceService) { decode(s).Target = -1 },
			"spec.roles[1].autoscaling.target: Invalid value: -1: must be > 0"},
		{"target not a number", func(s *InferenceService) { decode(s).Target = math.NaN() },
			"spec.roles[1].autoscaling.target: Invalid value: NaN: must be > 0"},
		{"scaleDownDelay a duration", func(s *InferenceService) { decode(s).ScaleDownDelay = "10 minutes" },
			`spec.roles[1].autoscaling.scaleDownDelay: Invalid value: "10 minutes"`},
		{"scaleDownDelay at most an hour", func(s *InferenceService) { decode(s).ScaleDownDelay = "2h" },
			`spec.roles[1].autoscaling.scaleDownDelay: Invalid value: "2h": must be a duration such as "5m", at most 1h0m0s`},
		{"a Prometheus to read", func(s *InferenceService) { s.Spec.Monitoring = nil },
			`spec.monitoring.prometheusAddress: Required value: role "prefill" autoscales on a metric KEDA reads from Prometheus`},
		{"a Prometheus URL", func(s *InferenceService) { s.Spec.Monitoring.PrometheusAddress = "prometheus:9090" },
			`spec.monitoring.prometheusAddress: Invalid value: "prometheus:9090": must be an http:// or https:// URL`},
		{"follow and a metric", func(s *InferenceService) { s.Spec.Roles[0].Autoscaling.Metric = MetricKVCacheUsage },
			"spec.roles[0].autoscaling.follow: Forbidden: a role scales with another role's load or with its own metric, not both"},
		{"follow a role that exists", func(s *InferenceService) { s.Spec.Roles[0].Autoscaling.Follow.Role = "decoder" },
			`spec.roles[0].autoscaling.follow.role: Not found: "decoder"`},
		{"follow a role with a metric of its own", func(s *InferenceService) { s.Spec.Roles[1].Autoscaling = nil },
			`spec.roles[0].autoscaling.follow.role: Invalid value: "decode": must autoscale on a metric of its own`},
		{"follow not itself", func(s *InferenceService) { s.Spec.Roles[0].Autoscaling.Follow.Role = "prefill" },
			`spec.roles[0].autoscaling.follow.role: Invalid value: "prefill": a role cannot follow itself`},
		{"follow ratio > 0", func(s *InferenceService) { s.Spec.Roles[0].Autoscaling.Follow.Ratio = 0 },
			"spec.roles[0].autoscaling.follow.ratio: Invalid value: 0: must be > 0"},
		{"no role named as an elastic LWS", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "decode-elastic", ComponentType: ComponentTypeDecoder, Template: server()})
		}, `spec.roles[2].name: Invalid value: "decode-elastic": role "decode" autoscales, and its elastic LWS has this role's names`},
		{"the elastic LWS's names fit", func(s *InferenceService) {
			s.Name = "deepseek-r1-disaggregated-with-a-long-name"
			decode(s).MaxReplicas = 1000
		}, `spec.roles[1].name: Invalid value: "decode": the LeaderWorkerSet name "deepseek-r1-disaggregated-with-a-long-name-decode-elastic"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, autoscaledService, tc.mutate, tc.want) })
	}
}

// atZero puts the autoscaled decode role at zero replicas behind a standalone router: the
// service's load is then the picker's (its default metric).
func atZero(s *InferenceService, role int) {
	s.Spec.Roles[role].Replicas = nil
	s.Spec.Roles[role].Autoscaling.MinReplicas = ptr.To(0)
	s.Spec.Roles[role].Autoscaling.Metric = ""
	s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter})
}

// routerConfig is llm-d-router v0.10.0's prefill/decode preset as a configuration of the
// user's, its first lines replaced by head.
func routerConfig(t *testing.T, head string) string {
	cfg, err := eppconfig.RouterPreset(eppconfig.StrategyPDDisaggregation, true)
	require.NoError(t, err)
	text, err := eppconfig.MarshalRouter(cfg)
	require.NoError(t, err)
	return head + text
}

func TestScaleToZeroPasses(t *testing.T) {
	s := autoscaledService()
	atZero(s, 1)
	assert.Empty(t, Validate(s))
	assert.Equal(t, MetricPickerRequests, s.Spec.AutoscalingMetric(&s.Spec.Roles[1]), "the picker's load is the default behind a router")
	assert.True(t, s.Spec.Roles[1].ScalesToZero())
	assert.Equal(t, int32(0), s.Spec.MinRoleReplicas("decode"), "the gang needs no replica of a role at zero")
	assert.Equal(t, int32(5), s.Spec.Roles[1].ElasticReplicaLimit(), "every replica is elastic")
	assert.Equal(t, DefaultAutoscalingWakeTimeout, s.Spec.WakeTimeout())

	s.Spec.Roles[0].Replicas = nil
	s.Spec.Roles[0].Autoscaling.MinReplicas, s.Spec.Roles[0].Autoscaling.WakeTimeout = ptr.To(0), "20m"
	assert.Empty(t, Validate(s), "prefill following decode to zero")
	assert.Equal(t, 20*time.Minute, s.Spec.WakeTimeout(), "the longest wake of the roles at zero")

	s = autoscaledService()
	atZero(s, 1)
	s.Spec.Roles[2].EndpointPickerConfig = routerConfig(t, "featureGates: [flowControl]\nflowControl: {defaultRequestTTL: 15m}\n")
	assert.Empty(t, Validate(s), "a configuration of the user's that holds requests long enough")

	worker := Role{Name: "w", ComponentType: ComponentTypeWorker, Template: server(),
		Autoscaling: &Autoscaling{MinReplicas: ptr.To(0), MaxReplicas: 2, Target: 4}}
	s.Spec.Roles = []Role{worker, {Name: "router", ComponentType: ComponentTypeRouter, EndpointPicker: &EndpointPicker{Release: EPPReleaseGIE150}}}
	assert.Empty(t, Validate(s), "a worker at zero behind GIE v1.5.0's picker")
}

func TestElasticMaxUnavailable(t *testing.T) {
	cases := []struct {
		name           string
		maxUnavailable *intstr.IntOrString
		maxSurge       *int
		want           int32
	}{
		{"25% of 3 elastic replicas is at least 1", nil, nil, 1},
		{"50% of 3 rounds down", ptr.To(intstr.FromString("50%")), nil, 1},
		{"100% of 3", ptr.To(intstr.FromString("100%")), nil, 3},
		{"a count", ptr.To(intstr.FromInt32(2)), nil, 2},
		{"0 with a surge stays 0", ptr.To(intstr.FromInt32(0)), ptr.To(1), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			role := autoscaledService().Spec.Roles[1] // 2 base, at most 5: 3 elastic
			role.RolloutStrategy = &RolloutStrategy{MaxUnavailable: tc.maxUnavailable, MaxSurge: tc.maxSurge}
			assert.Equal(t, tc.want, role.ElasticMaxUnavailable())
		})
	}
}
