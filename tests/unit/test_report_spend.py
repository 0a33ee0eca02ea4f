"""The report's "What this verdict cost": jobs, instance-hours and money spent, the design that stopped
it, and the fixed design's cost at the same spread."""
import json
import subprocess
import sys

import pytest
from evaluation_inputs import CONFIG, _jobs

from bakeoff_runtime.contract.documents import read_evaluation
from bakeoff_runtime.report import document as report
from bakeoff_runtime.report import spend as report_spend
from bakeoff_runtime.verdict import stats
from bakeoff_runtime.verdict.evaluation import evaluate
from conftest import ENTRYPOINTS


def test_the_spend_of_a_fixed_run_and_its_counterfactual(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    spent = report_spend._spent(ev)
    # 6 jobs of 100 billed seconds; trn runs on 1 instance, gpu on 2: (3 x 1 + 3 x 2) x 100 s = 0.25 h.
    assert spent["jobs"] == 6 and spent["instance_hours"] == pytest.approx(0.25)
    assert spent["cost_usd"] == pytest.approx(6.0)  # $1 a job on either leg
    fixed = report_spend._fixed(ev)
    sd = next(c["sd"] for c in ev["checks"] if c.get("test") == "paired")
    assert fixed["sigma"] == pytest.approx(sd)
    # Planned as the recommendation plans: on the 80% upper confidence limit of a spread from 3 pairs.
    assert fixed["seeds"] == stats.seeds_for_power(sd, 0.05, 0.05, 0.8, sigma_df=2) and fixed["sigma_df"] == 2
    assert fixed["planned_sigma"] == pytest.approx(stats.spread_upper_limit(sd, 2))
    assert fixed["cost_usd"] == pytest.approx(fixed["seeds"] * 2.0)
    assert fixed == ev["fixed_design"] and fixed["power"] == 0.8  # decided with the verdict, read by the report
    page = report.render_html(ev)
    assert "What this verdict cost" in page and "This verdict took 6 jobs, 0.25 instance-hours, $6.00" in page
    assert "Decided by stage 1 of a two-stage design (stage 1 reads the 93.9% interval" in page
    assert "## What this verdict cost" in report.render_markdown(ev)


def test_a_sequential_verdict_names_its_design(tmp_path):
    config = {**CONFIG, "sequential": {"looks": [3], "max_seeds": 12, "spending": "pocock"}}
    ev = evaluate(config, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    assert ev["sequential"]["look"] == 1
    lines = report_spend._lines(ev)
    assert any("group-sequential" in line and "pocock" in line and "at most 12 seeds" in line for line in lines)


def test_an_evaluation_2_without_the_fixed_design_reads_the_same(tmp_path):
    """A document written before the evaluation recorded fixed_design: the report sizes it itself."""
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    older = {k: v for k, v in ev.items() if k != "fixed_design"} | {"schema": "bakeoff.evaluation/2"}
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(older))
    read = read_evaluation(path)
    assert "fixed_design" not in read
    assert report_spend._fixed(read) == ev["fixed_design"]
    assert report_spend._lines(read) == report_spend._lines(ev)


def test_the_report_renders_without_numpy_or_scipy(tmp_path):
    """Deciding needs the statistics; wording a decision does not (render_report.py, `bakeoff report`)."""
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32]))
    assert ev["fixed_design"]["seeds"]  # the section that used to size it at render time has it to show
    (tmp_path / "evaluation.json").write_text(json.dumps(ev))
    code = ("import sys; from pathlib import Path; "
            "from bakeoff_runtime.contract.documents import read_evaluation; "
            "from bakeoff_runtime.report.document import write_reports; "
            "write_reports(read_evaluation(Path('evaluation.json')), Path('out')); "
            "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ENTRYPOINTS), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert "A fixed design sized for 80% power" in (tmp_path / "out" / "report.md").read_text()
