"""A real warm start from the compile cache for a torch.compile cpu leg of a local run."""
import json

from conftest import bakeoff, tiny_spec, write_spec


def test_torch_compile_leg_starts_warm_from_the_local_cache(tmp_path):
    data = tiny_spec(name="warm")
    # The graphs (and so the caches) are all made by the first steps and the final evaluation: more steps would
    # only run them again.
    data["training"]["max_steps"] = 6
    data["legs"] = [{"name": "compiled", "instance_type": "ml.m5.xlarge", "compile": "torch_compile",
                     "precision": "fp32"},
                    {"name": "xla", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"}]
    data["parity"]["baseline"] = "compiled"
    spec = write_spec(tmp_path / "warm.yaml", data)
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    def summary(job):
        return json.loads((tmp_path / "out" / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())
    cold, warm = summary("compiled-s0")["compile"]["cache"], summary("compiled-s1")["compile"]["cache"]
    assert cold["state"] == "cold" and cold["misses"] > 0 and cold["hits"] == 0
    assert warm["state"] == "warm" and warm["hits"] > 0 and warm["misses"] == 0
    assert cold["location"] == warm["location"] and "/compile-cache/cpu/" in cold["location"]
    assert summary("compiled-s1")["time_to_first_step_s"] < summary("compiled-s0")["time_to_first_step_s"]
    # The XLA leg's persistent cache: stable keys across seeds, honestly no load on CPU.
    x0, x1 = summary("xla-s0")["compile"]["cache"], summary("xla-s1")["compile"]["cache"]
    assert x0["kind"] == "xla-persistent" and x0["new_entries"] > 0
    assert x1["new_entries"] == 0 and x1["reused_keys"] == x0["entries_after"]
    assert "cannot load" in x1["note"]
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    split = ev["legs"]["compiled"]["compile_cache"]
    assert split["cold_runs"] == 1 and split["warm_runs"] == 1 and split["warm_over_cold"] < 1
