"""Story 3 of the fusioninfer InferenceService design, in Python: DeepSeek-R1 as 2 replicas of 4 nodes x 8 GPUs on Ray.

Through the multi-language provider; the same service as examples/go/story3-multinode and
examples/manifests/story3-multinode.yaml, which tests/python proves build the same objects.
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
    "deepseek-r1-inference",
    roles=[
        fusioninfer.RoleArgs(
            name="inference",
            component_type="worker",
            replicas=2,
            multinode=fusioninfer.MultinodeArgs(node_count=4),
            template=vllm("8", ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32"]),
        ),
    ],
)

pulumi.export("leaderWorkerSets", service.leader_worker_set_names)
pulumi.export("status", service.status)
