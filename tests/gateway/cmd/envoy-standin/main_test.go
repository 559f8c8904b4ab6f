// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

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
