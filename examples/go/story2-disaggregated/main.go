// SPDX-License-Identifier: Apache-2.0

// Command story2-disaggregated is a Pulumi program: Story 2 of the fusioninfer InferenceService design: Qwen3-8B as 2 prefill and 4 decode replicas, gang scheduled.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/examples/go/internal/vllm"
)

func main() { pulumi.Run(program) }

// program deploys story 2 of the fusioninfer InferenceService design: Qwen3-8B disaggregated into 2 prefill and 4 decode
// replicas of one GPU each, gang scheduled through one Volcano PodGroup.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "qwen-inference-service", &inferenceservice.Args{
		Roles: []inferenceservice.RoleArgs{
			{
				Name:          "prefill",
				ComponentType: "prefiller",
				Replicas:      pulumi.IntRef(2),
				Template: vllm.Template("1", "--model", "Qwen/Qwen3-8B",
					"--kv-transfer-config", `{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}`),
			},
			{
				Name:          "decode",
				ComponentType: "decoder",
				Replicas:      pulumi.IntRef(4),
				Template: vllm.Template("1", "--model", "Qwen/Qwen3-8B",
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
