// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// requestCommand is a shell line that sends one completion to a routed service from a machine
// with kubectl (issue 44: where to send requests). Standalone: through `kubectl port-forward` to
// the router's Service. Gateway: to the address the route's first parent Gateway reports, with the
// route's first hostname as Host (docs/install.md's request). The model is the one the servers
// answer to: --served-model-name's first value, else --model, as vLLM names it (vllm/entrypoints
// openai/cli_args.py: served_model_name defaults to the model).
func requestCommand(t *Tree, rs *RouterSummary) string {
	body := fmt.Sprintf(`-H 'Content-Type: application/json' -d '{"model": %q, "prompt": "Kubernetes is", "max_tokens": 20}'`, servedModel(t))
	ns := t.Service.Namespace
	if rs.Service != "" {
		return fmt.Sprintf("kubectl -n %s port-forward service/%s %d:%d & sleep 2; curl -s localhost:%d/v1/completions %s",
			ns, rs.Service, rs.ServicePort, rs.ServicePort, rs.ServicePort, body)
	}
	route := t.routing.HTTPRoute
	if route == nil || len(route.ParentRefs) == 0 {
		return ""
	}
	parent := route.ParentRefs[0]
	gatewayNamespace := ns
	if parent.Namespace != nil {
		gatewayNamespace = string(*parent.Namespace)
	}
	host := ""
	if len(route.Hostnames) > 0 {
		host = fmt.Sprintf("-H 'Host: %s' ", route.Hostnames[0])
	}
	return fmt.Sprintf("curl -s http://$(kubectl -n %s get gateway %s -o jsonpath='{.status.addresses[0].value}')/v1/completions %s%s",
		gatewayNamespace, parent.Name, host, body)
}

// servedModel is the model name the service's servers answer to: a model source's served name
// (model.go passes it as --served-model-name), else what the first serving role's template names.
func servedModel(t *Tree) string {
	spec := &t.Service.Spec
	for _, owner := range modelOwners(spec) {
		if m := t.resolved.Models[owner]; m != nil {
			return m.ServedName()
		}
	}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() || role.Template == nil {
			continue
		}
		if name := servedModelOf(&role.Template.Spec); name != "" {
			return name
		}
	}
	return "MODEL"
}

func servedModelOf(spec *corev1.PodSpec) string {
	i := api.ServingContainerIndex(spec)
	if i < 0 {
		return ""
	}
	c := &spec.Containers[i]
	if names := vllm.FlagServedModelName.Values(vllm.CommandLine(c)); len(names) > 0 {
		return names[0]
	}
	model, _ := vllm.Model(c)
	return model
}
