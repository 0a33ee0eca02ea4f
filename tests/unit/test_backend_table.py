"""The backend table (bakeoff_runtime.contract.backend_table) is what both sides read about a backend: the
spec's literal, the container's adapters and the leg kinds agree with it row by row, and what the spec,
the plan's advice, the launcher, the validity checks and the porting section decide about a backend
follows from its row, so that a new backend is a row (plus its adapter, the literal and the leg kinds
that run it), not a hunt for `== "neuron"`."""
import dataclasses
import json
from typing import get_args

import pytest
from pydantic import ValidationError

from bakeoff.estimators.images import NoDefaultImage, default_image
from bakeoff.estimators.registry import kinds
from bakeoff.pipelines.spec.fields import Backend
from bakeoff.pipelines.spec.legs import Leg
from bakeoff.pipelines.spec.loader import spec_from_dict
from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.backend_table import BACKENDS, PREFLIGHT_BACKEND, row
from conftest import ROOT, tiny_spec

NAMES = list(BACKENDS)
AN_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/training:1"


def _kinds_running(name):
    return [kind for kind in kinds().values() if kind.supports(name)]


def _leg(name, leg_name="x", **fields):
    """A leg of backend `name` on the first instance of the first kind that runs it."""
    kind = _kinds_running(name)[0]
    return {"name": leg_name, "instance_type": next(iter(kind.instances)), "backend": name,
            **({"image": AN_IMAGE} if row(name).no_image else {}), **fields}


def test_the_spec_literal_and_the_schema_name_the_tables_backends_in_its_order():
    assert get_args(Backend) == tuple(NAMES)
    schema = json.loads((ROOT / "bakeoff.schema.json").read_text())
    enum = schema["$defs"]["Leg"]["properties"]["backend"]["anyOf"][0]["enum"]
    assert enum == NAMES


def test_each_row_is_filed_under_its_own_name():
    assert [r.name for r in BACKENDS.values()] == NAMES


def test_an_unknown_backend_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown backend 'tpu'; known: cpu, cuda, neuron, torchneuron"):
        row("tpu")


def test_the_preflight_backend_is_the_torch_neuronx_row():
    # The Preflight step's probes read PyTorch/XLA's metrics on its CPU device.
    assert row(PREFLIGHT_BACKEND).torch_neuronx and row(PREFLIGHT_BACKEND).torch_device == "xla"
    assert row(PREFLIGHT_BACKEND).local_emulation


@pytest.mark.parametrize("name", NAMES)
def test_torch_neuronx_means_pytorch_xla_on_neuron(name):
    r = row(name)
    if r.torch_neuronx:
        assert (r.torch_device, r.accelerator, r.collective_group) == ("xla", "neuron", "xla")
    assert not (r.eager and r.torch_neuronx)


@pytest.mark.parametrize("name", NAMES)
def test_the_leg_kinds_that_run_a_backend_agree_with_its_row(name):
    r = row(name)
    running = _kinds_running(name)
    assert running, f"no leg kind runs {name}: add it to a kind's `backends` in estimators/"
    for kind in running:
        for inst in kind.instances.values():
            # What SageMaker counts on the host is what launch.py reads for the row's accelerator.
            counted = ("neuron" if (inst.accelerator or "").startswith("Trainium")
                       else "gpu" if inst.accelerators else None)
            assert counted == r.accelerator, inst.name
        assert (name in kind.compiled_backends) == (not r.eager), kind.name
        for gpu in (False, True):
            if not r.local_emulation:
                with pytest.raises(ValueError, match=f"backend '{name}' cannot be emulated"):
                    kind.local_emulation(name, gpu)
                continue
            stand_in = row(kind.local_emulation(name, gpu).backend)
            assert stand_in.local_emulation and (gpu or not stand_in.local_needs_gpu)


def test_each_kinds_distribution_is_its_default_backends_collective_group():
    for kind in kinds().values():
        assert set(kind.backends) <= set(BACKENDS), kind.name
        assert kind.distribution == row(kind.default_backend).collective_group, kind.name


