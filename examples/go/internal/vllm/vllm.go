// Package vllm builds the pod template the examples serve with: one vLLM container.
package vllm

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Template is a pod template with the vllm/vllm-openai image serving on port 8000 ("http"),
// with the given GPUs and `vllm serve` arguments.
func Template(gpus string, args ...string) *corev1.PodTemplateSpecArgs {
	return &corev1.PodTemplateSpecArgs{Spec: &corev1.PodSpecArgs{Containers: corev1.ContainerArray{container(gpus, args)}}}
}

// ReadyTemplate is Template with a readiness probe on vLLM's /health, so a replica joins a
// router's pool only once it serves.
func ReadyTemplate(gpus string, args ...string) *corev1.PodTemplateSpecArgs {
	server := container(gpus, args)
	server.ReadinessProbe = &corev1.ProbeArgs{HttpGet: &corev1.HTTPGetActionArgs{Path: pulumi.String("/health"), Port: pulumi.Int(8000)}}
	return &corev1.PodTemplateSpecArgs{Spec: &corev1.PodSpecArgs{Containers: corev1.ContainerArray{server}}}
}

func container(gpus string, args []string) *corev1.ContainerArgs {
	return &corev1.ContainerArgs{
		Name:  pulumi.String("vllm"),
		Image: pulumi.String("vllm/vllm-openai:v0.11.0"),
		Args:  pulumi.ToStringArray(args),
		Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{
			ContainerPort: pulumi.Int(8000), Name: pulumi.String("http"),
		}},
		Resources: &corev1.ResourceRequirementsArgs{
			Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String(gpus)},
		},
	}
}
