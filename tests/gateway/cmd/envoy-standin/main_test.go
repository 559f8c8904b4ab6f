// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/featurespace"
)

// renderedBootstrap is the standalone example's rendered Envoy bootstrap (core/render's golden).
func renderedBootstrap(t *testing.T) string {
	data, err := os.ReadFile("../../../../core/render/testdata/golden/standalone-router.yaml")
	require.NoError(t, err)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cm corev1.ConfigMap
		if yaml.Unmarshal([]byte(doc), &cm) == nil && cm.Kind == "ConfigMap" && strings.HasSuffix(cm.Name, "-router-proxy") {
			return cm.Data["envoy.yaml"]
		}
	}
	t.Fatal("no -router-proxy ConfigMap in the golden tree")
	return ""
}

func optionsOf(t *testing.T, text string) (string, error) {
	opts, _, err := gatewayOptionsOf(t, text)
	return opts.EPP, err
}

func gatewayOptionsOf(t *testing.T, text string) (gateway.Options, *extProcFailover, error) {
	b, err := featurespace.ParseEnvoyBootstrap(text)
	require.NoError(t, err)
	managers, err := featurespace.EnvoyListenerManagers(b)
	require.NoError(t, err)
	require.Len(t, managers[8081], 1)
	ep, err := featurespace.EnvoyExtProc(managers[8081][0])
	require.NoError(t, err)
	require.NotNil(t, ep)
	opts, failover, err := gatewayOptions(b.GetStaticResources().GetClusters(), managers[8081][0], ep, "198.18.0.7")
	if err != nil {
		return opts, nil, err
	}
	assert.Equal(t, 1000*time.Second, opts.MessageTimeout)
	assert.False(t, opts.FailOpen)
	assert.False(t, opts.PlaintextEPP, "the ext_proc cluster has a TLS transport socket")
	assert.Contains(t, opts.RemoveHeaders, "x-gateway-destination-endpoint", "a client's destination header is removed")
	return opts, failover, nil
}

// The rendered bootstrap configures the gateway: the picker on the pod's loopback (here the pod's
// address) at its gRPC port, over TLS, with the filter's timeout and failure mode.
func TestGatewayOptionsFromTheRenderedBootstrap(t *testing.T) {
	epp, err := optionsOf(t, renderedBootstrap(t))
	require.NoError(t, err)
	assert.Equal(t, "198.18.0.7:9002", epp)
}

// What the gateway would do differently from Envoy is refused: another original-destination header.
func TestAnotherDestinationHeaderIsRefused(t *testing.T) {
	text := renderedBootstrap(t)
	require.Contains(t, text, "x-gateway-destination-endpoint")
	_, err := optionsOf(t, strings.ReplaceAll(text, "x-gateway-destination-endpoint", "x-other-endpoint"))
	require.ErrorContains(t, err, `routes by header "x-other-endpoint"`)
}

// The drain hook's admin calls, as Envoy answers them: /healthcheck/fail makes the ready listener
// answer 503, /drain_listeners?graceful drains the serving listener (its clients asked to close
// their connections), and a mutation asked by GET is refused.
func TestAdminDrainsAsEnvoy(t *testing.T) {
	b, err := featurespace.ParseEnvoyBootstrap(renderedBootstrap(t))
	require.NoError(t, err)
	managers, err := featurespace.EnvoyListenerManagers(b)
	require.NoError(t, err)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	readyAddr := free.Addr().String()
	require.NoError(t, free.Close())
	var healthFailed atomic.Bool
	// the pod's loopback is 127.0.0.2 here: the admin interface on its port there
	const loopback = "127.0.0.2"
	require.NoError(t, serveReady(managers[19001][0], readyAddr, &healthFailed, b.GetStaticResources().GetClusters(), loopback))

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, dead.Close())
	gw, err := gateway.Start(context.Background(), nil, nil, gateway.Options{EPP: dead.Addr().String(), PlaintextEPP: true, MessageTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	adminListener, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(int(b.GetAdmin().GetAddress().GetSocketAddress().GetPortValue()))))
	require.NoError(t, err)
	admin := httptest.NewUnstartedServer(adminHandler(gw, "http-8081", &healthFailed, time.Minute))
	admin.Listener = adminListener
	admin.Start()
	t.Cleanup(admin.Close)

	status := func(method, url string) int {
		req, err := http.NewRequest(method, url, nil)
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, status(http.MethodGet, "http://"+readyAddr+"/ready"))
	// The ready listener's other route: the bootstrap's /stats/prometheus, to the admin interface
	// (what the router's PodMonitor scrapes).
	stats, err := http.Get("http://" + readyAddr + "/stats/prometheus")
	require.NoError(t, err)
	text, _ := io.ReadAll(stats.Body)
	_ = stats.Body.Close()
	assert.Equal(t, http.StatusOK, stats.StatusCode)
	assert.Contains(t, string(text), `envoy_http_downstream_rq_total{envoy_http_conn_manager_prefix="http-8081"} 0`)
	assert.Equal(t, http.StatusNotFound, status(http.MethodGet, "http://"+readyAddr+"/elsewhere"), "no route")
	assert.Equal(t, http.StatusMethodNotAllowed, status(http.MethodGet, admin.URL+"/healthcheck/fail"))
	assert.Equal(t, http.StatusOK, status(http.MethodGet, "http://"+readyAddr+"/ready"), "a GET changed nothing")
	assert.Equal(t, http.StatusOK, status(http.MethodPost, admin.URL+"/healthcheck/fail"))
	assert.Equal(t, http.StatusServiceUnavailable, status(http.MethodGet, "http://"+readyAddr+"/ready"))

	assert.Equal(t, http.StatusOK, status(http.MethodPost, admin.URL+"/drain_listeners?graceful"))
	resp, err := (&http.Client{Transport: &http.Transport{}}).Post(gw.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err, "a draining listener still accepts")
	_ = resp.Body.Close()
	assert.True(t, resp.Close, "and asks the client to close its connection")
}

