// The program preview.ts runs at preview: a template whose env value is a ConfigMap's data, unknown
// until the update.
import * as k8s from "@pulumi/kubernetes";
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";

const config = new k8s.core.v1.ConfigMap("model-config", { data: { model: "Qwen/Qwen3-8B" } });

export const service = new fusioninfer.InferenceService("qwen", {
    roles: [{
        name: "inference",
        componentType: "worker",
        template: {
            spec: {
                containers: [{
                    name: "vllm",
                    image: "vllm/vllm-openai:v0.33.0",
                    args: ["--model", "Qwen/Qwen3-8B"],
                    env: [{ name: "MODEL_CONFIGMAP", value: config.data["model"] }],
                    resources: { limits: { "nvidia.com/gpu": "1" } },
                }],
            },
        },
    }],
});
