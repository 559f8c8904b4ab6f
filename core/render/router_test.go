// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

func objectOf[T runtime.Object](t *testing.T, tree *render.Tree, name string) T {
	t.Helper()
	for _, o := range tree.Objects {
		if obj, ok := o.Object.(T); ok && (name == "" || o.Name == name) {
			return obj
		}
	}
	var zero T
	t.Fatalf("no %T %q in %v", zero, name, names(tree))
	return zero
}

func build(t *testing.T, svc *api.InferenceService) *render.Tree {
	t.Helper()
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	return tree
}

// refWithSuffix is the object of the tree with the suffix.
func refWithSuffix(t *testing.T, tree *render.Tree, suffix string) render.Object {
	t.Helper()
	for _, o := range tree.Objects {
		if o.Suffix == suffix {
			return o
		}
	}
	t.Fatalf("no %s in the tree", suffix)
	return render.Object{}
}

// routedStory is a manifest with a change to its router, built.
func routedStory(t *testing.T, file string, change func(svc *api.InferenceService, router *api.Role)) *render.Tree {
	t.Helper()
	svc := story(t, file).Service
	svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
	change(svc, svc.Spec.Router())
	return build(t, svc)
}

func TestRouterObjectsAndOrder(t *testing.T) {
	tree := story(t, "llama-router.yaml")
	assert.Equal(t, []string{
		"LeaderWorkerSet/llama-8b-server-0", "LeaderWorkerSet/llama-8b-server-1", "LeaderWorkerSet/llama-8b-server-2", "LeaderWorkerSet/llama-8b-server-3",
		"ServiceAccount/llama-8b-epp", "Role/llama-8b-epp", "RoleBinding/llama-8b-epp",
		"ClusterRole/llm-llama-8b-epp-metrics-auth", "ClusterRoleBinding/llm-llama-8b-epp-metrics-auth", "Secret/llama-8b-epp-metrics-token",
		"ConfigMap/llama-8b-epp-config", "Deployment/llama-8b-epp", "Service/llama-8b-epp", "InferencePool/llama-8b-pool", "Service/llama-8b-shadow", "HTTPRoute/llama-8b-httproute",
		"PodMonitor/llama-8b-server", "PodMonitor/llama-8b-router", "ConfigMap/llama-8b-dashboard",
	}, names(tree), "the monitoring last: nothing depends on it")
	route := refWithSuffix(t, tree, "httproute")
	assert.Equal(t, []string{"pool", "epp-deployment", "server-0", "server-1", "server-2", "server-3"}, route.DependsOn,
		"the route attaches after the pool, the Endpoint Picker and the awaited replicas")
	deployment := tree.Objects[11]
	assert.Equal(t, []string{"epp-rolebinding", "epp-auth-clusterrolebinding", "epp-config", "server-3"}, deployment.DependsOn,
		"the router rolls out last, after the servers' last batch")
	assert.True(t, deployment.Awaited)
}

func TestRouterAwaitNone(t *testing.T) {
	tree := routedStory(t, "llama-router.yaml", func(svc *api.InferenceService, _ *api.Role) { svc.Spec.Await = api.AwaitNone })
	deployment := objectOf[*appsv1.Deployment](t, tree, "")
	assert.Equal(t, "true", deployment.Annotations[render.AnnotationPulumiSkipAwait])
	assert.Equal(t, "true", objectOf[*corev1.Service](t, tree, "llama-8b-epp").Annotations[render.AnnotationPulumiSkipAwait],
		"nor the endpoints of its Service")
	assert.Empty(t, objectOf[*corev1.Service](t, story(t, "llama-router.yaml"), "llama-8b-epp").Annotations, "awaited by default")
	route := refWithSuffix(t, tree, "httproute")
	assert.Equal(t, []string{"pool", "epp-deployment"}, route.DependsOn, "no replica is awaited")
}