// The rendered ext_proc cluster fails over as the stand-in reads it: the pod's picker checked by
// gRPC health on its health port in plaintext, the pickers' Service after it.
func TestFailoverFromTheRenderedBootstrap(t *testing.T) {
	opts, failover, err := gatewayOptionsOf(t, renderedBootstrap(t))
	require.NoError(t, err)
	require.NotNil(t, failover)
	assert.Equal(t, "198.18.0.7:9002", opts.EPP)
	assert.Equal(t, "198.18.0.7:9003", failover.health, "the picker's health port, on the pod's loopback")
	assert.Equal(t, "inference-extension", failover.serviceName, "the service the picker's readiness probe asks")
	assert.Equal(t, "qwen-standalone-epp", failover.fallback)
	assert.EqualValues(t, 9002, failover.fallbackPort)
	assert.Equal(t, 500*time.Millisecond, failover.interval)
	assert.EqualValues(t, 1, failover.unhealthy)
}

// Requests go to the pod's own picker while it answers SERVING, to the Service's Ready pickers
// while it does not (or does not answer), and back once it serves again.
func TestExtProcFailsOverWhileThePickerFailsItsCheck(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := grpc.NewServer()
	health := grpchealth.NewServer()
	healthpb.RegisterHealthServer(server, health)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	const service = "inference-extension"
	health.SetServingStatus(service, healthpb.HealthCheckResponse_NOT_SERVING)

	clients := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "chat-epp", Namespace: "llm"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "grpc-ext-proc", Port: 9002}, {Name: "http-metrics", Port: 9090}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "chat-epp-x", Namespace: "llm", Labels: map[string]string{discoveryv1.LabelServiceName: "chat-epp"}},
			Ports:      []discoveryv1.EndpointPort{{Name: ptr.To("grpc-ext-proc"), Port: ptr.To[int32](9002)}, {Name: ptr.To("http-metrics"), Port: ptr.To[int32](9090)}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"198.18.0.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"198.18.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			},
		})
	local := "198.18.0.7:9002"
	gw, err := gateway.Start(context.Background(), nil, nil, gateway.Options{EPP: local})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	f := &extProcFailover{local: local, health: listener.Addr().String(), serviceName: service,
		interval: 20 * time.Millisecond, timeout: time.Second, unhealthy: 1, healthy: 1, fallback: "chat-epp", fallbackPort: 9002}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, f.run(ctx, gw, clients, "llm"))
	sendsTo := func(want ...string) func() bool {
		return func() bool {
			_, epp, _ := gw.State()
			return assert.ObjectsAreEqual(want, epp)
		}
	}
	// each step waits for the other destination, so none passes on the state before it
	require.Eventually(t, sendsTo("198.18.0.8:9002"), 5*time.Second, 10*time.Millisecond, "the Service's Ready picker, on the port of its ext_proc, until the local one serves")
	health.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
	require.Eventually(t, sendsTo(local), 5*time.Second, 10*time.Millisecond, "the local picker once it serves")
	health.SetServingStatus(service, healthpb.HealthCheckResponse_NOT_SERVING)
	require.Eventually(t, sendsTo("198.18.0.8:9002"), 5*time.Second, 10*time.Millisecond, "the Service's picker while the local one does not serve")
	health.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
	require.Eventually(t, sendsTo(local), 5*time.Second, 10*time.Millisecond, "back once the local picker serves")
	server.Stop()
	require.Eventually(t, sendsTo("198.18.0.8:9002"), 5*time.Second, 10*time.Millisecond, "a picker that does not answer fails its check")
}
