"""The decision's arithmetic (verdict/projection.py) against cases computed by hand."""
import math

import pytest

from bakeoff_runtime.verdict.projection import break_even, project, scaling_factor


def _leg(throughputs, *, instance_type="ml.trn1.32xlarge", count=1, price=10.0, cold=0.0, warm=None, unit="tokens",
         seeds=None):
    seeds = seeds or list(range(len(throughputs)))
    runs = [{"seed": s, "status": "completed", "throughput": t, "units_processed": 1000.0, "steps_completed": 10,
             "billable_s": None, "wall_time_s": None} for s, t in zip(seeds, throughputs, strict=True)]
    split = {"time_to_first_step_s_cold": cold, "time_to_first_step_s_warm": warm if warm is not None else cold}
    return {"instance_type": instance_type, "instance_count": count, "throughput_unit": f"{unit}/s", "runs": runs,
            "price": {"usd_per_hour": price, "source": "test catalog", "as_of": "2026-12-01", "note": None},
            "compile_cache": split, "time_to_first_step_s_mean": cold}


def _ev(legs, *, parity="passed", sweeps=None, emulated=False):
    base = list(legs)[-1]
    checks = [{"name": f"parity:{n}~{base}", "status": parity, "why": "the interval crosses the margin"}
              for n in legs if n != base]
    return {"legs": legs, "parity": {"baseline": base}, "checks": checks, "scaling": sweeps or {},
            "speed": {"emulated": emulated}, "cost_basis": "billed time"}


def _decision(**kw):
    d = {"production": {"units": 1.44e6, "unit": "tokens", "steps": None, "batch": None}, "runs_per_period": 4,
         "period": "quarter", "confidence": 0.9}
    d.update(kw)
    return d


def _sweep(name, efficiencies):
    return {name: [{"leg": name if c == 1 else f"{name}-x{c}", "instance_count": c, "efficiency": e}
                   for c, e in efficiencies.items()]}


def test_a_leg_that_scales_linearly():
    ev = _ev({"trn1": _leg([100.0] * 3), "p4d": _leg([100.0] * 3, instance_type="ml.p4d.24xlarge")},
             sweeps=_sweep("trn1", {1: 1.0, 2: 1.0, 4: 1.0}))
    p = project(ev, _decision(instances={"trn1": 4}))
    trn = p["legs"]["trn1"]
    assert trn["scaling"]["basis"] == "interpolated" and trn["scaling"]["factor"] == pytest.approx(4.0)
    assert trn["throughput"]["mean"] == pytest.approx(400.0)
    assert trn["hours_per_run"]["mean"] == pytest.approx(1.0)  # 1.44e6 tokens at 400/s: 3600 s
    assert trn["cost_per_run_usd"]["mean"] == pytest.approx(40.0)  # 4 instances x $10/h x 1 h
    assert trn["cost_per_period_usd"]["mean"] == pytest.approx(160.0)  # 4 runs a quarter
    assert p["legs"]["p4d"]["cost_per_run_usd"]["mean"] == pytest.approx(40.0)  # 1 instance x $10 x 4 h


def test_a_leg_at_70_percent_efficiency():
    ev = _ev({"trn1": _leg([100.0] * 3), "p4d": _leg([100.0] * 3)}, sweeps=_sweep("trn1", {1: 1.0, 4: 0.7}))
    trn = project(ev, _decision(instances={"trn1": 4}))["legs"]["trn1"]
    assert trn["scaling"]["factor"] == pytest.approx(2.8)  # 4 x 0.7
    assert trn["hours_per_run"]["mean"] == pytest.approx(1.44e6 / 280 / 3600)
    assert trn["cost_per_run_usd"]["mean"] == pytest.approx(4 * 10 * 1.44e6 / 280 / 3600)
    # Halfway in log2 between 1 and 4 instances: efficiency 0.85.
    assert scaling_factor(1, 2, ev["scaling"]["trn1"])["factor"] == pytest.approx(2 * 0.85)


