"""The evaluation step on fixed job outputs: known numbers in, known verdicts out."""
import json
import subprocess
import sys

import pytest
from evaluation_inputs import CONFIG, _job, _jobs
from jobtree import seal

from bakeoff_runtime.contract.output_digest import DIGEST_FILE
from bakeoff_runtime.verdict import two_stage
from bakeoff_runtime.verdict.evaluation import evaluate
from bakeoff_runtime.verdict.job_outputs import load_jobs
from conftest import ENTRYPOINTS


def _check(ev, name):
    return next(c for c in ev["checks"] if c["name"] == name)


def test_pass_paired_with_figures_and_cost(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    assert ev["verdict"] == "pass" and ev["recommendation"] is None and ev["to_decide"] == "none"
    check = _check(ev, "parity:trn~gpu")
    assert check["test"] == "paired" and check["n_pairs"] == 3 and "paired t on 3 seeds" in check["why"]
    assert [d for _, d in check["per_seed_diffs"]] == pytest.approx([-0.01, 0.01, 0.0])
    trn = ev["legs"]["trn"]
    assert trn["metric"]["mean"] == pytest.approx((2.40 + 2.51 + 2.32) / 3)
    assert trn["throughput_mean"] == pytest.approx(2001.0)
    # 100 billable seconds x 1 instance x $36/h = $1; gpu: 100 s x 2 instances x $18/h = $1.
    assert trn["cost_per_run_usd_mean"] == pytest.approx(1.0)
    assert ev["legs"]["gpu"]["cost_per_run_usd_mean"] == pytest.approx(1.0)
    assert trn["cost_per_million_units_usd_mean"] == pytest.approx(0.5)
    assert trn["peak_host_memory_bytes_max"] == 1002
    assert [c["name"] for c in ev["checks"]] == ["stability:trn", "stability:gpu", "parity:trn~gpu", "backend:trn",
                                                 "backend:gpu", "same-model", "seeds:trn", "seeds:gpu", "blockers:trn",
                                                 "blockers:gpu"]
    # Each job recorded where it trained: on its own backend, the same model.
    assert [_check(ev, n)["status"] for n in ("backend:trn", "backend:gpu", "same-model")] == ["passed"] * 3
    assert ev["failed_checks"] == "none" and ev["undecided_checks"] == "none"


def test_fail_when_a_difference_beyond_the_margin_is_shown(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.60, 2.71, 2.52], [2.41, 2.50, 2.32]))
    assert ev["verdict"] == "fail"
    check = _check(ev, "parity:trn~gpu")
    assert check["status"] == "failed" and "beyond the margin" in check["why"] and "trn is worse" in check["why"]
    assert ev["failed_checks"] == "parity:trn~gpu"


def test_inconclusive_says_how_many_seeds_would_decide_it(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.45, 2.45, 2.35], [2.41, 2.50, 2.32]))
    assert ev["verdict"] == "inconclusive"
    rec = ev["recommendation"]
    # Stage 1 of the two-stage design: the advice is its stage 2, fresh seeds after the ones run.
    assert rec["seeds"] > 3 and rec["next"] == "stage 2" and "continue with stage 2" in rec["why"]
    assert rec["fresh_seeds"] == list(range(3, 3 + rec["seeds"])) and f"[3..{2 + rec['seeds']}]" in rec["why"]
    assert ev["to_decide"] == rec["why"] and "To decide it" in ev["summary"]
    check = _check(ev, "parity:trn~gpu")
    assert check["status"] == "inconclusive" and check["recommendation"]["seeds"] == rec["seeds"]


