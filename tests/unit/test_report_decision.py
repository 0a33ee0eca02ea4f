"""The report's decision section: the projection's sentence, the payback figure, the per-leg table, on
the first screen; an emulated projection as a caution; a comparison without parity as its reason only;
no section at all for an evaluation without a projection."""
import copy
import re
import xml.etree.ElementTree as ET

import pytest

from bakeoff_runtime.report.decision_section import EMULATED_HEAD, FIGURE_TITLE, TITLE
from bakeoff_runtime.report.document import leg_colours, render_html, render_markdown
from bakeoff_runtime.verdict.projection import project


# The legs as verdict/projection.py reads them (tests/unit/test_projection.py builds them the same way),
# named as the `evaluation` fixture's legs so the report's colours and order apply.
def _leg(throughputs, *, instance_type="ml.trn1.32xlarge", price=10.0, cold=0.0, warm=None):
    runs = [{"seed": s, "status": "completed", "throughput": t, "units_processed": 1000.0, "steps_completed": 10,
             "billable_s": None, "wall_time_s": None} for s, t in enumerate(throughputs)]
    return {"instance_type": instance_type, "instance_count": 1, "throughput_unit": "tokens/s", "runs": runs,
            "price": {"usd_per_hour": price, "source": "test catalog", "as_of": "2026-12-01", "note": None},
            "compile_cache": {"time_to_first_step_s_cold": cold,
                              "time_to_first_step_s_warm": cold if warm is None else warm},
            "time_to_first_step_s_mean": cold}


def _projected(legs, *, parity="passed", emulated=False, **decision):
    ev = {"legs": legs, "parity": {"baseline": "gpu"}, "scaling": {}, "speed": {"emulated": emulated},
          "cost_basis": "billed time",
          "checks": [{"name": "parity:trn~gpu", "status": parity, "why": "the interval crosses the margin"}]}
    return project(ev, {"production": {"units": 1.44e6, "unit": "tokens", "steps": None, "batch": None},
                        "runs_per_period": 4, "period": "quarter", "confidence": 0.9, **decision})


# trn: 400 tokens/s (seeds spread), $10 an hour, a one-hour cold compile; gpu: 200 tokens/s, $10 an hour.
# 1.44e6 tokens: a warm run costs $10 on trn and $20 on gpu, so each run saves $10; the first run on trn
# pays the compile ($20), so it saves nothing. $25 of porting: 0, 10, 20, 30 after the fourth run.
LEGS = {"trn": _leg([400.0, 380.0, 420.0], cold=3600.0, warm=0.0),
        "gpu": _leg([200.0, 210.0, 190.0], instance_type="ml.p4d.24xlarge")}
PORTING = {"hours_spent": 0, "hours_expected": 1, "usd_per_hour": 25.0}


def _with(evaluation, projection):
    ev = copy.deepcopy(evaluation)
    ev["projection"] = projection
    return ev


def _payback_svg(page: str) -> ET.Element:
    figure = next(f for f in re.findall(r"<figure>.*?</figure>", page, re.S) if FIGURE_TITLE in f)
    return ET.fromstring(figure[figure.index("<svg"):figure.index("</svg>") + 6])


def _texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text")]


