// SPDX-License-Identifier: Apache-2.0

package api

import (
	"reflect"
	"strings"
	"testing"

	"encoding/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// httpRoute is a route written as JSON, as a manifest or an SDK gives it.
func httpRoute(text string) map[string]any {
	var route map[string]any
	if err := json.Unmarshal([]byte(text), &route); err != nil {
		panic(err)
	}
	return route
}

// routedService is story 4 with a router in front.
func routedService() *InferenceService {
	svc := validService()
	svc.Spec.Roles = append(svc.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter,
		HTTPRoute: httpRoute(`{"parentRefs":[{"name":"inference-gateway"}],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/v1"}}]}]}`)})
	return svc
}

func TestRoutedServicesPass(t *testing.T) {
	assert.Empty(t, Validate(routedService()))
	monolithic := routedService()
	monolithic.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server("--port", "9000")}, monolithic.Spec.Roles[2]}
	monolithic.Spec.Roles[1].Strategy = "prefix-cache"
	monolithic.Spec.Roles[1].PoolAPIVersion = PoolV1Alpha2
	monolithic.Spec.Roles[1].FailureMode = FailOpen
	monolithic.Spec.Roles[1].ShadowService = true
	monolithic.Spec.Roles[1].EndpointPicker = &EndpointPicker{Replicas: ptr.To(2), Release: EPPReleaseGIE, Image: "mirror.example.com/gateway-api-inference-extension/epp:v1.2.0"}
	assert.Empty(t, Validate(monolithic))
}

// A router without httproute is standalone and needs no Gateway; with one it is gateway mode.
func TestRouterModeDefaults(t *testing.T) {
	svc := routedService()
	router := &svc.Spec.Roles[2]
	assert.Equal(t, RouterGateway, router.Mode())
	router.HTTPRoute = nil
	assert.Equal(t, RouterStandalone, router.Mode())
	assert.Empty(t, Validate(svc))
	router.RouterMode = RouterStandalone
	assert.Empty(t, Validate(svc))
}

