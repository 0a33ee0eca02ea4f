"""The report's "What this verdict cost": jobs, instance-hours and money spent, the design that stopped
it, and the fixed design's cost at the same spread."""
import pytest
from evaluation_inputs import CONFIG, _jobs

from bakeoff_runtime.report import document as report
from bakeoff_runtime.report import spend as report_spend
from bakeoff_runtime.verdict import stats
from bakeoff_runtime.verdict.evaluation import evaluate


def test_the_spend_of_a_fixed_run_and_its_counterfactual(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    spent = report_spend._spent(ev)
    # 6 jobs of 100 billed seconds; trn runs on 1 instance, gpu on 2: (3 x 1 + 3 x 2) x 100 s = 0.25 h.
    assert spent["jobs"] == 6 and spent["instance_hours"] == pytest.approx(0.25)
    assert spent["cost_usd"] == pytest.approx(6.0)  # $1 a job on either leg
    fixed = report_spend._fixed(ev)
    sd = next(c["sd"] for c in ev["checks"] if c.get("test") == "paired")
    assert fixed["sigma"] == pytest.approx(sd)
    assert fixed["seeds"] == stats.seeds_for_power(sd, 0.05, 0.05, 0.8)
    assert fixed["cost_usd"] == pytest.approx(fixed["seeds"] * 2.0)
    page = report.render_html(ev)
    assert "What this verdict cost" in page and "This verdict took 6 jobs, 0.25 instance-hours, $6.00" in page
    assert "Decided by a fixed design" in page
    assert "## What this verdict cost" in report.render_markdown(ev)


def test_a_sequential_verdict_names_its_design(tmp_path):
    config = {**CONFIG, "sequential": {"looks": [3], "max_seeds": 12, "spending": "pocock"}}
    ev = evaluate(config, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    assert ev["sequential"]["look"] == 1
    lines = report_spend._lines(ev)
    assert any("group-sequential" in line and "pocock" in line and "at most 12 seeds" in line for line in lines)
