// Command story2-disaggregated is a Pulumi program: Seed 000, story 2: Qwen3-8B as 2 prefill and 4 decode replicas, gang scheduled.
package main

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

func main() { pulumi.Run(program) }

// program deploys seed 000's story 2: Qwen3-8B disaggregated into 2 prefill and 4 decode
// replicas of one GPU each, gang scheduled through one Volcano PodGroup.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "qwen-inference-service", &inferenceservice.Args{
		Roles: []inferenceservice.RoleArgs{
			{
				Name:          "prefill",
				ComponentType: "prefiller",
				Replicas:      pulumi.IntRef(2),
				Template: vllm("1", "--model", "Qwen/Qwen3-8B",
					"--kv-transfer-config", `{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}`),
			},
			{
				Name:          "decode",
				ComponentType: "decoder",
				Replicas:      pulumi.IntRef(4),
				Template: vllm("1", "--model", "Qwen/Qwen3-8B",
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
