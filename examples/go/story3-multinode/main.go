// SPDX-License-Identifier: Apache-2.0

// Command story3-multinode is a Pulumi program: Story 3 of the fusioninfer InferenceService design: DeepSeek-R1, 2 replicas x 4 nodes x 8 GPUs on Ray.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/examples/go/internal/vllm"
)

func main() { pulumi.Run(program) }

// program deploys story 3 of the fusioninfer InferenceService design: DeepSeek-R1 with tensor parallelism 32 over 4 nodes of
// 8 GPUs, 2 replicas (8 pods, 64 GPUs); each replica runs vLLM on a Ray cluster of its own.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "deepseek-r1-inference", &inferenceservice.Args{
		Roles: []inferenceservice.RoleArgs{{
			Name:          "inference",
			ComponentType: "worker",
			Replicas:      pulumi.IntRef(2),
			Multinode:     &api.Multinode{NodeCount: 4},
			Template:      vllm.Template("8", "--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32"),
		}},
	})
	if err != nil {
		return err
	}
	ctx.Export("leaderWorkerSets", svc.LeaderWorkerSetNames)
	ctx.Export("podGroup", svc.PodGroupName)
	ctx.Export("status", svc.Status)
	return nil
}
