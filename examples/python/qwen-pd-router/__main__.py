"""Qwen3-32B prefill/decode behind a Gateway API Inference Extension router, in Python: the same
service as examples/go/story5-pd-router and examples/manifests/qwen-pd-router.yaml, which
tests/python proves build the same objects.
"""
import pulumi
import pulumi_fusioninfer as fusioninfer
import pulumi_kubernetes as k8s

# NIXL moves each prompt's KV cache from the prefill pod the Endpoint Picker chose to the decode pod.
NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def server() -> k8s.core.v1.PodTemplateSpecArgs:
    """vLLM on 2 GPUs, ready once /health answers, with NIXL's side channel on the pod's IP."""
    return k8s.core.v1.PodTemplateSpecArgs(
        spec=k8s.core.v1.PodSpecArgs(
            containers=[
                k8s.core.v1.ContainerArgs(
                    name="vllm",
                    image="vllm/vllm-openai:v0.33.0",
                    args=["--model", "Qwen/Qwen3-32B", "--tensor-parallel-size", "2", "--kv-transfer-config", NIXL],
                    env=[
                        k8s.core.v1.EnvVarArgs(
                            name="VLLM_NIXL_SIDE_CHANNEL_HOST",
                            value_from=k8s.core.v1.EnvVarSourceArgs(
                                field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path="status.podIP")
                            ),
                        )
                    ],
                    ports=[k8s.core.v1.ContainerPortArgs(container_port=8000, name="http")],
                    readiness_probe=k8s.core.v1.ProbeArgs(http_get=k8s.core.v1.HTTPGetActionArgs(path="/health", port=8000)),
                    resources=k8s.core.v1.ResourceRequirementsArgs(limits={"nvidia.com/gpu": "2"}),
                )
            ]
        )
    )


service = fusioninfer.InferenceService(
    "qwen3-32b-pd",
    namespace="llm",
    await_="minimal",
    gang_policy=fusioninfer.GangPolicyArgs(min_role_replicas={"prefill": 1, "decode": 1}),
    roles=[
        fusioninfer.RoleArgs(name="prefill", component_type="prefiller", replicas=2, template=server()),
        fusioninfer.RoleArgs(name="decode", component_type="decoder", replicas=2, template=server()),
        fusioninfer.RoleArgs(name="router", component_type="router", router_mode="gateway", httproute={"parentRefs": [{"name": "inference-gateway"}]}),
    ],
)

pulumi.export("pool", service.pool_name)
pulumi.export("routerReady", service.router_ready)