def test_too_few_seeds_is_inconclusive_never_a_pass(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["legs"]["trn"]["seeds"] = [0]
    cfg["legs"]["gpu"]["seeds"] = [0]
    ev = evaluate(cfg, _jobs(tmp_path, [2.41], [2.41]))
    assert ev["verdict"] == "inconclusive"
    assert ev["recommendation"]["seeds"] == 3 and "spread" in ev["recommendation"]["why"]


def test_one_crash_on_one_leg_is_breakage_not_yet_shown(tmp_path):
    _job(tmp_path, "trn-s0", "trn", 0, 2.41)
    _job(tmp_path, "trn-s1", "trn", 1, None, status="failed", reason="RuntimeError: op not lowered",
         failure_kind="script")
    _job(tmp_path, "trn-s2", "trn", 2, 2.40)
    for i in range(3):
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    # One discordant seed: exact McNemar p = 1/2, which cannot show that trn breaks more often.
    assert ev["verdict"] == "inconclusive"
    check = _check(ev, "stability:trn")
    assert check["status"] == "inconclusive"
    assert "seed 1 crashed here and not on gpu: RuntimeError: op not lowered" in check["why"]
    assert "1 seed(s) broke on trn and not on gpu, 0 the other way (exact McNemar p=0.5)" in check["why"]
    # Stage 1 of the two-stage design reads its Pocock level; Holm counts parity and breakage (2 claims).
    assert check["breakage"] == {"leg_only": 1, "baseline_only": 0, "both": 0, "unpaired": 0, "p_value": 0.5,
                                 "alpha": pytest.approx(two_stage.stage1_level(0.05))}
    assert "at least 7 seeds broken on trn alone" in check["recommendation"]["why"]  # 2**-7 <= 0.0304 / 2
    assert ev["legs"]["trn"]["failed"] == 1


def _config(seeds, design="two_stage"):
    legs = {name: {**leg, "seeds": list(seeds)} for name, leg in CONFIG["legs"].items()}
    return {**CONFIG, "legs": legs, "parity": {**CONFIG["parity"], "design": design}}


def test_breakage_on_the_leg_alone_fails_once_mcnemar_shows_it(tmp_path):
    # Fixed design, one leg: Holm's family is its parity and breakage claims, so a fail needs p <= 0.05 / 2.
    for i in range(7):
        if i == 6:
            _job(tmp_path, f"trn-s{i}", "trn", i, 2.41)
        else:
            _job(tmp_path, f"trn-s{i}", "trn", i, float("nan"), status="diverged", reason="loss went nan at step 40")
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    ev = evaluate(_config(range(7), "fixed"), load_jobs(tmp_path))
    check = _check(ev, "stability:trn")
    assert ev["verdict"] == "fail" and ev["failed_checks"] == "stability:trn" and check["status"] == "failed"
    assert check["breakage"]["leg_only"] == 6 and check["breakage"]["p_value"] == 1 / 64
    assert "exact McNemar p=0.0156) <= alpha 0.05" in check["why"]
    assert check["holm"]["claims"] == 2 and check["holm"]["threshold"] == pytest.approx(0.025)


def test_five_breakages_alone_are_not_a_fail_once_parity_and_breakage_are_one_family(tmp_path):
    # p = 1/32 fails one claim at 0.05, but the verdict can fail on parity or on breakage: 2 claims.
    for i in range(6):
        status = ("completed", None) if i == 5 else ("diverged", "loss went nan at step 40")
        _job(tmp_path, f"trn-s{i}", "trn", i, 2.41 if i == 5 else float("nan"), status=status[0],
             **({"reason": status[1]} if status[1] else {}))
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    check = _check(evaluate(_config(range(6), "fixed"), load_jobs(tmp_path)), "stability:trn")
    assert check["status"] == "inconclusive" and check["holm"]["p_value"] == 1 / 32
    assert not check["holm"]["confirmed"] and "Holm's correction" in check["why"]


def test_a_baseline_that_breaks_alone_leaves_it_undecided_never_failed(tmp_path):
    for i in range(3):
        _job(tmp_path, f"trn-s{i}", "trn", i, 2.41 + i / 100)
        if i == 1:
            _job(tmp_path, "gpu-s1", "gpu", 1, float("nan"), status="diverged", reason="loss went nan at step 7")
        else:
            _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "inconclusive"
    assert _check(ev, "stability:trn")["status"] == "passed"
    base = _check(ev, "stability:gpu")
    assert base["status"] == "inconclusive" and "the baseline gpu broke (seed 1 diverged" in base["why"]
    assert "stability:gpu: fix what breaks gpu, then start this question afresh" in ev["recommendation"]["why"]


def test_a_seed_that_breaks_on_every_leg_is_not_a_difference(tmp_path):
    for i in range(4):
        for leg in ("trn", "gpu"):
            if i == 1:
                _job(tmp_path, f"{leg}-s1", leg, 1, float("nan"), status="diverged", reason="loss went nan")
            else:
                _job(tmp_path, f"{leg}-s{i}", leg, i, 2.41 + i / 1000)
    ev = evaluate(_config(range(4)), load_jobs(tmp_path))
    assert ev["verdict"] == "pass", ev["summary"]
    for leg in ("trn", "gpu"):
        check = _check(ev, f"stability:{leg}")
        assert check["status"] == "passed" and "seed 1 broke on every leg" in check["why"], check
    assert _check(ev, "parity:trn~gpu")["n_pairs"] == 3


def test_mcnemar_p_is_the_exact_one_sided_binomial():
    from scipy.stats import binomtest

    from bakeoff_runtime.verdict.evaluation import mcnemar_p
    for leg_only, base_only in [(1, 0), (5, 0), (4, 1), (7, 3), (2, 9), (0, 4)]:
        want = binomtest(leg_only, leg_only + base_only, 0.5, alternative="greater").pvalue
        assert mcnemar_p(leg_only, base_only) == pytest.approx(want, rel=1e-12)


def test_a_crash_on_every_leg_is_a_script_bug_not_a_difference(tmp_path):
    for leg in ("trn", "gpu"):
        for i in range(3):
            if i == 1:
                _job(tmp_path, f"{leg}-s{i}", leg, i, None, status="failed", reason="KeyError: 'x'",
                     failure_kind="script")
            else:
                _job(tmp_path, f"{leg}-s{i}", leg, i, 2.41 + i / 100 + (0.001 if leg == "trn" else 0))
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "inconclusive"
    check = _check(ev, "stability:trn")
    assert "the same way on every leg" in check["why"] and "more seeds will not help: KeyError: 'x'" in check["why"]
    assert ev["recommendation"]["seeds"] is None and ev["recommendation"]["why"].startswith("stability:trn: fix the")


def test_a_job_killed_by_a_signal_is_lost_not_failed(tmp_path):
    _jobs(tmp_path, [2.41, 2.50, 2.32], [2.41, 2.50, 2.32])
    (tmp_path / "trn-s2" / "opt" / "ml" / "model" / "summary.json").unlink()
    (tmp_path / "trn-s2" / "job.json").write_text(json.dumps(
        {"leg": "trn", "seed": 2, "exit_code": -9, "lost": True, "reason": "killed by SIGKILL"}))
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "inconclusive" and ev["legs"]["trn"]["lost"] == 1
    stab = _check(ev, "stability:trn")
    assert stab["status"] == "inconclusive" and "killed by SIGKILL" in stab["why"]
    assert "re-run the seeds that gave no result (2)" in ev["recommendation"]["why"]


def test_a_lost_run_does_not_hide_a_shown_failure(tmp_path):
    _jobs(tmp_path, [2.71, 2.80, 2.62, 2.75], [2.41, 2.50, 2.32, 2.45])
    cfg = json.loads(json.dumps(CONFIG))
    cfg["legs"]["trn"]["seeds"] = cfg["legs"]["gpu"]["seeds"] = [0, 1, 2, 3]
    (tmp_path / "trn-s3" / "job.json").write_text(json.dumps({"leg": "trn", "seed": 3, "exit_code": -15}))
    ev = evaluate(cfg, load_jobs(tmp_path))
    assert ev["verdict"] == "fail"


def test_a_non_finite_metric_in_a_completed_run_is_a_diverged_run(tmp_path):
    _jobs(tmp_path, [2.41, 2.50, 2.32], [2.41, 2.50, 2.32])
    path = tmp_path / "trn-s1" / "opt" / "ml" / "model" / "summary.json"
    summary = json.loads(path.read_text())
    summary["metrics"]["val_loss"] = float("nan")
    path.write_text(json.dumps(summary))
    seal(path.parent)  # the job wrote it so
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "inconclusive" and ev["legs"]["trn"]["diverged"] == 1
    assert "val_loss is nan in a run that reported completion" in _check(ev, "stability:trn")["why"]


def test_a_truncated_summary_is_reported_not_a_crash_of_the_evaluation(tmp_path):
    _jobs(tmp_path, [2.41, 2.50, 2.32], [2.41, 2.50, 2.32])
    path = tmp_path / "gpu-s0" / "opt" / "ml" / "model" / "summary.json"
    path.write_text(path.read_text()[:40])
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "inconclusive"
    assert "summary.json is not valid JSON" in _check(ev, "stability:gpu")["why"]


def test_relative_margin(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["parity"].update(margin=0.01, margin_type="relative")  # 1% of the baseline mean
    ev = evaluate(cfg, _jobs(tmp_path, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42]))
    assert _check(ev, "parity:trn~gpu")["margin"] == pytest.approx(0.01 * 2.41)


def test_cost_to_target_counts_seeds_that_never_got_there(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["parity"]["target"] = 2.45
    for i, reach in enumerate([True, True, False]):
        evals = [(50, 360.0, 2.44 if reach else 2.60), (100, 720.0, 2.42 if reach else 2.55)]
        _job(tmp_path, f"trn-s{i}", "trn", i, 2.42 if reach else 2.55, evals=evals)
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.42, evals=[(50, 360.0, 2.44)])
    ev = evaluate(cfg, load_jobs(tmp_path))
    trn = ev["legs"]["trn"]
    assert trn["reached_target"] == 2 and trn["reached_target_fraction"] == pytest.approx(2 / 3)
    assert trn["cost_to_target_usd_mean"] is None  # not every seed reached it: no mean pretends they did
    # 100 billed seconds, 99 of them training: 1 s of overhead plus the 360 s to the target
    assert trn["cost_to_target_usd_mean_of_reached"] == pytest.approx((1 + 360) * 36 / 3600)
    assert ev["legs"]["gpu"]["cost_to_target_usd_mean"] == pytest.approx((1 + 360) * 2 * 18 / 3600)


def test_throughput_spread_is_flagged(tmp_path):
    for i, tp in enumerate([1000.0, 1500.0, 1100.0]):
        _job(tmp_path, f"trn-s{i}", "trn", i, 2.41, throughput=tp)
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41, throughput=2000.0 + i)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["legs"]["trn"]["throughput"]["unstable"] and not ev["legs"]["gpu"]["throughput"]["unstable"]
    assert ev["speed"]["unstable_legs"] == ["trn"]


