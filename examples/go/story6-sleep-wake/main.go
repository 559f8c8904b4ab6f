// SPDX-License-Identifier: Apache-2.0

// Command story6-sleep-wake is a Pulumi program: Granite 3.3 2B on 3 single-GPU replicas whose
// servers sleep and wake through llm-d's dual pods (examples/manifests/granite-sleep-wake.yaml).
package main

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

func main() { pulumi.Run(program) }

// program deploys one worker role in dual-pods mode with FMA's controller installed beside it,
// and a router whose pool selects the server pods FMA runs, never the GPU-holding requesters.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "granite", &inferenceservice.Args{
		Namespace:          "llm",
		DualPodsController: &api.DualPodsController{Install: true, SleeperLimit: pulumi.IntRef(2)},
		Roles: []inferenceservice.RoleArgs{
			{
				Name:             "server",
				ComponentType:    "worker",
				Replicas:         pulumi.IntRef(3),
				ModelFlexibility: &api.ModelFlexibility{Mode: api.DualPods},
				Template:         server(),
			},
			{Name: "router", ComponentType: "router", RouterMode: "gateway", HTTPRoute: map[string]any{
				"parentRefs": []any{map[string]any{"name": "inference-gateway"}},
			}},
		},
	})
	if err != nil {
		return err
	}
	ctx.Export("pool", svc.PoolName)
	ctx.Export("status", svc.Status)
	return nil
}

// server is the vLLM server FMA runs in sleep mode: its own cpu and memory, a GPU the requester
// holds, and the model cache on a volume.
func server() *corev1.PodTemplateSpecArgs {
	return &corev1.PodTemplateSpecArgs{Spec: &corev1.PodSpecArgs{
		Containers: corev1.ContainerArray{&corev1.ContainerArgs{
			Name:  pulumi.String("vllm"),
			Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
			Args:  pulumi.ToStringArray([]string{"--model", "ibm-granite/granite-3.3-2b-instruct", "--max-model-len", "32768"}),
			Env:   corev1.EnvVarArray{&corev1.EnvVarArgs{Name: pulumi.String("HF_HOME"), Value: pulumi.String("/models")}},
			Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
			ReadinessProbe: &corev1.ProbeArgs{
				HttpGet:       &corev1.HTTPGetActionArgs{Path: pulumi.String("/health"), Port: pulumi.String("http")},
				PeriodSeconds: pulumi.Int(5),
			},
			Resources: &corev1.ResourceRequirementsArgs{
				Requests: pulumi.StringMap{"cpu": pulumi.String("2"), "memory": pulumi.String("16Gi")},
				Limits:   pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")},
			},
			VolumeMounts: corev1.VolumeMountArray{&corev1.VolumeMountArgs{Name: pulumi.String("models"), MountPath: pulumi.String("/models")}},
		}},
		Volumes: corev1.VolumeArray{&corev1.VolumeArgs{
			Name:                  pulumi.String("models"),
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSourceArgs{ClaimName: pulumi.String("model-cache")},
		}},
	}}
}
