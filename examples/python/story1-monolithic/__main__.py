"""Story 1 of the fusioninfer InferenceService design, in Python: Qwen3-8B as one single-GPU replica.

Through the multi-language provider; the same service as examples/go/story1-monolithic and
examples/manifests/story1-monolithic.yaml, which tests/python proves build the same objects.
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
    "qwen-inference",
    roles=[
        fusioninfer.RoleArgs(
            name="inference",
            component_type="worker",
            replicas=1,
            template=vllm("1", ["--model", "Qwen/Qwen3-8B"]),
        ),
    ],
)

pulumi.export("leaderWorkerSets", service.leader_worker_set_names)
pulumi.export("status", service.status)
