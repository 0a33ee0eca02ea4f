"""What the local engine decides about running jobs: the job cache and --force, a doomed leg's seeds not
run, a hung job stopped at its max runtime, rounds of --until-decided. The jobs run in the fake
container (fake_container.py); the Evaluate step and the gate are real. Once real bake-offs in
tests/e2e/test_e2e_local.py, test_faults.py; tests/unit/test_doomed.py, test_sequential.py."""
import json
import shutil

import pytest

from conftest import processes_using, tiny_spec, write_spec
from fake_container import TRN, FakeContainer, Recipe, bakeoff_cli, evaluate_here, verdict_spec

G5 = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}


def test_rerun_skips_finished_jobs_and_force_reruns(monkeypatch, capsys, tmp_path):
    # tiny_spec: the built-in trainer's requests (an xla:cpu leg and a cpu leg), as tests/e2e/test_e2e_local.py runs
    # them; without MLflow (its store's start-up is most of a run's time here; tests/e2e/test_e2e_local.py keeps the
    # copy of a run with MLflow's store in its jobs' requests).
    spec = write_spec(tmp_path / "tiny.yaml", tiny_spec())
    container = FakeContainer(Recipe(metric="val_loss", base=3.0))
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert code == 0 and len(container.ran) == 4, err[-2000:]
    # A copy: the cache key is the request as run (its job directories are in it), not where the run lives.
    out = tmp_path / "copy"
    shutil.copytree(tmp_path / "out", out, symlinks=True)
    code, _, same = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow")
    assert same.count("unchanged, not re-run") == 4, same[-2000:]
    assert "running" not in same
    assert json.loads((out / "evaluation" / "evaluation.json").read_text())["legs"]["trn1"]["completed"] == 2
    # A changed hyperparameter is new content: those jobs run again; --force re-runs unchanged ones.
    code, _, changed = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", out, "--no-mlflow",
                                   "--set", "training.max_steps=31", "--set", "seeds=[0]")
    assert changed.count("running") == 2 and "unchanged" not in changed
    assert sorted(container.ran[4:]) == ["p4d-s0", "trn1-s0"]
    code, _, forced = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", out, "--no-mlflow",
                                  "--set", "training.max_steps=31", "--set", "seeds=[0]", "--force")
    assert forced.count("running") == 2 and "unchanged" not in forced
    assert sorted(container.ran[6:]) == ["p4d-s0", "trn1-s0"]


def test_a_leg_that_blows_up_is_not_run_again(monkeypatch, capsys, tmp_path):
    out = tmp_path / "out"
    container = FakeContainer(Recipe(diverge={"trn1"}))  # tests/assets/verdict's blowup_on_neuron
    # One job at a time: nothing of trn1 starts after seed 0 (side by side, a job started beside the one
    # that dooms its leg is stopped and set aside: tests/unit/test_parallel_jobs.py).
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", verdict_spec(tmp_path, legs=[TRN, G5]),
                               "--out", out, "--no-mlflow", "--jobs", "1")
    # One divergence where the baseline trained cannot show breakage at alpha (exact McNemar needs
    # 5 such seeds at 0.05), and the seeds not run are no evidence: inconclusive, with the reason.
    assert code == 3, err[-3000:]
    assert "leg trn1: stopped early after seed 0" in err
    assert err.count("trn1-s") == err.count("trn1-s0")  # trn1-s1 and -s2 never start
    assert container.ran == ["trn1-s0", "g5-s0", "g5-s1", "g5-s2"]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "inconclusive"
    stability = next(c for c in ev["checks"] if c["name"] == "stability:trn1")
    assert "2 seed(s) not run: stopped early after seed 0" in stability["why"]
    runs = {r["seed"]: r for r in ev["legs"]["trn1"]["runs"]}
    assert {runs[s]["failure_kind"] for s in (1, 2)} == {"doomed"}
    assert "stopped early after seed 0" in runs[1]["reason"]
    assert ev["legs"]["g5"]["completed"] == 3


