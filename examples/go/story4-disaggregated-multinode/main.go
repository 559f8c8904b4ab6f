// SPDX-License-Identifier: Apache-2.0

// Command story4-disaggregated-multinode is a Pulumi program: Story 4 of the fusioninfer InferenceService design: DeepSeek-R1 disaggregated and multi-node, 10 pods, 80 GPUs.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/examples/go/internal/vllm"
)

func main() { pulumi.Run(program) }

// program deploys story 4 of the fusioninfer InferenceService design: DeepSeek-R1 disaggregated and multi-node, prefill
// 1 replica x 2 nodes and decode 2 replicas x 4 nodes (10 pods, 80 GPUs).
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "deepseek-r1-disagg", &inferenceservice.Args{
		Roles: []inferenceservice.RoleArgs{
			{
				Name:          "prefill",
				ComponentType: "prefiller",
				Replicas:      pulumi.IntRef(1),
				Multinode:     &api.Multinode{NodeCount: 2},
				Template: vllm.Template("8", "--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "16",
					"--kv-transfer-config", `{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}`),
			},
			{
				Name:          "decode",
				ComponentType: "decoder",
				Replicas:      pulumi.IntRef(2),
				Multinode:     &api.Multinode{NodeCount: 4},
				Template: vllm.Template("8", "--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32",
					"--kv-transfer-config", `{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}`),
			},
		},
	})
	if err != nil {
		return err
	}
	ctx.Export("leaderWorkerSets", svc.LeaderWorkerSetNames)
	ctx.Export("podGroup", svc.PodGroupName)
	ctx.Export("status", svc.Status)
	return nil
}