// TestEndpointPickerPermissionsPerRelease: each release's Endpoint Picker may read its pool, the
// pods and the objectives (and model rewrites) in the API groups that release watches, and, when
// its replicas elect a leader, the lease its manager names; lwepp has no leader election.
func TestEndpointPickerPermissionsPerRelease(t *testing.T) {
	resourcesOf := func(tree *render.Tree) []string {
		var out []string
		for _, rule := range objectOf[*rbacv1.Role](t, tree, "").Rules {
			out = append(out, strings.Join(rule.APIGroups, ",")+"/"+strings.Join(rule.Resources, ",")+":"+strings.Join(rule.Verbs, ","))
		}
		return out
	}
	const (
		pool      = "inference.networking.k8s.io/inferencepools:get,list,watch"
		pods      = "/pods:get,list,watch"
		elections = "coordination.k8s.io/leases:create|coordination.k8s.io/leases:get,update,patch|/events:create,patch"
	)
	for _, tc := range []struct {
		release    api.EndpointPickerRelease
		objectives string // the rule on objectives, empty: none
		lease      string // empty: no leader election
	}{
		{api.EPPReleaseLLMDRouter, "llm-d.ai,inference.networking.x-k8s.io/inferenceobjectives,inferencemodelrewrites:get,list,watch", "epp-llm-llama-8b-pool.llm-d.ai"},
		{api.EPPReleaseGIE150, "inference.networking.x-k8s.io/inferenceobjectives,inferencemodelrewrites:get,list,watch", "epp-llm-llama-8b-pool.gateway-api-inference-extension.sigs.k8s.io"},
		{api.EPPReleaseGIE, "inference.networking.x-k8s.io/inferenceobjectives:get,list,watch", "epp-llm-llama-8b-pool.gateway-api-inference-extension.sigs.k8s.io"},
		{api.EPPReleaseLWEPP, "", ""},
	} {
		t.Run(string(tc.release), func(t *testing.T) {
			strategy := func(r *api.Role) {
				if tc.release == api.EPPReleaseLWEPP {
					r.Strategy = "" // lwepp has none
				}
			}
			single := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
				strategy(r)
				r.EndpointPicker = &api.EndpointPicker{Release: tc.release}
			})
			ha := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
				strategy(r)
				r.EndpointPicker = &api.EndpointPicker{Release: tc.release, Replicas: ptr.To(3)}
			})
			want := []string{pool}
			if tc.objectives != "" {
				want = append(want, tc.objectives)
			}
			want = append(want, pods)
			assert.Equal(t, want, resourcesOf(single), "one replica reads its pool, pods and objectives, nothing else")
			if tc.lease != "" {
				want = append(want, strings.Split(elections, "|")...)
			}
			assert.Equal(t, want, resourcesOf(ha))
			if tc.lease != "" {
				assert.Equal(t, []string{tc.lease}, objectOf[*rbacv1.Role](t, ha, "").Rules[len(want)-2].ResourceNames,
					"the lease the EPP's manager elects with, and only it")
			}
			for _, c := range []struct {
				tree      *render.Tree
				replicas  int32
				readiness string
				flag      bool
			}{{single, 1, "inference-extension", false}, {ha, 3, map[bool]string{true: "readiness", false: "inference-extension"}[tc.lease != ""], tc.lease != ""}} {
				epp := objectOf[*appsv1.Deployment](t, c.tree, "")
				assert.Equal(t, c.replicas, *epp.Spec.Replicas)
				container := epp.Spec.Template.Spec.Containers[0]
				assert.Equal(t, c.readiness, *container.ReadinessProbe.GRPC.Service)
				assert.Equal(t, c.flag, contains(container.Args, "--ha-enable-leader-election"))
				assert.Equal(t, appsv1.RecreateDeploymentStrategyType, epp.Spec.Strategy.Type)
			}
			// every Deployment names its release, for `fusioninfer status` without the spec
			release := map[string]string{render.AnnotationEndpointPickerRelease: string(tc.release)}
			if tc.lease != "" {
				assert.Equal(t, map[string]string{render.AnnotationPulumiWaitFor: "jsonpath={.status.readyReplicas}", render.AnnotationEndpointPickerRelease: string(tc.release)},
					objectOf[*appsv1.Deployment](t, ha, "").Annotations, "with a leader election pulumi up waits for a ready pod, the leader")
			} else {
				assert.Equal(t, release, objectOf[*appsv1.Deployment](t, ha, "").Annotations, "every replica serves: the Deployment's own wait")
			}
			assert.Equal(t, release, objectOf[*appsv1.Deployment](t, single, "").Annotations, "one replica: the Deployment's own wait")
			assert.NotContains(t, objectOf[*appsv1.Deployment](t, single, "").Spec.Template.Annotations, render.AnnotationEndpointPickerRelease,
				"not on the pods: the annotation rolls none")
		})
	}
}

