"""The report: known numbers in, the same numbers out; plots present; statistics
against independent computations; prices with their source and date."""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from report_inputs import CONFIG, VALUES, _write_job
from scipy import stats as st

from bakeoff_runtime.report import charts, palette
from bakeoff_runtime.report import document as report
from bakeoff_runtime.report.document import leg_colours, nice_ticks, render_html, render_markdown, usd, write_reports
from bakeoff_runtime.report.formatting import log_ticks, money_tick, tick_label
from bakeoff_runtime.verdict import two_stage
from bakeoff_runtime.verdict.evaluation import evaluate
from bakeoff_runtime.verdict.job_outputs import load_jobs
from conftest import ENTRYPOINTS, ROOT

DIFFS = [b - a for a, b in zip(VALUES["gpu"], VALUES["trn"], strict=False)]


def _figures(page: str) -> list[str]:
    return re.findall(r"<figure>.*?</figure>", page, re.S)


def _svg(figure: str) -> ET.Element:
    return ET.fromstring(figure[figure.index("<svg"):figure.index("</svg>") + 6])


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


def test_a_peak_host_memory_of_forked_jobs_says_so_beside_it(evaluation):
    # A job forked from its leg's warm interpreter counts only the pages it touched: the figure is not a cold
    # start's, and the table says which legs' figures are forked ones.
    assert "warm fork" not in render_markdown(evaluation)  # these jobs started cold
    forked = json.loads(json.dumps(evaluation))
    for run in forked["legs"]["trn"]["runs"]:
        run["environment"] = {**(run.get("environment") or {}), "worker_start": "forked"}
    md = render_markdown(forked)
    assert _table(md)["peak host memory"] == ["1 GiB (warm fork)", "1 GiB"]
    assert "only the pages the job touched" in md and "started cold (as on SageMaker) peaks higher" in md
    assert "(warm fork): the job was forked" in render_html(forked)


def test_verdict_first_with_reasons(evaluation):
    md = render_markdown(evaluation)
    first = md.splitlines()[0]
    assert first == "# Bake-off fixed: PASS"
    sentence = md.splitlines()[2]
    mean = float(np.mean(DIFFS))
    assert sentence.startswith(f"Parity holds: trn vs gpu: equivalent: val_loss difference {mean:+.4g} (trn - gpu; "
                               "paired t on 3 seeds, stage 1 of 2)")
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
    figures = _figures(page)
    decision = figures[0]
    assert "The decision" in decision and page.index(decision) < page.index("<h2>Legs</h2>")
    assert decision.count("<circle") == 3  # one dot per seed's paired difference
    assert 'fill="#2da44e"' in decision  # the shaded margin band
    for seed, d in enumerate(DIFFS):
        assert f"seed {seed}: {d:+.4g}" in decision


def test_round_ticks_and_one_money_format():
    assert nice_ticks(3.95, 4.73) == [3.8, 4.0, 4.2, 4.4, 4.6, 4.8]
    assert nice_ticks(0, 149, 4) == [0, 50, 100, 150]
    assert nice_ticks(50, 60, integer=True) == [50, 55, 60]  # steps: never 52.5 written as "52"
    assert [tick_label(v, 0.05) for v in nice_ticks(-0.15, 0.15, 7)][2:5] == ["-0.05", "0.00", "0.05"]  # no "-0.00"
    assert log_ticks(0.08, 120) == [0.01, 0.1, 1, 10, 100, 1000] and log_ticks(0.5, 7) == [0.5, 1, 2, 5, 10]
    assert [usd(v) for v in (1.6712, 0.7699, 0.0042, 0.00123, None, 1234.5)] == \
        ["$1.67", "$0.77", "$0.0042", "$0.00123", "-", "$1,234.50"]
    assert [money_tick(v, 0.05) for v in (0, 0.05, 0.1)] == ["$0.00", "$0.05", "$0.10"]
    assert money_tick(0.004, 0.002) == "$0.004"  # a step finer than a cent keeps its digits


