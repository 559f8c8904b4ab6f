"""Llama 3.1 8B serving three LoRA adapters on 2 single-GPU replicas, in Python.

Through the multi-language provider; the same service as examples/manifests/llama-lora-adapters.yaml
(docs/lora.md). The base model and the adapters are fetched once into the model cache; a loader
beside each server loads the adapters, so adding one and running `pulumi up` restarts no server.
Requests for "support" go 90/10 to support-v1 and support-v2.
"""
import pulumi
import pulumi_fusioninfer as fusioninfer
import pulumi_kubernetes as k8s

service = fusioninfer.InferenceService(
    "llama-lora",
    namespace="llm",
    model=fusioninfer.ModelArgs(
        source="hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659",
        credentials_secret=k8s.core.v1.LocalObjectReferenceArgs(name="model-credentials"),
        cache=fusioninfer.ModelCacheArgs(size="100Gi", storage_class_name="shared-rwx"),
        max_loras=4,
        max_lora_rank=32,
        adapters=[
            fusioninfer.LoRAAdapterArgs(name="sql", source="hf://example-org/llama-3.1-8b-sql-lora@v1"),
            fusioninfer.LoRAAdapterArgs(name="support-v1", source="s3://adapters/llama-3.1-8b/support/v1"),
            fusioninfer.LoRAAdapterArgs(name="support-v2", source="s3://adapters/llama-3.1-8b/support/v2"),
        ],
        adapter_splits=[
            fusioninfer.AdapterSplitArgs(
                name="support",
                targets=[
                    fusioninfer.AdapterSplitTargetArgs(adapter="support-v1", weight=90),
                    fusioninfer.AdapterSplitTargetArgs(adapter="support-v2", weight=10),
                ],
            )
        ],
    ),
    roles=[
        fusioninfer.RoleArgs(
            name="server",
            component_type="worker",
            replicas=2,
            template=k8s.core.v1.PodTemplateSpecArgs(
                spec=k8s.core.v1.PodSpecArgs(
                    containers=[
                        k8s.core.v1.ContainerArgs(
                            name="vllm",
                            image="vllm/vllm-openai:v0.33.0",
                            ports=[k8s.core.v1.ContainerPortArgs(container_port=8000, name="http")],
                            readiness_probe=k8s.core.v1.ProbeArgs(
                                http_get=k8s.core.v1.HTTPGetActionArgs(path="/health", port="http")
                            ),
                            resources=k8s.core.v1.ResourceRequirementsArgs(limits={"nvidia.com/gpu": "1"}),
                        )
                    ]
                )
            ),
        ),
        fusioninfer.RoleArgs(
            name="router",
            component_type="router",
            router_mode="gateway",
            strategy="lora-affinity",
            httproute={"parentRefs": [{"name": "inference-gateway", "namespace": "gateways"}]},
        ),
    ],
)

pulumi.export("pool", service.pool_name)
pulumi.export("status", service.status)
