// SPDX-License-Identifier: Apache-2.0

// Command story5-pd-router is a Pulumi program: Qwen3-32B prefill/decode behind a Gateway API
// Inference Extension router (examples/manifests/qwen-pd-router.yaml).
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/examples/go/internal/vllm"
)

func main() { pulumi.Run(program) }

// nixl is the KV connector both roles run: the decode pod pulls the prompt's KV cache from the
// prefill pod the Endpoint Picker chose.
const nixl = `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`

// program deploys Qwen3-32B as 2 prefill and 2 decode replicas of 2 GPUs, gang scheduled, with
// a router: an InferencePool over both roles' leaders, llm-d's Endpoint Picker choosing a prefill
// and a decode pod per request, the routing sidecar on each decode leader, and an HTTPRoute from
// the cluster's inference gateway. `pulumi up` waits for one replica of each role and the
// Endpoint Picker before it attaches the route.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "qwen3-32b-pd", &inferenceservice.Args{
		Namespace:  "llm",
		Await:      "minimal",
		GangPolicy: &api.GangPolicy{MinRoleReplicas: map[string]int{"prefill": 1, "decode": 1}},
		Roles: []inferenceservice.RoleArgs{
			{Name: "prefill", ComponentType: "prefiller", Replicas: pulumi.IntRef(2), Template: vllm.NixlTemplate("2", serverArgs...)},
			{Name: "decode", ComponentType: "decoder", Replicas: pulumi.IntRef(2), Template: vllm.NixlTemplate("2", serverArgs...)},
			{Name: "router", ComponentType: "router", RouterMode: "gateway", HTTPRoute: map[string]any{
				"parentRefs": []any{map[string]any{"name": "inference-gateway"}},
			}},
		},
	})
	if err != nil {
		return err
	}
	ctx.Export("pool", svc.PoolName)
	ctx.Export("endpointPicker", svc.EndpointPickerServiceName)
	ctx.Export("httpRoute", svc.HTTPRouteName)
	ctx.Export("routerReady", svc.RouterReady)
	ctx.Export("status", svc.Status)
	return nil
}

var serverArgs = []string{"--model", "Qwen/Qwen3-32B", "--tensor-parallel-size", "2", "--kv-transfer-config", nixl}