def test_emulated_figures_are_labelled(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["emulated"] = True
    ev = evaluate(cfg, _jobs(tmp_path, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42]))
    assert ev["speed"] == {"emulated": True, "label": "emulated: not indicative of the target hardware",
                           "unstable_legs": [], "crosscheck_disagrees": []}
    assert all(f["emulated"] for f in ev["legs"].values())


def test_the_rule_it_was_decided_under_is_recorded_beside_the_original(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["rule_original"] = {**cfg["parity"], "margin": 0.01}
    cfg["rule_change_reason"] = "the margin was a typo"
    ev = evaluate(cfg, _jobs(tmp_path, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42]))
    assert ev["rule"]["changed"] is True and ev["rule"]["original"]["margin"] == 0.01
    assert ev["rule"]["current"]["margin"] == 0.05 and ev["rule"]["reason"] == "the margin was a typo"


def test_evaluate_script_reads_output_tarballs_and_records_a_margin_parameter(tmp_path):
    """In SageMaker the processing step gets each job's output.tar.gz, not a directory."""
    import tarfile

    src = tmp_path / "src"
    _jobs(src, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42])
    jobs = tmp_path / "jobs"
    for job in src.iterdir():
        (jobs / job.name).mkdir(parents=True)
        with tarfile.open(jobs / job.name / "output.tar.gz", "w:gz") as tar:
            for name in ("summary.json", "metrics.jsonl", DIGEST_FILE):
                tar.add(job / "opt" / "ml" / "model" / name, arcname=name)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG))
    out = tmp_path / "eval"
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "evaluate.py"), "--jobs", str(jobs), "--config",
                           str(cfg), "--out", str(out), "--margin", "0.001"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ev = json.loads((out / "evaluation.json").read_text())
    assert ev["legs"]["trn"]["completed"] == 3 and ev["legs"]["trn"]["runs"][0]["curves"]["train_loss"]
    assert ev["parity"]["margin"] == 0.001 and ev["verdict"] in ("fail", "inconclusive")
    assert ev["rule"]["changed"] and ev["rule"]["original"]["margin"] == 0.05
    assert "ParityMargin" in ev["rule"]["reason"]
    assert f"verdict={ev['verdict']}" in proc.stdout


