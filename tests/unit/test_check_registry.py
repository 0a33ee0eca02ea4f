"""The verdict's check registry (bakeoff_runtime/verdict/checks/): one module per kind of check, read by
the evaluation (its checks and `measured`), the report's "What was measured" and the MLflow parent run's
validity tags. A new check is its module plus its line in CHECKS: shown here with a test-only
"memory headroom" check (peak device memory against a capacity the leg's config gives)."""
import copy
from typing import Any, TypedDict, is_typeddict

from validity_inputs import CONFIG, _job

from bakeoff_runtime.report.document import measured_rows, render_markdown
from bakeoff_runtime.verdict import checks, validity
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs
from bakeoff_runtime.verdict.evaluation import evaluate
from bakeoff_runtime.verdict.job_outputs import load_jobs


def test_the_registry_lists_every_kind_once_in_display_order():
    names = [k.name for k in checks.CHECKS]
    assert names == ["stability", "parity", "backend", "same-model", "same-computation", "seeds", "blockers"]
    sections = [k.section for k in checks.CHECKS if k.section]
    assert len(set(sections)) == len(sections)
    assert all(k.details is not None and is_typeddict(k.details) for k in checks.CHECKS)


def test_the_validity_lists_are_derived_from_the_registry():
    assert validity.KINDS == ("backend", "same-model", "same-computation", "seeds", "blockers")
    assert validity.section([]) == {"backend": {}, "same_model": None, "same_computation": {}, "seeds": {},
                                    "blockers": {}}
    assert validity.is_validity_check({"name": "seeds:trn"})
    assert not validity.is_validity_check({"name": "parity:trn~gpu"})
    assert not validity.is_validity_check({"name": "stability:trn"})
    # A check of a kind the registry does not know is left out of `measured`, not a KeyError.
    assert validity.section([{"name": "unknown:trn", "status": "passed", "why": "x"}])["backend"] == {}


# --- a new check, through the registry only ------------------------------------------------------------
HEADROOM = 0.9  # the share of the device's memory a leg's peak may reach


class MemoryDetails(TypedDict, total=False):
    peak_device_memory_bytes: int | None
    device_memory_bytes: int | None
    peak_fraction: float | None


def memory_check(leg: str, cfg: dict[str, Any], runs: list[dict]) -> dict[str, Any]:
    name = f"memory:{leg}"
    capacity = cfg.get("device_memory_bytes")
    peaks = [r["summary"]["peak_device_memory_bytes"] for r in runs if r["status"] == "completed"
             and isinstance(r["summary"].get("peak_device_memory_bytes"), int)]
    if cfg.get("emulated_on") or not capacity or not peaks:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: no peak device memory or no capacity to compare it with"}
    fraction = max(peaks) / capacity
    out = {"name": name, "peak_device_memory_bytes": max(peaks), "device_memory_bytes": capacity,
           "peak_fraction": fraction}
    if fraction > HEADROOM:
        return {**out, "status": "failed", "passed": False,
                "why": f"{leg}: peak device memory {fraction:.0%} of the device's, over {HEADROOM:.0%}"}
    return {**out, "status": "passed", "passed": True, "why": f"{leg}: peak device memory {fraction:.0%}"}


def run_memory(inputs: Inputs) -> list[dict[str, Any]]:
    return [memory_check(leg, inputs.legs[leg], inputs.runs_by_leg[leg]) for leg in inputs.legs]


# Reported in `measured`, never deciding the verdict (a leg near its memory's end is news, not a parity fail).
MEMORY = CheckKind("memory", run_memory, section="memory", counts=False, details=MemoryDetails)


def _memory_bakeoff(tmp_path, monkeypatch, gpu_peak):
    monkeypatch.setattr(checks, "CHECKS", (*checks.CHECKS, MEMORY))  # the one line a production check adds
    config = copy.deepcopy(CONFIG)
    config["legs"]["gpu"]["device_memory_bytes"] = 40 * 2**30   # the one config field
    config["legs"]["trn"]["device_memory_bytes"] = 16 * 2**30
    for seed, (t, g) in enumerate(((2.40, 2.41), (2.51, 2.50), (2.32, 2.32))):
        _job(tmp_path, "trn", seed, t, devices={"xla": 3}, memory=2**30)
        _job(tmp_path, "gpu", seed, g, devices={"cuda": 3}, graphs=None, memory=gpu_peak)
    return evaluate(config, load_jobs(tmp_path))


def test_a_new_check_is_one_module_in_the_registry(tmp_path, monkeypatch):
    ev = _memory_bakeoff(tmp_path, monkeypatch, gpu_peak=10 * 2**30)
    names = [c["name"] for c in ev["checks"]]
    assert names[-2:] == ["memory:trn", "memory:gpu"]  # after the kinds before it, in the registry's order
    gpu = next(c for c in ev["checks"] if c["name"] == "memory:gpu")
    assert gpu["status"] == "passed" and gpu["peak_fraction"] == 0.25
    assert ev["measured"]["memory"] == {"trn": {"status": "passed", "why": "trn: peak device memory 6%"},
                                        "gpu": {"status": "passed", "why": "gpu: peak device memory 25%"}}
    assert ("passed", "memory:gpu", "gpu: peak device memory 25%") in measured_rows(ev)  # the report's rows
    assert validity.is_validity_check(gpu)  # what the MLflow parent run tags as validity
    assert "memory:gpu" in render_markdown(ev)
    assert ev["verdict"] == "pass"


def test_a_check_that_does_not_count_is_reported_and_does_not_decide(tmp_path, monkeypatch):
    ev = _memory_bakeoff(tmp_path, monkeypatch, gpu_peak=39 * 2**30)
    gpu = next(c for c in ev["checks"] if c["name"] == "memory:gpu")
    assert gpu["status"] == "failed" and "over 90%" in gpu["why"]
    assert ev["measured"]["memory"]["gpu"]["status"] == "failed"
    assert ev["verdict"] == "pass" and ev["failed_checks"] == "none"


def test_without_the_new_check_the_evaluation_has_none_of_it(tmp_path):
    from validity_inputs import _bakeoff

    ev = _bakeoff(tmp_path)
    assert "memory" not in ev["measured"]
    assert not any(c["name"].startswith("memory:") for c in ev["checks"])