def test_the_sentence_figure_and_table_on_the_first_screen(evaluation):
    p = _projected(LEGS, porting=PORTING)
    assert p["comparisons"][0]["break_even_runs"]["mean"] == 4  # the arithmetic the figure draws
    ev = _with(evaluation, p)
    page, md = render_html(ev), render_markdown(ev)
    assert p["sentence"] in page and p["sentence"] in md
    # Under the verdict, before the validity table and the parity figure.
    head = page.index('<p class="verdict">')
    assert head < page.index(TITLE) < page.index("What was measured") < page.index("The decision: each leg&#x27;s")
    assert md.index("Parity holds") < md.index(f"## {TITLE}") < md.index("**What was measured**")
    svg = _payback_svg(page)
    ns = "{http://www.w3.org/2000/svg}"
    bands = [g for g in svg.iter(f"{ns}polygon") if g.get("data-band")]
    assert len(bands) == 1 and bands[0].get("data-leg") == "trn"
    assert [g.get("data-leg") for g in svg.iter(f"{ns}polyline")] == ["trn"]
    assert any(line.get("data-zero") for line in svg.iter(f"{ns}line"))
    # The leg keeps its colour from the rest of the report, in the figure and the table.
    trn = leg_colours(ev)["trn"]
    painted = {c for el in svg.iter() if el.get("data-leg") and el.tag != f"{ns}g"
               for c in (el.get("fill"), el.get("stroke")) if c and c.startswith("#")}
    assert painted == {trn}
    assert f'<span class="sw" data-leg="trn" style="background:{trn}">' in page.split(TITLE)[1]
    marks = [g for g in svg.iter(f"{ns}g") if g.get("data-break-even")]
    assert [m.get("data-break-even") for m in marks] == ["4"]
    assert "pays back after 4 runs" in _texts(svg)
    assert "trn vs gpu, cumulative net saving: after 1 run -$25.00; after 4 runs $5.00" in md
    # The table: the warm run's cost with its interval, the first run with its cold compile.
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")[1:]]
            for line in md.split(f"## {TITLE}")[1].split("**What was measured**")[0].splitlines()
            if line.startswith("| ") and not line.startswith("|  |")}
    assert rows["instances"] == ["1 x ml.trn1.32xlarge", "1 x ml.p4d.24xlarge"]
    assert rows["cost per run (warm)"][0].startswith("$10.00 ($") and rows["first run (cold compile)"] == [
        "$20.00", "$20.00"]
    assert rows["cost per quarter (4 runs)"][1].startswith("$80.00")
    assert "<details><summary>What these figures rest on</summary>" in page
    assert "<details><summary>Assumptions</summary>" in page and p["assumptions"][0] in page


def test_without_porting_the_saving_counts_from_the_first_run(evaluation):
    page = render_html(_with(evaluation, _projected(LEGS)))
    svg = _payback_svg(page)
    assert not any(g.get("data-break-even") for g in svg.iter("{http://www.w3.org/2000/svg}g"))
    assert "no porting cost entered: the saving counts from run 1" in page


def test_an_emulated_projection_is_a_caution_never_a_winner(evaluation):
    p = _projected(LEGS, emulated=True, porting=PORTING)
    ev = _with(evaluation, p)
    page, md = render_html(ev), render_markdown(ev)
    assert f'<p class="caution"><b>{EMULATED_HEAD}:</b> from emulated speeds on this machine' in page
    assert f"> **{EMULATED_HEAD}:** from emulated speeds on this machine" in md
    assert p["sentence"].startswith("Emulated speeds, not a decision") and p["sentence"] in page
    caption = re.search(rf"<figcaption>{FIGURE_TITLE}(.*?)</figcaption>", page, re.S)
    assert caption and "emulated speeds" in caption.group(1)


def test_a_comparison_without_parity_shows_its_reason_and_no_curve(evaluation):
    p = _projected(LEGS, parity="inconclusive", porting=PORTING)
    reason = p["comparisons"][0]["reason"]
    assert reason.startswith("no saving: parity with gpu is inconclusive")
    page, md = render_html(_with(evaluation, p)), render_markdown(_with(evaluation, p))
    assert FIGURE_TITLE not in page and "<polyline" not in page.split(TITLE)[1].split("What was measured")[0]
    assert f"<li>trn vs gpu: {reason}</li>" in page
    assert f"- trn vs gpu: {reason}" in md


def test_text_from_the_document_is_escaped(evaluation):
    p = _projected(LEGS, parity="inconclusive")
    p["comparisons"][0]["reason"] = "no saving: <img src=x onerror=alert(1)>"
    p["legs"]["trn"]["rests_on"].append("<script>alert(1)</script>")
    page = render_html(_with(evaluation, p))
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("stored", ["absent", "null"])
def test_an_evaluation_without_a_projection_has_no_section(evaluation, stored):
    plain = copy.deepcopy(evaluation)
    plain.pop("projection", None)
    ev = copy.deepcopy(plain)
    if stored == "null":
        ev["projection"] = None  # a hand-edited document: shown as one without
    page, md = render_html(ev), render_markdown(ev)
    assert TITLE not in page and 'class="projection"' not in page and ".projection" not in page
    assert TITLE not in md
    assert page == render_html(plain) and md == render_markdown(plain)
