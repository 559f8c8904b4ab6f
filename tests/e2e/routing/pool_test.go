// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// Every request through the gateway lands on a Ready pod of the pool: never on a pod of the pool
// that runs but is not Ready (its server listens, and must never be reached), nor on a pod of
// another routed service serving the same model in the namespace (its pods carry the serving
// label too). Completions, streamed and not, chat
// completions and the model list each go through. The Endpoint Picker runs with the rendered
// Deployment's flags, as its ServiceAccount.
func TestRequestsLandOnlyOnReadyPodsOfThePool(t *testing.T) {
	const namespace = "routing-pool"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "pool", Count: 2, GPUs: 8})
	harness.EnsureNamespace(t, namespace)
	foreign := harness.NewStack(t, harness.ComponentProgram("other", func() *inferenceservice.Args { return service(namespace, 1, router("queue-size")) }))
	foreign.Up()
	t.Cleanup(foreign.Destroy)
	r := deploy(t, "chat", service(namespace, 3, router("queue-size")))
	servers := pods(t, namespace, "chat", "server")
	require.Len(t, readyPodNames(servers), 3)
	unready := startUnreadyPoolPod(t, servers[0])
	others := pods(t, namespace, "other", "server")
	require.Len(t, others, 1)
	require.Equal(t, "true", others[0].Labels["fusioninfer.io/serving"], "the other service's pod serves too")

	assertEndpointPickerRunsAsRendered(t, namespace, "chat")

	var responses []response
	for i := range 40 {
		responses = append(responses, complete(r.gateway.URL, fmt.Sprintf("Request %d: tell me about the sea.", i), 4, i%2 == 0))
	}
	for i := range 10 {
		responses = append(responses, chat(r.gateway.URL, fmt.Sprintf("Hello %d", i), i%2 == 0))
	}
	ready := readyPodNames(servers)
	served := map[string]int{}
	for i, resp := range responses {
		require.NoError(t, resp.err, "request %d", i)
		assert.Equal(t, 200, resp.status, "request %d", i)
		assert.Contains(t, ready, resp.pod, "request %d was served by a Ready pod of the pool", i)
		served[resp.pod]++
	}
	models, err := client.Get(r.gateway.URL + "/v1/models")
	require.NoError(t, err)
	_ = models.Body.Close()
	assert.Equal(t, 200, models.StatusCode, "the model list goes through (a request with no body: the EPP picks any endpoint)")

	endpoints := map[string]string{} // ip:port -> pod
	for _, pod := range servers {
		endpoints[net.JoinHostPort(pod.Status.PodIP, "8000")] = pod.Name
	}
	records := r.gateway.Records()
	for _, rec := range records {
		require.NotEmpty(t, rec.Picked, "request %s was picked by the EPP (%s)", rec.ID, rec.EPPError)
		assert.Equal(t, rec.Picked[0], rec.Served, "request %s went to the endpoint the EPP picked first", rec.ID)
		assert.Contains(t, ready, endpoints[rec.Served], "request %s went to %s, a Ready pod of the pool", rec.ID, rec.Served)
		if rec.Pod != "" { // the sim names itself on completions, not on the model list
			assert.Equal(t, endpoints[rec.Served], rec.Pod, "the endpoint %s of request %s is the pod that answered it", rec.Served, rec.ID)
		}
	}
	for _, p := range []struct{ namespace, pod, why string }{
		{namespace, unready, "a pod of the pool that is not Ready"},
		{namespace, others[0].Name, "a pod of another service with the same model"},
	} {
		process, err := harness.Cluster.ContainerProcess(context.Background(), p.namespace, p.pod, "vllm")
		require.NoError(t, err)
		n, err := requestsServed(process)
		require.NoError(t, err, "its server is up and answers")
		assert.Zero(t, n, "%s (%s) served nothing", p.why, p.pod)
	}
	var total float64
	for _, pod := range servers {
		process, err := harness.Cluster.ContainerProcess(context.Background(), namespace, pod.Name, "vllm")
		require.NoError(t, err)
		n, err := requestsServed(process)
		require.NoError(t, err)
		total += n
	}
	testcluster.Progress("%d requests through the gateway, served by %v", len(records), served)
	assert.GreaterOrEqual(t, total, float64(len(responses)), "the pool's servers completed every request")
}

// startUnreadyPoolPod runs a copy of a server pod of the pool that kwok keeps not Ready
// (testcluster.NotReadyAnnotation: Running, with its address, its server listening) and returns its name.
func startUnreadyPoolPod(t *testing.T, like corev1.Pod) string {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: like.Name + "-unready", Namespace: like.Namespace,
		Labels: map[string]string{}, Annotations: map[string]string{testcluster.NotReadyAnnotation: "true"}}}
	for k, v := range like.Labels { // the pool's labels, not those the LWS's StatefulSet would adopt it by
		if !strings.Contains(k, "leaderworkerset.sigs.k8s.io") && !strings.Contains(k, "statefulset") && k != "controller-revision-hash" {
			pod.Labels[k] = v
		}
	}
	for k, v := range like.Annotations {
		if k == testcluster.ModelServerArgsAnnotation {
			pod.Annotations[k] = v
		}
	}
	pod.Spec.NodeName = like.Spec.NodeName
	pod.Spec.Containers = like.Spec.Containers
	_, err := harness.Cluster.Clientset.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = harness.Cluster.Clientset.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	})
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = harness.Cluster.ContainerProcess(waitCtx, pod.Namespace, pod.Name, "vllm")
	require.NoError(t, err, "its server runs")
	got, err := harness.Cluster.Clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.False(t, rolestatus.PodReady(got), "it is not Ready")
	require.NotEmpty(t, got.Status.PodIP, "it has an address")
	pool := map[string]string{"fusioninfer.io/service": "chat", "fusioninfer.io/serving": "true"}
	require.True(t, labels.SelectorFromSet(pool).Matches(labels.Set(got.Labels)), "the pool selects it")
	return pod.Name
}

// assertEndpointPickerRunsAsRendered: the EPP process's arguments are its pod's, the Deployment's,
// with only the config file's path (the ConfigMap's volume) and the ports (the container's, on
// loopback ports of its own) mapped to this machine.
func assertEndpointPickerRunsAsRendered(t *testing.T, namespace, service string) {
	t.Helper()
	eppPods := pods(t, namespace, service, "router")
	require.Len(t, eppPods, 1)
	pod := eppPods[0]
	process, err := harness.Cluster.ContainerProcess(context.Background(), namespace, pod.Name, "epp")
	require.NoError(t, err)
	container := pod.Spec.Containers[0]
	require.Len(t, process.Args, len(container.Args), "the process has the container's arguments: %v", process.Args)
	for i, arg := range container.Args {
		switch {
		case arg == process.Args[i]:
		case strings.HasPrefix(arg, "/config/"):
			assert.True(t, strings.HasSuffix(process.Args[i], "/volumes/epp-config"+strings.TrimPrefix(arg, "/config")), "%s: %s", arg, process.Args[i])
		default:
			port := slices.IndexFunc(container.Ports, func(p corev1.ContainerPort) bool { return fmt.Sprint(p.ContainerPort) == arg })
			require.GreaterOrEqual(t, port, 0, "argument %d %q is the container's, or a mapped path or port: %q", i, arg, process.Args[i])
			assert.Equal(t, fmt.Sprint(process.Ports[container.Ports[port].ContainerPort]), process.Args[i])
		}
	}
	assert.Equal(t, api.EndpointPickerName(service), pod.Spec.ServiceAccountName)
}
