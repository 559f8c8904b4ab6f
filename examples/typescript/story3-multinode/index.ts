// Story 3 of the fusioninfer InferenceService design, in TypeScript: DeepSeek-R1 as 2 replicas of 4 nodes x 8 GPUs on Ray.
// Through the multi-language provider; the same service as examples/go/story3-multinode and
// examples/manifests/story3-multinode.yaml, which tests/typescript proves build the same objects.
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";
import * as k8s from "@pulumi/kubernetes";

// vllm is a pod template serving `vllm serve` with these arguments on port 8000, on these GPUs.
function vllm(gpus: string, args: string[]): k8s.types.input.core.v1.PodTemplateSpec {
    return {
        spec: {
            containers: [{
                name: "vllm",
                image: "vllm/vllm-openai:v0.33.0",
                args,
                ports: [{ containerPort: 8000, name: "http" }],
                resources: { limits: { "nvidia.com/gpu": gpus } },
            }],
        },
    };
}

const service = new fusioninfer.InferenceService("deepseek-r1-inference", {
    roles: [
        {
            name: "inference",
            componentType: "worker",
            replicas: 2,
            multinode: { nodeCount: 4 },
            template: vllm("8", ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32"]),
        },
    ],
});

export const leaderWorkerSets = service.leaderWorkerSetNames;
export const podGroup = service.podGroupName;
export const status = service.status;