// TestEndpointPickerReleases: each release's image, exactly its command line, and whether the
// Endpoint Picker reads a configuration.
func TestEndpointPickerReleases(t *testing.T) {
	base := []string{"--pool-name", "llama-8b-pool", "--pool-namespace", "llm", "--pool-group", "inference.networking.k8s.io"}
	ports := []string{"--grpc-port", "9002", "--grpc-health-port", "9003", "--metrics-port", "9090"}
	withConfig := append(append(append(slices.Clone(base), "--config-file", "/config/config.yaml"), ports...),
		"--tracing=false", "--zap-encoder", "json")
	for _, tc := range []struct {
		release api.EndpointPickerRelease
		image   string
		args    []string
		config  string // the configuration's apiVersion; empty: none
	}{
		{api.EPPReleaseLLMDRouter, "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0", withConfig, "llm-d.ai/v1alpha1"},
		{api.EPPReleaseGIE150, "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0", withConfig, "inference.networking.x-k8s.io/v1alpha1"},
		// GIE v1.2.0 reads vLLM's KV-cache metric under the name the flag gives (its default is
		// vLLM's old name: vllm.MetricKVCacheUsage).
		{api.EPPReleaseGIE, "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0",
			append(append(append(slices.Clone(base), "--config-file", "/config/config.yaml"), ports...),
				"--tracing=false", "--kv-cache-usage-percentage-metric", "vllm:kv_cache_usage_perc",
				"--zap-encoder", "json"), "inference.networking.x-k8s.io/v1alpha1"},
		// GIE v1.6.0's conformance/resources/base.yaml runs it with the pool, ports and JSON logs.
		{api.EPPReleaseLWEPP, "registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0",
			append(append(slices.Clone(base), ports...), "--zap-encoder", "json"), ""},
	} {
		t.Run(string(tc.release), func(t *testing.T) {
			tree := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
				if tc.release == api.EPPReleaseLWEPP {
					r.Strategy = ""
				}
				r.EndpointPicker = &api.EndpointPicker{Release: tc.release}
			})
			epp := objectOf[*appsv1.Deployment](t, tree, "")
			container := epp.Spec.Template.Spec.Containers[0]
			assert.Equal(t, tc.image, container.Image)
			assert.Equal(t, tc.args, container.Args)
			var configMaps []string
			for _, o := range tree.Objects {
				if cm, ok := o.Object.(*corev1.ConfigMap); ok && o.Name == "llama-8b-epp-config" {
					configMaps = append(configMaps, cm.Data["config.yaml"])
				}
			}
			deployment := refWithSuffix(t, tree, "epp-deployment")
			if tc.config == "" {
				assert.Empty(t, configMaps, "it reads no configuration")
				assert.Empty(t, epp.Spec.Template.Annotations)
				assert.Equal(t, []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}, container.VolumeMounts)
				assert.NotContains(t, deployment.DependsOn, "epp-config")
				return
			}
			require.Len(t, configMaps, 1)
			assert.Contains(t, configMaps[0], "apiVersion: "+tc.config)
			assert.Contains(t, deployment.DependsOn, "epp-config")
			assert.Equal(t, "/config", container.VolumeMounts[0].MountPath)
		})
	}
}

