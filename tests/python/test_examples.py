"""Every Python example under Pulumi's Python mocks: its InferenceService registration carries the
inputs the program gave (the roles of the story's manifest), and capture.py records them in
$FUSIONINFER_PY_INPUTS for tests/crosslang, which constructs them through the provider.
"""
import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLES = os.path.join(ROOT, "examples", "python")
OUT = os.environ["FUSIONINFER_PY_INPUTS"]


@pytest.mark.parametrize("example", sorted(os.listdir(EXAMPLES)))
def test_registration_carries_the_programs_inputs(example):
    # One process per example: each is a whole Pulumi program with its own mocks.
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "capture.py"),
                    os.path.join(EXAMPLES, example), OUT], check=True)
    with open(os.path.join(OUT, example + ".json")) as f:
        registration = json.load(f)
    with open(os.path.join(ROOT, "examples", "manifests", example + ".yaml")) as f:
        manifest = next(d for d in yaml.safe_load_all(f) if d)
    assert registration["name"] == manifest["metadata"]["name"]
    got = [(r["name"], r["componentType"], r.get("replicas")) for r in registration["inputs"]["roles"]]
    want = [(r["name"], r["componentType"], r.get("replicas")) for r in manifest["spec"]["roles"]]
    assert got == want
    for role, spec in zip(registration["inputs"]["roles"], manifest["spec"]["roles"]):
        assert role.get("template") == spec.get("template"), role["name"]
