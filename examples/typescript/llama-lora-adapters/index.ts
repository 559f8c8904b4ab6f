// Llama 3.1 8B serving three LoRA adapters on 2 single-GPU replicas, in TypeScript, through the
// multi-language provider: the same service as examples/manifests/llama-lora-adapters.yaml
// (docs/lora.md). The base model and the adapters are fetched once into the model cache; a loader
// beside each server loads the adapters, so adding one and running `pulumi up` restarts no
// server. Requests for "support" go 90/10 to support-v1 and support-v2.
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";

const service = new fusioninfer.InferenceService("llama-lora", {
    namespace: "llm",
    model: {
        source: "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659",
        credentialsSecret: { name: "model-credentials" },
        cache: { size: "100Gi", storageClassName: "shared-rwx" },
        maxLoras: 4,
        maxLoraRank: 32,
        adapters: [
            { name: "sql", source: "hf://example-org/llama-3.1-8b-sql-lora@v1" },
            { name: "support-v1", source: "s3://adapters/llama-3.1-8b/support/v1" },
            { name: "support-v2", source: "s3://adapters/llama-3.1-8b/support/v2" },
        ],
        adapterSplits: [{
            name: "support",
            targets: [{ adapter: "support-v1", weight: 90 }, { adapter: "support-v2", weight: 10 }],
        }],
    },
    roles: [
        {
            name: "server",
            componentType: "worker",
            replicas: 2,
            template: {
                spec: {
                    containers: [{
                        name: "vllm",
                        image: "vllm/vllm-openai:v0.33.0",
                        ports: [{ containerPort: 8000, name: "http" }],
                        readinessProbe: { httpGet: { path: "/health", port: "http" } },
                        resources: { limits: { "nvidia.com/gpu": "1" } },
                    }],
                },
            },
        },
        {
            name: "router",
            componentType: "router",
            routerMode: "gateway",
            strategy: "lora-affinity",
            httproute: { parentRefs: [{ name: "inference-gateway", namespace: "gateways" }] },
        },
    ],
});

export const pool = service.poolName;
export const status = service.status;