func contains(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

func TestPoolVersions(t *testing.T) {
	v1 := objectOf[*inferencev1.InferencePool](t, story(t, "llama-router.yaml"), "")
	assert.Equal(t, inferencev1.EndpointPickerFailClose, v1.Spec.EndpointPickerRef.FailureMode)
	assert.Equal(t, inferencev1.PortNumber(9002), v1.Spec.EndpointPickerRef.Port.Number)
	assert.Equal(t, inferencev1.ObjectName("llama-8b-epp"), v1.Spec.EndpointPickerRef.Name)

	alpha := story(t, "router-v1alpha2-custom-epp.yaml")
	pool := objectOf[*inferencev1alpha2.InferencePool](t, alpha, "")
	assert.Equal(t, int32(8080), pool.Spec.TargetPortNumber, "the server's --port")
	assert.Equal(t, inferencev1alpha2.FailOpen, *pool.Spec.ExtensionRef.FailureMode)
	route := objectOf[*gatewayv1.HTTPRoute](t, alpha, "")
	assert.Equal(t, gatewayv1.Group("inference.networking.x-k8s.io"), *route.Spec.Rules[0].BackendRefs[0].Group)
	epp := objectOf[*appsv1.Deployment](t, alpha, "")
	assert.Equal(t, []string{"--pool-group", "inference.networking.x-k8s.io"}, argsAfter(epp.Spec.Template.Spec.Containers[0].Args, "--pool-group"))
	assert.Equal(t, []string{"inference.networking.x-k8s.io"}, objectOf[*rbacv1.Role](t, alpha, "").Rules[0].APIGroups)
	assert.Equal(t, "4Gi", ptr.To(epp.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]).String(), "the user's resources")
}

func argsAfter(args []string, flag string) []string {
	for i := range args {
		if args[i] == flag && i+1 < len(args) {
			return args[i : i+2]
		}
	}
	return nil
}

func TestHTTPRouteMerge(t *testing.T) {
	route := objectOf[*gatewayv1.HTTPRoute](t, routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
		require.NoError(t, json.Unmarshal([]byte(`{
			"parentRefs": [{"name": "gw", "sectionName": "https"}],
			"hostnames": ["llm.example.com"],
			"rules": [
				{"name": "chat", "matches": [{"path": {"type": "PathPrefix", "value": "/v1/chat"}, "headers": [{"name": "x-tier", "value": "gold"}]}],
				 "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"add": [{"name": "x-route", "value": "chat"}]}}],
				 "timeouts": {"request": "900s"}},
				{"matches": [{"path": {"type": "PathPrefix", "value": "/v1/completions"}}]}
			]}`), &r.HTTPRoute))
	}), "")
	assert.Equal(t, gatewayv1.SectionName("https"), *route.Spec.ParentRefs[0].SectionName)
	assert.Equal(t, []gatewayv1.Hostname{"llm.example.com"}, route.Spec.Hostnames)
	require.Len(t, route.Spec.Rules, 2)
	chat := route.Spec.Rules[0]
	assert.Equal(t, gatewayv1.SectionName("chat"), *chat.Name)
	assert.Equal(t, "x-tier", string(chat.Matches[0].Headers[0].Name))
	assert.Equal(t, "x-route", string(chat.Filters[0].RequestHeaderModifier.Add[0].Name))
	assert.Equal(t, gatewayv1.Duration("900s"), *chat.Timeouts.Request, "the user's timeout is kept")
	assert.Equal(t, gatewayv1.Duration("300s"), *route.Spec.Rules[1].Timeouts.Request, "a rule without one gets a generation's")
	for _, rule := range route.Spec.Rules {
		assert.Equal(t, "llama-8b-pool", string(rule.BackendRefs[0].Name))
	}

	bare := objectOf[*gatewayv1.HTTPRoute](t, story(t, "qwen-pd-router.yaml"), "")
	require.Len(t, bare.Spec.Rules, 1, "a route without rules sends every path to the pool")
	assert.Equal(t, "/", *bare.Spec.Rules[0].Matches[0].Path.Value)
}

