// SPDX-License-Identifier: Apache-2.0

package api

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// KV cache beyond the GPU (a serving role's kvCacheOffload): vLLM's OffloadingConnector keeps the
// blocks a server evicts from its GPUs in CPU memory, cpu_bytes_to_use of it, and loads them back on
// a prefix hit. vLLM's own --kv-offloading-size makes the same connector but replaces the one
// given (vllm/config/vllm.py VllmConfig._post_init_kv_transfer_config sets kv_connector), which
// would take a prefill/decode server's NixlConnector away; so the render gives the connector
// itself, beside the server's own in vLLM's MultiConnector (its kv_connector_extra_config.connectors,
// an ordered list of connector configurations: vLLM's docs/features/disagg_prefill.md).

// Names of vLLM's KV connectors the offload composes with.
const (
	connectorOffloading = "OffloadingConnector"
	connectorMulti      = "MultiConnector"
)

// OffloadBytes is what each server of the role keeps in CPU memory; 0 without an offload (or one
// validation refuses).
func (r *Role) OffloadBytes() int64 {
	if r.KVCacheOffload == nil {
		return 0
	}
	q, err := resource.ParseQuantity(r.KVCacheOffload.CPUMemory)
	if err != nil {
		return 0
	}
	return q.Value()
}

// kvConnector is a KVTransferConfig as JSON keeps it: the fields this file reads, and every other
// kept as given.
type kvConnector map[string]any

// OffloadedTransferConfig is a server's --kv-transfer-config with its KV cache offloaded: the
// OffloadingConnector alone, or beside the server's own connector (given, its flag's value) in a
// MultiConnector (appended to its list when the given one is a MultiConnector already).
func OffloadedTransferConfig(given string, bytes int64) (string, error) {
	offload := kvConnector{"kv_connector": connectorOffloading, "kv_role": "kv_both",
		"kv_connector_extra_config": map[string]any{"cpu_bytes_to_use": bytes}}
	out := offload
	if given != "" {
		var own kvConnector
		if err := json.Unmarshal([]byte(given), &own); err != nil {
			return "", fmt.Errorf("not a KVTransferConfig in JSON: %w", err)
		}
		switch own["kv_connector"] {
		case connectorOffloading:
			return "", fmt.Errorf("the server offloads its KV cache already (%s): remove it, or kvCacheOffload", connectorOffloading)
		case connectorMulti:
			extra, _ := own["kv_connector_extra_config"].(map[string]any)
			connectors, _ := extra["connectors"].([]any)
			if extra == nil || connectors == nil {
				return "", fmt.Errorf("a %s without kv_connector_extra_config.connectors", connectorMulti)
			}
			for _, c := range connectors {
				if c, _ := c.(map[string]any); c["kv_connector"] == connectorOffloading {
					return "", fmt.Errorf("the server offloads its KV cache already (%s in its %s): remove it, or kvCacheOffload", connectorOffloading, connectorMulti)
				}
			}
			extra["connectors"] = append(connectors, offload)
			out = own
		default:
			out = kvConnector{"kv_connector": connectorMulti, "kv_role": "kv_both",
				"kv_connector_extra_config": map[string]any{"connectors": []any{own, offload}}}
		}
	}
	data, err := json.Marshal(out)
	return string(data), err
}

// validateKVCacheOffload checks a serving role's offload: a positive quantity, a server that can
// be given the connector (its own command line, not a script; none of vLLM's offloading flags,
// which would replace the connector; a connector of its own that composes), and a memory request
// that holds what every rank of the pod keeps.
func validateKVCacheOffload(role *Role, rolePath *field.Path) field.ErrorList {
	if role.KVCacheOffload == nil {
		return nil
	}
	path := rolePath.Child("kvCacheOffload", "cpuMemory")
	q, err := resource.ParseQuantity(role.KVCacheOffload.CPUMemory)
	if err != nil || q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(path, role.KVCacheOffload.CPUMemory, `a positive quantity of memory, e.g. "64Gi"`)}
	}
	if role.Template == nil || len(role.Template.Spec.Containers) == 0 {
		return nil // the template's own check says what is missing
	}
	serverIndex := ServingContainerIndex(&role.Template.Spec)
	server := &role.Template.Spec.Containers[serverIndex]
	serverPath := rolePath.Child("template", "spec", "containers").Index(serverIndex)
	var errs field.ErrorList
	if vllm.IsShellScript(server) {
		return append(errs, field.Invalid(serverPath.Child("command"), server.Command,
			"kvCacheOffload gives the server its KV connector: give the server's own command and args (or none, for the vllm/vllm-openai image), not a shell script"))
	}
	words := vllm.CommandLine(server)
	for _, flag := range vllm.LaunchFlagsOf(vllm.ByKVCacheOffload, vllm.Owned) {
		if flag.In(words) {
			errs = append(errs, field.Invalid(serverPath.Child("args"), flag.Name, fmt.Sprintf(
				"kvCacheOffload gives the server vLLM's %s beside its own connector, and %s would replace the connector: remove it",
				connectorOffloading, flag.Name)))
		}
	}
	if given, found := vllm.FlagKVTransferConfig.Value(words); found {
		if _, err := OffloadedTransferConfig(given, q.Value()); err != nil {
			errs = append(errs, field.Invalid(serverPath.Child("args"), vllm.FlagKVTransferConfig.Name+" "+given, err.Error()))
		}
		if RoutingConnector(server) == ConnectorLMCache {
			errs = append(errs, field.Invalid(serverPath.Child("args"), vllm.FlagKVTransferConfig.Name+" "+given,
				"LMCache keeps the KV cache beyond the GPU itself: configure its CPU tier, or use kvCacheOffload with another connector"))
		}
	}
	ranks := int64(role.LocalRanks())
	need := resource.NewQuantity(q.Value()*ranks, resource.BinarySI)
	for _, kind := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", server.Resources.Requests}, {"limits", server.Resources.Limits}} {
		have, set := kind.list[corev1.ResourceMemory]
		switch {
		case !set && kind.name == "requests":
			errs = append(errs, field.Required(serverPath.Child("resources", "requests", "memory"), fmt.Sprintf(
				"kvCacheOffload keeps %s of KV blocks in the pod's memory (%d ranks of %s): request at least that, and what the server needs besides",
				need, ranks, role.KVCacheOffload.CPUMemory)))
		case set && have.Cmp(*need) < 0:
			errs = append(errs, field.Invalid(serverPath.Child("resources", kind.name, "memory"), have.String(), fmt.Sprintf(
				"kvCacheOffload keeps %s of KV blocks in the pod's memory (%d ranks of %s): give at least that, and what the server needs besides",
				need, ranks, role.KVCacheOffload.CPUMemory)))
		}
	}
	return errs
}
