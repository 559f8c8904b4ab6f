"""Story 2 of the fusioninfer InferenceService design, in Python: Qwen3-8B as 2 prefill and 4 decode replicas, gang scheduled.

Through the multi-language provider; the same service as examples/go/story2-disaggregated and
examples/manifests/story2-disaggregated.yaml, which tests/python proves build the same objects.
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
    "qwen-inference-service",
    roles=[
        fusioninfer.RoleArgs(
            name="prefill",
            component_type="prefiller",
            replicas=2,
            template=vllm("1", ["--model", "Qwen/Qwen3-8B", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}']),
        ),
        fusioninfer.RoleArgs(
            name="decode",
            component_type="decoder",
            replicas=4,
            template=vllm("1", ["--model", "Qwen/Qwen3-8B", "--kv-transfer-config", '{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}']),
        ),
    ],
)

pulumi.export("leaderWorkerSets", service.leader_worker_set_names)
pulumi.export("status", service.status)