func TestPrefillDecodeRouting(t *testing.T) {
	tree := story(t, "qwen-pd-router.yaml")
	assert.Equal(t, api.PoolName("qwen3-32b-pd"), string(objectOf[*gatewayv1.HTTPRoute](t, tree, "").Spec.Rules[0].BackendRefs[0].Name))
	epp := objectOf[*appsv1.Deployment](t, tree, "")
	assert.Equal(t, "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0", epp.Spec.Template.Spec.Containers[0].Image)
	config := objectOf[*corev1.ConfigMap](t, tree, "").Data["config.yaml"]
	assert.Contains(t, config, "apiVersion: llm-d.ai/v1alpha1")
	for _, plugin := range []string{"prefill-filter", "decode-filter", "prefix-cache-scorer", "max-score-picker", "disagg-profile-handler", "prefix-based-pd-decider"} {
		assert.Contains(t, config, "type: "+plugin)
	}
	for _, lws := range leaderWorkerSets(tree) {
		tpl := lws.Spec.LeaderWorkerTemplate.WorkerTemplate
		server := tpl.Spec.Containers[0]
		switch tpl.Labels[render.LabelComponentType] {
		case "prefiller":
			assert.Equal(t, "prefill", tpl.Labels[render.LabelPDRole])
			assert.Empty(t, tpl.Spec.InitContainers)
			assert.Equal(t, int32(8000), server.Ports[0].ContainerPort)
		case "decoder":
			assert.Equal(t, "decode", tpl.Labels[render.LabelPDRole])
			sidecar := tpl.Spec.InitContainers[0]
			assert.Equal(t, "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0", sidecar.Image)
			assert.Equal(t, []string{"--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--inference-pool=llm/qwen3-32b-pd-pool",
				"--pool-group=inference.networking.k8s.io", "--enable-ssrf-protection=true", "--secure-proxy=false"}, sidecar.Args)
			assert.Equal(t, "qwen3-32b-pd-disagg-sidecar", tpl.Spec.ServiceAccountName, "the account the sidecar watches the pool with")
			assert.Equal(t, corev1.ContainerRestartPolicyAlways, *sidecar.RestartPolicy)
			assert.Equal(t, []string{"--port", "8200"}, argsAfter(server.Args, "--port"), "vLLM moves to 8200")
			assert.Equal(t, int32(8200), server.Ports[0].ContainerPort)
			assert.Equal(t, intstr.FromInt32(8200), server.ReadinessProbe.HTTPGet.Port, "its probe follows it")
		}
	}
	// SSRF protection: the sidecar lists and watches its pool by name and the namespace's pods,
	// with permissions granted before the decode replicas start.
	role := objectOf[*rbacv1.Role](t, tree, "qwen3-32b-pd-disagg-sidecar")
	require.Len(t, role.Rules, 2)
	assert.Equal(t, []string{"qwen3-32b-pd-pool"}, role.Rules[0].ResourceNames)
	assert.Equal(t, []string{"pods"}, role.Rules[1].Resources)
	assert.Equal(t, []string{"list", "watch"}, role.Rules[1].Verbs)
	binding := objectOf[*rbacv1.RoleBinding](t, tree, "qwen3-32b-pd-disagg-sidecar")
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "qwen3-32b-pd-disagg-sidecar", Namespace: "llm"}}, binding.Subjects)
	for _, o := range tree.Objects {
		if lws, ok := o.Object.(*lwsv1.LeaderWorkerSet); ok {
			assert.Equal(t, lws.Labels[render.LabelComponentType] == "decoder", contains(o.DependsOn, "disagg-sidecar-rolebinding"), o.Name)
		}
	}
	// A decode template naming its own account keeps it, and the Role is bound to it too.
	own := routedStory(t, "qwen-pd-router.yaml", func(svc *api.InferenceService, _ *api.Role) {
		for i := range svc.Spec.Roles {
			if svc.Spec.Roles[i].ComponentType == api.ComponentTypeDecoder {
				tpl := svc.Spec.Roles[i].Template.DeepCopy()
				tpl.Spec.ServiceAccountName = "models-reader"
				svc.Spec.Roles[i].Template = tpl
			}
		}
	})
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "qwen3-32b-pd-disagg-sidecar", Namespace: "llm"}, {Kind: "ServiceAccount", Name: "models-reader", Namespace: "llm"}},
		objectOf[*rbacv1.RoleBinding](t, own, "qwen3-32b-pd-disagg-sidecar").Subjects)
	for _, lws := range leaderWorkerSets(own) {
		if lws.Labels[render.LabelComponentType] == "decoder" {
			assert.Equal(t, "models-reader", lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.ServiceAccountName)
		}
	}
	shadow := routedStory(t, "qwen-pd-router.yaml", func(_ *api.InferenceService, r *api.Role) { r.ShadowService = true })
	assert.Equal(t, "decoder", objectOf[*corev1.Service](t, shadow, "qwen3-32b-pd-shadow").Spec.Selector[render.LabelComponentType],
		"without the Endpoint Picker a request must reach a decode leader's sidecar, never a prefill pod alone")
}

