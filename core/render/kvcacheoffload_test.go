// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// TestAnOffloadedDecodeServerStillMovesItsKVCache: prefill/decode servers that offload keep NIXL,
// first in their MultiConnector, with the offload after it; the decode leaders' routing sidecar
// still speaks NIXL to the prefill servers.
func TestAnOffloadedDecodeServerStillMovesItsKVCache(t *testing.T) {
	svc := story(t, "qwen-pd-router.yaml").Service
	for i := range svc.Spec.Roles {
		role := &svc.Spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		role.KVCacheOffload = &api.KVCacheOffload{CPUMemory: "8Gi"}
		server := &role.Template.Spec.Containers[api.ServingContainerIndex(&role.Template.Spec)]
		server.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}
	}
	tree := build(t, svc)
	for _, lws := range leaderWorkerSets(tree) {
		tpl := podTemplates(lws)[0]
		server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
		value, found := vllm.FlagKVTransferConfig.Value(vllm.CommandLine(&server))
		require.True(t, found, lws.Name)
		assert.Len(t, vllm.FlagKVTransferConfig.Occurrences(vllm.CommandLine(&server)), 1, "one connector configuration")
		var config struct {
			Connector string `json:"kv_connector"`
			Extra     struct {
				Connectors []struct {
					Connector string         `json:"kv_connector"`
					Extra     map[string]any `json:"kv_connector_extra_config"`
				} `json:"connectors"`
			} `json:"kv_connector_extra_config"`
		}
		require.NoError(t, json.Unmarshal([]byte(value), &config))
		assert.Equal(t, "MultiConnector", config.Connector)
		require.Len(t, config.Extra.Connectors, 2)
		assert.Equal(t, "NixlConnector", config.Extra.Connectors[0].Connector)
		assert.Equal(t, "OffloadingConnector", config.Extra.Connectors[1].Connector)
		assert.EqualValues(t, 8<<30, config.Extra.Connectors[1].Extra["cpu_bytes_to_use"])
		for _, c := range tpl.Spec.InitContainers {
			if c.Name == api.RoutingSidecarName {
				assert.Contains(t, c.Args, "--kv-connector=nixlv2")
			}
		}
	}
}
