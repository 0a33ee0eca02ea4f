"""The verdict end to end through `bakeoff run`: each outcome from a real bake-off with a
planted cause, and the exit code it gives (0 pass, 1 fail, 3 inconclusive)."""
import json
import shutil

import pytest

from conftest import ROOT, bakeoff, write_spec

pytestmark = pytest.mark.slow  # real bake-offs through `bakeoff run`

CPU_LEGS = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"},
            {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}]


def _run(tmp_path, plant, legs=CPU_LEGS, margin=0.05, seeds=3, extra=()):
    shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "verdict", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 16, "max_steps": 40, "log_interval": 10},
        "legs": legs, "seeds": seeds,
        "parity": {"metric": "val_mse", "margin": margin, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow", *extra)
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    assert path.exists(), proc.stderr[-3000:]
    return proc, json.loads(path.read_text())


def _parity(ev, leg):
    return next(c for c in ev["checks"] if c["name"] == f"parity:{leg}~g5")


def test_identical_numerics_pass(tmp_path):
    proc, ev = _run(tmp_path, "none")
    assert ev["verdict"] == "pass" and proc.returncode == 0, proc.stderr[-2000:]
    check = _parity(ev, "m5")
    assert check["identical"] and check["test"] == "paired" and check["n_pairs"] == 3
    # No spread between the legs, but not a point interval: the spread is floored at the metric's step.
    assert "identical" in check["why"] and check["sd_floored"] and check["ci"][0] < 0 < check["ci"][1]


def test_a_baseline_that_diverges_alone_is_inconclusive_not_a_failure_of_the_leg(tmp_path):
    proc, ev = _run(tmp_path, "blowup=g5/1")
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3, proc.stderr[-2000:]
    assert next(r for r in ev["legs"]["g5"]["runs"] if r["seed"] == 1)["status"] == "diverged"
    checks = {c["name"]: c for c in ev["checks"]}
    assert checks["stability:m5"]["status"] == "passed"
    assert checks["stability:g5"]["status"] == "inconclusive"
    assert "the baseline g5 broke (seed 1 diverged" in checks["stability:g5"]["why"]


def test_a_zero_spread_pair_of_seeds_is_not_decided_on_a_point(tmp_path):
    # Two seeds whose differences are both exactly one step: sample SD 0, a point interval at +0.01
    # that used to pass inside +/-0.02.
    proc, ev = _run(tmp_path, "quantised_offset=m5", margin=0.02, seeds=2)
    check = _parity(ev, "m5")
    assert [round(d, 9) for _, d in check["per_seed_diffs"]] == [0.01, 0.01]
    assert check["sd_floored"] and check["step"] == pytest.approx(0.01)
    assert check["ci"][1] - check["ci"][0] > 0.03
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3, proc.stderr[-2000:]
    assert "floored at" in check["why"] and "the finest decimal the values carry" in check["why"]


@pytest.mark.slow
def test_a_backend_dependent_regression_fails(tmp_path):
    legs = [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "backend": "neuron", "precision": "fp32"},
            CPU_LEGS[1]]
    proc, ev = _run(tmp_path, "lr_on_neuron", legs=legs, margin=0.02)
    assert ev["verdict"] == "fail" and proc.returncode == 1, proc.stderr[-2000:]
    check = _parity(ev, "trn1")
    assert check["status"] == "failed" and check["test"] == "paired"
    lo, hi = check["ci"]
    assert lo > 0.02 or hi < -0.02  # shown beyond the margin, not merely undecided


def test_unpaired_legs_with_a_tight_margin_are_inconclusive_with_a_recommendation(tmp_path):
    proc, ev = _run(tmp_path, "reshuffle_leg=m5", margin=0.01)
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3, proc.stderr[-2000:]
    rec = ev["recommendation"]
    assert rec["seeds"] is None or rec["seeds"] > 3
    assert "would decide it" in rec["why"] or "no affordable number" in rec["why"]
    assert "to decide it:" in proc.stdout


def test_a_job_killed_by_sigkill_is_inconclusive_not_fail(tmp_path):
    proc, ev = _run(tmp_path, "sigkill=m5/1")
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3, proc.stderr[-2000:]
    run = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 1)
    assert run["status"] == "lost" and "SIGKILL" in run["reason"]
    assert "re-run the seeds that gave no result (1)" in ev["recommendation"]["why"]


