"""`bakeoff plan`: seeds, jobs and cost of a verdict from a previous run's spread, or the pilot."""
import argparse
import json

import pytest
from pydantic import ValidationError

from bakeoff.pipelines.advice.budget import BudgetPlan, plan_budget, render
from bakeoff.pipelines.cli.plan import register
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def _run_dir(tmp_path, sd=0.0255, pairs=3, billable=3600.0):
    """A finished run as `bakeoff run` leaves it (only what the plan reads)."""
    spec = load_spec(QUICKSTART)
    legs = {leg.name: {"instance_count": leg.instance_count, "emulated": False,
                       "runs": [{"seed": s, "billable_s": billable, "cost_usd": 10.0} for s in range(pairs)]}
            for leg in spec.legs}
    other = next(leg.name for leg in spec.legs if leg.name != spec.baseline)
    ev = {"verdict": "inconclusive", "legs": legs,
          "checks": [{"name": f"parity:{other}~{spec.baseline}", "test": "paired", "sd": sd, "n_pairs": pairs}]}
    (tmp_path / "run" / "evaluation").mkdir(parents=True)
    (tmp_path / "run" / "evaluation" / "evaluation.json").write_text(json.dumps(ev))
    return spec, tmp_path / "run"


def test_plan_from_a_run_sizes_both_designs(tmp_path):
    spec, run = _run_dir(tmp_path)
    plan = plan_budget(spec, run)
    assert isinstance(plan, BudgetPlan) and plan.sigma == pytest.approx(0.0255) and plan.pilot is None
    d = {x.name: x for x in plan.designs}
    n80, n95 = d["fixed_80"].spend.seeds_per_leg, d["fixed_95"].spend.seeds_per_leg
    assert 2 <= n80 <= n95
    # one hour a job on every leg: hours = seeds x legs x instances
    count = sum(leg.instance_count for leg in spec.legs)
    assert d["fixed_80"].spend.instance_hours == pytest.approx(n80 * count)
    assert d["fixed_80"].spend.jobs == n80 * len(spec.legs)
    prices = sum(leg.usd_per_hour * leg.instance_count for leg in plan.legs)
    assert d["fixed_80"].spend.cost_usd == pytest.approx(n80 * prices)
    assert d["sequential_if_2x_margin"].spend.seeds_per_leg <= plan.max_seeds
    assert plan.spent.jobs == 3 * len(spec.legs) and plan.spent.cost_usd == pytest.approx(30.0 * len(spec.legs))
    assert json.loads(json.dumps(plan.model_dump(mode="json")))["bakeoff"] == spec.name
    with pytest.raises(ValidationError):  # frozen
        plan.sigma = 1.0


def test_a_wider_spread_needs_more_seeds(tmp_path):
    spec, run = _run_dir(tmp_path, sd=0.06)
    wide = {x.name: x for x in plan_budget(spec, run).designs}["fixed_80"].spend.seeds_per_leg
    spec, run = _run_dir(tmp_path / "b", sd=0.02)
    narrow = {x.name: x for x in plan_budget(spec, run).designs}["fixed_80"].spend.seeds_per_leg
    assert wide > narrow


def test_without_data_it_says_what_pilot_it_would_run():
    spec = load_spec(QUICKSTART)
    plan = plan_budget(spec)
    assert plan.sigma is None and plan.designs == [] and plan.pilot is not None
    assert plan.pilot.spend.seeds_per_leg == max(3, len(spec.seed_list))
    assert "upper bound" in plan.legs[0].hours_basis
    assert all(leg.hours_upper_bound for leg in plan.legs)
    pilot = next(line for line in render(plan) if line.startswith("pilot:"))
    n = plan.pilot.spend.seeds_per_leg
    assert f": {n:.0f} seeds/leg, {2 * n:.0f} jobs, at most " in pilot and ", at most $" in pilot, pilot
    assert render(plan)[-1].startswith("note: hours and costs marked 'at most' take every job to its runtime cap")


def _cli(*argv):
    ap = argparse.ArgumentParser()
    register(ap.add_subparsers())
    args = ap.parse_args(["plan", *map(str, argv)])
    return args.func(args)


def test_bakeoff_plan_from_a_run_prints_seeds_jobs_and_cost(tmp_path, capsys):
    _, run = _run_dir(tmp_path)
    assert _cli(QUICKSTART, "--from", run) == 0
    out = capsys.readouterr().out
    assert "fixed_80:" in out and "seeds/leg" in out and "jobs" in out and "$" in out
    assert "the previous run's verdict cost" in out and "at most" not in out  # measured hours: no ceiling
    assert _cli(QUICKSTART, "--from", run, "--json") == 0
    body = json.loads(capsys.readouterr().out)
    assert body["designs"][0]["spend"]["cost_usd"] > 0


def test_bakeoff_plan_from_a_missing_run_is_bad_input(tmp_path):
    from bakeoff.pipelines.errors import SpecError

    with pytest.raises(SpecError):
        _cli(QUICKSTART, "--from", tmp_path / "nope")
