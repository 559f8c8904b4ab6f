// DeepSeek-R1 prefill/decode with wide expert parallelism behind a router, in TypeScript: the same
// service as examples/go/story7-wide-ep and examples/manifests/deepseek-wide-ep-pd.yaml, which
// tests/typescript proves build the same objects (docs/wide-ep.md).
import * as fusioninfer from "@fusioninfer/pulumi-fusioninfer";
import * as k8s from "@pulumi/kubernetes";

// NIXL moves each prompt's KV cache from the prefill rank the Endpoint Picker chose to the decode rank.
const nixl = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}';

// server is one pod of a replica: 8 GPUs, one a rank, NIXL's side channel on the pod's IP.
function server(): k8s.types.input.core.v1.PodTemplateSpec {
    return {
        spec: {
            containers: [{
                name: "vllm",
                image: "vllm/vllm-openai:v0.33.0",
                args: ["--model", "deepseek-ai/DeepSeek-R1", "--kv-transfer-config", nixl],
                env: [{ name: "VLLM_NIXL_SIDE_CHANNEL_HOST", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
                ports: [{ containerPort: 8000, name: "http" }],
                readinessProbe: { httpGet: { path: "/health", port: 8000 } },
                resources: { limits: { "nvidia.com/gpu": "8" } },
            }],
        },
    };
}

// Each replica: 2 pods, 16 data parallel ranks (8 a pod), the experts spread over them; no Ray.
const wideEP = { data: 16, dataLocal: 8, expert: true };

const service = new fusioninfer.InferenceService("deepseek-r1-wide-ep", {
    namespace: "llm",
    roles: [
        { name: "prefill", componentType: "prefiller", replicas: 1, multinode: { nodeCount: 2 }, parallelism: wideEP, template: server() },
        { name: "decode", componentType: "decoder", replicas: 1, multinode: { nodeCount: 2 }, parallelism: wideEP, template: server() },
        { name: "router", componentType: "router", routerMode: "gateway", httproute: { parentRefs: [{ name: "inference-gateway" }] } },
    ],
});

export const pool = service.poolName;
export const routerReady = service.routerReady;
