// SPDX-License-Identifier: Apache-2.0

package render

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// offloadKVCache gives a role's server its KV connector with the offload (api/kvcacheoffload.go):
// the server's own --kv-transfer-config, if any, replaced by the OffloadingConnector alone or
// beside it in a MultiConnector. A data parallel pod's ranks each run this command line, so each
// keeps its own cpuMemory.
func offloadKVCache(tpl *corev1.PodTemplateSpec, role *api.Role) error {
	bytes := role.OffloadBytes()
	if bytes == 0 {
		return nil
	}
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	given, _ := vllm.FlagKVTransferConfig.Value(vllm.CommandLine(server))
	config, err := api.OffloadedTransferConfig(given, bytes)
	if err != nil {
		return err // validation refused it first
	}
	server.Args = append(vllm.FlagKVTransferConfig.Without(server.Args), vllm.FlagKVTransferConfig.Name, config)
	return nil
}
