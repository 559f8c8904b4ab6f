// Qwen3-32B prefill/decode behind a Gateway API Inference Extension router, in TypeScript: the same
// service as examples/go/story5-pd-router and examples/manifests/qwen-pd-router.yaml, which
// tests/typescript proves build the same objects.
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";
import * as k8s from "@pulumi/kubernetes";

// NIXL moves each prompt's KV cache from the prefill pod the Endpoint Picker chose to the decode pod.
const nixl = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}';

// server is vLLM on 2 GPUs, ready once /health answers, with NIXL's side channel on the pod's IP.
function server(): k8s.types.input.core.v1.PodTemplateSpec {
    return {
        spec: {
            containers: [{
                name: "vllm",
                image: "vllm/vllm-openai:v0.33.0",
                args: ["--model", "Qwen/Qwen3-32B", "--tensor-parallel-size", "2", "--kv-transfer-config", nixl],
                env: [{ name: "VLLM_NIXL_SIDE_CHANNEL_HOST", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
                ports: [{ containerPort: 8000, name: "http" }],
                readinessProbe: { httpGet: { path: "/health", port: 8000 } },
                resources: { limits: { "nvidia.com/gpu": "2" } },
            }],
        },
    };
}

const service = new fusioninfer.InferenceService("qwen3-32b-pd", {
    namespace: "llm",
    await: "minimal",
    gangPolicy: { minRoleReplicas: { prefill: 1, decode: 1 } },
    roles: [
        { name: "prefill", componentType: "prefiller", replicas: 2, template: server() },
        { name: "decode", componentType: "decoder", replicas: 2, template: server() },
        { name: "router", componentType: "router", routerMode: "gateway", httproute: { parentRefs: [{ name: "inference-gateway" }] } },
    ],
});

export const pool = service.poolName;
export const endpointPicker = service.endpointPickerServiceName;
export const routerReady = service.routerReady;