func TestRouterRules(t *testing.T) {
	routerOf := func(s *InferenceService) *Role { return &s.Spec.Roles[2] }
	decodeServer := func(s *InferenceService) *corev1.Container { return &s.Spec.Roles[1].Template.Spec.Containers[0] }
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"no template", func(s *InferenceService) { routerOf(s).Template = server() }, "spec.roles[2].template: Forbidden: a router runs the Endpoint Picker"},
		{"no node pool", func(s *InferenceService) { routerOf(s).NodePool = "gpus" }, "spec.roles[2].nodePool: Forbidden"},
		// Accepted and ignored while the router's fields were listed by hand.
		{"no model", func(s *InferenceService) { routerOf(s).Model = &Model{Source: "hf://Qwen/Qwen3-8B"} }, "spec.roles[2].model: Forbidden: only a serving role (worker, prefiller, decoder) loads a model"},
		{"no awaitTimeout", func(s *InferenceService) { routerOf(s).AwaitTimeout = "90m" },
			"spec.roles[2].awaitTimeout: Forbidden: a router runs the Endpoint Picker, not model servers: awaitTimeout is how long a serving role's servers may take to load their model"},
		{"no autoscaling of lwepp's replicas, which all serve", func(s *InferenceService) {
			routerOf(s).Autoscaling = &Autoscaling{MaxReplicas: 3}
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseLWEPP}
			routerOf(s).Strategy = ""
		}, "spec.roles[2].autoscaling: Forbidden: the Endpoint Picker of gie-lwepp-v1.6.0 has no autoscaler: give it endpointPicker.replicas (its replicas all serve)"},
		{"no network topology", func(s *InferenceService) {
			routerOf(s).NetworkTopology = &NetworkTopologyPolicy{Mode: NetworkTopologyHard}
		},
			"spec.roles[2].networkTopology: Forbidden"},
		{"a serving role has no router field", func(s *InferenceService) { s.Spec.Roles[0].FailureMode = FailOpen },
			"spec.roles[0].failureMode: Forbidden: only a router role has failureMode"},
		{"unknown strategy", func(s *InferenceService) { routerOf(s).Strategy = "round-robin" },
			`spec.roles[2].strategy: Unsupported value: "round-robin": supported values: "kv-cache-utilization", "lora-affinity", "pd-disaggregation", "precise-prefix-cache", "prefix-cache", "queue-size"`},
		{"a prefill/decode service routes with pd-disaggregation", func(s *InferenceService) { routerOf(s).Strategy = "queue-size" },
			`spec.roles[2].strategy: Invalid value: "queue-size": a service with prefillers and decoders routes with pd-disaggregation`},
		{"endpointPickerConfig that does not parse", func(s *InferenceService) { routerOf(s).EndpointPickerConfig = "plugins: [" },
			"spec.roles[2].endpointPickerConfig: Invalid value"},
		{"endpointPickerConfig with an unknown plugin", func(s *InferenceService) {
			routerOf(s).EndpointPickerConfig = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: round-robin-picker\n"
		}, "spec.roles[2].endpointPickerConfig: Invalid value: \"(the configuration)\": plugins[0]: plugin type 'round-robin-picker' is not registered in llm-d-router v0.10.0"},
		{"the older release with an unknown plugin", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE}
			routerOf(s).EndpointPickerConfig = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: round-robin-picker\n"
		}, "spec.roles[2].endpointPickerConfig: Invalid value: \"(the configuration)\": plugin types not in llm-d-inference-scheduler"},
		{"a parameter llm-d-router v0.10.0 refuses, with its path", func(s *InferenceService) {
			routerOf(s).EndpointPickerConfig = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: pd-profile-handler\n  parameters: {threshold: 0}\n"
		}, "spec.roles[2].endpointPickerConfig: Invalid value: \"(the configuration)\": plugins[0].parameters: failed to create plugin 'pd-profile-handler' (type: pd-profile-handler): failed to parse the parameters of the 'pd-profile-handler' profile handler - unknown field \"threshold\": llm-d-router v0.10.0 removed it from pd-profile-handler; use prefix-based-pd-decider's nonCachedTokens"},
		{"an LMCache decode server on llm-d-router v0.10.0, whose sidecar has no LMCache connector", func(s *InferenceService) {
			decodeServer(s).Args = append(decodeServer(s).Args, "--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`)
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "--kv-transfer-config": llm-d-router v0.10.0's disaggregation sidecar has no LMCache connector`},
		{"an unknown release", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Release: "llm-d-router-v0.9.0"}
		}, `spec.roles[2].endpointPicker.release: Unsupported value: "llm-d-router-v0.9.0": supported values: "llm-d-router-v0.10.0", "gie-v1.5.0", "gie-v1.2.0", "gie-lwepp-v1.6.0"`},
		{"a v1alpha2 pool on an Endpoint Picker that reads only v1 pools", func(s *InferenceService) {
			routerOf(s).PoolAPIVersion = PoolV1Alpha2
		}, `spec.roles[2].poolApiVersion: Invalid value: "v1alpha2": the Endpoint Picker of endpointPicker.release llm-d-router-v0.10.0 reads only inference.networking.k8s.io InferencePools: use v1 (the default), or endpointPicker.release gie-v1.2.0`},
		{"a v1alpha2 pool on GIE v1.5.0", func(s *InferenceService) {
			s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}, *routerOf(s)}
			s.Spec.Roles[1].PoolAPIVersion = PoolV1Alpha2
			s.Spec.Roles[1].EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE150}
		}, `spec.roles[1].poolApiVersion: Invalid value: "v1alpha2": the Endpoint Picker of endpointPicker.release gie-v1.5.0 reads only inference.networking.k8s.io InferencePools`},
		{"prefill/decode on GIE v1.5.0, with the way out", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE150}
		}, `spec.roles[2].endpointPicker.release: Invalid value: "gie-v1.5.0": GIE v1.5.0's Endpoint Picker has no prefill/decode plugins (cmd/epp/runner/runner.go registers none): route a service with prefillers and decoders with endpointPicker.release llm-d-router-v0.10.0 (the default) or gie-v1.2.0`},
		{"prefill/decode on lwepp", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseLWEPP}
		}, `spec.roles[2].endpointPicker.release: Invalid value: "gie-lwepp-v1.6.0": GIE's lightweight Endpoint Picker picks round-robin and cannot route prefill/decode`},
		{"a strategy on lwepp", func(s *InferenceService) {
			s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}, *routerOf(s)}
			s.Spec.Roles[1].EndpointPicker = &EndpointPicker{Release: EPPReleaseLWEPP}
			s.Spec.Roles[1].Strategy = "prefix-cache"
		}, `spec.roles[1].strategy: Invalid value: "prefix-cache": endpointPicker.release gie-lwepp-v1.6.0 picks endpoints round-robin and reads no configuration: remove the strategy`},
		{"a configuration on lwepp", func(s *InferenceService) {
			s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}, *routerOf(s)}
			s.Spec.Roles[1].EndpointPicker = &EndpointPicker{Release: EPPReleaseLWEPP}
			s.Spec.Roles[1].EndpointPickerConfig = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\n"
		}, `spec.roles[1].endpointPickerConfig: Invalid value: "(the configuration)": endpointPicker.release gie-lwepp-v1.6.0 reads no configuration (cmd/lwepp has no --config-file)`},
		{"an llm-d plugin on GIE v1.5.0", func(s *InferenceService) {
			s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}, *routerOf(s)}
			s.Spec.Roles[1].EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE150}
			s.Spec.Roles[1].EndpointPickerConfig = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: decode-filter\n"
		}, `spec.roles[1].endpointPickerConfig: Invalid value: "(the configuration)": plugins[0]: plugin type 'decode-filter' is not registered in GIE v1.5.0's EPP`},
		{"an lwepp image on the default release", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Image: "registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0"}
		}, `spec.roles[2].endpointPicker.image: Invalid value: "registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0": registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0 is gateway-api-inference-extension lwepp's image; endpointPicker.release is llm-d-router-v0.10.0: set the release to gie-lwepp-v1.6.0`},
		{"an image of another release", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Image: "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0"}
		}, "spec.roles[2].endpointPicker.image: Invalid value: \"registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0\": registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0 is gateway-api-inference-extension's image; endpointPicker.release is llm-d-router-v0.10.0"},
		{"a reference EPP image cannot route prefill/decode", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE, Image: "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0"}
		}, "spec.roles[2].endpointPicker.image: Invalid value: \"registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0\": registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0 is gateway-api-inference-extension"},
		{"unknown CRD groups", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{CRDGroups: "inference.networking.k8s.io"}
		},
			`spec.roles[2].endpointPicker.crdGroups: Unsupported value: "inference.networking.k8s.io": supported values: "inference.networking.x-k8s.io", "llm-d.ai", "both"`},
		{"GIE v1.2.0 on a cluster without the Inference Extension's objectives", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE, CRDGroups: CRDGroupsLLMD}
		}, `spec.roles[2].endpointPicker.crdGroups: Invalid value: "llm-d.ai": the Endpoint Picker of gie-v1.2.0 watches InferenceObjectives of inference.networking.x-k8s.io whatever the cluster has`},
		{"endpointPicker replicas bounded", func(s *InferenceService) { routerOf(s).EndpointPicker = &EndpointPicker{Replicas: ptr.To(0)} },
			"spec.roles[2].endpointPicker.replicas: Invalid value: 0: must be >= 1 and <= 5"},
		{"endpointPicker requests within limits", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
		}, "spec.roles[2].endpointPicker.resources.requests: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi"},
		// issue 55: the picker's resources follow a container's rules
		{"endpointPicker requests not negative", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}
		}, `spec.roles[2].endpointPicker.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"endpointPicker resources are a container's", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Resources: &corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"gpu": resource.MustParse("1")}}}
		}, `spec.roles[2].endpointPicker.resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers`},
		{"poolApiVersion known", func(s *InferenceService) { routerOf(s).PoolAPIVersion = "v1beta1" },
			`spec.roles[2].poolApiVersion: Unsupported value: "v1beta1": supported values: "v1", "v1alpha2"`},
		{"failureMode known", func(s *InferenceService) { routerOf(s).FailureMode = "FailSafe" },
			`spec.roles[2].failureMode: Unsupported value: "FailSafe"`},
		{"httproute that does not parse", func(s *InferenceService) {
			routerOf(s).HTTPRoute = httpRoute(`{"parentRefs":[{"name":"gw"}],"rule":[]}`)
		},
			`spec.roles[2].httproute: Invalid value: "(the route)": not a Gateway API HTTPRouteSpec: error unmarshaling JSON: while decoding JSON: json: unknown field "rule"`},
		{"httproute needs parentRefs", func(s *InferenceService) { routerOf(s).HTTPRoute = httpRoute(`{"hostnames":["llm.example.com"]}`) },
			"spec.roles[2].httproute.parentRefs: Required value: the Gateway the route attaches to"},
		{"a parentRef names its Gateway", func(s *InferenceService) { routerOf(s).HTTPRoute = httpRoute(`{"parentRefs":[{"name":"gw"},{}]}`) },
			"spec.roles[2].httproute.parentRefs[1].name: Required value: the name of the Gateway the route attaches to, 1 to 253 characters"},
		{"gateway mode needs parentRefs", func(s *InferenceService) {
			routerOf(s).HTTPRoute, routerOf(s).RouterMode = nil, RouterGateway
		}, "spec.roles[2].httproute.parentRefs: Required value: the Gateway the route attaches to"},
		{"standalone mode has no httproute", func(s *InferenceService) { routerOf(s).RouterMode = RouterStandalone },
			"spec.roles[2].httproute: Forbidden: spec.roles[2].routerMode is standalone"},
		// issue 56: a standalone proxy has no destination to fail open to but a client's forged one
		{"standalone fails closed", func(s *InferenceService) {
			routerOf(s).HTTPRoute, routerOf(s).FailureMode = nil, FailOpen
		}, `spec.roles[2].failureMode: Invalid value: "FailOpen": a standalone router's proxy sends a request only where its Endpoint Picker says`},
		{"a proxy only in standalone mode", func(s *InferenceService) {
			routerOf(s).EndpointPicker = &EndpointPicker{Proxy: &RouterProxy{Image: "envoy"}}
		}, "spec.roles[2].endpointPicker.proxy: Forbidden: only a standalone router runs a proxy beside its Endpoint Picker"},
		{"the proxy's resources are a container's", func(s *InferenceService) {
			routerOf(s).HTTPRoute = nil
			routerOf(s).EndpointPicker = &EndpointPicker{Proxy: &RouterProxy{Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}}
		}, `spec.roles[2].endpointPicker.proxy.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"routerMode known", func(s *InferenceService) { routerOf(s).RouterMode = "sidecar" },
			`spec.roles[2].routerMode: Unsupported value: "sidecar": supported values: "standalone", "gateway"`},
		{"the standalone Service fits a DNS label", func(s *InferenceService) {
			s.Name = strings.Repeat("d", 57)
			s.Spec.Roles[0].Name, s.Spec.Roles[1].Name = "p", "d"
			routerOf(s).HTTPRoute = nil
		}, `the router's Service "` + strings.Repeat("d", 57) + `-router" is 64 characters`},
		{"httproute backendRefs are the router's", func(s *InferenceService) {
			routerOf(s).HTTPRoute = httpRoute(`{"parentRefs":[{"name":"gw"}],"rules":[{},{"backendRefs":[{"name":"other"}]}]}`)
		}, "spec.roles[2].httproute.rules[1].backendRefs: Forbidden: set by the router"},
		{"router Services fit a DNS label", func(s *InferenceService) {
			s.Name = strings.Repeat("d", 57)
			s.Spec.Roles[0].Name, s.Spec.Roles[1].Name = "p", "d"
			routerOf(s).ShadowService = true
		}, `the router's Service "` + strings.Repeat("d", 57) + `-shadow" is 64 characters`},
		{"a serving port for the pool", func(s *InferenceService) {
			decodeServer(s).Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100}}
		}, `spec.roles[1].template.spec.containers[0].ports: Invalid value: "9100 (metrics)": none of the declared ports is the server's (8000)`},
		{"the http port agrees with --port", func(s *InferenceService) {
			decodeServer(s).Args = append(decodeServer(s).Args, "--port", "8001")
			decodeServer(s).Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}
		}, "the port named http is 8000 but the server's --port is 8001"},
		{"vLLM listens on the port named http", func(s *InferenceService) {
			decodeServer(s).Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8000}, {Name: "http", ContainerPort: 9100}}
		}, "spec.roles[1].template.spec.containers[0].ports[1].containerPort: Invalid value: 9100: vLLM listens on 8000 without --port"},
		{"one port on every serving role", func(s *InferenceService) { decodeServer(s).Args = append(decodeServer(s).Args, "--port=9000") },
			"spec.roles[1].template.spec.containers[0].ports: Invalid value: 9000: the InferencePool targets one port on every serving role: 8000, as spec.roles[0] serves"},
		{"a routed decode server is not a shell script", func(s *InferenceService) {
			s.Spec.Roles[1].Multinode = nil
			decodeServer(s).Command = []string{"sh", "-c", "vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8"}
			decodeServer(s).Args = nil
		}, `spec.roles[1].template.spec.containers[0].command: Invalid value: ["sh","-c","vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8"]: behind a router`},
		{"a routed decode server does not serve on 8200", func(s *InferenceService) {
			for i := range 2 {
				s.Spec.Roles[i].Template.Spec.Containers[0].Args = append(s.Spec.Roles[i].Template.Spec.Containers[0].Args, "--port", "8200")
			}
		}, "spec.roles[1].template.spec.containers[0].ports: Invalid value: 8200: behind a router, llm-d's routing sidecar serves the pool's port"},
		{"the sidecar reads the pool with the pod's service account", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.AutomountServiceAccountToken = ptr.To(false)
		}, "spec.roles[1].template.spec.automountServiceAccountToken: Invalid value: false: behind a router, the decode leaders' disaggregation sidecar reads the InferencePool and its pods"},
		{"the sidecar's name is free", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.InitContainers = []corev1.Container{{Name: RoutingSidecarName, Image: "busybox"}}
		}, "spec.roles[1].template.spec.initContainers[0].name: Invalid value: \"llm-d-routing-sidecar\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, routedService, tc.mutate, tc.want) })
	}
}

