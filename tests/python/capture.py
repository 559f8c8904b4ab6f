"""Runs one Python example under Pulumi's Python mocks and writes the inputs its InferenceService
registration carried (what the engine would send the provider's Construct) to OUT/<example>.json.

    python capture.py EXAMPLE_DIR OUT_DIR
"""
import json
import os
import runpy
import sys

import pulumi

INFERENCE_SERVICE = "fusioninfer:index:InferenceService"


class Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.registered = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.registered.append({"type": args.typ, "name": args.name, "inputs": args.inputs})
        return [args.name + "-id", args.inputs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def capture(example: str, out: str) -> dict:
    mocks = Mocks()
    pulumi.runtime.set_mocks(mocks, project="project", stack="stack", preview=False)

    @pulumi.runtime.test
    def run():
        runpy.run_path(os.path.join(example, "__main__.py"), run_name="__main__")

    run()
    services = [r for r in mocks.registered if r["type"] == INFERENCE_SERVICE]
    if len(services) != 1:
        raise SystemExit(f"{example}: {len(services)} InferenceService registrations, want 1")
    name = os.path.basename(os.path.normpath(example))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(services[0], f, indent=2, sort_keys=True)
    return services[0]


if __name__ == "__main__":
    registration = capture(sys.argv[1], sys.argv[2])
    print(f"{sys.argv[1]}: captured the inputs of {registration['name']}")
