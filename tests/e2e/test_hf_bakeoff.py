"""The built-in Hugging Face causal LM in a real tiny bake-off, on both legs to a verdict."""
import json

from conftest import HF_TINY, tiny_spec, write_spec


def test_tiny_hf_bakeoff_runs_on_both_legs_to_a_verdict(tmp_path):
    from conftest import bakeoff

    # One seed a leg: both legs and the verdict, not the spread of seeds, are under test here (seeds are the
    # engine's, the same for every entrypoint: tests/e2e/test_e2e_local.py, tests/engine).
    data = tiny_spec(**HF_TINY, seeds=1)
    data["training"].update({"max_steps": 12, "log_interval": 4})
    path = write_spec(tmp_path / "hf.yaml", data)
    out = tmp_path / "out"
    proc = bakeoff("run", path, "--out", out, "--no-mlflow")
    assert proc.returncode in (0, 1, 3), proc.stdout + proc.stderr
    evaluation = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert evaluation["verdict"] in ("pass", "fail", "inconclusive")
    summaries = {job: json.loads((out / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())
                 for job in ("trn1-s0", "p4d-s0")}
    assert sorted(p.name for p in (out / "jobs").iterdir()) == ["p4d-s0", "trn1-s0"]
    for job, summary in summaries.items():
        assert summary["status"] == "completed" and summary["steps_completed"] == 12, job
        assert summary["hf_config"]["architecture"] == "LlamaForCausalLM"
        assert summary["training_arguments"]["max_steps"] == 12
    # Both legs trained the same model: the xla:cpu leg did not untie or lose a weight.
    assert summaries["trn1-s0"]["parameters"] == summaries["p4d-s0"]["parameters"]
    assert "xla" in str(summaries["trn1-s0"]["environment"]["backend_device"]).lower()
    # The model loads back with from_pretrained's config.
    assert (out / "jobs" / "trn1-s0" / "opt" / "ml" / "model" / "config.json").exists()
