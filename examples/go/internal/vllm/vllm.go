// SPDX-License-Identifier: Apache-2.0

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

// NixlTemplate is Template for a prefill or decode server behind a router, moving KV caches with
// NIXL: ready once vLLM's /health answers, NIXL's side channel on the pod's IP (vLLM binds it to
// localhost otherwise, out of the other role's reach).
func NixlTemplate(gpus string, args ...string) *corev1.PodTemplateSpecArgs {
	server := container(gpus, args)
	server.ReadinessProbe = &corev1.ProbeArgs{HttpGet: &corev1.HTTPGetActionArgs{Path: pulumi.String("/health"), Port: pulumi.Int(8000)}}
	server.Env = corev1.EnvVarArray{&corev1.EnvVarArgs{
		Name:      pulumi.String("VLLM_NIXL_SIDE_CHANNEL_HOST"),
		ValueFrom: &corev1.EnvVarSourceArgs{FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("status.podIP")}},
	}}
	return &corev1.PodTemplateSpecArgs{Spec: &corev1.PodSpecArgs{Containers: corev1.ContainerArray{server}}}
}

func container(gpus string, args []string) *corev1.ContainerArgs {
	return &corev1.ContainerArgs{
		Name:  pulumi.String("vllm"),
		Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
		Args:  pulumi.ToStringArray(args),
		Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{
			ContainerPort: pulumi.Int(8000), Name: pulumi.String("http"),
		}},
		Resources: &corev1.ResourceRequirementsArgs{
			Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String(gpus)},
		},
	}
}
