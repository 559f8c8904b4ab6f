// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// requestCommand is a shell line that sends one completion to a routed service from a machine
// with kubectl (issue 44: where to send requests). Standalone: through `kubectl port-forward` to
// the router's Service, on a local port of the service's own. Gateway: to the address the route's
// first parent Gateway reports (its listener's port when the parentRef names one), with the
// route's first hostname as Host and what its first rule matches: the path, headers and query
// (docs/install.md's request). The model is the one the servers answer to: --served-model-name's
// first value, else --model, as vLLM names it (vllm/entrypoints/openai/cli_args.py:
// served_model_name defaults to the model). Every value is quoted for the shell.
func requestCommand(t *Tree, rs *RouterSummary) string {
	body, _ := json.Marshal(struct {
		Model     string `json:"model"`
		Prompt    string `json:"prompt"`
		MaxTokens int    `json:"max_tokens"`
	}{servedModel(t), "Kubernetes is", 20})
	data := "-H 'Content-Type: application/json' -d " + shellQuote(string(body))
	ns := t.Service.Namespace
	if rs.Service != "" {
		local := localPort(ns, t.Service.Name)
		return fmt.Sprintf("kubectl -n %s port-forward service/%s %d:%d & sleep 2; curl -s localhost:%d/v1/completions %s",
			ns, rs.Service, local, rs.ServicePort, local, data)
	}
	route := t.routing.HTTPRoute
	if route == nil || len(route.ParentRefs) == 0 {
		return ""
	}
	parent := route.ParentRefs[0]
	parentNamespace := ns
	if parent.Namespace != nil {
		parentNamespace = string(*parent.Namespace)
	}
	path, headers, query, note := firstMatch(route)
	if len(route.Hostnames) > 0 {
		headers = append([]string{"Host: " + string(route.Hostnames[0])}, headers...)
	}
	var flags strings.Builder
	for _, h := range headers {
		flags.WriteString("-H " + shellQuote(h) + " ")
	}
	port := ""
	if parent.Port != nil {
		port = fmt.Sprintf(":%d", *parent.Port)
	}
	if parent.Kind != nil && *parent.Kind == "Service" { // a mesh's route (GAMMA): traffic to the Service, inside the mesh
		return fmt.Sprintf("# from a pod in the mesh: curl -s %s %s%s", shellQuote(fmt.Sprintf("http://%s.%s.svc%s%s%s", parent.Name, parentNamespace, port, path, query)),
			flags.String(), data) + note
	}
	address := fmt.Sprintf("$(kubectl -n %s get gateway %s -o jsonpath='{.status.addresses[0].value}')", parentNamespace, parent.Name)
	if port == "" && parent.SectionName != nil {
		port = fmt.Sprintf(":$(kubectl -n %s get gateway %s -o jsonpath='{.spec.listeners[?(@.name==\"%s\")].port}')", parentNamespace, parent.Name, *parent.SectionName)
	}
	return fmt.Sprintf(`curl -s "http://%s%s"%s %s%s`, address, port, shellQuote(path+query), flags.String(), data) + note
}

// firstMatch is what a request must carry to pass the route's first rule's first match: the
// completions path under its path (an exact path as it is), its exact header and query matches,
// and a shell comment for what a completion cannot match (a method other than POST, a regular
// expression).
func firstMatch(route *gatewayv1.HTTPRouteSpec) (path string, headers []string, query, note string) {
	path = "/v1/completions"
	if len(route.Rules) == 0 || len(route.Rules[0].Matches) == 0 {
		return path, nil, "", ""
	}
	m := route.Rules[0].Matches[0]
	if m.Path != nil && m.Path.Value != nil {
		switch {
		case m.Path.Type != nil && *m.Path.Type == gatewayv1.PathMatchExact:
			path = *m.Path.Value
		case m.Path.Type != nil && *m.Path.Type == gatewayv1.PathMatchRegularExpression:
			note = fmt.Sprintf(" # the route's first rule matches paths by %q: send to one it matches", *m.Path.Value)
		case !underPrefix(path, *m.Path.Value): // PathPrefix, the Gateway API's default
			path = strings.TrimSuffix(*m.Path.Value, "/") + path
		}
	}
	for _, h := range m.Headers {
		if h.Type == nil || *h.Type == gatewayv1.HeaderMatchExact {
			headers = append(headers, string(h.Name)+": "+h.Value)
		}
	}
	values := url.Values{}
	for _, q := range m.QueryParams {
		if q.Type == nil || *q.Type == gatewayv1.QueryParamMatchExact {
			values.Add(string(q.Name), q.Value)
		}
	}
	if len(values) > 0 {
		query = "?" + values.Encode()
	}
	if m.Method != nil && *m.Method != gatewayv1.HTTPMethodPost {
		note += fmt.Sprintf(" # the route's first rule matches %s only: a completion, a POST, does not pass it", *m.Method)
	}
	return path, headers, query, note
}

// underPrefix: a PathPrefix match passes path, element by element as the Gateway API matches it
// (/v1 passes /v1/completions, not /v10/completions).
func underPrefix(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix == "" || path == prefix || strings.HasPrefix(path, prefix+"/")
}

// localPort is the port a service's request line forwards from on this machine: one of its own
// (20000 to 29999, by its namespace and name), so that two services' lines run side by side.
func localPort(namespace, name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	return 20000 + int(h.Sum32()%10000)
}

// shellQuote is s as one word of a POSIX shell: in single quotes, each ' closed, escaped and
// reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
