// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	mirrorfma "github.com/fusioninfer/pulumi-fusioninfer/mirror/fma"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// A dual-pods role's servers run in the pods FMA's controller makes from the requesters'
// server patch; when a requester goes, its server is put to sleep and kept as a standby. An awake
// server gets traffic; a standby none. FMA's controller cannot run here (it asks each requester
// which GPUs it holds), so the test does what it does (mirror/fma): a server pod for each
// requester, then one unbound as when its requester goes: POST /sleep, labelled sleeping.
func TestDualPodsStandbyGetsNoTraffic(t *testing.T) {
	const namespace = "routing-dualpods"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "dual", Count: 1, GPUs: 8})
	replicas := 2
	r := deployOnly(t, "granite", &inferenceservice.Args{Namespace: namespace,
		DualPodsController: &api.DualPodsController{Install: true},
		Roles: []inferenceservice.RoleArgs{{
			Name: "server", ComponentType: api.ComponentTypeWorker, Replicas: &replicas,
			ModelFlexibility: &api.ModelFlexibility{Mode: api.DualPods}, Template: dualPodsServer(),
		}, router("queue-size")}})
	ctx := context.Background()
	// What FMA does, as FMA's controller account: its admission policy lets no one else change
	// its labels (third_party/fma fma-immutable-fields).
	fma := controllerPods(t, namespace, api.FMAServiceAccountName("granite"))
	var servers []*corev1.Pod
	for i, requester := range pods(t, namespace, "granite", "server") {
		server, err := mirrorfma.ServerProvidingPod(&requester, fmt.Sprint(i))
		require.NoError(t, err)
		created, err := fma.Create(ctx, server, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { removeServerPod(fma, created.Name) }) // FMA leaves them behind (docs/sleep-wake.md)
		ready, _ := waitForPod(t, namespace, created.Name, func(p *corev1.Pod) bool { return rolestatus.PodReady(p) })
		servers = append(servers, ready)
	}
	r.startGateway()
	served := servedBy(t, r, 20)
	for _, server := range servers {
		assert.Positive(t, served[server.Name], "the awake server %s gets traffic: %v", server.Name, served)
	}

	// The second requester goes: FMA puts its server to sleep and keeps it.
	standby := servers[1]
	resp, err := http.Post("http://"+standby.Status.PodIP+":8000/sleep", "", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	current, err := fma.Get(ctx, standby.Name, metav1.GetOptions{})
	require.NoError(t, err)
	mirrorfma.Unbind(current)
	_, err = fma.Update(ctx, current, metav1.UpdateOptions{})
	require.NoError(t, err)
	process, err := harness.Cluster.ContainerProcess(ctx, namespace, standby.Name, mirrorfma.ServerContainer)
	require.NoError(t, err)
	before, err := requestsServed(process)
	require.NoError(t, err)
	time.Sleep(time.Second)

	served = servedBy(t, r, 40)
	testcluster.Progress("after %s went to sleep: %v", standby.Name, served)
	assert.Zero(t, served[standby.Name], "the sleeping standby %s gets nothing", standby.Name)
	after, err := requestsServed(process)
	require.NoError(t, err)
	assert.Equal(t, before, after, "its server served nothing more")
	assert.Equal(t, 40, served[servers[0].Name], "the awake server takes it all")
}

// dualPodsServer is the suite's vLLM server as a dual-pods role's template needs it: explicit
// cpu and memory, an HTTP readiness probe.
func dualPodsServer() k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
		Name: pulumi.String("vllm"), Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
		Args:  pulumi.ToStringArray([]string{"--model", model, "--max-model-len", "8192"}),
		Ports: k8scorev1.ContainerPortArray{&k8scorev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
		ReadinessProbe: &k8scorev1.ProbeArgs{HttpGet: &k8scorev1.HTTPGetActionArgs{Path: pulumi.String("/health"), Port: pulumi.String("http")},
			PeriodSeconds: pulumi.Int(1)},
		Resources: &k8scorev1.ResourceRequirementsArgs{
			Requests: pulumi.StringMap{"cpu": pulumi.String("2"), "memory": pulumi.String("16Gi")},
			Limits:   pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")},
		},
	}}}}
}

// servedBy sends n completions through the gateway and counts them by the pod that served each.
func servedBy(t testing.TB, r *routed, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for i := range n {
		resp := complete(r.gateway.URL, fmt.Sprintf("Request %d", i), 2, false)
		require.NoError(t, resp.err)
		out[resp.pod]++
	}
	return out
}

// controllerPods is the namespace's pods as a ServiceAccount sees them.
func controllerPods(t testing.TB, namespace, account string) typedcorev1.PodInterface {
	t.Helper()
	config := rest.CopyConfig(harness.Cluster.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + account}
	clients, err := kubernetes.NewForConfig(config)
	require.NoError(t, err)
	return clients.CoreV1().Pods(namespace)
}

// removeServerPod deletes a server pod FMA made, its finalizer removed first.
func removeServerPod(pods typedcorev1.PodInterface, name string) {
	ctx := context.Background()
	if pod, err := pods.Get(ctx, name, metav1.GetOptions{}); err == nil {
		mirrorfma.Unbind(pod)
		_, _ = pods.Update(ctx, pod, metav1.UpdateOptions{})
	}
	_ = pods.Delete(ctx, name, metav1.DeleteOptions{})
}
