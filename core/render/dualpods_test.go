// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/fma"
)

// requesterPod is the pod LWS and its StatefulSet make from a replica's template: the template
// plus their per-pod labels, annotations, hostname and variables.
func requesterPod(lws *lwsv1.LeaderWorkerSet) *corev1.Pod {
	tpl := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	pod.Name = lws.Name + "-0"
	pod.Labels = map[string]string{}
	for k, v := range tpl.Labels {
		pod.Labels[k] = v
	}
	for k, v := range map[string]string{
		lwsv1.SetNameLabelKey: lws.Name, lwsv1.GroupIndexLabelKey: "0", lwsv1.WorkerIndexLabelKey: "0",
		lwsv1.GroupUniqueHashLabelKey: "a1b2" + lws.Name, lwsv1.RevisionKey: "5d8f",
		appsv1.ControllerRevisionHashLabelKey: lws.Name + "-7c9", appsv1.StatefulSetPodNameLabel: pod.Name, appsv1.PodIndexLabel: "0",
	} {
		pod.Labels[k] = v
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[lwsv1.SizeAnnotationKey] = "1"
	pod.Spec.Hostname, pod.Spec.Subdomain = pod.Name, lws.Name
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env,
			corev1.EnvVar{Name: lwsv1.LwsLeaderAddress, Value: pod.Name + "." + lws.Name}, corev1.EnvVar{Name: lwsv1.LwsGroupSize, Value: "1"},
			corev1.EnvVar{Name: lwsv1.LwsWorkerIndex, Value: "0"})
	}
	return pod
}

// serverRunningPod is what FMA v0.6.4's dual-pods controller makes from a requester's server
// patch (mirror/fma).
func serverRunningPod(t testing.TB, requester *corev1.Pod, nodeName string) *corev1.Pod {
	t.Helper()
	server, err := fma.PatchedServer(requester, nodeName)
	require.NoError(t, err)
	return server
}

// boundServerPod is the server-running pod as FMA creates it for a requester bound to it: the
// nominal server with FMA's own labels (awake), annotations and GPUs.
func boundServerPod(t testing.TB, requester *corev1.Pod, nodeName string) *corev1.Pod {
	t.Helper()
	requester = requester.DeepCopy()
	requester.Spec.NodeName = nodeName
	server, err := fma.ServerProvidingPod(requester, "0")
	require.NoError(t, err)
	return server
}

// standbyPod is the server once its requester has gone and FMA has put it to sleep.
func standbyPod(t testing.TB, requester *corev1.Pod, nodeName string) *corev1.Pod {
	t.Helper()
	standby := boundServerPod(t, requester, nodeName)
	fma.Unbind(standby)
	return standby
}

func TestDualPodsServerPatchMakesTheServerAUserNeeds(t *testing.T) {
	tree := story(t, "granite-sleep-wake.yaml")
	lwss := leaderWorkerSets(tree)
	require.Len(t, lwss, 3)
	pool := poolSelector(t, tree)

	var servers []*corev1.Pod
	for _, lws := range lwss {
		requester := requesterPod(lws)
		require.Len(t, requester.Spec.Containers, 1)
		holder := requester.Spec.Containers[0]
		assert.Equal(t, render.DualPodsContainerName, holder.Name)
		assert.Equal(t, api.DefaultRequesterImage, holder.Image)
		assert.Equal(t, "1", ptrTo(holder.Resources.Limits[api.GPUResourceName]).String(), "the requester holds the server's GPUs")
		assert.Equal(t, "8081", requester.Annotations[render.AnnotationDualPodsAdminPort])
		assert.Equal(t, "/ready", holder.ReadinessProbe.HTTPGet.Path)
		assert.Equal(t, int32(8080), holder.ReadinessProbe.HTTPGet.Port.IntVal)
		assert.False(t, matches(pool, requester.Labels), "a requester never serves traffic")

		server := serverRunningPod(t, requester, "gpu-node-7")
		require.Len(t, server.Spec.Containers, 1, "one container: the server")
		c := server.Spec.Containers[0]
		assert.Equal(t, render.DualPodsContainerName, c.Name)
		assert.Equal(t, "vllm/vllm-openai:v0.33.0", c.Image)
		assert.Equal(t, []string{"--model", "ibm-granite/granite-3.3-2b-instruct", "--max-model-len", "32768", "--enable-sleep-mode"}, c.Args)
		assert.Equal(t, []corev1.EnvVar{{Name: "HF_HOME", Value: "/models"}, {Name: "VLLM_SERVER_DEV_MODE", Value: "1"}}, c.Env,
			"the user's variables and dev mode; none of the requester's or LWS's")
		assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}, c.Ports)
		require.NotNil(t, c.ReadinessProbe.HTTPGet)
		assert.Equal(t, int32(8000), c.ReadinessProbe.HTTPGet.Port.IntVal, "an integer port: FMA reads the server's port from it")
		assert.Empty(t, c.ReadinessProbe.HTTPGet.Port.StrVal)
		assert.Equal(t, "2", ptrTo(c.Resources.Requests[corev1.ResourceCPU]).String(), "explicit requests, not the requester's")
		assert.Equal(t, "16Gi", ptrTo(c.Resources.Requests[corev1.ResourceMemory]).String())
		assert.Equal(t, []corev1.VolumeMount{{Name: "models", MountPath: "/models"}}, c.VolumeMounts)
		require.Len(t, server.Spec.Volumes, 1)
		assert.Equal(t, "model-cache", server.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		assert.Empty(t, server.Spec.Hostname, "no per-pod hostname")
		assert.Empty(t, server.Spec.Subdomain)
		for _, key := range []string{lwsv1.SetNameLabelKey, lwsv1.WorkerIndexLabelKey, lwsv1.GroupIndexLabelKey, lwsv1.GroupUniqueHashLabelKey,
			lwsv1.RevisionKey, appsv1.ControllerRevisionHashLabelKey, appsv1.StatefulSetPodNameLabel, appsv1.PodIndexLabel,
			render.LabelReplicaIndex} {
			assert.NotContains(t, server.Labels, key, "the server pod is not adopted by LWS or its StatefulSet, and is reusable")
		}
		assert.True(t, matches(pool, boundServerPod(t, requester, "gpu-node-7").Labels), "the pool selects the server pod")
		assert.False(t, matches(pool, standbyPod(t, requester, "gpu-node-7").Labels), "the pool never selects a sleeping standby")
		servers = append(servers, server)
	}
	for _, other := range servers[1:] {
		assert.Equal(t, servers[0].Labels, other.Labels, "every replica's requester makes the same server: a sleeping one can be woken for any")
		assert.Equal(t, servers[0].Spec, other.Spec)
	}
}

