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

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// model is the model every server of the suite serves.
const model = "Qwen/Qwen3-8B"

// simulatedGPU is llm-d-inference-sim's latency model for every server (its
// docs/latency-simulation.md and kv-cache.md): 4 requests run at once (max-num-seqs), the rest
// wait; prefill costs 20 ms plus 1 ms a prompt token not in the server's KV cache (the per-token
// calculator, pkg/llm-d-inference-sim/latencies.go perTokenCalculator), each further token 10 ms.
// So the time to first token grows with the queue and shrinks with prefix-cache hits.
const simulatedGPU = simulatedGPUOwnBlockSize + " --block-size=16"

// simulatedGPUOwnBlockSize is simulatedGPU with the block size the server's vLLM command line
// gives (a server that publishes KV-cache events for precise prefix-cache routing has its own).
const simulatedGPUOwnBlockSize = "--latency-calculator=per-token --prefill-overhead=20ms --prefill-time-per-token=1ms " +
	"--inter-token-latency=10ms --max-num-seqs=4 --enable-kvcache --kv-cache-size=4096"

// server is a vLLM pod template of one GPU serving model on its "http" port 8000, with
// simulatedGPU; annotations are added to the pod's.
func server(annotations map[string]string, args ...string) k8scorev1.PodTemplateSpecInput {
	return serverOf(annotations, append([]string{"--model", model}, args...)...)
}

// serverOf is server with vLLM's arguments as given: a service with spec.model names the model.
func serverOf(annotations map[string]string, args ...string) k8scorev1.PodTemplateSpecInput {
	podAnnotations := pulumi.StringMap{testcluster.ModelServerArgsAnnotation: pulumi.String(simulatedGPU)}
	for k, v := range annotations {
		podAnnotations[k] = pulumi.String(v)
	}
	return &k8scorev1.PodTemplateSpecArgs{
		Metadata: &k8smetav1.ObjectMetaArgs{Annotations: podAnnotations},
		Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
			Name: pulumi.String("vllm"), Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
			Args: pulumi.ToStringArray(append([]string{"--max-model-len", "8192"}, args...)),
			// GIE's reference vLLM Deployment (config/manifests/vllm/gpu-deployment.yaml) sleeps 30 s
			// before SIGTERM, at which vLLM stops accepting connections, so that gateways take the pod
			// out of rotation first; the suite's EPP does so in milliseconds.
			Lifecycle: &k8scorev1.LifecycleArgs{PreStop: &k8scorev1.LifecycleHandlerArgs{Sleep: &k8scorev1.SleepActionArgs{Seconds: pulumi.Int(2)}}},
			ReadinessProbe: &k8scorev1.ProbeArgs{HttpGet: &k8scorev1.HTTPGetActionArgs{Path: pulumi.String("/health"), Port: pulumi.String("http")},
				PeriodSeconds: pulumi.Int(1)},
			Ports:     k8scorev1.ContainerPortArray{&k8scorev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
			Resources: &k8scorev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")}},
		}}},
	}
}

// router is a router role of GIE v1.5.0's Endpoint Picker (the last release of GIE's own, and
// the one of the proxy's the suite can run) with strategy.
func router(strategy string) inferenceservice.RoleArgs {
	return inferenceservice.RoleArgs{Name: "router", ComponentType: api.ComponentTypeRouter, Strategy: strategy,
		EndpointPicker: &api.EndpointPicker{Release: api.EPPReleaseGIE150},
		HTTPRoute:      map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}}
}

// standaloneRouter is router(strategy) entered through its own proxy and Service, with replicas
// Endpoint Pickers.
func standaloneRouter(strategy string, replicas int) inferenceservice.RoleArgs {
	r := router(strategy)
	r.HTTPRoute, r.RouterMode = nil, api.RouterStandalone
	r.EndpointPicker.Replicas = &replicas
	return r
}

// roundRobinRouter is a router role of GIE v1.6.0's lightweight Endpoint Picker, which picks the
// pool's Ready pods in turn.
func roundRobinRouter() inferenceservice.RoleArgs {
	r := router("")
	r.EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseLWEPP}
	return r
}

