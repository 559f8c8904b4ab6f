// Story 1 of the fusioninfer InferenceService design, in TypeScript: Qwen3-8B as one single-GPU replica, through the
// multi-language provider. The same service as examples/go/story1-monolithic and
// examples/manifests/story1-monolithic.yaml; tests/typescript proves they build the same objects.
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";

const service = new fusioninfer.InferenceService("qwen-inference", {
    roles: [{
        name: "inference",
        componentType: "worker",
        replicas: 1,
        template: {
            spec: {
                containers: [{
                    name: "vllm",
                    image: "vllm/vllm-openai:v0.33.0",
                    args: ["--model", "Qwen/Qwen3-8B"],
                    ports: [{ containerPort: 8000, name: "http" }],
                    resources: { limits: { "nvidia.com/gpu": "1" } },
                }],
            },
        },
    }],
});

export const leaderWorkerSets = service.leaderWorkerSetNames;
export const status = service.status;
