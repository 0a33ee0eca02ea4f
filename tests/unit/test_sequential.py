"""The sequential design (`--until-decided`): boundary arithmetic against published values and an
independent simulation, error rates that hold at bake-off seed counts, the rounds end to end, and
the SageMaker step cache serving finished seeds when the seed list grows."""
import json
import math

import numpy as np
import pytest

from bakeoff.pipelines.advice.rounds import grow, next_size, with_seeds
from bakeoff.pipelines.errors import RunError
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.sagemaker.more_seeds import reuse_problems, round_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_runtime.verdict import group_sequential as seq
from bakeoff_runtime.verdict import stats
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"


# --- boundaries -------------------------------------------------------------------------------
@pytest.mark.parametrize("spending, fractions, published", [
    # Lan-DeMets O'Brien-Fleming (gsDesign's sfLDOF), 5 equally spaced looks, one-sided 0.025, as
    # commonly tabulated for this spending function (Jennison & Turnbull 2000, ch. 7): 4.877 ... 2.031.
    (seq.OBRIEN_FLEMING, [0.2, 0.4, 0.6, 0.8, 1.0], [4.877, 3.357, 2.680, 2.290, 2.031]),
    # Lan-DeMets Pocock, the same looks: 2.438, 2.427, 2.410, 2.397, 2.386.
    (seq.POCOCK, [0.2, 0.4, 0.6, 0.8, 1.0], [2.438, 2.427, 2.410, 2.397, 2.386]),
    (seq.OBRIEN_FLEMING, [0.5, 1.0], [2.963, 1.969]),
])
def test_boundaries_match_published_values(spending, fractions, published):
    assert seq.boundaries(fractions, 0.025, spending) == pytest.approx(published, abs=2e-3)


@pytest.mark.parametrize("spending", seq.SPENDING)
def test_boundaries_spend_what_the_function_says_by_simulation(spending):
    """An independent check: Brownian motion observed at the looks crosses each boundary for the
    first time with the spent increments (200k paths, 5 standard errors of slack)."""
    t = np.array([0.25, 0.5, 0.75, 1.0])
    z = np.array(seq.boundaries(t, 0.05, spending))
    rng = np.random.default_rng(12345)
    reps = 200_000
    s = np.cumsum(rng.normal(0, np.sqrt(np.diff(np.concatenate([[0], t]))), (reps, 4)), axis=1)
    crossed = s / np.sqrt(t) > z
    first = np.where(crossed.any(1), crossed.argmax(1), -1)
    for k in range(4):
        want = seq.spent(t[k], 0.05, spending) - (seq.spent(t[k - 1], 0.05, spending) if k else 0)
        got = (first == k).mean()
        assert abs(got - want) < 5 * math.sqrt(want * (1 - want) / reps) + 1e-4, (k, got, want)
    assert crossed.any(1).mean() == pytest.approx(0.05, abs=5 * math.sqrt(0.05 * 0.95 / reps))


def test_one_look_is_the_fixed_design():
    assert seq.nominal_levels([3], 3, 0.05) == pytest.approx([0.05])
    assert seq.critical_t(0.05, 3) == pytest.approx(stats.t_quantile(0.95, 2))


@pytest.mark.parametrize("spending", seq.SPENDING)
@pytest.mark.parametrize("first, cap", [(3, 12), (2, 8)])
def test_error_rates_hold_with_an_estimated_spread(spending, first, cap):
    """At a true difference equal to the margin neither a pass nor a fail may exceed alpha over all
    looks (a fresh simulation, not the calibration's draws; 4 standard errors of slack)."""
    reps = 60_000
    r = seq.simulate(first, cap, 1.0, 1.0, 1.0, 0.05, spending=spending, reps=reps, seed=99)
    slack = 4 * math.sqrt(0.05 * 0.95 / reps)
    assert r["pass"] <= 0.05 + slack and r["fail"] <= 0.05 + slack
    assert r["looks"] == seq.schedule(first, cap)


def test_a_looks_level_never_depends_on_looks_not_yet_taken():
    """Issue 23: the levels were calibrated on the looks so far, so the first look ran at an
    uncalibrated level that a later look then changed. Now each is fixed when it is taken."""
    full = seq.nominal_levels([3, 6, 9, 12], 12, 0.05)
    for k in range(1, 4):
        assert seq.nominal_levels([3, 6, 9, 12][:k], 12, 0.05) == full[:k]
    # And the t levels are not the z boundaries' tails read off with t quantiles (which overspend).
    z = seq.boundaries_z([3, 6, 9, 12], 12, 0.05)
    naive = [float(1 - stats._sp.ndtr(x)) for x in z]
    assert full[0] == pytest.approx(naive[0], rel=1e-9) and full[-1] < naive[-1]