func TestServingPort(t *testing.T) {
	cases := []struct {
		name    string
		c       corev1.Container
		want    int32
		wantErr string
	}{
		{"vLLM's default", corev1.Container{}, 8000, ""},
		{"the http port", corev1.Container{Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100}, {Name: "http", ContainerPort: 8080}}}, 8080, ""},
		{"the --port flag", corev1.Container{Args: []string{"--port=8081"}}, 8081, ""},
		{"the --port flag among declared ports", corev1.Container{Args: []string{"--port", "8081"}, Ports: []corev1.ContainerPort{{ContainerPort: 8081}}}, 8081, ""},
		{"an unnamed default port", corev1.Container{Ports: []corev1.ContainerPort{{ContainerPort: 8000}}}, 8000, ""},
		{"no declared port serves", corev1.Container{Ports: []corev1.ContainerPort{{ContainerPort: 9000}}}, 0, `none of the declared ports is the server's (8000): name the serving port "http"`},
		{"a bad --port", corev1.Container{Args: []string{"--port", "http"}}, 0, `--port "http": must be a port, a whole number from 1 to 65535`},
		{"vLLM's http port without --port", corev1.Container{Command: []string{"vllm", "serve"}, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9100}}}, 0,
			`vLLM listens on 8000 without --port, not on the port named http (9100): add --port 9100 to the server's args, or name another port http`},
		{"vLLM's http port with its --port", corev1.Container{Command: []string{"vllm", "serve"}, Args: []string{"--port", "9100"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9100}}}, 9100, ""},
		// issue 55: a server started by a shell script serves on the script's --port
		{"a script's --port", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{"exec vllm serve Qwen/Qwen3-8B --port 8123"}}, 8123, ""},
		{"a script's --port, declared http", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{"exec vllm serve Qwen/Qwen3-8B --port 8123"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8123}}}, 8123, ""},
		{"a script's --port, declared by another name", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{"exec vllm serve Qwen/Qwen3-8B --port 8123"},
			Ports: []corev1.ContainerPort{{Name: "api", ContainerPort: 8123}}}, 8123, ""},
		{"a script's quoted --port after other commands", corev1.Container{Command: []string{"/bin/bash", "-ec",
			`pip install foo && echo "start" ; exec env HF_HOME=/x vllm serve "Qwen/Qwen3-8B" --port='8124'`}}, 8124, ""},
		{"a script's expanded --port, declared http", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{`vllm serve m --port "${PORT:-8125}"`},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8125}}}, 8125, ""},
		{"a script's expanded --port, undeclared", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{`vllm serve m --port $PORT`}}, 0,
			"the server's shell script gives --port a value the shell expands: declare the port it listens on as a container port named http"},
		{"a script without --port, http elsewhere", corev1.Container{Command: []string{"sh", "-c"}, Args: []string{"exec vllm serve m"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9100}}}, 0,
			`vLLM listens on 8000 without --port, not on the port named http (9100): add --port 9100 to the vllm serve command of the server's shell script, or name another port http`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ServingPort(&tc.c)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestEveryRoleFieldSaysWhichRolesItAppliesTo: a new field of Role must declare roles:"router",
