// Story 2 of the fusioninfer InferenceService design, in TypeScript: Qwen3-8B as 2 prefill and 4 decode replicas, gang scheduled.
// Through the multi-language provider; the same service as examples/go/story2-disaggregated and
// examples/manifests/story2-disaggregated.yaml, which tests/typescript proves build the same objects.
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

const service = new fusioninfer.InferenceService("qwen-inference-service", {
    roles: [
        {
            name: "prefill",
            componentType: "prefiller",
            replicas: 2,
            template: vllm("1", ["--model", "Qwen/Qwen3-8B", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}']),
        },
        {
            name: "decode",
            componentType: "decoder",
            replicas: 4,
            template: vllm("1", ["--model", "Qwen/Qwen3-8B", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}']),
        },
    ],
});

export const leaderWorkerSets = service.leaderWorkerSetNames;
export const podGroup = service.podGroupName;
export const status = service.status;
