"""Story 4 of the fusioninfer InferenceService design, in Python: DeepSeek-R1 disaggregated, prefill on 2 nodes and decode on 4 nodes per replica.

Through the multi-language provider; the same service as examples/go/story4-disaggregated-multinode and
examples/manifests/story4-disaggregated-multinode.yaml, which tests/python proves build the same objects.
"""
import pulumi
import pulumi_fusioninfer as fusioninfer
import pulumi_kubernetes as k8s


def vllm(gpus: str, args: list) -> k8s.core.v1.PodTemplateSpecArgs:
    """A pod template serving `vllm serve` with these arguments on port 8000, on these GPUs."""
    return k8s.core.v1.PodTemplateSpecArgs(
        spec=k8s.core.v1.PodSpecArgs(
            containers=[
                k8s.core.v1.ContainerArgs(
                    name="vllm",
                    image="vllm/vllm-openai:v0.33.0",
                    args=args,
                    ports=[k8s.core.v1.ContainerPortArgs(container_port=8000, name="http")],
                    resources=k8s.core.v1.ResourceRequirementsArgs(limits={"nvidia.com/gpu": gpus}),
                )
            ]
        )
    )


service = fusioninfer.InferenceService(
    "deepseek-r1-disagg",
    roles=[
        fusioninfer.RoleArgs(
            name="prefill",
            component_type="prefiller",
            replicas=1,
            multinode=fusioninfer.MultinodeArgs(node_count=2),
            template=vllm("8", ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "16", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}']),
        ),
        fusioninfer.RoleArgs(
            name="decode",
            component_type="decoder",
            replicas=2,
            multinode=fusioninfer.MultinodeArgs(node_count=4),
            template=vllm("8", ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}']),
        ),
    ],
)

pulumi.export("leaderWorkerSets", service.leader_worker_set_names)
pulumi.export("status", service.status)
