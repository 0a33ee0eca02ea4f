"""The report: known numbers in, the same numbers out; plots present; statistics
against independent computations; prices with their source and date."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as st

from bakeoff_runtime.evaluation import evaluate
from bakeoff_runtime.job_outputs import load_jobs
from bakeoff_runtime.report import nice_ticks, render_html, render_markdown, usd, write_reports
from conftest import ENTRYPOINTS, ROOT

CONFIG = {
    "bakeoff": "fixed", "spec_hash": "abc123",
    "parity": {"metric": "val_loss", "direction": "minimize", "margin": 0.05, "margin_type": "absolute",
               "alpha": 0.05, "baseline": "gpu", "target": 2.5},
    "cost_basis": "SageMaker BillableTimeInSeconds x instance count x on-demand price per hour",
    "legs": {
        "trn": {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "backend": "neuron", "precision": "bf16",
                "devices": 32, "seeds": [0, 1, 2], "image": "img-trn",
                "price": {"usd_per_hour": 36.0, "source": "test", "as_of": "2026-12-01"}},
        "gpu": {"instance_type": "ml.p4d.24xlarge", "instance_count": 1, "backend": "cuda", "precision": "bf16",
                "devices": 8, "seeds": [0, 1, 2], "image": "img-gpu",
                "price": {"usd_per_hour": 18.0, "source": "test", "as_of": "2026-12-01"}},
    },
}
VALUES = {"trn": [2.40, 2.41, 2.42], "gpu": [2.41, 2.40, 2.43]}
DIFFS = [b - a for a, b in zip(VALUES["gpu"], VALUES["trn"], strict=False)]


def _write_job(root, leg, seed, final):
    d = root / f"{leg}-s{seed}" / "opt" / "ml" / "model"
    d.mkdir(parents=True)
    records = [{"kind": "train", "step": s, "time_s": 10 + s, "train_loss": 5.0 - s / 40} for s in range(0, 100, 10)]
    # validation reaches 2.5 at step 60 (time 70 s), ends at `final`
    records += [{"kind": "eval", "step": 30, "time_s": 40.0, "val_loss": 3.0},
                {"kind": "eval", "step": 60, "time_s": 70.0, "val_loss": 2.5},
                {"kind": "eval", "step": 100, "time_s": 110.0, "val_loss": final}]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (d / "summary.json").write_text(json.dumps({
        "leg": leg, "seed": seed, "status": "completed", "metrics": {"val_loss": final},
        "throughput": {"unit": "tokens", "tokens_per_sec": 50_000.0 + 1000 * seed, "units_processed": 4e6},
        "time_to_first_step_s": 30.0 + seed, "first_step_s": 20.0,
        "compile": {"compile_time_s": 20.0, "cache": {"state": "cold" if seed == 0 else "warm", "hits": seed}},
        "training_time_s": 100.0, "wall_time_s": 120.0, "peak_host_memory_bytes": 2 ** 30,
        "environment": {"torch": "2.9.0", "backend_device": leg}}))
    (root / f"{leg}-s{seed}" / "job.json").write_text(json.dumps({"billable_s": 3600.0}))


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    root = tmp_path_factory.mktemp("jobs")
    for leg, values in VALUES.items():
        for seed, v in enumerate(values):
            _write_job(root, leg, seed, v)
    return evaluate(CONFIG, load_jobs(root))


def _table(md: str) -> dict[str, list[str]]:
    rows = {}
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| |"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_known_numbers_come_out_in_the_table(evaluation):
    rows = _table(render_markdown(evaluation))  # columns: trn, gpu
    assert rows["val_loss mean"] == ["2.41", "2.413"]
    assert rows["instance"] == ["1 x ml.trn1.32xlarge", "1 x ml.p4d.24xlarge"]
    assert rows["steady-state throughput"] == ["51,000 tokens/s (50,000 to 52,000)"] * 2  # mean (range)
    assert rows["time to first step cold (runs)"] == ["30.0 s (1)", "30.0 s (1)"]
    assert rows["time to first step warm (runs)"] == ["31.5 s (2)", "31.5 s (2)"]
    assert rows["billable time"] == ["3600 s", "3600 s"]
    assert rows["cost per run"] == ["$36.00", "$18.00"]  # 1 h x price
    assert rows["cost per million tokens"] == ["$9.00", "$4.50"]  # 4M tokens
    assert rows["steps to target"] == ["60", "60"]
    # billed overhead outside the 120 s of training (3480 s) plus the 70 s to the target, x price
    assert rows["cost to reach target"] == ["$35.50", "$17.75"]
    assert rows["peak host memory"] == ["1 GiB", "1 GiB"]
    assert rows["parity"] == ["passed", "baseline"]
    seeds = [line for line in render_markdown(evaluation).splitlines() if line.startswith("| trn | 1 |")]
    assert seeds and "| 2.41 |" in seeds[0]


def test_verdict_first_with_reasons(evaluation):
    md = render_markdown(evaluation)
    first = md.splitlines()[0]
    assert first == "# Bake-off fixed: PASS"
    sentence = md.splitlines()[2]
    mean = float(np.mean(DIFFS))
    assert sentence.startswith(f"Parity holds: trn vs gpu: equivalent: val_loss difference {mean:+.4g} (trn - gpu; "
                               "paired t on 3 seeds)")
    assert "inside +/-0.05" in sentence and "Cheapest per run: gpu" in sentence


def test_an_emulated_run_names_no_cheapest_leg(evaluation):
    ev = json.loads(json.dumps(evaluation))
    ev["speed"]["emulated"] = True
    md = render_markdown(ev)
    assert "Cheapest" not in md and "no cheapest leg is named from an emulation" in md.splitlines()[2]
    rows = _table(md)
    assert "cost per run (emulated)" in rows and "steady-state throughput (emulated)" in rows
    assert "emulated: not indicative of the target hardware" in render_html(ev)


def test_the_decision_figure_comes_first(evaluation):
    page = render_html(evaluation)
    figures = re.findall(r"<figure>.*?</figure>", page, re.S)
    decision = figures[0]
    assert "The decision" in decision and page.index(decision) < page.index("<h2>Legs</h2>")
    assert decision.count("<circle") == 3  # one dot per seed's paired difference
    assert 'fill="#2da44e"' in decision  # the shaded margin band
    for seed, d in enumerate(DIFFS):
        assert f"seed {seed}: {d:+.4g}" in decision


def test_round_ticks_and_one_money_format():
    assert nice_ticks(3.95, 4.73) == [3.8, 4.0, 4.2, 4.4, 4.6, 4.8]
    assert nice_ticks(0, 149, 4) == [0, 50, 100, 150]
    assert [usd(v) for v in (1.6712, 0.7699, 0.0042, 0.00123, None)] == ["$1.67", "$0.77", "$0.0042", "$0.00123", "-"]


def test_html_is_self_contained_with_non_empty_plots(evaluation, tmp_path):
    page = render_html(evaluation)
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    figures = re.findall(r"<figure>.*?</figure>", page, re.S)
    assert len(figures) == 6
    figures = figures[1:]  # after the decision figure
    captions = [re.search(r"<figcaption>(.*?)</figcaption>", f).group(1) for f in figures]
    assert captions[0].startswith("Training loss") and captions[1].startswith("Validation val_loss")
    for fig in figures[:2]:
        assert fig.count("<polyline") == 6  # 3 seeds x 2 legs, each a real line
        assert fig.count("<polygon") == 2  # the seeds' range, per leg
    for fig in figures[2:]:
        assert fig.count("<rect") >= 2
    assert "img-trn" in page and "torch" in page  # each leg's environment
    paths = write_reports(evaluation, tmp_path)
    assert [p.name for p in paths] == ["report.html", "report.md"] and all(p.stat().st_size > 1000 for p in paths)


def test_too_few_seeds_says_what_cannot_be_concluded(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    for leg in cfg["legs"].values():
        leg["seeds"] = [0]
    for leg in VALUES:
        _write_job(tmp_path, leg, 0, 2.41)
    ev = evaluate(cfg, load_jobs(tmp_path))
    md = render_markdown(ev)
    assert ev["verdict"] == "inconclusive"
    assert "nothing to compare" in md and "run at least 3 seeds per leg" in md.splitlines()[2]


def test_statistics_in_the_report_match_scipy(evaluation):
    check = next(c for c in evaluation["checks"] if c["name"] == "parity:trn~gpu")
    res = st.ttest_rel(VALUES["trn"], VALUES["gpu"])
    ci = res.confidence_interval(0.90)
    assert check["ci"] == pytest.approx([ci.low, ci.high])
    assert check["diff"] / (check["sd"] / np.sqrt(3)) == pytest.approx(res.statistic)
    assert evaluation["legs"]["gpu"]["metric"]["cv"] == pytest.approx(st.variation(VALUES["gpu"], ddof=1))
    assert "bootstrap" not in render_markdown(evaluation)


def test_render_script_regenerates_from_evaluation_json(evaluation, tmp_path):
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(evaluation))
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "render_report.py"), "--evaluation", str(path),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "report.html").read_text() == render_html(evaluation)


def test_every_bundled_price_names_its_source_and_date():
    from estimators.prices import BUNDLED

    assert BUNDLED
    for name, row in BUNDLED.items():
        assert row.price.usd_per_hour > 0, name
        assert row.price.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", row.price.as_of), name
        assert row.basis in ("sagemaker-training", "ec2-on-demand")
        if row.basis == "ec2-on-demand":
            assert "lower bound" in row.price.note


def test_price_list_parsing_from_a_recorded_response():
    from pipelines.prices import parse_products

    pages = json.loads((ROOT / "tests" / "assets" / "prices" / "get_products.json").read_text())
    prices = parse_products(pages["Training"]["PriceList"] + pages["Training-2"]["PriceList"]
                            + pages["SpotTraining"]["PriceList"])
    assert prices == {"ml.m5.xlarge": {"on_demand": 0.23}, "ml.p4d.24xlarge": {"on_demand": 37.688, "spot": 11.3064},
                      "ml.trn1.32xlarge": {"on_demand": 24.725}}


def test_prices_refresh_caches_and_costs_local_runs(tmp_path, monkeypatch):
    import boto3
    from botocore.stub import Stubber

    from pipelines import prices

    monkeypatch.setenv("BAKEOFF_CACHE_DIR", str(tmp_path))
    pages = json.loads((ROOT / "tests" / "assets" / "prices" / "get_products.json").read_text())
    session = boto3.session.Session(aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1")
    client = session.client("pricing", region_name="us-east-1")
    base = {"ServiceCode": "AmazonSageMaker", "MaxResults": 100, "FormatVersion": "aws_v1"}
    def flt(kind):
        return [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
                            {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": kind}]
    with Stubber(client) as stub:
        stub.add_response("get_products", pages["Training"], {**base, "Filters": flt("Training")})
        stub.add_response("get_products", pages["Training-2"],
                          {**base, "Filters": flt("Training"), "NextToken": "page2"})
        stub.add_response("get_products", pages["SpotTraining"], {**base, "Filters": flt("SpotTraining")})
        monkeypatch.setattr(session, "client", lambda *a, **k: client)
        body = prices.refresh("us-east-1", session=session)
    assert body["prices"]["ml.p4d.24xlarge"] == {"on_demand": 37.688, "spot": 11.3064}
    cached = prices.cached("us-east-1")
    assert cached["ml.trn1.32xlarge"]["usd_per_hour"] == 24.725 and "Price List" in cached["ml.trn1.32xlarge"]["source"]
    from estimators.prices import price_for

    p = price_for("ml.p4d.24xlarge", None, cached)
    assert p.usd_per_hour == 37.688 and "spot 11.31" in p.note
    assert price_for("ml.p4d.24xlarge", 9.0, cached).source.startswith("spec override")
