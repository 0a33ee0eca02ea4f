"""Real warm starts from a local run's compile caches: a torch.compile leg's inductor cache, cold on its
first seed and warm after it, and an XLA leg's persistent cache, whose keys stay stable across seeds."""
import json

from shared_runs import shared_device_check_run  # noqa: F401  (the fixture `device_check_run`: its torch.compile leg, one cold compile per invocation)

from conftest import bakeoff, tiny_spec, write_spec


def _summary(out, job):
    return json.loads((out / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())


def test_a_torch_compile_leg_starts_warm_from_the_local_cache(device_check_run):
    # benchmarks/device_check.py's bake-off: its `gpu` leg is torch.compile'd, and trains on the CPU here.
    out = device_check_run["out"]
    assert (out / "evaluation" / "evaluation.json").exists(), device_check_run["proc"].stderr[-3000:]
    cold, warm = _summary(out, "gpu-s0")["compile"]["cache"], _summary(out, "gpu-s1")["compile"]["cache"]
    assert cold["state"] == "cold" and cold["misses"] > 0 and cold["hits"] == 0
    assert warm["state"] == "warm" and warm["hits"] > 0 and warm["misses"] == 0
    assert cold["location"] == warm["location"] and "/compile-cache/cuda/" in cold["location"]
    assert _summary(out, "gpu-s1")["time_to_first_step_s"] < _summary(out, "gpu-s0")["time_to_first_step_s"]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    split = ev["legs"]["gpu"]["compile_cache"]
    assert split["cold_runs"] == 1 and split["warm_runs"] == 1 and split["warm_over_cold"] < 1


def test_an_xla_legs_persistent_cache_keys_are_stable_across_seeds(tmp_path):
    data = tiny_spec(name="xla-cache")
    # The graphs (and so the cache entries) are all made by the first steps and the final evaluation: more
    # steps would only run them again.
    data["training"]["max_steps"] = 6
    data["legs"] = [{"name": "xla", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"},
                    {"name": "cpu", "instance_type": "ml.m5.xlarge", "precision": "fp32"}]
    data["parity"]["baseline"] = "cpu"
    # One job at a time: the second seed starts after the first wrote its entries (side by side, an XLA leg's
    # later seeds do not wait for its first, which could not warm them on the CPU anyway).
    proc = bakeoff("run", write_spec(tmp_path / "xla.yaml", data), "--out", tmp_path / "out", "--no-mlflow",
                   "--jobs", "1")
    assert proc.returncode in (0, 1, 3), proc.stderr[-2000:]
    x0, x1 = (_summary(tmp_path / "out", job)["compile"]["cache"] for job in ("xla-s0", "xla-s1"))
    assert x0["kind"] == "xla-persistent" and x0["state"] == "cold" and x0["new_entries"] > 0
    # The same keys again, honestly no load on the CPU.
    assert x1["new_entries"] == 0 and x1["reused_keys"] == x0["entries_after"]
    assert x0["location"] == x1["location"] and "/compile-cache/neuron/" in x0["location"]
    assert "cannot load" in x1["note"]
