// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// A standalone router (examples/manifests/standalone-router.yaml, with GIE v1.5.0's picker: the
// llm-d-router release has no program here) is entered through its own Service: requests to the
// {service}-router Service's endpoint on port 8081 reach the Envoy sidecar (the test gateway
// configured from the rendered bootstrap, tests/gateway/cmd/envoy-standin), which asks the picker
// beside it and sends them to the model server it picked. The suite runs no kube-proxy: the
// Service is reached at the address and port its EndpointSlice gives, as a proxy of a Service
// would send it.
func TestStandaloneRouterServesThroughItsService(t *testing.T) {
	const namespace, name = "routing-standalone", "qwen-standalone"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "standalone", Count: 1, GPUs: 8})
	role := router("prefix-cache")
	role.HTTPRoute, role.RouterMode = nil, api.RouterStandalone
	deployOnly(t, name, service(namespace, 2, role))
	ctx := context.Background()

	svc, err := harness.Cluster.Clientset.CoreV1().Services(namespace).Get(ctx, api.RouterServiceName(name), metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, svc.Spec.Ports, 1)
	require.EqualValues(t, render.RouterProxyPort, svc.Spec.Ports[0].Port)
	var endpoint string
	require.Eventually(t, func() bool {
		endpoint = serviceEndpoint(t, namespace, svc.Name, svc.Spec.Ports[0].Name)
		return endpoint != ""
	}, 60*time.Second, 500*time.Millisecond, "the router Service has a ready endpoint")
	url := "http://" + endpoint
	t.Logf("router Service %s port %d -> endpoint %s", svc.Name, svc.Spec.Ports[0].Port, endpoint)

	servers := map[string]bool{}
	for _, p := range pods(t, namespace, name, "server") {
		servers[p.Name] = true
	}
	require.Len(t, servers, 2)
	var last response
	require.Eventually(t, func() bool {
		last = complete(url, "Are you there?", 2, false)
		return last.status == http.StatusOK
	}, 90*time.Second, 500*time.Millisecond, "a request through the router Service is served: last %+v\n%s", &last, eppLogOf(namespace))
	served := map[string]int{}
	for i := range 12 {
		resp := complete(url, fmt.Sprintf("Request %d: tell me about the sea.", i), 4, i%2 == 0)
		require.NoError(t, resp.err, "request %d", i)
		require.Equal(t, http.StatusOK, resp.status)
		assert.True(t, servers[resp.pod], "request %d was served by %q, a server of the service: %v", i, resp.pod, servers)
		assert.Equal(t, model, resp.model)
		served[resp.pod]++
	}
	t.Logf("served by %v", served)

	// The sidecar's ready listener, from the bootstrap's health_check filter.
	proxy, err := harness.Cluster.ContainerProcess(ctx, namespace, podOfEndpoint(t, namespace, endpoint), "envoy-proxy")
	require.NoError(t, err)
	ready, err := http.Get("http://" + net.JoinHostPort(proxy.PodIP, "19001") + "/ready")
	require.NoError(t, err)
	_ = ready.Body.Close()
	assert.Equal(t, http.StatusOK, ready.StatusCode, "the Envoy sidecar's /ready")
	other, err := http.Get("http://" + net.JoinHostPort(proxy.PodIP, "19001") + "/nothing")
	require.NoError(t, err)
	_ = other.Body.Close()
	assert.Equal(t, http.StatusNotFound, other.StatusCode, "the ready listener answers /ready only")
}

// serviceEndpoint is host:port of a ready endpoint of a Service's port, from its EndpointSlices.
func serviceEndpoint(t *testing.T, namespace, service, portName string) string {
	slices, err := harness.Cluster.Clientset.DiscoveryV1().EndpointSlices(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	require.NoError(t, err)
	for _, s := range slices.Items {
		for _, p := range s.Ports {
			if p.Name == nil || *p.Name != portName || p.Port == nil {
				continue
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready && len(e.Addresses) > 0 {
					return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port)))
				}
			}
		}
	}
	return ""
}

// podOfEndpoint is the pod at an endpoint's address.
func podOfEndpoint(t *testing.T, namespace, endpoint string) string {
	host, _, err := net.SplitHostPort(endpoint)
	require.NoError(t, err)
	list, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range list.Items {
		if p.Status.PodIP == host {
			return p.Name
		}
	}
	t.Fatalf("no pod at %s", host)
	return ""
}

// eppLogOf is the end of the namespace's Endpoint Picker and proxy logs, for failure messages.
func eppLogOf(namespace string) string {
	var out string
	for _, p := range harness.Cluster.ContainerProcesses(namespace) {
		if (p.Container == "epp" || p.Container == "envoy-proxy") && p.Log != "" {
			out += fmt.Sprintf("--- %s %s %s\n%s\n", p.Pod, p.Container, p.Program, tail(p.Log))
		}
	}
	return out
}
