"""DeepSeek-R1 prefill/decode with wide expert parallelism behind a router, in Python: the same
service as examples/go/story7-wide-ep and examples/manifests/deepseek-wide-ep-pd.yaml, which
tests/python proves build the same objects (docs/wide-ep.md).
"""
import pulumi
import pulumi_fusioninfer as fusioninfer
import pulumi_kubernetes as k8s

# NIXL moves each prompt's KV cache from the prefill rank the Endpoint Picker chose to the decode rank.
NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def server() -> k8s.core.v1.PodTemplateSpecArgs:
    """One pod of a replica: 8 GPUs, one a rank, NIXL's side channel on the pod's IP."""
    return k8s.core.v1.PodTemplateSpecArgs(
        spec=k8s.core.v1.PodSpecArgs(
            containers=[
                k8s.core.v1.ContainerArgs(
                    name="vllm",
                    image="vllm/vllm-openai:v0.33.0",
                    args=["--model", "deepseek-ai/DeepSeek-R1", "--kv-transfer-config", NIXL],
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
                    resources=k8s.core.v1.ResourceRequirementsArgs(limits={"nvidia.com/gpu": "8"}),
                )
            ]
        )
    )


def wide_ep() -> fusioninfer.ParallelismArgs:
    """Each replica: 16 data parallel ranks, 8 a pod, the experts spread over them; no Ray."""
    return fusioninfer.ParallelismArgs(data=16, data_local=8, expert=True)


service = fusioninfer.InferenceService(
    "deepseek-r1-wide-ep",
    namespace="llm",
    roles=[
        fusioninfer.RoleArgs(name="prefill", component_type="prefiller", replicas=1,
                             multinode=fusioninfer.MultinodeArgs(node_count=2), parallelism=wide_ep(), template=server()),
        fusioninfer.RoleArgs(name="decode", component_type="decoder", replicas=1,
                             multinode=fusioninfer.MultinodeArgs(node_count=2), parallelism=wide_ep(), template=server()),
        fusioninfer.RoleArgs(name="router", component_type="router", router_mode="gateway", httproute={"parentRefs": [{"name": "inference-gateway"}]}),
    ],
)

pulumi.export("pool", service.pool_name)
pulumi.export("routerReady", service.router_ready)
