"""Preflight on planted models: each problem found and named, with the right verdict and exit code."""
import json

from conftest import ROOT, bakeoff, write_spec

PLANTED = ROOT / "tests" / "assets" / "preflight"


def _spec(tmp_path, script):
    return write_spec(tmp_path / f"{script}.yaml", {
        "name": "planted", "entrypoint": {"source_dir": str(PLANTED), "script": script,
                       "allow_outside_spec_dir": True},
        "legs": [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"},
                 {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "precision": "fp32"}], "seeds": 2})


def _preflight(tmp_path, script, *args):
    proc = bakeoff("preflight", _spec(tmp_path, script), "--json", "--out", tmp_path / "pf", *args)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)["trn1"]


def test_clean_model_is_ready(tmp_path):
    code, report = _preflight(tmp_path, "clean.py")
    assert code == 0
    assert report["verdict"] == "ready" and report["problems"] == []
    assert report["graphs_compiled"] >= 2 and report["graphs_after_warmup"] == 0


def test_varying_sequence_length_recompiles_and_names_the_shape(tmp_path):
    # Three steps: the two warm-up steps (lengths 16, 20), then the first one after them (24), whose new shape
    # is the recompilation under test; the default six add two more of the same kind (28, then 16 again).
    code, report = _preflight(tmp_path, "dynamic.py", "--steps", "3")
    assert code == 1 and report["verdict"] == "will recompile"
    recompiles = [p for p in report["problems"] if p["kind"] == "recompilation"]
    assert recompiles and all(p["blocker"] for p in recompiles)
    assert "input 0 of the model's forward changed shape [8, 20] -> [8, 24]" in [p["cause"] for p in recompiles]
    assert "pad or bucket" in recompiles[0]["fix"]


def test_nonzero_falls_back_and_names_the_op_and_line(tmp_path):
    code, report = _preflight(tmp_path, "nonzero.py")
    assert code == 1 and report["verdict"] == "will fall back"
    assert report["fallback_ops"] == ["aten::nonzero"]
    problem = next(p for p in report["problems"] if p["kind"] == "cpu-fallback")
    assert problem["op"] == "aten::nonzero"
    assert problem["where"].startswith("nonzero.py:9 ") and "torch.nonzero" in problem["where"]


def test_fp64_is_named(tmp_path):
    code, report = _preflight(tmp_path, "fp64.py")
    assert code == 1 and report["verdict"] == "will fall back"
    fp64 = [p for p in report["problems"] if p["kind"] == "fp64"]
    assert fp64[0]["dtype"] == "torch.float64" and fp64[0]["where"].startswith("fp64.py:9 ")
    assert "float32" in fp64[0]["fix"]


def test_the_builtin_trainer_passes_preflight_and_says_so(tmp_path):
    proc = bakeoff("preflight", ROOT / "examples" / "quickstart.yaml")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "preflight trn1 (ml.trn1.32xlarge, neuron bf16) on local xla:cpu, 6 steps: READY" in proc.stdout
    assert "0 after warm-up" in proc.stdout


def test_unknown_leg_is_bad_input(cli):
    proc = cli("preflight", ROOT / "examples" / "quickstart.yaml", "--leg", "trn9")  # refused before any job
    assert proc.returncode == 2 and "no leg named 'trn9'" in proc.stderr