@pytest.mark.parametrize("name", NAMES)
def test_a_default_image_exactly_where_the_row_says_aws_publishes_one(name):
    if row(name).no_image:
        with pytest.raises(NoDefaultImage, match=f"backend '{name}' .*give the leg an explicit `image:`"):
            default_image(name)
    else:
        assert default_image(name).backend == name


@pytest.mark.parametrize("name", NAMES)
def test_the_spec_allows_precompile_and_torch_compile_where_the_row_does(name):
    r = row(name)
    for field, value, allowed in (("precompile", True, r.torch_neuronx), ("compile", "torch_compile", r.eager)):
        if allowed:
            assert getattr(Leg(**_leg(name, **{field: value})), field) == value
        else:
            with pytest.raises(ValidationError, match=f"{field}.*is for"):
                Leg(**_leg(name, **{field: value}))


@pytest.mark.parametrize("name", NAMES)
def test_baseline_preflight_and_cache_advice_follow_the_row(name):
    from bakeoff.pipelines.advice.seeds import design_warnings
    from bakeoff.pipelines.api.preflight_view import legs_to_check

    r = row(name)
    cpu = {"instance_type": "ml.m5.xlarge", "backend": "cpu"}
    data = tiny_spec(legs=[{"name": "c1", **cpu}, _leg(name), {"name": "c2", **cpu}],
                     parity={"metric": "val_loss", "margin": 0.2}, security={"network_isolation": True})
    data["training"]["global_batch_size"] = 64  # divisible by every kind's devices (trn2.48xlarge: 64)
    spec = spec_from_dict(data)
    assert spec.baseline == ("x" if r.default_baseline else "c2")  # else the last leg
    assert legs_to_check(spec, None) == (["x"] if r.accelerator == "neuron" else ["c1"])
    cold = [w for w in design_warnings(spec) if "cannot reach the S3 compile cache" in w]
    assert cold == (["security.network_isolation: x cannot reach the S3 compile cache from an isolated container, "
                     "so each of their jobs compiles from scratch (the time shows as compile time); without "
                     "isolation a job after the first starts warm"] if r.torch_neuronx else [])


@pytest.mark.parametrize("name", NAMES)
def test_the_launcher_starts_one_process_per_device_sagemaker_counts_for_the_row(name, monkeypatch, tmp_path):
    import launch

    monkeypatch.delenv("BAKEOFF_NPROC_PER_NODE", raising=False)
    monkeypatch.setenv("BAKEOFF_BACKEND", name)
    env = TrainingEnv(*(tmp_path / d for d in ("model", "output", "data", "input", "config", "ckpt")),
                      num_gpus=8, num_neurons=32)
    assert launch.devices_per_host(env) == {"neuron": 32, "gpu": 8, None: 1}[row(name).accelerator]


def test_a_new_row_is_read_by_the_container_without_another_change(monkeypatch, tmp_path):
    """A GPU backend added as a row only: the launcher, the validity check and the porting
    section treat it as its row says, with no name tested anywhere."""
    import launch

    from bakeoff_runtime.verdict import porting, validity

    monkeypatch.setitem(BACKENDS, "rocm", dataclasses.replace(row("cuda"), name="rocm"))
    monkeypatch.delenv("BAKEOFF_NPROC_PER_NODE", raising=False)
    monkeypatch.setenv("BAKEOFF_BACKEND", "rocm")
    env = TrainingEnv(*(tmp_path / d for d in ("model", "output", "data", "input", "config", "ckpt")), num_gpus=4)
    assert launch.devices_per_host(env) == 4
    assert porting.numerics({"backend": "rocm", "precision": "bf16"})["compiler_flags"] == "none (eager)"
    on_cpu = [{"summary": {"status": "completed", "seed": 0, "model": {"devices": {"cpu": 3}}}}]
    check = validity.backend_check("r", {"backend": "rocm", "instance_type": "ml.x"}, on_cpu)
    assert check["status"] == "failed" and "trained on cpu, not cuda" in check["why"]
    assert "no CUDA memory was allocated" in check["why"]
    emulated = validity.backend_check("r", {"backend": "rocm", "emulated_on": "local cpu"}, on_cpu)
    assert emulated["status"] == "unchecked" and "stands for a GPU" in emulated["why"]
    # The adapter lookup through the row: tests/e2e/test_backend_adapters.py (it imports torch).
