"""Qwen3-235B-A22B (FP8) on 6 replicas of one 8-GPU pod each, in Python.

Through the multi-language provider; the same service as examples/manifests/qwen-rollout.yaml. A
changed template rolls out two replicas at a time in three batches, each after the one before is
Available; each replica's new pod comes up on a spare node before its old one goes.
"""
import pulumi
import pulumi_fusioninfer as fusioninfer
import pulumi_kubernetes as k8s

service = fusioninfer.InferenceService(
    "qwen3-235b",
    namespace="llm",
    node_pools=[
        fusioninfer.NodePoolArgs(
            name="h100",
            gpus_per_node=8,
            accelerators=["NVIDIA-H100-80GB-HBM3"],
            capacity_types=["on-demand"],
            node_class_ref=fusioninfer.NodeClassRefArgs(group="karpenter.k8s.aws", kind="EC2NodeClass", name="gpu"),
        )
    ],
    roles=[
        fusioninfer.RoleArgs(
            name="chat",
            component_type="worker",
            replicas=6,
            node_pool="h100",
            rollout_strategy=fusioninfer.RolloutStrategyArgs(max_unavailable=2, max_surge=1),
            template=k8s.core.v1.PodTemplateSpecArgs(
                spec=k8s.core.v1.PodSpecArgs(
                    containers=[
                        k8s.core.v1.ContainerArgs(
                            name="vllm",
                            image="vllm/vllm-openai:v0.33.0",
                            args=["--model", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "--tensor-parallel-size", "8"],
                            ports=[k8s.core.v1.ContainerPortArgs(container_port=8000, name="http")],
                            readiness_probe=k8s.core.v1.ProbeArgs(
                                http_get=k8s.core.v1.HTTPGetActionArgs(path="/health", port="http")
                            ),
                            resources=k8s.core.v1.ResourceRequirementsArgs(limits={"nvidia.com/gpu": "8"}),
                        )
                    ]
                )
            ),
        ),
    ],
)

pulumi.export("leaderWorkerSets", service.leader_worker_set_names)
pulumi.export("status", service.status)