def test_html_is_self_contained_with_non_empty_plots(evaluation, tmp_path):
    page = render_html(evaluation)
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    figures = _figures(page)
    assert len(figures) == 6
    figures = figures[1:]  # after the decision figure
    captions = [re.search(r"<figcaption>(.*?)</figcaption>", f).group(1) for f in figures]
    assert captions[0].startswith("Training loss") and captions[1].startswith("Validation val_loss")
    for fig in figures[:2]:
        assert fig.count("<polyline") == 8  # 3 seeds x 2 legs, each a real line, and each leg's mean
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
    # Stage 1 of the two-stage design reads the 1 - 2 alpha1 interval, alpha1 its Pocock level.
    ci = res.confidence_interval(1 - 2 * two_stage.stage1_level(0.05))
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
    from bakeoff.estimators.prices import BUNDLED

    assert BUNDLED
    for name, row in BUNDLED.items():
        assert row.price.usd_per_hour > 0, name
        assert row.price.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", row.price.as_of), name
        assert row.basis in ("sagemaker-training", "ec2-on-demand")
        if row.basis == "ec2-on-demand":
            assert "lower bound" in row.price.note


def test_price_list_parsing_from_a_recorded_response():
    from bakeoff.pipelines.advice.price_list import parse_products

    pages = json.loads((ROOT / "tests" / "assets" / "prices" / "get_products.json").read_text())
    prices = parse_products(pages["Training"]["PriceList"] + pages["Training-2"]["PriceList"]
                            + pages["SpotTraining"]["PriceList"])
    assert prices == {"ml.m5.xlarge": {"on_demand": 0.23}, "ml.p4d.24xlarge": {"on_demand": 37.688, "spot": 11.3064},
                      "ml.trn1.32xlarge": {"on_demand": 24.725}}


def test_prices_refresh_caches_and_costs_local_runs(tmp_path, monkeypatch):
    import boto3
    from botocore.stub import Stubber

    from bakeoff.pipelines.advice import price_list as prices

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
    from bakeoff.estimators.prices import price_for

    p = price_for("ml.p4d.24xlarge", None, cached)
    assert p.usd_per_hour == 37.688 and "spot 11.31" in p.note
    assert price_for("ml.p4d.24xlarge", 9.0, cached).source.startswith("spec override")


# --- reads at a glance: ticks, scales, colours, spread, empty rows, money, layout --------------------------
SVG = "{http://www.w3.org/2000/svg}"


def _value(label: str) -> float:
    return float(label.replace("$", "").replace(",", ""))


def _is_round(step: float) -> bool:
    mantissa = step / 10 ** np.floor(np.log10(step))
    return any(np.isclose(mantissa, m) for m in (1, 2, 2.5, 5, 10))


def _axis_ticks(svg: ET.Element) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in svg.iter(f"{SVG}text"):
        if t.get("data-axis"):
            out.setdefault(t.get("data-axis"), []).append(t.text)
    return out


def _with_curves(evaluation, curve):
    """A copy of the evaluation whose every run has train_loss = curve(leg index, seed)."""
    ev = json.loads(json.dumps(evaluation))
    for i, f in enumerate(ev["legs"].values()):
        for r in f["runs"]:
            r["curves"]["train_loss"] = curve(i, r["seed"])
    return ev


def test_every_axis_has_round_ticks(evaluation):
    ev = json.loads(json.dumps(evaluation))
    ev["legs"]["trn"]["throughput_mean"] = 149_321.7  # awkward values make awkward ticks if the axis copies them
    ev["legs"]["gpu"]["cost_per_run_usd_mean"] = 0.7699
    checked = 0
    for fig in _figures(render_html(ev)):
        for axis, labels in _axis_ticks(_svg(fig)).items():
            values = [_value(v) for v in labels]
            steps = np.diff(values)
            assert len(values) >= 2 and np.allclose(steps, steps[0]), (axis, labels)  # evenly spaced
            assert _is_round(steps[0]), (axis, labels)
            assert all(np.isclose(v / steps[0], round(v / steps[0])) for v in values), labels  # on the step
            assert len({len(v.split(".")[-1]) if "." in v else 0 for v in labels}) == 1, labels  # same decimals
            checked += 1
    assert checked == 8  # decision (x), two curves (x, y), three bar charts (y)


