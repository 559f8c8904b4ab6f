// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
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
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
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
	deployOnly(t, name, service(namespace, 2, standaloneRouter("prefix-cache", 1)))
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

	servers, serverIPs := map[string]bool{}, map[string]string{}
	for _, p := range pods(t, namespace, name, "server") {
		servers[p.Name], serverIPs[p.Name] = true, p.Status.PodIP
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

	// Each request went where the picker picked: the sidecar's records (envoy-standin logs each
	// gateway.Record after its RecordPrefix "request:") name the picked endpoint, and the server
	// that answered is the pod at that address.
	proxy, err := harness.Cluster.ContainerProcess(ctx, namespace, podOfEndpoint(t, namespace, endpoint), "envoy-proxy")
	require.NoError(t, err)
	records := proxyRecords(t, proxy.Log)
	var picked int
	for _, r := range records {
		if r.Status != http.StatusOK {
			continue // the first tries, before the servers were Ready
		}
		picked++
		require.NotEmpty(t, r.Picked, "request %s: the picker picked", r.ID)
		host, _, err := net.SplitHostPort(r.Served)
		require.NoError(t, err)
		assert.Equal(t, r.Picked[0], r.Served, "request %s went to the picker's first pick", r.ID)
		assert.Equal(t, serverIPs[r.Pod], host, "request %s: served by %s at the address the picker picked", r.ID, r.Pod)
	}
	assert.GreaterOrEqual(t, picked, 13, "the sidecar recorded every request served")

	// The sidecar's ready listener, from the bootstrap's health_check filter.
	ready, err := http.Get("http://" + net.JoinHostPort(proxy.PodIP, "19001") + "/ready")
	require.NoError(t, err)
	_ = ready.Body.Close()
	assert.Equal(t, http.StatusOK, ready.StatusCode, "the Envoy sidecar's /ready")
	other, err := http.Get("http://" + net.JoinHostPort(proxy.PodIP, "19001") + "/nothing")
	require.NoError(t, err)
	_ = other.Body.Close()
	assert.Equal(t, http.StatusNotFound, other.StatusCode, "the ready listener answers /ready only")

	// The bootstrap drives the sidecar: with its ext_proc cluster on a port nothing serves (the
	// test cluster's copy of the ConfigMap changed, the picker's pod replaced to read it), the
	// sidecar gets no answer and, failing closed, refuses every request.
	configs := harness.Cluster.Clientset.CoreV1().ConfigMaps(namespace)
	cm, err := configs.Get(ctx, api.RouterProxyConfigName(name), metav1.GetOptions{})
	require.NoError(t, err)
	// ext_proc's cluster has two hosts on the picker's port: the pod's own picker first, the
	// pickers' Service after it (used only while the first fails its health check, which asks
	// another port, 9003, and so passes here)
	require.Equal(t, 2, strings.Count(cm.Data["envoy.yaml"], "port_value: 9002"), "the pod's picker and the pickers' Service")
	before, _, _ := strings.Cut(cm.Data["envoy.yaml"], "port_value: 9002")
	require.True(t, strings.HasSuffix(strings.TrimSpace(before), "address: 127.0.0.1"), "the first is the pod's own")
	cm.Data["envoy.yaml"] = strings.Replace(cm.Data["envoy.yaml"], "port_value: 9002", "port_value: 9009", 1)
	_, err = configs.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	old := podOfEndpoint(t, namespace, endpoint)
	require.NoError(t, harness.Cluster.Clientset.CoreV1().Pods(namespace).Delete(ctx, old, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		found := serviceEndpoint(t, namespace, svc.Name, svc.Spec.Ports[0].Name)
		current := podOfEndpointOrEmpty(namespace, found)
		if current == "" || current == old {
			return false
		}
		endpoint = found
		return true
	}, 90*time.Second, 500*time.Millisecond, "the router Service has the new picker pod's endpoint")
	for i := range 3 {
		resp := complete("http://"+endpoint, fmt.Sprintf("Refused %d", i), 2, false)
		require.Error(t, resp.err)
		assert.Equal(t, http.StatusInternalServerError, resp.status, "refused: %v", resp.err)
		assert.ErrorContains(t, resp.err, "ext_proc_error")
		if i == 0 {
			t.Logf("with ext_proc on port 9009, the new picker pod's endpoint %s: %v", endpoint, resp.err)
		}
	}
}

// proxyRecords are the requests envoy-standin logged.
func proxyRecords(t *testing.T, log string) []gateway.Record {
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	var out []gateway.Record
	for _, line := range strings.Split(string(data), "\n") {
		if text, ok := strings.CutPrefix(line, "request: "); ok {
			var r gateway.Record
			require.NoError(t, json.Unmarshal([]byte(text), &r))
			out = append(out, r)
		}
	}
	return out
}

// serviceEndpoint is host:port of a ready endpoint of a Service's port, from its EndpointSlices.
func serviceEndpoint(t *testing.T, namespace, service, portName string) string {
	ready, err := readyEndpoints(namespace, service, portName)
	require.NoError(t, err)
	if len(ready) == 0 {
		return ""
	}
	return ready[0]
}

// readyEndpoints are host:port of the Ready endpoints of a Service's port, from its
// EndpointSlices: where kube-proxy would send a new connection.
func readyEndpoints(namespace, service, portName string) ([]string, error) {
	list, err := harness.Cluster.Clientset.DiscoveryV1().EndpointSlices(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	return gateway.ReadyEndpoints(gateway.Pointers(list.Items), namespace, service, portName), nil
}

// podOfEndpoint is the pod at an endpoint's address.
func podOfEndpoint(t *testing.T, namespace, endpoint string) string {
	name := podOfEndpointOrEmpty(namespace, endpoint)
	require.NotEmpty(t, name, "a pod at %s", endpoint)
	return name
}

// podOfEndpointOrEmpty is the pod at an endpoint's address, not being deleted; "" for none.
func podOfEndpointOrEmpty(namespace, endpoint string) string {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil || host == "" {
		return ""
	}
	list, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, p := range list.Items {
		if p.Status.PodIP == host && p.DeletionTimestamp == nil {
			return p.Name
		}
	}
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
