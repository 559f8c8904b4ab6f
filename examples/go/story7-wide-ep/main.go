// SPDX-License-Identifier: Apache-2.0

// Command story7-wide-ep is a Pulumi program: DeepSeek-R1 prefill/decode with wide expert
// parallelism behind a router (examples/manifests/deepseek-wide-ep-pd.yaml, docs/wide-ep.md).
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/examples/go/internal/vllm"
)

func main() { pulumi.Run(program) }

// nixl is the KV connector both roles run: the decode rank pulls the prompt's KV cache from the
// prefill rank the Endpoint Picker chose.
const nixl = `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`

// program deploys DeepSeek-R1 as one prefill and one decode replica, each 2 nodes of 8 GPUs
// running vLLM's own data parallel, 16 ranks with the experts spread over them (no Ray). Each pod
// runs 8 ranks, local rank i on port 8000 + i; the InferencePool lists the 8 ports, so the
// Endpoint Picker picks a rank; the decode pods' sidecar fronts their ranks.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "deepseek-r1-wide-ep", &inferenceservice.Args{
		Namespace: "llm",
		Roles: []inferenceservice.RoleArgs{
			{Name: "prefill", ComponentType: "prefiller", Replicas: pulumi.IntRef(1), Multinode: &api.Multinode{NodeCount: 2},
				Parallelism: wideEP(), Template: vllm.NixlTemplate("8", serverArgs...)},
			{Name: "decode", ComponentType: "decoder", Replicas: pulumi.IntRef(1), Multinode: &api.Multinode{NodeCount: 2},
				Parallelism: wideEP(), Template: vllm.NixlTemplate("8", serverArgs...)},
			{Name: "router", ComponentType: "router", RouterMode: "gateway", HTTPRoute: map[string]any{
				"parentRefs": []any{map[string]any{"name": "inference-gateway"}},
			}},
		},
	})
	if err != nil {
		return err
	}
	ctx.Export("pool", svc.PoolName)
	ctx.Export("routerReady", svc.RouterReady)
	ctx.Export("status", svc.Status)
	return nil
}

// wideEP is each replica's split: 16 data parallel ranks, 8 a pod, experts spread over them.
func wideEP() *api.Parallelism { return &api.Parallelism{Data: 16, DataLocal: 8, Expert: true} }

var serverArgs = []string{"--model", "deepseek-ai/DeepSeek-R1", "--kv-transfer-config", nixl}
