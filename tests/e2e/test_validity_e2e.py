"""What the verdict measured, end to end through `bakeoff run` on a trn leg emulated on
PyTorch/XLA's CPU device: port mistakes planted in a real script, each caught on the first
screen (tests/assets/validity/train.py)."""
import json
import shutil

from conftest import ROOT, bakeoff, write_spec

TRN_LEGS = [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "backend": "neuron", "precision": "fp32"},
            {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}]


def _run(tmp_path, plant, script="train.py", legs=TRN_LEGS, seeds=2):
    shutil.copytree(ROOT / "tests" / "assets" / "validity", tmp_path / "validity")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "validity", "entrypoint": {"source_dir": "validity", "script": script},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 8, "max_steps": 12, "log_interval": 2, "eval_interval": 0},
        "legs": legs, "seeds": seeds, "parity": {"metric": "val_loss", "margin": 0.5, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    assert path.exists(), proc.stderr[-3000:]
    return proc, json.loads(path.read_text())


def _check(ev, name):
    return next(c for c in ev["checks"] if c["name"] == name)


def test_a_trn_leg_that_trains_on_the_host_cpu_does_not_pass(tmp_path):
    proc, ev = _run(tmp_path, "host_device", seeds=1)  # the backend check fails it alone, whatever the seeds
    assert ev["verdict"] == "fail" and proc.returncode == 1, proc.stderr[-2000:]
    check = _check(ev, "backend:trn1")
    assert check["status"] == "failed" and "trained on cpu, not xla" in check["why"]
    assert "no XLA graph ran" in check["why"]
    assert "FAIL backend:trn1: trn1 did not train on its neuron backend" in proc.stdout


def test_a_correct_port_passes_every_measured_check(tmp_path):
    proc, ev = _run(tmp_path, "none")
    assert ev["verdict"] == "pass" and proc.returncode == 0, proc.stderr[-2000:]
    assert _check(ev, "backend:trn1")["status"] == "passed"
    assert _check(ev, "same-model")["status"] == "passed"
    assert _check(ev, "blockers:trn1")["status"] == "passed"
    assert _check(ev, "backend:g5")["status"] == "unchecked"  # a GPU leg emulated on the CPU: said, not passed
    summary = json.loads(next((tmp_path / "out" / "jobs" / "trn1-s0").rglob("summary.json")).read_text())
    assert summary["model"]["devices"] == {"xla": 1} and summary["model"]["parameters"] == 256


def test_untied_weights_fail_the_same_model_check(tmp_path):
    proc, ev = _run(tmp_path, "untie", seeds=1)  # the legs' models differ, not their seeds: it fails alone
    check = _check(ev, "same-model")
    assert ev["verdict"] == "fail" and check["status"] == "failed", proc.stderr[-2000:]
    assert "trn1 has 256 more parameters than g5 (512 vs 256; 1 more tensor of shape 32x8)" in check["why"]
    assert "FAIL same-model" in proc.stdout


def test_a_cpu_fallback_in_the_step_shows_on_the_first_screen(tmp_path):
    proc, ev = _run(tmp_path, "nonzero", seeds=1)  # a check of each job's step: one seed a leg shows it
    check = _check(ev, "blockers:trn1")
    assert check["status"] == "warning" and "aten::nonzero" in check["fallback_ops"], proc.stderr[-2000:]
    assert ev["legs"]["trn1"]["speed_representative"] is False
    assert "bakeoff preflight" in proc.stdout and "aten::nonzero" in proc.stdout
    page = (tmp_path / "out" / "evaluation" / "report.html").read_text()
    assert "aten::nonzero" in page.split("<h2>")[0]


def test_a_script_that_reports_nothing_gets_advice_not_a_re_run(tmp_path):
    legs = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"}, TRN_LEGS[1]]
    proc, ev = _run(tmp_path, "none", script="plain.py", legs=legs)
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3, proc.stderr[-2000:]
    why = ev["recommendation"]["why"]
    assert "exited 0 without reporting anything" in why and "more seeds will not help" in why
    assert "lost to the infrastructure" not in json.dumps(ev["checks"])


def test_a_misspelt_parity_metric_stops_after_the_first_seed_with_exit_2(tmp_path):
    shutil.copytree(ROOT / "tests" / "assets" / "validity", tmp_path / "validity")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "validity", "entrypoint": {"source_dir": "validity", "script": "train.py"},
        "training": {"global_batch_size": 8, "max_steps": 6, "log_interval": 2, "eval_interval": 0},
        "legs": [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"}, TRN_LEGS[1]],
        "seeds": 3, "parity": {"metric": "val_los", "margin": 0.5, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert "bakeoff.yaml:" in last and "parity.metric" in last and "(they reported: val_loss)" in last
    assert "Traceback" not in proc.stderr
    # With jobs side by side (the default here), a later seed that started beside the first seeds either
    # finished before the check (a warm-started CPU job takes about a second) or was stopped and recorded
    # so, for a re-run after the fix to run again; none is left running or unrecorded. Which of the two
    # depends on timing; the order-controlled form is tests/unit/test_parallel_jobs.py.
    jobs = tmp_path / "out" / "jobs"
    assert {"g5-s0", "m5-s0"} <= {p.name for p in jobs.iterdir()}
    for later in (p for p in jobs.iterdir() if not p.name.endswith("-s0")):
        record = json.loads((later / "job.json").read_text())
        stopped = record["status"] == "failed" and "interrupted" in record["reason"]
        assert record["status"] == "completed" or stopped, record
    # One job at a time, no job after the first seed starts at all: the engine's rule, whatever the job
    # (tests/engine/test_engine_from_e2e.py, the same spec with the jobs in the fake container).
