"""No honest input makes the report loop or grow without bound: axis ticks for any finite range
(tiny, huge, equal ends, negative, mixed sign, subnormal, narrower than float precision) are few and
in order, NaN and infinity are left out, and a whole report renders with such numbers.

A parity metric near 1e-11 once sent the tick computation into an endless loop (the step's decimals
were taken as 0, so every tick rounded to the same value and never reached the top of the range),
appending to a list until the process was killed at 24 GB. Each check here runs in a child process
under a memory limit and a generous time limit: a regression fails the test, never the machine, and
no duration is asserted beyond "it finished"."""
import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ENTRYPOINTS

LIMIT_S = 60  # generous: each child takes well under a second
MEMORY = 2 * 2 ** 30  # address space the child may add to what its imports took
MAX_TICKS = 20
TINY = sys.float_info.min * sys.float_info.epsilon  # 5e-324, the smallest subnormal
BIG = sys.float_info.max

# Runs one check in a child: reads {"kind", "cases"} on stdin, writes its results as JSON on stdout.
CHILD = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from bakeoff_runtime.report.document import render_html, render_markdown
from bakeoff_runtime.report.formatting import log_label, log_ticks, money_tick, nice_ticks, tick_label

try:  # the limit counts from what the imports took, so how the interpreter was built cannot trip it
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + int(sys.argv[2]), resource.RLIM_INFINITY))
except (OSError, ValueError):
    pass  # no /proc, or the limit cannot be set: the time limit still holds

job = json.load(sys.stdin)
out = []
for case in job["cases"]:
    if job["kind"] == "ticks":
        lo, hi, kw = case
        ticks = nice_ticks(lo, hi, **kw)
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        out.append({"ticks": ticks, "labels": [tick_label(v, step) for v in ticks],
                    "money": [money_tick(v, step) for v in ticks]})
    elif job["kind"] == "log":
        lo, hi = case
        ticks = log_ticks(lo, hi)
        out.append({"ticks": ticks, "labels": [log_label(v) for v in ticks]})
    else:
        out.append({"html": render_html(case), "md": render_markdown(case)})
