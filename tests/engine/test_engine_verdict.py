"""Verdicts and exit codes from the local engine (0 pass, 1 fail, 3 inconclusive), each from a bake-off
whose jobs run in the fake container (fake_container.py) and whose Evaluate step and gate are real.
Once tests/e2e/test_verdict_e2e.py, where each bake-off trained real jobs."""
import json

import pytest

from fake_container import TRN, FakeContainer, Recipe, bakeoff_cli, verdict_spec


def _run(monkeypatch, capsys, tmp_path, recipe, *extra, **spec):
    container = FakeContainer(recipe)
    code, out, err = bakeoff_cli(monkeypatch, capsys, container, "run", verdict_spec(tmp_path, **spec),
                                 "--out", tmp_path / "out", "--no-mlflow", *extra)
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    assert path.exists(), err[-3000:]
    return code, out, err, json.loads(path.read_text())


def _parity(ev, leg):
    return next(c for c in ev["checks"] if c["name"] == f"parity:{leg}~g5")


def test_identical_numerics_pass(monkeypatch, capsys, tmp_path):
    code, _, err, ev = _run(monkeypatch, capsys, tmp_path, Recipe())
    assert ev["verdict"] == "pass" and code == 0, err[-2000:]
    check = _parity(ev, "m5")
    assert check["identical"] and check["test"] == "paired" and check["n_pairs"] == 3
    # No spread between the legs, but not a point interval: the spread is floored at the metric's step.
    assert "identical" in check["why"] and check["sd_floored"] and check["ci"][0] < 0 < check["ci"][1]


def test_a_baseline_that_diverges_alone_is_inconclusive_not_a_failure_of_the_leg(monkeypatch, capsys, tmp_path):
    code, _, err, ev = _run(monkeypatch, capsys, tmp_path, Recipe(diverge={"g5/1"}))
    assert ev["verdict"] == "inconclusive" and code == 3, err[-2000:]
    assert next(r for r in ev["legs"]["g5"]["runs"] if r["seed"] == 1)["status"] == "diverged"
    checks = {c["name"]: c for c in ev["checks"]}
    assert checks["stability:m5"]["status"] == "passed"
    assert checks["stability:g5"]["status"] == "inconclusive"
    assert "the baseline g5 broke (seed 1 diverged" in checks["stability:g5"]["why"]


def test_a_zero_spread_pair_of_seeds_is_not_decided_on_a_point(monkeypatch, capsys, tmp_path):
    # Two seeds whose differences are both exactly one step: sample SD 0, a point interval at +0.01
    # that used to pass inside +/-0.02.
    recipe = Recipe(quantum=0.01, offset={"m5": 0.01}, seed_noise=0.05)  # seeds that differ by more than a step
    code, _, err, ev = _run(monkeypatch, capsys, tmp_path, recipe, margin=0.02, seeds=2)
    check = _parity(ev, "m5")
    assert [round(d, 9) for _, d in check["per_seed_diffs"]] == [0.01, 0.01]
    assert check["sd_floored"] and check["step"] == pytest.approx(0.01)
    assert check["ci"][1] - check["ci"][0] > 0.03
    assert ev["verdict"] == "inconclusive" and code == 3, err[-2000:]
    assert "floored at" in check["why"] and "the lattice the values sit on" in check["why"]


def test_a_backend_dependent_regression_fails(monkeypatch, capsys, tmp_path):
    # The trn1 leg ends 0.1 above the baseline on every seed, give or take its own run-to-run noise
    # (tests/e2e/test_verdict_e2e.py plants the same on a real XLA leg through its learning rate). Without
    # the noise every difference would be 0.1 to float precision: a point interval, not decided.
    recipe = Recipe(offset={"trn1": 0.1}, unpaired={"trn1": 0.005})
    code, _, err, ev = _run(monkeypatch, capsys, tmp_path, recipe, legs=[TRN, {
        "name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}], margin=0.02)
    assert ev["verdict"] == "fail" and code == 1, err[-2000:]
    check = _parity(ev, "trn1")
    assert check["status"] == "failed" and check["test"] == "paired"
    lo, hi = check["ci"]
    assert lo > 0.02 or hi < -0.02  # shown beyond the margin, not merely undecided


def test_unpaired_legs_with_a_tight_margin_are_inconclusive_with_a_recommendation(monkeypatch, capsys, tmp_path):
    code, out, err, ev = _run(monkeypatch, capsys, tmp_path, Recipe(unpaired={"m5": 0.05}), margin=0.01)
    assert ev["verdict"] == "inconclusive" and code == 3, err[-2000:]
    rec = ev["recommendation"]
    assert rec["seeds"] is None or rec["seeds"] > 3
    # Stage 1 of the two-stage design: its stage 2's fresh seeds, or why no affordable number reaches the power.
    assert ("continue with stage 2" in rec["why"] and rec["next"] == "stage 2") or "cannot reach" in rec["why"]
    assert "to decide it:" in out


def test_a_job_killed_by_sigkill_is_inconclusive_not_fail(monkeypatch, capsys, tmp_path):
    code, _, err, ev = _run(monkeypatch, capsys, tmp_path, Recipe(sigkill={"m5/1"}))
    assert ev["verdict"] == "inconclusive" and code == 3, err[-2000:]
    run = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 1)
    assert run["status"] == "lost" and "SIGKILL" in run["reason"]
    assert "re-run the seeds that gave no result (1)" in ev["recommendation"]["why"]


def test_a_script_error_fails_its_run_with_the_scripts_words(monkeypatch, capsys, tmp_path):
    # The planted `raise=LEG/SEED` of tests/assets/verdict/train.py: a script failure, not an infrastructure loss.
    code, _, err, ev = _run(monkeypatch, capsys, tmp_path, Recipe(crash={"m5/2": "planted failure"}))
    run = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 2)
    assert run["status"] == "failed" and run["failure_kind"] == "script", run
    assert "RuntimeError: planted failure" in run["reason"]
    job = json.loads((tmp_path / "out" / "jobs" / "m5-s2" / "job.json").read_text())
    assert job["exit_code"] == 1 and job["status"] == "failed" and not job["lost"]
    assert (tmp_path / "out" / "jobs" / "m5-s2" / "opt" / "ml" / "output" / "failure").exists()
    assert ev["verdict"] != "pass" and code == {"fail": 1, "inconclusive": 3}[ev["verdict"]], err[-2000:]


def test_a_model_that_fits_its_task_metric_near_1e_11_is_decided_and_reported(monkeypatch, capsys, tmp_path):
    spec = verdict_spec(tmp_path, seeds=4, margin=0.05)
    out = tmp_path / "out"
    recipe = Recipe(base=1.2e-11, seed_noise=1e-13)
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, FakeContainer(recipe), "run", spec, "--out", out, "--no-mlflow")
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert code == 0 and ev["verdict"] == "pass", (ev["first_line"], stderr[-2000:])
    assert (out / "evaluation" / "report.html").stat().st_size < 5_000_000
