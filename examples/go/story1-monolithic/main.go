// SPDX-License-Identifier: Apache-2.0

// Command story1-monolithic is a Pulumi program: Story 1 of the fusioninfer InferenceService design: Qwen3-8B as one single-GPU replica.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/examples/go/internal/vllm"
)

func main() { pulumi.Run(program) }

// program deploys story 1 of the fusioninfer InferenceService design: Qwen3-8B as one single-GPU replica, no gang scheduling.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "qwen-inference", &inferenceservice.Args{
		Roles: []inferenceservice.RoleArgs{{
			Name:          "inference",
			ComponentType: "worker",
			Replicas:      pulumi.IntRef(1),
			Template:      vllm.Template("1", "--model", "Qwen/Qwen3-8B"),
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