func TestRoutedMultiNodeDecoder(t *testing.T) {
	svc := story(t, "story4-disaggregated-multinode.yaml").Service
	// llm-d-router v0.10.0's sidecar has no LMCache connector: LMCache routes on the older release.
	svc.Spec.Roles = append(svc.Spec.Roles, api.Role{Name: "router", ComponentType: api.ComponentTypeRouter,
		EndpointPicker: &api.EndpointPicker{Release: api.EPPReleaseGIE},
		HTTPRoute:      map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}})
	svc.Spec.Roles[1].Template.Spec.Containers[0].Args = append(svc.Spec.Roles[1].Template.Spec.Containers[0].Args,
		"--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`, "--port=8000")
	tree := build(t, svc)
	for _, lws := range leaderWorkerSets(tree) {
		if lws.Labels[render.LabelComponentType] != "decoder" {
			continue
		}
		leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate
		require.NotNil(t, leader)
		require.Len(t, leader.Spec.InitContainers, 1)
		assert.Contains(t, leader.Spec.InitContainers[0].Args, "--connector=lmcache", "the connector follows the server's KV connector")
		script := leader.Spec.Containers[0].Args[0]
		assert.Contains(t, script, "--port=8200", "the Ray launcher runs the moved server")
		assert.NotContains(t, script, "--port=8000")
		assert.Empty(t, lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.InitContainers, "workers only join Ray")
	}
}

func TestEndpointPickerRestartsOnANewConfiguration(t *testing.T) {
	hash := func(tree *render.Tree) string {
		return objectOf[*appsv1.Deployment](t, tree, "").Spec.Template.Annotations["fusioninfer.io/epp-config-hash"]
	}
	base := story(t, "llama-router.yaml")
	other := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) { r.Strategy = "queue-size" })
	require.NotEmpty(t, hash(base))
	assert.NotEqual(t, hash(base), hash(other))
	assert.Equal(t, hash(base), hash(story(t, "llama-router.yaml")))
}

// TestEveryPodHasTheServicesPriority: schedulingStrategy.priorityClassName reaches the Endpoint
// Picker's pods as well as the servers' (issue 55: a standalone router's picker, the service's
// only entrance, was the first to be preempted).
func TestEveryPodHasTheServicesPriority(t *testing.T) {
	for _, file := range []string{"llama-router.yaml", "standalone-router.yaml"} {
		t.Run(file, func(t *testing.T) {
			svc := story(t, file).Service
			svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{PriorityClassName: "inference-critical"}
			tree, errs := render.Build(svc)
			require.Empty(t, errs)
			pods := 0
			for _, o := range tree.Objects {
				var spec *corev1.PodSpec
				switch obj := o.Object.(type) {
				case *appsv1.Deployment:
					spec = &obj.Spec.Template.Spec
				case *lwsv1.LeaderWorkerSet:
					spec = &obj.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
				default:
					continue
				}
				pods++
				assert.Equal(t, "inference-critical", spec.PriorityClassName, "%s %s", o.TypeMeta.Kind, o.Name)
			}
			assert.Greater(t, pods, 1)
		})
	}
}
