"""Compile-cache locations: stable for the same inputs, new for any change; tagged
on every job; a real warm start for a torch.compile cpu leg."""
import json

import pytest

from bakeoff.estimators.compile_cache import cache_key, cache_key_inputs
from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"

BASE = {"backend": "neuron", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/neuronx:2.9.0-sdk2.27.0",
            "precision": "bf16", "environment": {"NEURON_CC_FLAGS": "--model-type=transformer -O1", "BAKEOFF_LEG": "a"},
            "hyperparameters": {"d_model": 64, "sequence_length": 128, "per_device_batch_size": 4, "seed": 0,
                             "max_steps": 100, "lr": 0.003}, "world_size": 32}


def test_same_inputs_same_key():
    assert cache_key(**BASE) == cache_key(**json.loads(json.dumps(BASE)))
    assert len(cache_key(**BASE)) == 20


@pytest.mark.parametrize("change", [
    {"backend": "torchneuron"},
    {"image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/neuronx:2.9.0-sdk2.28.0"},  # a new compiler release
    {"precision": "fp32"},
    {"environment": {**BASE["environment"], "NEURON_CC_FLAGS": "--model-type=transformer -O2"}},
    {"hyperparameters": {**BASE["hyperparameters"], "d_model": 128}},
    {"hyperparameters": {**BASE["hyperparameters"], "sequence_length": 256}},
    {"hyperparameters": {**BASE["hyperparameters"], "per_device_batch_size": 8}},
    {"world_size": 16},
], ids=lambda c: next(iter(c)) + ("." + next(iter(c.values())) if isinstance(next(iter(c.values())), str) else ""))
def test_each_input_that_shapes_graphs_changes_the_key(change):
    assert cache_key(**{**BASE, **change}) != cache_key(**BASE)


@pytest.mark.parametrize("change", [
    {"hyperparameters": {**BASE["hyperparameters"], "seed": 7}},
    {"hyperparameters": {**BASE["hyperparameters"], "max_steps": 5000}},
    {"hyperparameters": {**BASE["hyperparameters"], "lr": 0.1}},
    {"environment": {**BASE["environment"], "BAKEOFF_LEG": "another-name"}},
])
def test_what_changes_no_graph_keeps_the_key(change):
    assert cache_key(**{**BASE, **change}) == cache_key(**BASE)


def test_key_inputs_are_documented_fields():
    assert set(cache_key_inputs(**BASE)) == {"backend", "image", "precision", "compiler_flags", "environment",
                                             "graph", "world_size"}


def test_env_and_tags_per_leg_in_the_definition():
    steps = {s["Name"]: s["Arguments"] for s in compile_pipeline(load_spec(QUICKSTART, [
        "legs.1.compile=torch_compile"])).definition["Steps"] if s["Type"] == "Training"}
    trn, trn_other_seed, gpu = steps["Train-trn1-s0"], steps["Train-trn1-s1"], steps["Train-p4d-s0"]
    uri = trn["Environment"]["NEURON_COMPILE_CACHE_URL"]
    assert uri.startswith("s3://bakeoff-artifacts/bakeoff/compile-cache/neuron/") and uri.endswith("/")
    assert trn["Environment"]["BAKEOFF_COMPILE_CACHE"] == uri
    assert trn_other_seed["Environment"]["NEURON_COMPILE_CACHE_URL"] == uri  # seeds share one cache
    assert "--auto-cast" in trn["Environment"]["NEURON_CC_FLAGS"]  # explicit: defaults change between releases
    gpu_uri = gpu["Environment"]["BAKEOFF_COMPILE_CACHE"]
    assert gpu_uri.startswith("s3://bakeoff-artifacts/bakeoff/compile-cache/cuda/") and gpu_uri != uri
    assert gpu["Environment"]["BAKEOFF_TORCH_COMPILE"] == "1" and "NEURON_COMPILE_CACHE_URL" not in gpu["Environment"]
    for args in steps.values():
        tags = {t["Key"]: t["Value"] for t in args["Tags"]}
        assert tags["bakeoff:compile-cache"] == args["Environment"]["BAKEOFF_COMPILE_CACHE"]


def test_same_spec_same_locations_across_bakeoffs():
    a = compile_pipeline(load_spec(QUICKSTART)).definition
    b = compile_pipeline(load_spec(QUICKSTART, ["name=another-bakeoff", "seeds=5"])).definition
    def env(d):
        return {s["Arguments"]["Environment"]["BAKEOFF_COMPILE_CACHE"] for s in d["Steps"] if s["Type"] == "Training"}
    assert env(a) == env(b)
    c = compile_pipeline(load_spec(QUICKSTART, ["training.sequence_length=128"])).definition
    assert env(a).isdisjoint(env(c))


def test_precompile_and_preflight_steps():
    steps = {s["Name"]: s for s in compile_pipeline(load_spec(QUICKSTART, [
        "legs.0.precompile=true", "preflight.enabled=true"])).definition["Steps"]}
    pre = steps["Precompile-trn1"]["Arguments"]
    assert "neuron_parallel_compile python3 launch.py" in pre["AlgorithmSpecification"]["ContainerEntrypoint"][2]
    train = steps["Train-trn1-s0"]["Arguments"]
    # Everything but the step count (and when it validates, a Python-side condition that changes no graph)
    # matches the real launch, or the real run misses the cache.
    loop_only = ("max_steps", "eval_interval")
    same = {k: v for k, v in pre["HyperParameters"].items() if k not in loop_only}
    assert same == {k: v for k, v in train["HyperParameters"].items() if k not in loop_only}
    # It crosses one validation inside the loop, so those graphs (and the training graph after them) are cached.
    assert 0 < int(pre["HyperParameters"]["eval_interval"]) < int(pre["HyperParameters"]["max_steps"])
    assert pre["Environment"]["NEURON_COMPILE_CACHE_URL"] == train["Environment"]["NEURON_COMPILE_CACHE_URL"]
    assert pre["ResourceConfig"] == train["ResourceConfig"]
    assert steps["Train-trn1-s0"]["DependsOn"] == ["Precompile-trn1", "Preflight"]
    assert steps["Train-p4d-s0"]["DependsOn"] == ["Preflight"]
    evaluate = json.dumps(steps["Evaluate"]["Arguments"]["AppSpecification"]["ContainerArguments"])
    assert "Precompile-trn1.TrainingJobName" not in evaluate and "Preflight.TrainingJobName" not in evaluate
    flight = steps["Preflight"]["Arguments"]
    assert flight["ResourceConfig"]["InstanceType"] == "ml.m5.2xlarge"
    assert flight["Environment"]["PJRT_DEVICE"] == "CPU"
    assert flight["Environment"]["BAKEOFF_PREFLIGHT_FAIL_ON_BLOCKER"] == "1"
    assert flight["AlgorithmSpecification"]["TrainingImage"] == train["AlgorithmSpecification"]["TrainingImage"]


def test_precompile_only_on_neuron_legs(tmp_path):
    from bakeoff.pipelines.errors import SpecError

    with pytest.raises(SpecError, match="precompile .* is for neuron legs"):
        load_spec(QUICKSTART, ["legs.1.precompile=true"])