func TestDualPodsPatchKeepsTheUsersBraces(t *testing.T) {
	svc := story(t, "granite-sleep-wake.yaml").Service
	svc.Spec.Roles = append([]api.Role{}, svc.Spec.Roles...)
	tpl := svc.Spec.Roles[0].Template.DeepCopy()
	tpl.Spec.Containers[0].Args = append(tpl.Spec.Containers[0].Args, "--chat-template", "{{ messages }}{{- end }}")
	svc.Spec.Roles[0].Template = tpl
	server := serverRunningPod(t, requesterPod(leaderWorkerSets(build(t, svc))[0]), "n")
	assert.Contains(t, server.Spec.Containers[0].Args, "{{ messages }}{{- end }}")
}

func TestDualPodsControllerInstall(t *testing.T) {
	tree := story(t, "granite-sleep-wake.yaml")
	var kinds []string
	for _, o := range tree.Objects[:16] {
		kinds = append(kinds, o.Kind+"/"+o.Name)
	}
	assert.Equal(t, []string{
		"CustomResourceDefinition/inferenceserverconfigs.fma.llm-d.ai", "CustomResourceDefinition/launcherconfigs.fma.llm-d.ai",
		"CustomResourceDefinition/launcherpopulationpolicies.fma.llm-d.ai",
		"ValidatingAdmissionPolicy/fma-bound-serverreqpod", "ValidatingAdmissionPolicy/fma-immutable-fields",
		"ValidatingAdmissionPolicyBinding/bind-fma-bound-serverreqpod", "ValidatingAdmissionPolicyBinding/bind-fma-immutable-fields",
		"ServiceAccount/granite-fma-controllers", "Role/granite-fma-controllers", "RoleBinding/granite-fma-controllers",
		"ClusterRole/llm-granite-fma-node-view", "ClusterRoleBinding/llm-granite-fma-node-view", "Deployment/granite-dual-pods-controller",
		"LeaderWorkerSet/granite-server-0", "LeaderWorkerSet/granite-server-1", "LeaderWorkerSet/granite-server-2",
	}, kinds)
	assert.True(t, strings.HasSuffix(tree.Objects[7].Name, api.FMAServiceAccountSuffix), "FMA's policies exempt *-fma-controllers accounts")
	controller := objectOf[*appsv1.Deployment](t, tree, "granite-dual-pods-controller")
	assert.Equal(t, []string{"/ko-app/dual-pods-controller", "--namespace=llm", "--sleeper-limit=2"}, controller.Spec.Template.Spec.Containers[0].Command)
	assert.Equal(t, "ghcr.io/llm-d-incubation/llm-d-fast-model-actuation/dual-pods-controller:v0.6.4", controller.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, []string{"fma-inferenceserverconfigs.fma.llm-d.ai", "fma-launcherconfigs.fma.llm-d.ai", "fma-launcherpopulationpolicies.fma.llm-d.ai",
		"fma-rolebinding", "fma-clusterrolebinding"}, tree.Objects[12].DependsOn, "the controller starts once its CRDs and permissions exist")
	for _, lws := range tree.Objects[13:16] {
		assert.Contains(t, lws.DependsOn, "dual-pods-controller", "destroy removes the requesters before the controller")
	}
	assert.Equal(t, []string{"fma-fma-bound-serverreqpod"}, tree.Objects[5].DependsOn, "a binding after its policy")
}