def test_design_record_states_design_looks_and_spent_alpha():
    rec = seq.from_config({"looks": [3, 6], "max_seeds": 12, "spending": "pocock"}, 0.05)
    assert rec["design"].startswith("group-sequential") and rec["looks"] == [3, 6] and not rec["final"]
    assert rec["alpha_spent"][0] < rec["alpha_spent"][1] < 0.05
    assert rec["ci_level"] > 0.9  # wider than the fixed design's 90% interval
    assert seq.from_config(None, 0.05) is None
    with pytest.raises(ValueError):
        seq.nominal_levels([3, 13], 12, 0.05)


def test_evaluation_reads_the_wider_interval_of_the_look():
    """The same differences pass a fixed design's 90% interval and not the first look's."""
    from bakeoff_runtime.verdict.evaluation import _parity_check

    base = {0: 1.0, 1: 1.0, 2: 1.0}
    leg = {0: 1.02, 1: 1.05, 2: 1.07}
    parity = {"metric": "m", "margin": 0.1, "alpha": 0.05, "test": "equivalence", "direction": "minimize"}
    fixed = _parity_check("a", "b", {"a": leg, "b": base}, parity, 0.8)
    look = seq.from_config({"looks": [3], "max_seeds": 12}, 0.05)["nominal_alpha"][-1]
    first = _parity_check("a", "b", {"a": leg, "b": base}, parity, 0.8, look)
    assert fixed["outcome"] == "pass" and first["outcome"] == "inconclusive"
    assert first["ci_level"] > fixed["ci_level"]


def test_futility_only_stops_what_the_cap_would_likely_leave_undecided():
    final = seq.nominal_levels([3, 6, 12], 12, 0.05)[-1]
    # at the margin with a wide spread: undecidable; well inside or far beyond: not
    assert seq.futile(0.1, 0.05, 6, 12, final, 0.1)
    assert not seq.futile(0.0, 0.02, 6, 12, final, 0.1)
    assert not seq.futile(0.5, 0.02, 6, 12, final, 0.1)
    assert list(seq.futile(np.array([0.1, 0.0]), np.array([0.05, 0.02]), 6, 12, final, 0.1)) == [True, False]


def test_futility_lowers_seeds_at_the_margin_and_never_raises_error_rates():
    plain = seq.simulate(3, 12, 1.0, 1.0, 1.0, 0.05, reps=20_000, seed=5)
    early = seq.simulate(3, 12, 1.0, 1.0, 1.0, 0.05, reps=20_000, seed=5, futility=True)
    assert early["mean_seeds"] < plain["mean_seeds"]
    assert early["pass"] <= plain["pass"] and early["fail"] <= plain["fail"]  # same draws: only fewer decisions


def test_run_stops_on_futility_only_when_every_undecided_check_is_futile():
    from bakeoff.pipelines.advice.rounds import futile_checks

    check = {"name": "parity:a~b", "status": "inconclusive", "test": "paired", "diff": 0.1, "sd": 0.05,
             "n_pairs": 6, "margin": 0.1, "test_kind": "equivalence", "direction": "minimize"}
    ev = {"parity": {"alpha": 0.05}, "checks": [check]}
    assert futile_checks(ev, [3, 6], 12, "pocock") == ["parity:a~b"]
    hopeful = {**check, "name": "parity:c~b", "diff": 0.0, "sd": 0.02}
    assert futile_checks({**ev, "checks": [check, hopeful]}, [3, 6], 12, "pocock") == []
    assert futile_checks({**ev, "checks": [{**check, "test": "welch"}]}, [3, 6], 12, "pocock") == []


# --- the doomed-leg rule ----------------------------------------------------------------------
def test_doomed_rule():
    assert seq.doomed([2.0, float("nan")], [2.0, 1.9], 0.1)
    assert "10x" in seq.doomed([2.0, 30.0], [2.0, 1.9], 0.1)
    assert seq.doomed([2.0, 2.5, 2.4], [2.0, 1.9, 1.8], 0.1, noise_sd=0.05)
    assert seq.doomed([2.0, 2.5, 1.85], [2.0, 1.9, 1.8], 0.1, noise_sd=0.05) is None  # recovered
    assert seq.doomed([2.0, 2.5, 2.4], [2.0, 1.9, 1.8], 0.1) is None  # no noise estimate: margin rule off


# --- rounds --------------------------------------------------------------------------------------
def test_rounds_grow_by_at_least_a_first_round_and_stop_at_the_cap():
    assert grow([0, 1, 2], 5) == [0, 1, 2, 3, 4] and grow([5, 7], 4) == [5, 7, 0, 1]
    assert next_size(3, 3, 12) == 6 and next_size(6, 3, 12) == 9 and next_size(11, 3, 12) == 12
    spec = load_spec(QUICKSTART)
    assert with_seeds(spec, [0, 1, 2, 3]).seeds == 4 and with_seeds(spec, [0, 1, 5]).seeds == [0, 1, 5]