def test_a_hung_job_is_stopped_at_its_max_runtime_and_leaves_its_reason(monkeypatch, capsys, tmp_path):
    legs = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32", "max_runtime_s": 1}, G5]
    out = tmp_path / "out"
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe(hang={"m5/0"})), "run",
                               verdict_spec(tmp_path, legs=legs, seeds=2), "--out", out, "--no-mlflow")
    meta = json.loads((out / "jobs" / "m5-s0" / "job.json").read_text())
    assert meta["timed_out"] and meta["status"] == "failed" and meta["lost"], meta
    assert "stopped at its max runtime (1 s" in meta["reason"]
    model = out / "jobs" / "m5-s0" / "opt" / "ml" / "model"
    summary = json.loads((model / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["failure_kind"] == "interrupted"
    assert summary["steps_completed"] == 6  # the steps before the hang are kept
    assert (out / "jobs" / "m5-s0" / "opt" / "ml" / "output" / "failure").exists()
    assert len((model / "metrics.jsonl").read_text().splitlines()) >= 1
    # A job stopped by its stopping condition says nothing about quality: inconclusive, not fail.
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "inconclusive" and code == 3, err[-2000:]
    run = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 0)
    assert run["status"] == "lost" and "max runtime" in run["reason"]
    assert not processes_using(out)


def test_a_regression_clear_after_the_first_round_stops_there_with_fail(tmp_path):
    from bakeoff.pipelines.local.until_decided import run_until_decided
    from bakeoff.pipelines.spec.loader import load_spec

    spec = load_spec(verdict_spec(tmp_path, legs=[TRN, G5], margin=0.02, seeds=3))
    # tests/assets/verdict's lr_on_neuron, in effect (with run-to-run noise of its own: equal differences on
    # every seed would be a point interval, not decided)
    container = FakeContainer(Recipe(offset={"trn1": 0.1}, unpaired={"trn1": 0.005}))
    result = run_until_decided(spec, tmp_path / "out", max_seeds=9, mlflow=False, container=container,
                               processor=evaluate_here)
    assert result.verdict == "fail" and result.exit_code == 1
    record = json.loads((tmp_path / "out" / "sequential.json").read_text())
    assert record["looks"] == [3] and len(record["rounds"]) == 1 and record["jobs_run"] == 6
    assert len(container.ran) == 6
    assert result.evaluation["sequential"]["looks"] == [3]


def test_an_undecidable_comparison_stops_at_the_cap_inconclusive_with_a_recommendation(tmp_path):
    from bakeoff.pipelines import api

    container = FakeContainer(Recipe(unpaired={"m5": 0.05}))  # tests/assets/verdict's reshuffle_leg=m5
    spec = verdict_spec(tmp_path, margin=0.01, seeds=2)
    result = api.run_local(spec, tmp_path / "out", until_decided=True, max_seeds=4, mlflow=False, container=container,
                           processor=evaluate_here)
    assert result.verdict == "inconclusive" and result.exit_code == 3
    assert result.evaluation["recommendation"]["why"]
    record = json.loads((tmp_path / "out" / "sequential.json").read_text())
    assert record["looks"] == [2, 4] and record["stopped"].startswith("inconclusive at the cap")
    # the second round ran only the new seeds: the job cache served the first round's
    assert sorted(record["rounds"][1]["reused"]) == ["g5-s0", "g5-s1", "m5-s0", "m5-s1"]
    assert sorted(record["rounds"][1]["ran"]) == ["g5-s2", "g5-s3", "m5-s2", "m5-s3"]
    assert sorted(container.ran) == sorted(f"{leg}-s{s}" for leg in ("m5", "g5") for s in range(4))
    assert result.evaluation["sequential"]["final"]
    # Both rounds are looks of the one design, counted as such.
    looks = json.loads((tmp_path / "out" / "looks.json").read_text())["looks"]
    assert [(x["look"], x["seeds"], x["design"]["kind"]) for x in looks] == [(1, [0, 1], "sequential"),
                                                                             (2, [0, 1, 2, 3], "sequential")]
    assert result.evaluation["looks"]["this_look"] == 2


def test_the_report_says_when_the_jobs_shared_the_machine_and_deciding_again_keeps_it(monkeypatch, capsys, tmp_path):
    # MLflow off in the spec too: `bakeoff report DIR` decides again with the spec's MLflow setting
    # (creating a local MLflow store, seconds of migrations), which is not what this test is about.
    spec = verdict_spec(tmp_path, seeds=2, mlflow={"enabled": False})
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    code, out, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", shared,
                                 "--no-mlflow", "--jobs", "2")
    ev = json.loads((shared / "evaluation" / "evaluation.json").read_text())
    assert ev["speed"]["jobs_at_once"] == 2, err[-2000:]
    assert "ran 2 at a time on this machine" in (shared / "evaluation" / "report.md").read_text()
    assert "the jobs ran 2 at a time on this machine" in out + err
    # Deciding the directory again reads how its jobs ran from its plan.json, not from this command.
    (shared / "evaluation" / "evaluation.json").unlink()
    code, out, err = bakeoff_cli(monkeypatch, capsys, None, "report", shared, "--write")
    assert "deciding" in err.lower(), err[-2000:]
    assert code == 0 and json.loads((shared / "evaluation" / "evaluation.json").read_text())["speed"][
        "jobs_at_once"] == 2, err[-2000:]
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", alone,
                               "--no-mlflow", "--jobs", "1")
    ev = json.loads((alone / "evaluation" / "evaluation.json").read_text())
    assert "jobs_at_once" not in ev["speed"]
    assert "at a time on this machine" not in (alone / "evaluation" / "report.md").read_text()
    # Decided again by a command whose own default would be side by side: still one at a time.
    (alone / "evaluation" / "evaluation.json").unlink()
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "report", alone, "--write")
    assert code == 0 and "jobs_at_once" not in json.loads(
        (alone / "evaluation" / "evaluation.json").read_text())["speed"], err[-2000:]