json.dump(out, sys.stdout)
"""


def _guarded(kind: str, cases: list) -> list:
    """`cases` run by the child, which must finish within LIMIT_S and MEMORY."""
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(ENTRYPOINTS), str(MEMORY)],
                              input=json.dumps({"kind": kind, "cases": cases}), capture_output=True, text=True,
                              timeout=LIMIT_S, env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"{kind}: did not finish in {LIMIT_S} s (an unbounded loop?)")
    assert proc.returncode == 0, f"{kind}: the child failed (out of memory?):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


RANGES = [
    (1e-11, 1.1e-11), (1e-11, 1e-11 + 1e-13), (1e-11, 1e-11), (-1e-11, -1.2e-11), (-1e-11, 1e-11),
    (2.42e-06, 2.42e-06 + 2e-09),  # a step under 1e-9 on a value far from zero
    (1e300, 1.1e300), (1e300, 1e300), (-1e300, 1e300), (-BIG, BIG), (BIG, BIG), (-BIG, -BIG),
    (TINY, TINY), (TINY, 2 * TINY), (0.0, TINY), (-TINY, TINY), (1e-320, 2e-320), (0.0, 0.0),
    (1.0, math.nextafter(1.0, 2.0)), (1e16, 1e16 + 2), (1e17, 1e17), (5.0, -5.0),
    (3.95, 4.73), (0, 149),
]
KWARGS = [{}, {"count": 7}, {"count": 4, "multiples": [1, 2, 5, 10]}, {"integer": True}]


def test_ticks_of_any_finite_range_are_few_in_order_and_cover_it():
    cases = [(lo, hi, kw) for lo, hi in RANGES for kw in KWARGS]
    for (lo, hi, kw), got in zip(cases, _guarded("ticks", cases), strict=True):
        ticks, where = got["ticks"], (lo, hi, kw)
        assert 2 <= len(ticks) <= MAX_TICKS, where
        assert all(math.isfinite(t) for t in ticks) and ticks == sorted(set(ticks)), where
        slack = (ticks[1] - ticks[0]) * 1e-9  # a tick within a billionth of a step of an end covers it
        assert ticks[0] <= min(lo, hi) + slack and ticks[-1] >= max(lo, hi) - slack, where
        for labels in (got["labels"], got["money"]):
            assert all(0 < len(label) <= 40 for label in labels), (where, labels)
            assert len(set(labels)) == len(labels), (where, labels)  # no two ticks read the same


def test_the_range_that_looped_gets_round_ticks_written_in_scientific_form():
    (got,) = _guarded("ticks", [(1e-11, 1.1e-11, {})])
    assert got["ticks"] == pytest.approx([1e-11, 1.025e-11, 1.05e-11, 1.075e-11, 1.1e-11], rel=1e-12)
    assert got["labels"] == ["1.000e-11", "1.025e-11", "1.050e-11", "1.075e-11", "1.100e-11"]
    (huge,) = _guarded("ticks", [(1e300, 1.1e300, {})])
    assert huge["labels"] == ["1.000e+300", "1.025e+300", "1.050e+300", "1.075e+300", "1.100e+300"]


def test_ordinary_ranges_keep_their_ticks():
    got = _guarded("ticks", [(3.95, 4.73, {}), (0, 149, {"count": 4}), (50, 60, {"integer": True})])
    assert [g["ticks"] for g in got] == [[3.8, 4.0, 4.2, 4.4, 4.6, 4.8], [0, 50, 100, 150], [50, 55, 60]]
    assert got[0]["labels"] == ["3.8", "4.0", "4.2", "4.4", "4.6", "4.8"]


def test_not_finite_bounds_give_no_ticks():
    nan, inf = math.nan, math.inf
    cases = [(nan, 1.0, {}), (0.0, nan, {}), (-inf, 1.0, {}), (0.0, inf, {}), (inf, inf, {}), (nan, nan, {})]
    assert [g["ticks"] for g in _guarded("ticks", cases)] == [[]] * len(cases)


LOG_RANGES = [(0.08, 120), (0.5, 7), (1e-11, 1.2e-10), (TINY, 1e-11), (TINY, TINY), (1e-300, 1e300),
              (1e-11, 1e300), (1e300, BIG), (BIG, BIG), (TINY, BIG), (7, 0.5)]


def test_log_ticks_of_any_positive_range_are_few_and_positive():
    for (lo, hi), got in zip(LOG_RANGES, _guarded("log", LOG_RANGES), strict=True):
        ticks = got["ticks"]
        assert 2 <= len(ticks) <= MAX_TICKS and ticks == sorted(set(ticks)), (lo, hi, ticks)
        assert all(0 < t < math.inf for t in ticks), (lo, hi)
        if min(lo, hi) >= 1e-323 and max(lo, hi) <= 1e308:  # within the powers of ten a float holds
            assert ticks[0] <= min(lo, hi) and ticks[-1] >= max(lo, hi), (lo, hi, ticks)
        assert len(set(got["labels"])) == len(ticks) and all(len(v) <= 40 for v in got["labels"])
    nan = math.nan
    bad = [(0.0, 1.0), (-1.0, 1.0), (nan, 1.0), (1.0, math.inf)]
    assert [g["ticks"] for g in _guarded("log", bad)] == [[]] * len(bad)


# --- a whole report ------------------------------------------------------------------------------------
def _with_numbers(evaluation, base: float, spread: float, *, bad: float | None = None) -> dict:
    """A copy of the evaluation whose every figure the charts draw is `base` plus a few `spread`s:
    curves, throughput and cost, the decision's interval and per-seed differences (and its margin)."""
    ev = json.loads(json.dumps(evaluation))
    metric = ev["parity"]["metric"]
    for i, f in enumerate(ev["legs"].values()):
        for r in f["runs"]:
            curve = [[s, base + spread * ((s // 10) % 3 + i + r["seed"])] for s in range(0, 100, 10)]
            if bad is not None:
                curve[3][1] = bad
            r["curves"]["train_loss"] = r["curves"][metric] = curve
            r[metric] = r["throughput"] = r["cost_usd"] = r["wall_time_s"] = base + spread * r["seed"]
        f["throughput_mean"] = f["cost_per_run_usd_mean"] = base + spread * i if bad is None else bad
        f["training_time_s_mean"] = f["wall_time_s_mean"] = base + 2 * spread
        f["metric"]["mean"] = base
    for c in ev["checks"]:
        if c["name"].startswith("parity:") and c.get("ci"):
            c["ci"] = [base - 3 * spread, base + 2 * spread] if bad is None else [bad, bad]
            c["diff"], c["margin"] = base, abs(spread) or abs(base) or 1.0
            c["per_seed_diffs"] = [[s, base + spread * s] for s in range(3)]
    return ev


NUMBERS = [  # (base, spread): what a chart's axis spans
    (1e-11, 1e-13), (1e-11, 0.0), (-1e-11, 1e-12), (0.0, 1e-11), (1e-300, 1e-302),
    (1e300, 1e297), (-1e300, 1e298), (1.7e308, 1e300), (0.0, TINY), (TINY, 0.0), (TINY, TINY),
    (1.0, 2 ** -52), (1e16, 1.0),
]
COORDINATE = re.compile(r'\b(?:x|y|x1|x2|y1|y2|cx|cy|width|height)="([^"]*)"')


def _check_report(html: str, md: str, where) -> None:
    assert html.rstrip().endswith("</html>") and md.endswith("Plots are in report.html.\n"), where
    assert len(html) < 1_000_000 and len(md) < 200_000, where  # bounded output
    figures = re.findall(r"<figure>.*?</figure>", html, re.S)
    assert len(figures) >= 5, where
    for fig in figures:
        if "<svg" not in fig:
            continue
        svg = ET.fromstring(fig[fig.index("<svg"):fig.index("</svg>") + 6])  # well-formed
        axes: dict[str, int] = {}
        for t in svg.iter("{http://www.w3.org/2000/svg}text"):
            if t.get("data-axis"):
                axes[t.get("data-axis")] = axes.get(t.get("data-axis"), 0) + 1
                assert len(t.text or "") <= 40, (where, t.text)
        assert all(1 <= n <= MAX_TICKS for n in axes.values()), (where, axes)
        for value in COORDINATE.findall(fig):
            assert math.isfinite(float(value)), (where, value)  # no "nan" or "inf" in the drawing
        for points in re.findall(r'points="([^"]*)"', fig):
            assert "nan" not in points and "inf" not in points, where


def test_a_report_with_tiny_huge_and_subnormal_numbers_renders_whole(evaluation):
    evs = [_with_numbers(evaluation, base, spread) for base, spread in NUMBERS]
    for (base, spread), got in zip(NUMBERS, _guarded("report", evs), strict=True):
        _check_report(got["html"], got["md"], (base, spread))


def test_a_report_with_nan_and_infinite_figures_renders_without_them(evaluation):
    cases = [(1.0, 0.1, bad) for bad in (math.nan, math.inf, -math.inf)]
    evs = [_with_numbers(evaluation, base, spread, bad=bad) for base, spread, bad in cases]
    for case, got in zip(cases, _guarded("report", evs), strict=True):
        _check_report(got["html"], got["md"], case)


def test_a_parity_metric_near_1e_minus_11_from_real_job_outputs_gives_a_report(tmp_path):
    """The reported case end to end: jobs whose metric is about 1e-11, a margin of 1e-12."""
    import copy

    from report_inputs import CONFIG, _write_job

    from bakeoff_runtime.verdict.evaluation import evaluate
    from bakeoff_runtime.verdict.job_outputs import load_jobs

    values = {"trn": [1.0e-11, 1.01e-11, 1.02e-11], "gpu": [1.01e-11, 1.0e-11, 1.03e-11]}
    for leg, vs in values.items():
        for seed, v in enumerate(vs):
            _write_job(tmp_path, leg, seed, v)
    config = copy.deepcopy(CONFIG)
    config["parity"].update(margin=1e-12, target=2e-11)
    ev = evaluate(config, load_jobs(tmp_path))
    tiny = _with_numbers(ev, 1e-11, 1e-13)  # and its curves and interval as small as its metric
    for case, got in zip(("as evaluated", "tiny curves"), _guarded("report", [ev, tiny]), strict=True):
        _check_report(got["html"], got["md"], case)