def test_changing_the_rule_after_the_data_needs_a_reason_and_shows_both(tmp_path):
    proc, ev = _run(tmp_path, "none")
    assert ev["verdict"] == "pass"
    spec = tmp_path / "bakeoff.yaml"
    refused = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow", "--set", "parity.margin=0.5")
    assert refused.returncode == 2 and "parity rule changed after its jobs ran" in refused.stderr
    assert "margin 0.05 -> 0.5" in refused.stderr
    allowed = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow", "--set", "parity.margin=0.5",
                      "--rule-change", "the 0.05 margin was a unit mistake")
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["rule"]["changed"] and ev["rule"]["original"]["margin"] == 0.05 and ev["rule"]["current"]["margin"] == 0.5
    assert "unit mistake" in (tmp_path / "out" / "evaluation" / "report.html").read_text()


def test_a_truncated_rule_file_does_not_let_a_new_rule_through(tmp_path):
    """parity-rule.json emptied (a crash while writing it, or by hand) with finished jobs kept: a new
    margin is refused as if the rule had changed; with a reason it decides and says the rule was lost."""
    proc, ev = _run(tmp_path, "none")
    assert ev["verdict"] == "pass"
    spec, out = tmp_path / "bakeoff.yaml", tmp_path / "out"
    (out / "parity-rule.json").write_text("")
    refused = bakeoff("run", spec, "--out", out, "--no-mlflow", "--set", "parity.margin=0.5")
    assert refused.returncode == 2 and "rule they ran under is not recorded" in refused.stderr, refused.stderr[-2000:]
    assert "Traceback" not in refused.stderr
    allowed = bakeoff("run", spec, "--out", out, "--no-mlflow", "--set", "parity.margin=0.5",
                      "--rule-change", "the file was lost in a crash")
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["rule"]["changed"] and ev["rule"]["original"] is None
    assert "not recorded" in ev["rule"]["reason"] and "lost in a crash" in ev["rule"]["reason"]
    assert json.loads((out / "parity-rule.json").read_text())["changed_to"]["margin"] == 0.5


def test_a_re_run_after_inconclusive_is_a_counted_look(tmp_path):
    """Adding seeds to an undecided bake-off and deciding again at the full alpha is optional
    stopping: refused with the way on; the same seeds decide as the same look; fresh seeds are a
    second look, and the verdict, looks.json and the report say so."""
    proc, ev = _run(tmp_path, "reshuffle_leg=m5", margin=0.01)
    assert ev["verdict"] == "inconclusive" and ev["looks"] == {"this_look": 1, "earlier": []}, proc.stderr[-2000:]
    spec, out = tmp_path / "bakeoff.yaml", tmp_path / "out"
    grown = bakeoff("run", spec, "--out", out, "--no-mlflow", "--set", "seeds=6")
    assert grown.returncode == 2, grown.stderr[-2000:]
    line = grown.stderr.strip().splitlines()
    assert len(line) == 1 and "decided `inconclusive` on seeds 0-2 (look 1, fixed design)" in line[0], grown.stderr
    assert "e.g. `seeds: [6, 7, 8, 9, 10, 11]`" in line[0] and "--until-decided" in line[0]
    assert not (out / "jobs" / "m5-s3").exists(), "a refused look spent seeds"
    again = bakeoff("run", spec, "--out", out, "--no-mlflow")  # the same seeds: the same look
    assert again.returncode == 3, again.stderr[-2000:]
    assert json.loads((out / "evaluation" / "evaluation.json").read_text())["looks"]["this_look"] == 1
    fresh = bakeoff("run", spec, "--out", out, "--no-mlflow", "--set", "seeds=[3, 4, 5]")
    assert fresh.returncode in (0, 1, 3), fresh.stderr[-2000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["looks"]["this_look"] == 2
    assert [(x["look"], x["seeds"], x["verdict"]) for x in ev["looks"]["earlier"]] == [(1, [0, 1, 2], "inconclusive")]
    record = json.loads((out / "looks.json").read_text())["looks"]
    assert [(x["look"], x["seeds"]) for x in record] == [(1, [0, 1, 2]), (2, [3, 4, 5])]
    assert "This is look 2 at this directory's data; before it: look 1 (fixed) on seeds 0-2: inconclusive" in \
        (out / "evaluation" / "report.md").read_text()
