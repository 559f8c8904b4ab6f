// Qwen3-235B-A22B (FP8) on 6 replicas of one 8-GPU pod each, in TypeScript, through the
// multi-language provider: the same service as examples/manifests/qwen-rollout.yaml. A changed
// template rolls out two replicas at a time in three batches, each after the one before is
// Available; each replica's new pod comes up on a spare node before its old one goes.
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";

const service = new fusioninfer.InferenceService("qwen3-235b", {
    namespace: "llm",
    nodePools: [{
        name: "h100",
        gpusPerNode: 8,
        accelerators: ["NVIDIA-H100-80GB-HBM3"],
        capacityTypes: ["on-demand"],
        nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "gpu" },
    }],
    roles: [{
        name: "chat",
        componentType: "worker",
        replicas: 6,
        nodePool: "h100",
        rolloutStrategy: { maxUnavailable: 2, maxSurge: 1 },
        template: {
            spec: {
                containers: [{
                    name: "vllm",
                    image: "vllm/vllm-openai:v0.33.0",
                    args: ["--model", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "--tensor-parallel-size", "8"],
                    ports: [{ containerPort: 8000, name: "http" }],
                    readinessProbe: { httpGet: { path: "/health", port: "http" } },
                    resources: { limits: { "nvidia.com/gpu": "8" } },
                }],
            },
        },
    }],
});

export const leaderWorkerSets = service.leaderWorkerSetNames;
export const status = service.status;