def test_finished_seeds_keep_their_cache_keys_when_seeds_grow():
    """Against the definition: every finished seed's training step keeps its name and each attribute
    SageMaker's step cache keys on, including with managed spot (CheckpointConfig)."""
    for overrides in ([], ["legs.0.managed_spot=true"], ["legs.0.precompile=true", "preflight.enabled=true"]):
        spec = load_spec(QUICKSTART, overrides)
        before = round_pipeline(spec, [0, 1, 2], [3], 12, "pocock").definition
        after = round_pipeline(spec, [0, 1, 2, 3, 4, 5], [3, 6], 12, "pocock").definition
        assert reuse_problems(before, after) == []
        names = {s["Name"] for s in after["Steps"]}
        assert {"Train-trn1-s5", "Train-p4d-s5"} <= names
        if "legs.0.precompile=true" in overrides:  # the leg's compile cache is warmed once, then served
            assert {"Precompile-trn1", "Preflight"} <= names
        evaluate = next(s for s in after["Steps"] if s["Name"] == "Evaluate")
        assert evaluate != next(s for s in before["Steps"] if s["Name"] == "Evaluate")  # the new look
    changed = round_pipeline(load_spec(QUICKSTART, ["model.dropout=0.1"]), [0, 1, 2, 3], [3, 4], 12,
                             "pocock").definition
    assert any("Environment changed" in p or "HyperParameters changed" in p for p in
               reuse_problems(before, changed))  # the check can fail


# The rounds of a local run (`--until-decided`) end to end: tests/engine/test_engine_runs.py.


def test_sagemaker_rounds_restart_the_grown_pipeline_until_decided():
    """Against a stand-in for SageMakerOps: each round upserts the same pipeline with more seeds (the
    finished seeds' steps unchanged) and stops at the first decided verdict."""
    from bakeoff.pipelines.sagemaker.more_seeds import ops_round, run_until_decided

    class Ops:
        def __init__(self):
            self.deployed, self.verdicts = [], ["inconclusive", "pass"]

        def deploy(self, compiled, progress=None):
            self.deployed.append(compiled)

        def start(self, name, parameters=None, **labels):
            return f"arn:{len(self.deployed)}"

        def wait(self, arn, **polling):
            return {"status": "Succeeded"}

        def fetch_evaluation(self, arn):
            return {"verdict": self.verdicts[len(self.deployed) - 1], "recommendation": {"seeds": 5}}, {}

    ops = Ops()
    spec = load_spec(QUICKSTART, ["seeds=3"])
    evaluation, rounds = run_until_decided(spec, run_round=ops_round(ops), max_seeds=12)
    assert evaluation["verdict"] == "pass" and [r["seeds"] for r in rounds] == [[0, 1, 2], [0, 1, 2, 3, 4, 5]]
    first, second = (c.definition for c in ops.deployed)
    assert {c.name for c in ops.deployed} == {ops.deployed[0].name}  # one pipeline, upserted
    assert reuse_problems(first, second) == []
    config = next(a for a in ops.deployed[1].assets if a.key.endswith("config.json") and b"sequential" in a.body)
    assert json.loads(config.body)["sequential"]["looks"] == [3, 6]


def test_a_sagemaker_round_whose_seed_was_lost_to_infrastructure_is_retried_not_decided_without_it():
    """A job fails its step only for an infrastructure failure (it exits non-zero, so the step cache never
    serves it): the round's execution is retried, which runs that seed again, before its evaluation is read."""
    from bakeoff.pipelines.sagemaker.more_seeds import ops_round

    class Ops:
        def __init__(self, failures):
            self.failures, self.calls = list(failures), []

        def deploy(self, compiled, progress=None):
            self.calls.append("deploy")

        def start(self, name, parameters=None, **labels):
            return "arn:exec"

        def wait(self, arn, **polling):
            self.calls.append(f"wait {arn}")
            return {"status": "Failed" if self.failures else "Succeeded", "failure_reason": "step failed"}

        def status(self, arn):
            return {"steps": [{"name": name, "status": "Failed", "failure_reason": "AlgorithmError: infrastructure"}
                              for name in self.failures.pop(0)]}

        def retry(self, arn, attempt):
            self.calls.append(f"retry {attempt}")
            return arn

        def fetch_evaluation(self, arn):
            return {"verdict": "pass"}, {}

    compiled = compile_pipeline(load_spec(QUICKSTART, ["seeds=3"]))
    said: list[str] = []
    ops = Ops([["Train-trn1-s2"]])
    assert ops_round(ops, progress=said.append)(compiled) == {"verdict": "pass"}
    assert ops.calls == ["deploy", "wait arn:exec", "retry 1", "wait arn:exec"]
    assert any("Train-trn1-s2" in line and "retry 1 of 2" in line for line in said)
    # Retries are bounded, and a failure that is not a lost seed (the Evaluate step) is never retried.
    with pytest.raises(RunError, match="ended Failed"):
        ops_round(Ops([["Train-trn1-s2"]] * 3))(compiled)
    ops = Ops([["Evaluate"]])
    with pytest.raises(RunError, match="ended Failed"):
        ops_round(ops)(compiled)
    assert "retry 1" not in ops.calls