func poolSelector(t *testing.T, tree *render.Tree) map[string]string {
	t.Helper()
	for _, o := range tree.Objects {
		if o.Kind == "InferencePool" {
			m, err := o.Unstructured()
			require.NoError(t, err)
			out := map[string]string{}
			labels := m["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
			for k, v := range labels {
				out[k] = v.(string)
			}
			return out
		}
	}
	t.Fatal("no pool")
	return nil
}

func ptrTo(q resource.Quantity) *resource.Quantity { return &q }

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkDualPods: for every dual-pods replica of a tree (every example, every fuzzed input), the
// server pod FMA makes from the requester is the user's server in sleep mode, as FMA v0.6.4 needs it.
func checkDualPods(t *testing.T, tree *render.Tree) {
	t.Helper()
	roles := map[string]*api.Role{}
	for i := range tree.Service.Spec.Roles {
		roles[tree.Service.Spec.Roles[i].Name] = &tree.Service.Spec.Roles[i]
	}
	for _, lws := range leaderWorkerSets(tree) {
		role := roles[lws.Labels[render.LabelRoleName]]
		if !role.DualPods() {
			continue
		}
		user := role.Template.Spec.Containers[0]
		server := serverRunningPod(t, requesterPod(lws), "node-0")
		if len(server.Spec.Containers) != 1 {
			t.Fatalf("%s: %d containers in the server pod", lws.Name, len(server.Spec.Containers))
		}
		c := server.Spec.Containers[0]
		switch {
		case c.Name != render.DualPodsContainerName || c.Image != user.Image:
			t.Fatalf("%s: server container %s runs %s, want %s", lws.Name, c.Name, c.Image, user.Image)
		case !strings.HasPrefix(strings.Join(c.Args, " "), strings.Join(user.Args, " ")) || !contains(append(c.Command, c.Args...), "--enable-sleep-mode"):
			t.Fatalf("%s: server args %v are not the user's %v in sleep mode", lws.Name, c.Args, user.Args)
		case c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Port.StrVal != "":
			t.Fatalf("%s: the server needs an httpGet readiness probe with a numeric port", lws.Name)
		case server.Labels[render.LabelServing] != "true" || server.Labels[lwsv1.SetNameLabelKey] != "" || server.Labels[appsv1.StatefulSetPodNameLabel] != "":
			t.Fatalf("%s: server labels %v", lws.Name, server.Labels)
		}
		devMode := false
		for _, e := range c.Env {
			devMode = devMode || (e.Name == "VLLM_SERVER_DEV_MODE" && e.Value == "1")
			if e.Name == "SPI_PORT" || e.Name == lwsv1.LwsLeaderAddress {
				t.Fatalf("%s: the server keeps %s", lws.Name, e.Name)
			}
		}
		if !devMode {
			t.Fatalf("%s: no VLLM_SERVER_DEV_MODE", lws.Name)
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			t.Fatalf("%s: no explicit memory request", lws.Name)
		}
	}
}

// TestPoolOfAMixedServiceTakesAwakeServersOnly: a dual-pods role beside a plain one behind one
// router. The pool selects only awake servers (FMA's "sleeping: false"), so the plain role's
// leaders carry that label too and stay in the pool; a sleeping standby is never in it.
func TestPoolOfAMixedServiceTakesAwakeServersOnly(t *testing.T) {
	svc := story(t, "granite-sleep-wake.yaml").Service
	plain := svc.Spec.Roles[0] // Build reads its roles, never writes them
	plain.Name, plain.ModelFlexibility = "always-on", nil
	svc.Spec.Roles = append([]api.Role{plain}, svc.Spec.Roles...)
	tree := build(t, svc)
	pool := poolSelector(t, tree)
	assert.Equal(t, "false", pool["dual-pods.llm-d.ai/sleeping"])
	var plainLeaders, servers int
	for _, lws := range leaderWorkerSets(tree) {
		requester := requesterPod(lws)
		if strings.HasPrefix(lws.Name, "granite-always-on-") {
			plainLeaders++
			assert.True(t, matches(pool, requester.Labels), "the plain role's server %s is in the pool", lws.Name)
			continue
		}
		servers++
		assert.False(t, matches(pool, requester.Labels), "a requester never serves")
		assert.True(t, matches(pool, boundServerPod(t, requester, "n").Labels), "an awake server is in the pool")
		assert.False(t, matches(pool, standbyPod(t, requester, "n").Labels), "a sleeping standby is not")
	}
	assert.Equal(t, 3, plainLeaders)
	assert.Equal(t, 3, servers)
}