// "serving" or "any", or no role may set it.
func TestEveryRoleFieldSaysWhichRolesItAppliesTo(t *testing.T) {
	roleType := reflect.TypeFor[Role]()
	for i := range roleType.NumField() {
		f := roleType.Field(i)
		_, known := roleKinds[f.Tag.Get("roles")]
		assert.True(t, known, "Role.%s: roles tag %q: give router, serving or any", f.Name, f.Tag.Get("roles"))
	}
}

// TestOneWrongRouterFieldHidesNoOther: an unknown strategy and an unknown release are both
// reported (issue 55: the strategy's error hid the release's).
func TestOneWrongRouterFieldHidesNoOther(t *testing.T) {
	svc := routedService()
	svc.Spec.Roles[2].Strategy = "nope"
	svc.Spec.Roles[2].EndpointPicker = &EndpointPicker{Release: "nope-release"}
	var got []string
	for _, err := range Validate(svc) {
		got = append(got, err.Field)
	}
	assert.ElementsMatch(t, []string{"spec.roles[2].strategy", "spec.roles[2].endpointPicker.release"}, got)
}

// TestAFieldIsRefusedOnce: a serving role's field on a router is one problem, with one text
// (issue 55: model was reported twice, with two texts).
func TestAFieldIsRefusedOnce(t *testing.T) {
	svc := routedService()
	svc.Spec.Roles[2].Model = &Model{Source: "hf://Qwen/Qwen3-8B"}
	var at []string
	for _, err := range Validate(svc) {
		at = append(at, err.Field)
	}
	assert.Equal(t, []string{"spec.roles[2].model"}, at)
}
