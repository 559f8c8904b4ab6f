// Command story1-monolithic is a Pulumi program: Seed 000, story 1: Qwen3-8B as one single-GPU replica.
package main

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

func main() { pulumi.Run(program) }

// program deploys seed 000's story 1: Qwen3-8B as one single-GPU replica, no gang scheduling.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "qwen-inference", &inferenceservice.Args{
		Roles: []inferenceservice.RoleArgs{{
			Name:          "inference",
			ComponentType: "worker",
			Replicas:      pulumi.IntRef(1),
			Template:      vllm("1", "--model", "Qwen/Qwen3-8B"),
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

// vllm is the model-server container: the vllm/vllm-openai image serves on port 8000.
func vllm(gpus string, args ...string) *corev1.PodTemplateSpecArgs {
	return &corev1.PodTemplateSpecArgs{
		Spec: &corev1.PodSpecArgs{
			Containers: corev1.ContainerArray{&corev1.ContainerArgs{
				Name:  pulumi.String("vllm"),
				Image: pulumi.String("vllm/vllm-openai:v0.11.0"),
				Args:  pulumi.ToStringArray(args),
				Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{
					ContainerPort: pulumi.Int(8000), Name: pulumi.String("http"),
				}},
				Resources: &corev1.ResourceRequirementsArgs{
					Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String(gpus)},
				},
			}},
		},
	}
}