def test_a_loss_that_falls_by_orders_of_magnitude_is_drawn_on_a_log_axis(evaluation):
    ev = _with_curves(evaluation, lambda i, seed: [[s, 100 * 0.9 ** s * (1 + 0.01 * seed)] for s in range(0, 100, 5)])
    fig = next(f for f in _figures(render_html(ev)) if "Training loss" in f)
    svg = _svg(fig)
    labels = [t.text for t in svg.iter(f"{SVG}text")]
    assert "train loss (log scale)" in labels
    ticks = [_value(v) for v in _axis_ticks(svg)["y"]]
    assert all(any(np.isclose(v / 10 ** np.floor(np.log10(v)), m) for m in (1, 2, 5)) for v in ticks), ticks
    assert ticks[0] <= 100 * 0.9 ** 95 and ticks[-1] >= 102  # the whole curve is on the axis


def test_a_high_first_loss_does_not_flatten_the_curve_and_the_axis_says_so(evaluation):
    # 5.5 at step 0, then a slow drift from 3.2 to 2.9: the legs' difference lives in the last 0.3
    ev = _with_curves(evaluation, lambda i, seed: [[0, 5.5]] + [[s, 3.2 - s / 300 + 0.01 * i]
                                                               for s in range(10, 100, 10)])
    fig = next(f for f in _figures(render_html(ev)) if "Training loss" in f)
    svg = _svg(fig)
    assert "train loss (trimmed)" in [t.text for t in svg.iter(f"{SVG}text")]
    assert "earlier values run off the chart" in fig
    ticks = [_value(v) for v in _axis_ticks(svg)["y"]]
    assert ticks[-1] < 4 and ticks[0] > 2.5  # fitted to the later steps, not to 5.5
    # and an ordinary curve keeps its plain label
    plain = _svg(next(f for f in _figures(render_html(evaluation)) if "Training loss" in f))
    assert "train loss" in [t.text for t in plain.iter(f"{SVG}text")]


def _colour(el: ET.Element) -> str | None:
    for attr in ("fill", "stroke"):
        v = el.get(attr) or ""
        if v.startswith("#"):
            return v.lower()
    return next((c for c in map(_colour, el) if c), None)


def test_each_leg_has_one_colour_in_every_figure_and_table(evaluation):
    page = render_html(evaluation)
    expected = leg_colours(evaluation)
    assert len(set(expected.values())) == len(expected)  # distinct
    assert not set(expected.values()) & {"#1a7f37", "#cf222e", "#2da44e"}  # never an outcome's green or red
    for fig in _figures(page):
        svg = _svg(fig)
        seen: dict[str, set] = {}
        for el in svg.iter():
            if el.get("data-leg"):
                seen.setdefault(el.get("data-leg"), set()).add(_colour(el))
        legs = set(expected) - ({"gpu"} if "The decision" in fig else set())  # the baseline has no row there
        assert set(seen) == legs, fig[:80]
        assert all(seen[leg] == {expected[leg]} for leg in legs), (fig[:80], seen)
    swatches = re.findall(r'data-leg="(\w+)" style="background:(#[0-9a-f]+)"', page)
    assert {leg for leg, _ in swatches} == set(expected) and all(expected[leg] == c for leg, c in swatches)
    assert report.PALETTE[: len(expected)] == list(expected.values())  # what MLflow's colours are read from


def test_bands_are_translucent_with_an_outline_and_drawn_under_every_line(evaluation):
    fig = next(f for f in _figures(render_html(evaluation)) if "Training loss" in f)
    svg = _svg(fig)
    group = next(g for g in svg.iter(f"{SVG}g") if g.get("clip-path"))
    kinds = [el.tag.replace(SVG, "") for el in group]
    assert kinds.index("polyline") > max(i for i, k in enumerate(kinds) if k == "polygon")
    for band in group.iter(f"{SVG}polygon"):
        assert 0 < float(band.get("fill-opacity")) < 0.3 and band.get("stroke") == band.get("fill")
    dashes = {b.get("stroke-dasharray") for b in group.iter(f"{SVG}polygon")}
    assert len(dashes) == 2  # a second cue besides colour


