// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestTheOffloadKeepsTheServersConnector: the offload's connector alone, or beside the server's
// own in a MultiConnector, first the server's (which moves the KV cache between prefill and
// decode), never one that replaces it.
func TestTheOffloadKeepsTheServersConnector(t *testing.T) {
	const offload = `{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"cpu_bytes_to_use":1024},"kv_role":"kv_both"}`
	cases := []struct{ name, given, want, wantErr string }{
		{"none given", "", offload, ""},
		{"NIXL", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`,
			`{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},` + offload + `]},"kv_role":"kv_both"}`, ""},
		{"a MultiConnector", `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"}]}}`,
			`{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},` + offload + `]},"kv_role":"kv_both"}`, ""},
		{"an offload already", `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`, "", "offloads its KV cache already"},
		{"an offload in a MultiConnector", `{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[{"kv_connector":"OffloadingConnector"}]}}`, "", "offloads its KV cache already"},
		{"not JSON", `nixl`, "", "not a KVTransferConfig in JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := OffloadedTransferConfig(c.given, 1024)
			if c.wantErr != "" {
				assert.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, c.want, got)
		})
	}
}

// offloadService: one worker role of two data parallel ranks, each offloading 16Gi, with 48Gi
// requested.
func offloadService() *InferenceService {
	tpl := oneGPUServer("--model", "Qwen/Qwen3-8B")
	tpl.Spec.Containers[0].Resources.Limits[GPUResourceName] = resource.MustParse("2")
	tpl.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("48Gi")}
	return &InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "llm"},
		Spec: InferenceServiceSpec{Roles: []Role{{Name: "server", ComponentType: ComponentTypeWorker, Replicas: ptr.To(1),
			Parallelism: &Parallelism{Data: 2}, KVCacheOffload: &KVCacheOffload{CPUMemory: "16Gi"}, Template: tpl}}},
	}
}

func TestKVCacheOffloadRules(t *testing.T) {
	require.Empty(t, Validate(offloadService()))
	serverOf := func(s *InferenceService) *corev1.Container { return &s.Spec.Roles[0].Template.Spec.Containers[0] }
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"no quantity", func(s *InferenceService) { s.Spec.Roles[0].KVCacheOffload.CPUMemory = "lots" },
			`spec.roles[0].kvCacheOffload.cpuMemory: Invalid value: "lots": a positive quantity of memory`},
		{"no memory request", func(s *InferenceService) { serverOf(s).Resources.Requests = nil },
			`spec.roles[0].template.spec.containers[0].resources.requests.memory: Required value: kvCacheOffload keeps 32Gi of KV blocks in the pod's memory (2 ranks of 16Gi)`},
		{"a request every rank's offload does not fit", func(s *InferenceService) {
			serverOf(s).Resources.Requests[corev1.ResourceMemory] = resource.MustParse("24Gi")
		}, `spec.roles[0].template.spec.containers[0].resources.requests.memory: Invalid value: "24Gi": kvCacheOffload keeps 32Gi`},
		{"a limit it does not fit", func(s *InferenceService) {
			serverOf(s).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("30Gi")
		}, `spec.roles[0].template.spec.containers[0].resources.limits.memory: Invalid value: "30Gi": kvCacheOffload keeps 32Gi`},
		{"vLLM's own offloading flag", func(s *InferenceService) { serverOf(s).Args = append(serverOf(s).Args, "--kv-offloading-size", "8") },
			`spec.roles[0].template.spec.containers[0].args: Invalid value: "--kv-offloading-size": kvCacheOffload gives the server vLLM's OffloadingConnector beside its own connector, and --kv-offloading-size would replace the connector`},
		{"LMCache", func(s *InferenceService) {
			serverOf(s).Args = append(serverOf(s).Args, "--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`)
		}, `LMCache keeps the KV cache beyond the GPU itself`},
		{"a script", func(s *InferenceService) {
			s.Spec.Roles[0].Parallelism = nil
			serverOf(s).Command, serverOf(s).Args = []string{"sh", "-c"}, []string{"exec vllm serve Qwen/Qwen3-8B"}
		}, `spec.roles[0].template.spec.containers[0].command: Invalid value: ["sh","-c"]: kvCacheOffload gives the server its KV connector`},
		{"a router has none", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter, KVCacheOffload: &KVCacheOffload{CPUMemory: "1Gi"}})
		}, `spec.roles[1].kvCacheOffload: Forbidden`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, offloadService, tc.mutate, tc.want) })
	}
}
