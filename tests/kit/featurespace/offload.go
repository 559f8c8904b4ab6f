// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// KV cache offloading, read from each server's --kv-transfer-config as vLLM reads it
// (vllm/config/kv_transfer.py KVTransferConfig; a MultiConnector's kv_connector_extra_config.connectors
// are its connectors, in order).

// connectors are the KV connectors of a --kv-transfer-config, a MultiConnector's in order, each
// with its extra configuration.
func connectors(raw string) ([]map[string]any, error) {
	var config map[string]any
	if err := json.Unmarshal([]byte(raw), &config); err != nil {
		return nil, err
	}
	if config["kv_connector"] != "MultiConnector" {
		return []map[string]any{config}, nil
	}
	extra, _ := config["kv_connector_extra_config"].(map[string]any)
	list, _ := extra["connectors"].([]any)
	var out []map[string]any
	for _, c := range list {
		if c, ok := c.(map[string]any); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// What the servers of a container keep in CPU memory (every OffloadingConnector's
// cpu_bytes_to_use, one a rank) fits the container's memory request; a prefill or decode server
// that offloads still has the connector that moves its KV cache to the other role (NIXL).
func anOffloadFitsThePodsMemory(tree *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		commands, err := vllmCommands(pod)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		offloaded := map[*corev1.Container]int64{}
		for _, cmd := range commands {
			raw, found := argv(cmd.words).value("--kv-transfer-config")
			if !found {
				continue
			}
			list, err := connectors(raw)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: container %s: --kv-transfer-config %q: %v", pod.Desc, cmd.container.Name, raw, err))
				continue
			}
			moves, offloads := false, false
			for _, c := range list {
				switch c["kv_connector"] {
				case "OffloadingConnector":
					offloads = true
					extra, _ := c["kv_connector_extra_config"].(map[string]any)
					bytes, _ := extra["cpu_bytes_to_use"].(float64)
					offloaded[cmd.container] += int64(bytes)
				case "NixlConnector":
					moves = true
				}
			}
			if role := tree.Service.Spec.RoleNamed(pod.Role); role != nil && role.ComponentType != "worker" && offloads && !moves {
				out = append(out, fmt.Sprintf("%s: container %s offloads its KV cache with no connector moving it to the other role: %s", pod.Desc, cmd.container.Name, raw))
			}
		}
		for c, bytes := range offloaded {
			request := c.Resources.Requests[corev1.ResourceMemory]
			if need := resource.NewQuantity(bytes, resource.BinarySI); request.Cmp(*need) < 0 {
				out = append(out, fmt.Sprintf("%s: container %s keeps %s of KV blocks in memory and requests %s", pod.Desc, c.Name, need, request.String()))
			}
		}
	}
	return out
}