def _curve(page: str, caption: str) -> ET.Element:
    return _svg(next(f for f in _figures(page) if caption in f))


def test_hover_titles_carry_each_seeds_value_and_each_legs_mean(evaluation):
    svg = _curve(render_html(evaluation), "Validation val_loss")
    columns = {r.get("data-step"): r.find(f"{SVG}title").text for r in svg.iter(f"{SVG}rect") if r.get("data-step")}
    assert set(columns) == {"30", "60", "100"}  # every evaluated step of the fixture's runs
    last = columns["100"].splitlines()
    assert last[0] == "step 100"
    for leg, values in VALUES.items():  # the seeds' final val_loss, as the jobs wrote them
        line = next(x for x in last if x.startswith(f"{leg}: "))
        assert f"mean {np.mean(values):.4g}" in line
        for seed, v in enumerate(values):
            assert f"seed {seed}: {v:.4g}" in line
    # each marker on a leg's mean line is titled with that leg's values at its step
    marks = [m for m in svg.iter(f"{SVG}path") if m.get("data-marker")]
    assert {m.get("data-leg") for m in marks} == set(VALUES)
    trn = next(m.find(f"{SVG}title").text for m in marks
               if m.get("data-leg") == "trn" and "step 100" in m.find(f"{SVG}title").text)
    assert trn.startswith("trn at step 100: mean 2.41 (seed 0: 2.4, seed 1: 2.41, seed 2: 2.42")


def test_legs_differ_in_colour_dash_and_marker(evaluation):
    page = render_html(evaluation)
    for caption in ("Training loss", "Validation val_loss"):
        svg = _curve(page, caption)
        means = {m.get("data-leg"): m for m in svg.iter(f"{SVG}polyline") if m.get("stroke-width") == "2.4"}
        assert set(means) == set(VALUES)
        assert len({m.get("stroke") for m in means.values()}) == len(means)  # colour
        assert len({m.get("stroke-dasharray") for m in means.values()}) == len(means)  # and dash
        shapes = {m.get("data-leg"): m.get("data-marker") for m in svg.iter(f"{SVG}path") if m.get("data-marker")}
        assert len(set(shapes.values())) == len(means)  # and marker
        bands = list(svg.iter(f"{SVG}polygon"))
        assert bands and all(float(b.get("fill-opacity")) <= 0.1 for b in bands)  # overlaps keep both hues
    assert palette.leg_colours(list(VALUES)) == leg_colours(evaluation)  # one palette: the report's and MLflow's


def test_the_palette_is_okabe_itos_and_no_leg_looks_like_another():
    okabe_ito = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#0072b2", "#d55e00", "#cc79a7"}  # less yellow
    assert set(palette.PALETTE) == okabe_ito
    looks = [palette.leg_style(i) for i in range(12)]
    assert len(set(looks)) == len(looks)  # twelve legs, twelve looks (colours repeat after seven)
    assert not set(palette.PALETTE[:5]) & {"#009e73", "#d55e00"}  # no early leg in a pass-green or fail-red hue


def test_a_curve_far_from_zero_is_not_drawn_from_zero(evaluation):
    ticks = [_value(v) for v in _axis_ticks(_curve(render_html(evaluation), "Validation val_loss"))["y"]]
    assert 2.0 <= ticks[0] <= 2.4 and ticks[-1] >= 3.0  # val_loss runs 3.0 -> ~2.41: the axis spans that


def test_a_long_run_keeps_the_figure_small(evaluation):
    """Hover titles at a bounded number of steps: 5,000 logged steps do not make 5,000 titles."""
    ev = _with_curves(evaluation, lambda i, seed: [[s, 3 - s / 10_000 + 0.01 * seed] for s in range(5000)])
    svg = _curve(render_html(ev), "Training loss")
    titled = [el for el in svg.iter() if el.find(f"{SVG}title") is not None]
    assert len(titled) <= charts.HOVER_COLUMNS + 2 * (charts.MARKS_PER_LEG + 1)