def test_a_sweep_extrapolated_beyond_its_range_says_so_and_widens():
    sweep = _sweep("trn1", {1: 1.0, 2: 0.9})["trn1"]
    s = scaling_factor(1, 4, sweep)
    # The last segment's slope carried one doubling on: 0.9 - 0.1 = 0.8 at 4 instances.
    assert s["basis"] == "extrapolated" and s["efficiency"] == pytest.approx(0.8)
    assert s["factor"] == pytest.approx(3.2)
    assert (s["low"], s["high"]) == (pytest.approx(3.2 * 0.9), pytest.approx(3.2 * 1.1))
    assert "extrapolated beyond the sweep's measured 1-2 instances" in s["note"]
    none = scaling_factor(2, 8, None)  # no sweep: linear, an upper bound, 10% less allowed per doubling
    assert none["basis"] == "assumed linear" and none["factor"] == 4 and none["high"] == 4
    assert none["low"] == pytest.approx(4 * 0.8)
    ev = _ev({"trn1": _leg([100.0, 101.0, 99.0]), "p4d": _leg([50.0, 51.0, 49.0])},
             sweeps=_sweep("trn1", {1: 1.0, 2: 0.9}))
    wide = project(ev, _decision(instances={"trn1": 4}))["legs"]["trn1"]
    narrow = project(ev, _decision(instances={"trn1": 2}))["legs"]["trn1"]
    rel = lambda i: (i["high"] - i["low"]) / i["mean"]  # noqa: E731
    assert rel(wide["cost_per_run_usd"]) > rel(narrow["cost_per_run_usd"])


def test_spot_with_an_interruption_overhead():
    ev = _ev({"trn1": _leg([400.0] * 2), "p4d": _leg([400.0] * 2)})
    spot = {"option": "spot", "discount_pct": 60.0, "interruption_overhead_pct": 10.0}
    p = project(ev, _decision(purchase={"p4d": spot}))
    p4d = p["legs"]["p4d"]
    assert p4d["usd_per_instance_hour"] == pytest.approx(4.0)  # $10 on demand, 60% off
    assert p4d["hours_per_run"]["mean"] == pytest.approx(1.1)  # one hour of work, 10% lost to interruptions
    assert p4d["cost_per_run_usd"]["mean"] == pytest.approx(4.4)
    assert p["legs"]["trn1"]["cost_per_run_usd"]["mean"] == pytest.approx(10.0)


def test_a_cold_compile_is_paid_once_and_amortised_over_a_periods_runs():
    ev = _ev({"trn1": _leg([400.0] * 3, cold=3600.0, warm=0.0), "p4d": _leg([200.0] * 3)})
    p = project(ev, _decision(runs_per_period=4,
                              porting={"hours_spent": 0, "hours_expected": 1, "usd_per_hour": 25.0}))
    trn = p["legs"]["trn1"]
    assert trn["cost_per_run_usd"]["mean"] == pytest.approx(10.0)  # warm: 1 h
    assert trn["first_run_cost_usd"] == pytest.approx(20.0)  # plus the 1 h cold compile
    assert trn["amortised_cost_per_run_usd"] == pytest.approx(12.5)  # (20 + 3 x 10) / 4
    c = p["comparisons"][0]
    assert c["saving_per_run_usd"]["mean"] == pytest.approx(10.0)  # p4d: 2 h at $10
    # $25 of porting: the first run saves 20 - 20 = 0, each later run 10: 0, 10, 20, 30 after the fourth.
    assert c["break_even_runs"]["mean"] == 4
    assert c["break_even_weeks"]["mean"] == pytest.approx(4 * 13 / 4)  # 4 runs a quarter of 13 weeks
    assert c["saving_pct"]["mean"] == pytest.approx(50.0)


