"""The Platform component from Python, under Pulumi's Python mocks: the SDK registers
fusioninfer:index:Platform with the inputs the program gave, under the schema's names (what the
provider's Construct decodes, provider/schema.json), snake_case arguments and nested parts alike.
"""
import json
import subprocess
import sys

PROGRAM = r'''
import json, sys
import pulumi

class Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.registered = []
    def new_resource(self, args):
        self.registered.append({"type": args.typ, "name": args.name, "inputs": args.inputs})
        return [args.name + "-id", args.inputs]
    def call(self, args):
        return {}

mocks = Mocks()
pulumi.runtime.set_mocks(mocks, project="project", stack="stack", preview=False)

@pulumi.runtime.test
def run():
    import pulumi_fusioninfer as fusioninfer
    fusioninfer.Platform("platform", controllers=False,
                         keda=fusioninfer.PartArgs(install=False),
                         prometheus_operator_crds={"install": False},
                         volcano=fusioninfer.VolcanoPartArgs(scheduler_configuration="actions: enqueue, allocate"))

run()
json.dump(mocks.registered, sys.stdout)
'''


def test_platform_registers_its_inputs_under_the_schemas_names():
    out = subprocess.run([sys.executable, "-c", PROGRAM], check=True, capture_output=True, text=True).stdout
    platforms = [r for r in json.loads(out) if r["type"] == "fusioninfer:index:Platform"]
    assert len(platforms) == 1, out
    assert platforms[0]["name"] == "platform"
    assert platforms[0]["inputs"] == {
        "controllers": False,
        "keda": {"install": False},
        "prometheusOperatorCRDs": {"install": False},
        "volcano": {"schedulerConfiguration": "actions: enqueue, allocate"},
    }