def test_the_page_references_nothing_outside_itself(evaluation):
    page = render_html(evaluation)
    refs = re.findall(r'(?:href|src|xlink:href)\s*=\s*"([^"]*)"', page) + re.findall(r"url\(([^)]*)\)", page)
    assert refs and all(r.startswith("#") for r in refs), [r for r in refs if not r.startswith("#")]
    assert "@import" not in page and "<link" not in page and "<script" not in page and "<img" not in page


def test_throughput_and_cost_show_each_seed_and_the_range(evaluation):
    figures = {re.search(r"<figcaption>(.*?)[<(]", f).group(1).strip(): f for f in _figures(render_html(evaluation))}
    for title, key in (("Steady-state throughput", "throughput"), ("Cost per run", "cost_usd")):
        svg = _svg(figures[title])
        for leg, f in evaluation["legs"].items():
            dots = [c for c in svg.iter(f"{SVG}circle") if c.get("data-seed") == leg]
            assert len(dots) == len(f["runs"]) == 3
            whisker = next(g for g in svg.iter(f"{SVG}g") if g.get("data-whisker") == leg)
            ys = sorted({float(line.get("y1")) for line in whisker})
            values = [r[key] for r in f["runs"]]
            assert len(ys) == 2 if max(values) > min(values) else 1
        assert "whisker: range across seeds" in figures[title]


def test_rows_and_columns_that_are_only_dashes_are_hidden(evaluation):
    ev = json.loads(json.dumps(evaluation))
    for f in ev["legs"].values():  # no warm start on any leg: that row has nothing to say
        f["compile_cache"].update(time_to_first_step_s_warm=None, warm_runs=0, compile_time_s_warm=None)
    md, page = render_markdown(ev), render_html(ev)
    rows = _table(md)
    assert "time to first step warm (runs)" not in rows and "peak device memory" not in rows
    assert rows["time to first step cold (runs)"] == ["30.0 s (1)", "30.0 s (1)"]
    for label, cells in rows.items():
        assert any(c not in ("-", "") for c in cells), label
    for row in re.findall(r"<tr>(.*?)</tr>", page):
        cells = re.findall(r'<td class="n">(.*?)</td>', row)
        assert not cells or any(c != "-" for c in cells), row
    assert "reason" not in md.split("## Runs")[1].splitlines()[2]  # every run completed: no reason column


def test_money_has_one_format_everywhere(evaluation):
    ev = json.loads(json.dumps(evaluation))
    ev["legs"]["gpu"]["cost_per_run_usd_mean"] = 0.7699
    ev["legs"]["trn"]["cost_per_million_units_usd_mean"] = 0.0042
    for doc in (render_html(ev), render_markdown(ev)):
        amounts = re.findall(r"\$[0-9][0-9,]*(?:\.[0-9]+)?", doc)
        assert "$0.77" in amounts and "$0.0042" in amounts and "$0.7699" not in amounts
        for a in amounts:
            if _value(a) >= 0.01 or _value(a) == 0:
                assert re.fullmatch(r"\$\d{1,3}(,\d{3})*\.\d{2}", a), a  # dollars and cents
            else:
                assert len(a.replace("$0.", "").lstrip("0")) <= 3, a  # under a cent: 3 significant figures
    assert "amounts under one cent to three significant figures" in render_html(ev)


def test_the_page_is_centred_and_fits_a_phone(evaluation):
    page = render_html(evaluation)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert re.search(r"\.page\{max-width:\d+px;margin:0 auto", page) and '<main class="page">' in page
    for fig in _figures(page):
        svg = re.search(r"<svg[^>]*>", fig).group(0)
        assert "viewBox" in svg and " width=" not in svg and " height=" not in svg  # scales with the page
    assert "svg.chart{display:block;width:100%;height:auto" in page
    tables = page.count("<table")
    assert tables and page.count('<div class="scroll"><table') == tables  # wide tables scroll, the page does not


