// Story 4 of the fusioninfer InferenceService design, in TypeScript: DeepSeek-R1 disaggregated, prefill on 2 nodes and decode on 4 nodes per replica.
// Through the multi-language provider; the same service as examples/go/story4-disaggregated-multinode and
// examples/manifests/story4-disaggregated-multinode.yaml, which tests/typescript proves build the same objects.
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

const service = new fusioninfer.InferenceService("deepseek-r1-disagg", {
    roles: [
        {
            name: "prefill",
            componentType: "prefiller",
            replicas: 1,
            multinode: { nodeCount: 2 },
            template: vllm("8", ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "16", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}']),
        },
        {
            name: "decode",
            componentType: "decoder",
            replicas: 2,
            multinode: { nodeCount: 4 },
            template: vllm("8", ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}']),
        },
    ],
});

export const leaderWorkerSets = service.leaderWorkerSetNames;
export const podGroup = service.podGroupName;
export const status = service.status;
