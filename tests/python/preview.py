"""Runs a program at preview under Pulumi's Python mocks: its pod template takes an env value from a
ConfigMap whose data is unknown until the update. Writes the InferenceService registration's inputs,
each unknown value as the engine's unknown marker, to OUT/preview-unknown-env.json; tests/crosslang
constructs them through the provider at preview and checks that the unknown is kept, not dropped.

    python preview.py OUT_DIR
"""
import json
import os
import sys

import pulumi
from pulumi.output import Unknown

INFERENCE_SERVICE = "fusioninfer:index:InferenceService"
# The engine's marker of a value unknown at preview (the same in every language's SDK).
UNKNOWN_MARKER = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def with_markers(v):
    if isinstance(v, Unknown):
        return UNKNOWN_MARKER
    if isinstance(v, dict):
        return {k: with_markers(e) for k, e in v.items()}
    if isinstance(v, (list, tuple)):
        return [with_markers(e) for e in v]
    return v


class Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.registered = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.registered.append({"type": args.typ, "name": args.name, "inputs": with_markers(args.inputs)})
        # The ConfigMap's outputs are not known at preview.
        return [args.name + "-id", {} if args.typ == "kubernetes:core/v1:ConfigMap" else args.inputs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def main(out: str) -> None:
    mocks = Mocks()
    pulumi.runtime.set_mocks(mocks, project="project", stack="stack", preview=True)

    # Imported once the mocks are set, as a Pulumi program's modules are.
    import pulumi_kubernetes as k8s
    import pulumi_fusioninfer as fusioninfer

    @pulumi.runtime.test
    def program():
        config = k8s.core.v1.ConfigMap("model-config", data={"model": "Qwen/Qwen3-8B"})
        fusioninfer.InferenceService("qwen", roles=[fusioninfer.RoleArgs(
            name="inference",
            component_type="worker",
            template=k8s.core.v1.PodTemplateSpecArgs(spec=k8s.core.v1.PodSpecArgs(containers=[
                k8s.core.v1.ContainerArgs(
                    name="vllm", image="vllm/vllm-openai:v0.33.0", args=["--model", "Qwen/Qwen3-8B"],
                    env=[k8s.core.v1.EnvVarArgs(name="MODEL_CONFIGMAP", value=config.data["model"])],
                    resources=k8s.core.v1.ResourceRequirementsArgs(limits={"nvidia.com/gpu": "1"}),
                ),
            ])),
        )])

    program()
    services = [r for r in mocks.registered if r["type"] == INFERENCE_SERVICE]
    if len(services) != 1:
        raise SystemExit(f"{len(services)} InferenceService registrations, want 1")
    with open(os.path.join(out, "preview-unknown-env.json"), "w") as f:
        json.dump(services[0], f, indent=2, sort_keys=True)
    env = services[0]["inputs"]["roles"][0]["template"]["spec"]["containers"][0]["env"]
    print(f"preview: captured the inputs of {services[0]['name']}: {env}")


if __name__ == "__main__":
    main(sys.argv[1])