def test_a_section_is_one_entry_in_the_list(evaluation, monkeypatch):
    extra = (lambda ev: ["", "## Extra", "", f"{len(ev['legs'])} legs"], lambda ev: "<h2>Extra</h2>")
    monkeypatch.setattr(report, "SECTIONS", [*report.SECTIONS[:2], extra, *report.SECTIONS[2:]])
    md, page = render_markdown(evaluation), render_html(evaluation)
    assert "## Extra\n\n2 legs" in md and md.index("## Extra") < md.index("## Checks")
    assert page.index("<h2>Plots</h2>") < page.index("<h2>Extra</h2>") < page.index("<h2>Checks</h2>")


def test_a_leg_whose_jobs_used_fewer_devices_than_billed_says_so_beside_its_cost(tmp_path):
    # A plain (not distributed) script on ml.p4d.24xlarge runs as one process: 1 of the 8 GPUs the bill counts.
    config = json.loads(json.dumps(CONFIG))
    config["legs"]["gpu"]["processes_per_host"] = 1
    config["legs"]["trn"]["processes_per_host"] = 32
    for leg, values in VALUES.items():
        for seed, value in enumerate(values):
            _write_job(tmp_path, leg, seed, value)
    ev = evaluate(config, load_jobs(tmp_path))
    assert ev["legs"]["gpu"]["devices_used"] == 1 and ev["legs"]["trn"]["devices_used"] == 32
    cost = _table(render_markdown(ev))["cost per run"]
    assert cost[1].endswith("(used 1 of 8 devices)") and "used" not in cost[0]


# --- job text: no escape or control character reaches either report -------------------------------------
ESCAPES = "\x1b]0;pwned\x07\x1b[31m"  # retitles a terminal, then paints what follows red
CONTROLS = [chr(c) for c in (*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0))] + ["\u202e", "\u2066"]
BENIGN = "café naïve 日本語 🎉 Ωμέγα — ok"


def test_escapes_and_control_characters_in_job_text_reach_neither_report(evaluation, tmp_path):
    """A failure reason, a check's why, a leg's name, an environment, the bake-off's name: text a job
    or spec wrote, with escape sequences, BEL and other C0/C1 controls in it. report.md and report.html
    carry none of them; the text around them stays, word for word."""
    hostile = f"boom{ESCAPES}\x07 oom\x9b31m\x00 [red]x[/red]"
    # "trn" names a leg, its checks and runs: every one of them renamed, so the report still agrees with itself
    ev = json.loads(json.dumps(evaluation).replace('trn', 'trn\\u001b[1m\\u0007'))
    ev["bakeoff"] = f"fixed{ESCAPES}"
    for f in ev["legs"].values():
        for r in f["runs"]:
            r["status"], r["reason"] = "failed", f"{hostile} {BENIGN}"
            r["environment"] = {**(r.get("environment") or {}), "note": hostile}
    ev["checks"].append({"name": f"warning{ESCAPES}", "status": "warning", "why": hostile + "".join(CONTROLS)})
    ev["speed"]["unstable_legs"] = [f"trn{ESCAPES}"]
    md_path, html_path = (tmp_path / "report.md", tmp_path / "report.html")
    write_reports(ev, tmp_path)
    for text in (md_path.read_bytes().decode(), html_path.read_bytes().decode()):
        assert not set(text) & (set(CONTROLS) | {"\x1b", "\x07", "\x9b"}), \
            sorted(hex(ord(c)) for c in set(text) & set(CONTROLS))
        assert "pwned" not in text and "[31m" not in text and "[1m" not in text  # each sequence went whole
        assert BENIGN in text and "oom31m" in text
    md = md_path.read_text()
    assert md.startswith("# Bake-off fixed: ") and "| trn | 0 | failed |" in md
    assert '<h3><span class="sw" data-leg="trn"' in html_path.read_text()  # the leg keeps its colour


def test_benign_unicode_in_job_text_is_shown_unchanged(evaluation):
    ev = json.loads(json.dumps(evaluation))
    ev["checks"].append({"name": "note", "status": "warning", "why": f"{BENIGN}\tand a tab"})
    assert f"{BENIGN}\tand a tab" in render_html(ev) and f"{BENIGN}\tand a tab" in render_markdown(ev)
    assert render_markdown(evaluation) == render_markdown(json.loads(json.dumps(evaluation)))
