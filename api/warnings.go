// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// FlagKVTransferConfig configures vLLM's KV connector, which moves a prompt's KV cache from a
// prefill server to a decode server (vllm/config/kv_transfer.py, KVTransferConfig).
var FlagKVTransferConfig = vllm.Flag{Name: "--kv-transfer-config"}

// Warnings are what a valid service renders but its user should be told, each at its field: what
// the project cannot tell works, as a user may know better (render's Tree.Warnings prints them).
// A prefill or decode server without a KV connector: vLLM would move no KV cache between the
// roles, and each decode server would compute every prompt again; an image may configure it in
// a way the args do not show, so it is told, not refused.
func Warnings(spec *InferenceServiceSpec) []string {
	var out []string
	rolesPath := field.NewPath("spec", "roles")
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if (role.ComponentType != ComponentTypePrefiller && role.ComponentType != ComponentTypeDecoder) ||
			role.Template == nil || len(role.Template.Spec.Containers) == 0 || role.DualPods() {
			continue
		}
		serverIndex := ServingContainerIndex(&role.Template.Spec)
		server := &role.Template.Spec.Containers[serverIndex]
		var words []string
		for _, w := range vllm.CommandLine(server) {
			words = append(words, strings.Fields(w)...) // a shell script is one word
		}
		if FlagKVTransferConfig.In(words) || vllm.FlagConfig.In(words) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: a %s server without %s: vLLM moves no KV cache between the prefill and decode roles, "+
			"so a decode server computes every prompt again; give the prefill and decode servers a KV connector "+
			`(e.g. %s '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'), unless the image configures one otherwise`,
			rolesPath.Index(i).Child("template", "spec", "containers").Index(serverIndex).Child("args"),
			role.ComponentType, FlagKVTransferConfig.Name, FlagKVTransferConfig.Name))
	}
	return out
}