def test_without_max_seeds_the_default_cap_stands_and_round_1_says_what_power_it_gives(tmp_path, capsys):
    from bakeoff.pipelines import api
    from bakeoff_runtime.verdict import group_sequential as seq
    from bakeoff_runtime.verdict import stats

    # m5's own noise (SD 0.06) against a 0.04 margin: 4 x 3 seeds are far too few for 80% power. A cap sized
    # from the question's own first round would lift its false-pass rate, so the cap stays 12 and the run
    # says what it gives and what would give the power, for the next attempt.
    container = FakeContainer(Recipe(unpaired={"m5": 0.06}))
    spec = verdict_spec(tmp_path, margin=0.04, seeds=3)
    result = api.run_local(spec, tmp_path / "out", until_decided=True, mlflow=False, container=container,
                           processor=evaluate_here)
    record = json.loads((tmp_path / "out" / "sequential.json").read_text())
    advice = record["cap_advice"]
    assert record["max_seeds"] == 12 and result.evaluation["sequential"]["max_seeds"] == 12
    import random
    import statistics

    sd = statistics.stdev([random.Random(f"m5/{s}").gauss(0.0, 0.06) for s in range(3)])
    planned = stats.spread_upper_limit(sd, 2)
    assert advice["planned_sigma"] == pytest.approx(planned)
    assert advice["power_at_cap"] == pytest.approx(seq.simulate(3, 12, planned, 0.04, 0.0, 0.05)["pass"])
    needed = advice["cap_for_power"]
    assert needed > 12 and advice["power_at_cap"] < 0.8
    assert seq.simulate(3, needed, planned, 0.04, 0.0, 0.05)["pass"] >= 0.8
    assert seq.simulate(3, needed - 1, planned, 0.04, 0.0, 0.05)["pass"] < 0.8