def test_a_break_even_that_never_comes_when_the_target_is_dearer():
    ev = _ev({"trn1": _leg([100.0, 102.0, 98.0]), "p4d": _leg([400.0, 404.0, 396.0])})
    p = project(ev, _decision(porting={"hours_spent": 80, "hours_expected": 40, "usd_per_hour": 150.0}))
    c = p["comparisons"][0]
    assert c["porting_usd"] == 18000.0
    assert c["saving_per_run_usd"]["mean"] < 0 and c["never_pays_back"] and c["break_even_runs"]["mean"] is None
    assert "never pays back" in p["sentence"]
    assert break_even(100.0, 10.0, -1.0) is None and break_even(100.0, 150.0, -1.0) == 1.0


def test_the_saving_interval_pairs_seeds_and_matches_a_hand_computed_t_interval():
    ev = _ev({"trn1": _leg([400.0, 380.0, 420.0]), "p4d": _leg([200.0, 210.0, 190.0])})
    c = project(ev, _decision())["comparisons"][0]
    assert c["pairing"] == "paired over 3 seeds"
    # Per seed, linearised: cost = 10 * 1.44e6 / (T * 3600); d cost / dT = -cost / T at the mean.
    def lin(ts):
        m = sum(ts) / len(ts)
        return [10 * 1.44e6 / (m * 3600) * (1 - (t - m) / m) for t in ts]
    d = [b - a for a, b in zip(lin([400.0, 380.0, 420.0]), lin([200.0, 210.0, 190.0]), strict=True)]
    mean = sum(d) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 2)
    half = 2.919986 * sd / math.sqrt(3)  # t(0.95, 2 df)
    assert c["saving_per_run_usd"]["mean"] == pytest.approx(mean)
    assert c["saving_per_run_usd"]["low"] == pytest.approx(mean - half, rel=1e-5)
    assert c["saving_per_run_usd"]["high"] == pytest.approx(mean + half, rel=1e-5)


def test_a_leg_without_parity_gets_no_saving_only_the_reason():
    ev = _ev({"trn1": _leg([400.0] * 2), "p4d": _leg([200.0] * 2)}, parity="inconclusive")
    p = project(ev, _decision())
    c = p["comparisons"][0]
    assert c["saving_per_run_usd"] is None and c["break_even_runs"] is None
    assert c["reason"].startswith("no saving: parity with p4d is inconclusive")
    assert p["legs"]["trn1"]["cost_per_run_usd"]["mean"] == pytest.approx(10.0)  # its cost is still shown


def test_an_emulated_run_is_labelled_and_never_named_a_winner():
    ev = _ev({"trn1": _leg([400.0] * 2), "p4d": _leg([200.0] * 2)}, emulated=True)
    p = project(ev, _decision())
    assert p["emulated"] and "emulated" in p["label"] and p["sentence"].startswith("Emulated speeds, not a decision")


def test_a_production_size_in_another_unit_is_refused_with_what_to_state():
    ev = _ev({"trn1": _leg([400.0] * 2), "p4d": _leg([200.0] * 2)})
    p = project(ev, _decision(production={"units": 5e5, "unit": "samples"}))
    assert "measured in tokens/s: state it in tokens" in p["legs"]["trn1"]["reason"]
    steps = project(ev, _decision(production={"units": None, "unit": None, "steps": 1000, "batch": None}))
    assert steps["legs"]["trn1"]["hours_per_run"]["mean"] == pytest.approx(1000 * 100 / 400 / 3600)


def test_a_saving_is_never_more_than_the_whole_of_the_baselines_cost():
    # 16 instances from 1, no sweep: both legs' costs widen a lot; the percent stays below 100.
    ev = _ev({"trn1": _leg([200.0, 190.0, 210.0]), "p4d": _leg([60.0, 70.0, 50.0])})
    c = project(ev, _decision(instances={"trn1": 16, "p4d": 16}))["comparisons"][0]
    legs = project(ev, _decision(instances={"trn1": 16, "p4d": 16}))["legs"]
    assert c["saving_pct"]["high"] < 100
    assert c["saving_pct"]["high"] == pytest.approx(
        min(100 * c["saving_per_run_usd"]["high"] / legs["p4d"]["cost_per_run_usd"]["mean"],
            100 * (1 - legs["trn1"]["cost_per_run_usd"]["low"] / legs["p4d"]["cost_per_run_usd"]["high"])))
