// SPDX-License-Identifier: Apache-2.0

// Command story8-lora-adapters is a Pulumi program: Llama 3.1 8B on 2 single-GPU replicas
// serving three LoRA adapters beside the base model, a 90/10 split between two versions of one,
// behind a router with LoRA affinity (examples/manifests/llama-lora-adapters.yaml, docs/lora.md).
package main

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8scorev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

func main() { pulumi.Run(program) }

// program deploys the base model and its adapters, fetched once into a cache; adding an adapter
// to the list and running `pulumi up` again loads it into the running servers.
func program(ctx *pulumi.Context) error {
	svc, err := inferenceservice.NewInferenceService(ctx, "llama-lora", &inferenceservice.Args{
		Namespace: "llm",
		Model: &api.Model{
			Source:            "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659",
			CredentialsSecret: &k8scorev1.LocalObjectReference{Name: "model-credentials"},
			Cache:             &api.ModelCache{Size: "100Gi", StorageClassName: "shared-rwx"},
			MaxLoras:          pulumi.IntRef(4),
			MaxLoraRank:       pulumi.IntRef(32),
			Adapters: []api.LoRAAdapter{
				{Name: "sql", Source: "hf://example-org/llama-3.1-8b-sql-lora@v1"},
				{Name: "support-v1", Source: "s3://adapters/llama-3.1-8b/support/v1"},
				{Name: "support-v2", Source: "s3://adapters/llama-3.1-8b/support/v2"},
			},
			AdapterSplits: []api.AdapterSplit{{Name: "support", Targets: []api.AdapterSplitTarget{
				{Adapter: "support-v1", Weight: 90},
				{Adapter: "support-v2", Weight: 10},
			}}},
		},
		Roles: []inferenceservice.RoleArgs{
			{Name: "server", ComponentType: "worker", Replicas: pulumi.IntRef(2), Template: server()},
			{Name: "router", ComponentType: "router", RouterMode: "gateway", Strategy: "lora-affinity", HTTPRoute: map[string]any{
				"parentRefs": []any{map[string]any{"name": "inference-gateway", "namespace": "gateways"}},
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

// server is vLLM on one GPU; spec.model gives it the model, the adapters and LoRA's flags.
func server() *corev1.PodTemplateSpecArgs {
	return &corev1.PodTemplateSpecArgs{Spec: &corev1.PodSpecArgs{
		Containers: corev1.ContainerArray{&corev1.ContainerArgs{
			Name:  pulumi.String("vllm"),
			Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
			Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
			ReadinessProbe: &corev1.ProbeArgs{HttpGet: &corev1.HTTPGetActionArgs{
				Path: pulumi.String("/health"), Port: pulumi.String("http")}},
			Resources: &corev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")}},
		}},
	}}
}
