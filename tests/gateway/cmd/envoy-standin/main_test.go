// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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
	b, err := featurespace.ParseEnvoyBootstrap(text)
	require.NoError(t, err)
	managers, err := featurespace.EnvoyListenerManagers(b)
	require.NoError(t, err)
	require.Len(t, managers[8081], 1)
	ep, err := featurespace.EnvoyExtProc(managers[8081][0])
	require.NoError(t, err)
	require.NotNil(t, ep)
	opts, err := gatewayOptions(b.GetStaticResources().GetClusters(), managers[8081][0], ep, "198.18.0.7")
	if err != nil {
		return "", err
	}
	assert.Equal(t, 1000*time.Second, opts.MessageTimeout)
	assert.False(t, opts.FailOpen)
	assert.False(t, opts.PlaintextEPP, "the ext_proc cluster has a TLS transport socket")
	assert.Contains(t, opts.RemoveHeaders, "x-gateway-destination-endpoint", "a client's destination header is removed")
	return opts.EPP, nil
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
	require.NoError(t, serveReady(managers[19001][0], readyAddr, &healthFailed))

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, dead.Close())
	gw, err := gateway.Start(context.Background(), nil, nil, gateway.Options{EPP: dead.Addr().String(), PlaintextEPP: true, MessageTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	admin := httptest.NewServer(adminHandler(gw, &healthFailed, time.Minute))
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