// service is a service of one worker role "server" of replicas beside roles.
func service(namespace string, replicas int, roles ...inferenceservice.RoleArgs) *inferenceservice.Args {
	return &inferenceservice.Args{Namespace: namespace, Roles: append([]inferenceservice.RoleArgs{{
		Name: "server", ComponentType: api.ComponentTypeWorker, Replicas: &replicas, Template: server(nil),
	}}, roles...)}
}

// routed is a deployed service with a router, and a gateway to its pool.
type routed struct {
	t         testing.TB
	namespace string
	name      string
	stack     *harness.Stack
	gateway   *gateway.Gateway
}

// deploy deploys the service name from args (each `pulumi up` reads them again: a test changes
// them and calls r.stack.Up), starts a gateway to its pool and waits until a request goes
// through. Everything goes when the test ends.
func deploy(t testing.TB, name string, args *inferenceservice.Args) *routed {
	t.Helper()
	r := deployOnly(t, name, args)
	r.startGateway()
	return r
}

// deployOnly deploys the service, with no gateway yet.
func deployOnly(t testing.TB, name string, args *inferenceservice.Args) *routed {
	t.Helper()
	harness.EnsureNamespace(t, args.Namespace)
	s := harness.NewStack(t, harness.ComponentProgram(name, func() *inferenceservice.Args { return args }))
	s.Up()
	t.Cleanup(s.Destroy)
	return &routed{t: t, namespace: args.Namespace, name: name, stack: s}
}

// startGateway starts a gateway to the pool (stopped when the test ends) and waits until a
// request through it is served.
func (r *routed) startGateway() {
	t := r.t
	gw, err := gateway.Start(context.Background(), harness.Cluster.Clientset, harness.Cluster.Dynamic,
		gateway.Options{Namespace: r.namespace, Pool: api.PoolName(r.name)})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	r.gateway = gw
	var last response
	require.Eventually(t, func() bool {
		last = complete(gw.URL, "Are you there?", 2, false)
		return last.status == 200
	}, 90*time.Second, 500*time.Millisecond, "a request through the gateway is served: last %+v\n%s", &last, r.eppLog())
}

// eppLog is the end of the Endpoint Picker's log, for failure messages.
func (r *routed) eppLog() string {
	var out strings.Builder
	for _, p := range harness.Cluster.ContainerProcesses(r.namespace) {
		if p.Container == "epp" && p.Log != "" {
			fmt.Fprintf(&out, "--- %s %s (%s)\n%s\n", p.Pod, p.Program, strings.Join(p.Args, " "), tail(p.Log))
		}
	}
	return out.String()
}

// pods are the pods of a service's role, by name.
func pods(t testing.TB, namespace, service, role string) []corev1.Pod {
	t.Helper()
	list, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: render.LabelService + "=" + service + "," + render.LabelRoleName + "=" + role})
	require.NoError(t, err)
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// readyPodNames are the names of the Ready pods among pods.
func readyPodNames(pods []corev1.Pod) []string {
	var out []string
	for _, pod := range pods {
		if rolestatus.PodReady(&pod) && pod.DeletionTimestamp == nil {
			out = append(out, pod.Name)
		}
	}
	return out
}

// waitForNewEndpointPicker waits, after a `pulumi up` that replaced the Endpoint Picker (a new
// configuration restarts it), until the EPP of the router's current pod decides a request.
func (r *routed) waitForNewEndpointPicker() {
	t := r.t
	t.Helper()
	var address string
	require.Eventually(t, func() bool {
		eppPods := pods(t, r.namespace, r.name, "router")
		if len(eppPods) != 1 || eppPods[0].DeletionTimestamp != nil || eppPods[0].Status.PodIP == "" || !rolestatus.PodReady(&eppPods[0]) {
			return false
		}
		address = net.JoinHostPort(eppPods[0].Status.PodIP, "9002")
		before := len(r.gateway.Records())
		complete(r.gateway.URL, "Are you the new one?", 2, false)
		records := r.gateway.Records()[before:]
		return len(records) > 0 && records[0].EPP == address && records[0].Completed
	}, 2*time.Minute, 500*time.Millisecond, "the new Endpoint Picker (%s) decides\n%s", &address, r.eppLog())
}

// pickLatencies are the EPP's decision times of the records it decided.
func pickLatencies(records []gateway.Record) []time.Duration {
	var out []time.Duration
	for _, rec := range records {
		if len(rec.Picked) > 0 {
			out = append(out, rec.PickLatency)
		}
	}
	return out
}