def test_every_cost_field_moves_with_the_billed_time(tmp_path):
    """One cost function: `bakeoff report ARN` re-costs with SageMaker's billed seconds through
    the evaluation's own job_costs, so no cost figure is left at the local estimate."""
    from bakeoff_runtime.verdict.evaluation import recost

    cfg = json.loads(json.dumps(CONFIG))
    cfg["parity"]["target"] = 2.45
    for leg in ("trn", "gpu"):
        for i in range(3):
            _job(tmp_path, f"{leg}-s{i}", leg, i, 2.41 + i / 100, billable=100.0, evals=[(50, 40.0, 2.44)])
    ev = evaluate(cfg, load_jobs(tmp_path))
    doubled = recost(ev, {(leg, s): 200.0 for leg in ("trn", "gpu") for s in range(3)}, "billed")
    price = {"trn": 36.0 * 1, "gpu": 18.0 * 2}  # per hour x instances
    for leg in ("trn", "gpu"):
        for before, after in zip(ev["legs"][leg]["runs"], doubled["legs"][leg]["runs"], strict=True):
            assert after["cost_usd"] == pytest.approx(2 * before["cost_usd"]) == pytest.approx(200 * price[leg] / 3600)
            assert after["cost_per_million_units_usd"] == pytest.approx(2 * before["cost_per_million_units_usd"])
            # to target: billed time outside the 99 s of training (101 s) plus the 40 s to the target
            assert before["cost_to_target_usd"] == pytest.approx((1 + 40) * price[leg] / 3600)
            assert after["cost_to_target_usd"] == pytest.approx((101 + 40) * price[leg] / 3600)
        for f in ("cost_per_run_usd_mean", "cost_per_million_units_usd_mean", "cost_to_target_usd_mean",
                  "billable_s_mean"):
            assert doubled["legs"][leg][f] > ev["legs"][leg][f], (leg, f)
    assert doubled["cost_basis"] == "billed"


