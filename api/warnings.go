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
var FlagKVTransferConfig = vllm.FlagKVTransferConfig

// Warnings are what a valid service renders but its user should be told, each at its field: what
// the project cannot tell works, as a user may know better (render's Tree.Warnings prints them).
// A prefill or decode server without a KV connector: vLLM would move no KV cache between the
// roles, and each decode server would compute every prompt again; an image may configure it in
// a way the args do not show, so it is told, not refused. A label of AppLabels in the service's
// or a template's labels: the render replaces it with its own, so a selector of the user's on it
// would find nothing (issue 55: replaced without a word).
func Warnings(svc *InferenceService) []string {
	spec := &svc.Spec
	out := replacedLabels(svc.Labels, field.NewPath("metadata", "labels"))
	rolesPath := field.NewPath("spec", "roles")
	for i := range spec.Roles {
		if tpl := spec.Roles[i].Template; tpl != nil {
			out = append(out, replacedLabels(tpl.Labels, rolesPath.Index(i).Child("template", "metadata", "labels"))...)
		}
	}
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

// replacedLabels are a warning for each of AppLabels that labels gives.
func replacedLabels(labels map[string]string, path *field.Path) []string {
	var out []string
	for _, key := range AppLabels {
		if value, given := labels[key]; given {
			out = append(out, fmt.Sprintf("%s: %q is replaced: fusioninfer sets %s on the objects it builds "+
				"(the role, service or replica they belong to); give the value another label key", path.Key(key), value, key))
		}
	}
	return out
}