def _rewrite(tmp_path, name, change):
    path = tmp_path / name / "opt" / "ml" / "model" / "summary.json"
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary))
    seal(path.parent)  # the job wrote it so


@pytest.mark.parametrize("what, change, state", [
    ("an absurd metric", lambda s: s["metrics"].update(val_loss=1e308), "diverged"),
    ("metrics as a list", lambda s: s.update(metrics=[2.4]), "lost"),
    ("throughput as text", lambda s: s.update(throughput="fast"), "lost"),
    ("a status that is not text", lambda s: s.update(status=["completed"]), "lost"),
])
def test_one_odd_summary_loses_that_run_only_and_the_verdict_for_the_others_stands(tmp_path, what, change, state):
    _jobs(tmp_path, [2.41, 2.50, 2.32, 2.40], [2.41, 2.50, 2.32, 2.41])
    _rewrite(tmp_path, "trn-s3", change)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    run = next(r for r in ev["legs"]["trn"]["runs"] if r["seed"] == 3)
    assert run["status"] == state, (what, run)
    assert run["reason"]
    assert [r["status"] for r in ev["legs"]["gpu"]["runs"]] == ["completed"] * 4
    json.dumps(ev, allow_nan=False)  # strict JSON: what a strict parser reads


def test_a_deeply_nested_summary_is_one_lost_run_not_a_crash(tmp_path):
    _jobs(tmp_path, [2.41, 2.50, 2.32], [2.41, 2.50, 2.32])
    path = tmp_path / "trn-s2" / "opt" / "ml" / "model" / "summary.json"
    path.write_text('{"status": "completed", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    run = next(r for r in ev["legs"]["trn"]["runs"] if r["seed"] == 2)
    assert run["status"] == "lost" and "nest" in run["reason"]


def test_evaluation_json_is_strict_json_even_with_a_nan_run(tmp_path):
    from bakeoff_runtime.verdict.evaluation import write_evaluation

    _jobs(tmp_path / "jobs", [2.41, float("nan"), 2.32], [2.41, 2.50, 2.32])
    path = write_evaluation(evaluate(CONFIG, load_jobs(tmp_path / "jobs")), tmp_path / "out")
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    body = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in evaluation.json"))
    assert body["legs"]["trn"]["diverged"] == 1


def test_the_same_crash_on_every_seed_of_one_leg_fails_it_without_waiting_for_mcnemar(tmp_path):
    for i in range(3):
        _job(tmp_path, f"trn-s{i}", "trn", i, None, status="failed", reason="RuntimeError: op not lowered",
             failure_kind="script")
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    check = _check(ev, "stability:trn")
    assert ev["verdict"] == "fail" and check["status"] == "failed"
    assert "the same way on every seed it ran" in check["why"] and "op not lowered" in check["why"]


def test_seeds_the_doomed_leg_rule_never_ran_are_not_breakage(tmp_path):
    # One divergence, then the leg was stopped: five "failed" seeds that never ran must not be
    # counted as five more seeds broken on the leg alone (that would be 6 of 6, p = 1/64).
    _job(tmp_path, "trn-s0", "trn", 0, float("nan"), status="diverged", reason="loss went nan")
    for i in range(1, 6):
        _job(tmp_path, f"trn-s{i}", "trn", i, None, status="failed", failure_kind="doomed",
             reason="stopped early after seed 0: it diverged where gpu did not")
    for i in range(6):
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    ev = evaluate(_config(range(6)), load_jobs(tmp_path))
    check = _check(ev, "stability:trn")
    assert ev["verdict"] == "inconclusive" and check["status"] == "inconclusive"
    assert check["breakage"]["leg_only"] == 1 and check["breakage"]["p_value"] == 0.5
    assert "5 seed(s) not run: stopped early after seed 0" in check["why"]



BASE3 = [2.41, 2.50, 2.32]


def _three_legs(tmp, extras=None, values=None, design="two_stage"):
    """Legs a, b, c against the baseline gpu: each `extra` above it on every seed (plus a little
    noise), or the given values."""
    cfg = json.loads(json.dumps(CONFIG))
    cfg["parity"]["design"] = design
    trn = cfg["legs"].pop("trn")
    for leg, extra in zip("abc", extras or [0.0] * 3, strict=True):
        cfg["legs"][leg] = trn
        vals = values or [b + extra + e for b, e in zip(BASE3, [0.0, 0.01, -0.01], strict=True)]
        for i, v in enumerate(vals):
            _job(tmp, f"{leg}-s{i}", leg, i, v)
    for i, b in enumerate(BASE3):
        _job(tmp, f"gpu-s{i}", "gpu", i, b)
    return cfg, load_jobs(tmp)


def test_one_of_three_legs_failing_at_alpha_alone_is_not_a_family_wise_fail(tmp_path):
    cfg, jobs = _three_legs(tmp_path / "three", [0.0, 0.07, 0.0], design="fixed")
    ev = evaluate(cfg, jobs)
    b = _check(ev, "parity:b~gpu")
    # p = 0.037 fails at alpha 0.05 for one claim; three legs make six claims (parity and breakage
    # each), so the smallest p needs 0.05 / 6.
    assert b["holm"]["p_value"] == pytest.approx(0.0371, abs=5e-4) and b["holm"]["claims"] == 6
    assert b["holm"]["threshold"] == pytest.approx(0.05 / 6) and not b["holm"]["confirmed"]
    assert b["status"] == "inconclusive" and "Holm's correction" in b["why"]
    assert ev["verdict"] == "inconclusive" and "more seeds of this question on b" in b["recommendation"]["why"]
    # The same leg judged alone is still one of two claims (its parity and its breakage): not confirmed.
    alone = _jobs(tmp_path / "alone", [b_ + 0.07 + e for b_, e in zip(BASE3, [0.0, 0.01, -0.01], strict=True)],
                  BASE3)
    cfg1 = {**CONFIG, "parity": {**CONFIG["parity"], "design": "fixed"}}
    single = _check(evaluate(cfg1, alone), "parity:trn~gpu")
    assert single["status"] == "inconclusive" and single["holm"]["threshold"] == pytest.approx(0.025)


def test_holm_steps_down_a_clear_fail_is_confirmed_and_the_next_one_judged_at_its_rank(tmp_path):
    cfg, jobs = _three_legs(tmp_path, [0.3, 0.07, 0.0], design="fixed")
    ev = evaluate(cfg, jobs)
    a, b = _check(ev, "parity:a~gpu"), _check(ev, "parity:b~gpu")
    assert a["status"] == "failed" and a["holm"]["rank"] == 1 and a["holm"]["confirmed"]
    assert b["holm"]["rank"] == 2 and b["holm"]["threshold"] == pytest.approx(0.05 / 5)
    assert b["status"] == "inconclusive"
    assert ev["verdict"] == "fail" and ev["failed_checks"] == "parity:a~gpu"
    assert ev["legs"]["b"]["parity"] == "inconclusive" and ev["legs"]["c"]["parity"] == "passed"


def test_seeds_are_recommended_for_several_legs_jointly_on_the_spread_s_upper_limit(tmp_path):
    undecided = [2.45, 2.45, 2.35]
    one = evaluate(CONFIG, _jobs(tmp_path / "one", undecided, BASE3))
    cfg, jobs = _three_legs(tmp_path / "three", values=undecided)
    single = _check(one, "parity:trn~gpu")["recommendation"]
    joint = _check(evaluate(cfg, jobs), "parity:a~gpu")["recommendation"]
    assert single["legs"] == 1 and joint["legs"] == 3 and joint["seeds"] > single["seeds"]
    assert "for all 3 legs together" in joint["why"]
    assert single["planned_sigma"] > single["sigma"] and "80% upper confidence limit" in single["why"]


def test_one_seed_far_from_the_others_is_named_and_the_skew_guard_acts_on_both_sides(tmp_path):
    # A downgrade of passes alone was one-sided and made power fall as seeds were added: the seed is named
    # beside the verdict the interval gives, pass or fail alike.
    cfg = json.loads(json.dumps(CONFIG))
    for leg in ("trn", "gpu"):
        cfg["legs"][leg]["seeds"] = [0, 1, 2, 3, 4]
    base = [2.41, 2.50, 2.32, 2.45, 2.38]
    leg = [b + d for b, d in zip(base, [0.001, -0.002, 0.0, 0.001, 0.03], strict=True)]
    ev = evaluate(cfg, _jobs(tmp_path, leg, base))
    check = _check(ev, "parity:trn~gpu")
    assert check["outlier"]["seed"] == 4
    assert "note: seed 4's difference (+0.03) lies far from the other seeds'" in check["why"], check["why"]
    # What it does to the verdict is the skew guard's (verdict/skew.py), the same on either side: the t
    # interval alone would pass; the differences are visibly skewed, so Hall's bound is read too.
    lo_t, hi_t = check["ci_t"]
    assert lo_t > -0.05 and hi_t < 0.05 and check["skew_visible"] and check["skew_widened"]
    assert check["status"] == "inconclusive" and "visibly skewed" in check["why"]
    worse = [b + d for b, d in zip(base, [0.201, 0.198, 0.2, 0.201, 0.23], strict=True)]
    failed = _check(evaluate(cfg, _jobs(tmp_path / "worse", worse, base)), "parity:trn~gpu")
    assert failed["outlier"]["seed"] == 4 and failed["skew_widened"] and failed["status"] == "failed"
    # Mirrored differences (the far seed below the others) widen the mirrored side by as much.
    mirror = [b - (w - b) for b, w in zip(base, worse, strict=True)]
    mirrored = _check(evaluate(cfg, _jobs(tmp_path / "mirror", mirror, base)), "parity:trn~gpu")
    assert mirrored["ci"] == pytest.approx([-failed["ci"][1], -failed["ci"][0]])
    assert mirrored["status"] == "failed" and mirrored["skew_widened"]
    calm = evaluate(cfg, _jobs(tmp_path / "calm", [b + d for b, d in zip(base, [0.001, -0.002, 0.0, 0.001, 0.002],
                                                                           strict=True)], base))
    assert calm["verdict"] == "pass" and "outlier" not in _check(calm, "parity:trn~gpu")
