"""The report's decision section, from the evaluation's `projection` (verdict/projection.py): what a
production run would cost on each leg, what moving it saves, with its interval, and after how many
runs the porting work pays back. It is what the bake-off was run to answer, so it sits on the first
screen, under the verdict; an evaluation without a projection has no such section.

An emulated projection is the decision's arithmetic on this machine's speeds, not its answer: it is
labelled as a caution first, and the figure says so in its caption.
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping
from typing import Any, cast

from bakeoff_runtime.contract.documents import Evaluation
from bakeoff_runtime.report.charts import Payback, leg_colours, payback_chart, payback_horizon
from bakeoff_runtime.report.formatting import md, md_row, usd

TITLE = "The decision: a production run on each leg"
FIGURE_TITLE = "Cumulative net saving against production runs"
EMULATED_HEAD = "Emulated, not a decision"
FIGURE_EMULATED = "emulated speeds"

CSS = """.projection .caution{background:#fff1e5;border:1px solid #bc4c00;border-left-width:5px;border-radius:4px;
padding:6px 10px;max-width:72em}.projection .caution b{color:#bc4c00}
.projection .sentence{font-size:1.05em;max-width:72em;margin:.4em 0}
.projection .grid{display:flex;flex-wrap:wrap;gap:8px 32px;align-items:flex-start}
.projection .grid>div{flex:0 1 auto;min-width:0;max-width:100%}
.projection .grid>.fig{flex:1 1 440px;max-width:min(100%,560px)}
.projection .reasons{font-size:13px;color:#59636e;margin:0 0 .6em;padding-left:1.2em}
.projection{margin-bottom:1em}.projection table.proj{margin-top:0}
.projection table.proj th,.projection table.proj td{white-space:nowrap}
.projection table.proj th[scope=row]{position:sticky;left:0;z-index:1;white-space:normal;width:8.5em}
.projection td .iv{display:block;color:#59636e;font-size:12px}
.projection details{font-size:13px;margin:.2em 0;max-width:36em}.projection summary{cursor:pointer;font-weight:600}
.projection details ul{margin:.3em 0;padding-left:1.4em}"""


def projection_of(ev: Evaluation) -> Mapping[str, Any] | None:
    """The evaluation's projection, or None for one written without a decision (or a malformed one)."""
    p = cast("Mapping[str, Any]", ev).get("projection")
    return p if isinstance(p, dict) and isinstance(p.get("legs"), dict) else None


# --- numbers ----------------------------------------------------------------------------------------
def _number(v: Any) -> float | None:
    """A finite number, or None: a hand-edited or older document is shown, not trusted."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _end(interval: Any, key: str) -> float | None:
    return _number(interval.get(key)) if isinstance(interval, dict) else None


def _rate(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _hours(v: float) -> str:
    """A duration given in hours, in the unit it reads best in (tiny local runs take seconds)."""
    if abs(v) >= 1:
        return f"{v:,.1f} h"
    return f"{v * 60:.1f} min" if abs(v) * 60 >= 1 else f"{v * 3600:.1f} s"


def _span(interval: Any, fmt: Callable[[float], str]) -> tuple[str, str]:
    """(mean, "low to high") of an interval; "-" and "" where it has none."""
    mean, low, high = (_end(interval, k) for k in ("mean", "low", "high"))
    if mean is None:
        return "-", ""
    return fmt(mean), (f"{fmt(low)} to {fmt(high)}" if low is not None and high is not None else "")


def _runs_word(n: float) -> str:
    return f"{n:.0f} run{'' if n == 1 else 's'}"


def _period(p: Mapping[str, Any]) -> str:
    runs = _number(p.get("runs_per_period"))
    return f"{runs:g} run{'' if runs == 1 else 's'} a {p.get('period')}" if runs is not None else str(p.get("period"))


# --- the pieces -------------------------------------------------------------------------------------
def leg_table(p: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, list[tuple[str, str]]]]]:
    """(legs, rows): each row a label and, per leg, its (figure, interval) cells."""
    legs = {n: f for n, f in p["legs"].items() if isinstance(f, dict)}
    period = p.get("period") or "period"
    runs = _number(p.get("runs_per_period"))

    def instances(f):
        measured = f.get("instances_measured")
        return (f"{f.get('instances')} x {f.get('instance_type') or '-'}",
                f"measured on {measured}" if measured not in (None, f.get("instances")) else "")

    def throughput(f):
        mean, iv = _span(f.get("throughput"), _rate)
        unit = f"{f.get('unit') or 'units'}/s"
        return (f"{mean} {unit}" if mean != "-" else mean), iv

    spec: list[tuple[str, Any]] = [
        ("instances", instances),
        ("throughput", throughput),
        ("hours per run (warm)", lambda f: _span(f.get("hours_per_run"), _hours)),
        ("cost per run (warm)", lambda f: _span(f.get("cost_per_run_usd"), usd)),
        ("first run (cold compile)", lambda f: (usd(_number(f.get("first_run_cost_usd"))), "")),
        (f"cost per {period}" + (f" ({runs:g} runs)" if runs is not None else ""),
         lambda f: _span(f.get("cost_per_period_usd"), usd)),
    ]
    rows = [(label, [get(f) for f in legs.values()]) for label, get in spec]
    if any(f.get("reason") for f in legs.values()):
        rows.append(("not projected", [(str(f.get("reason") or ""), "") for f in legs.values()]))
    return list(legs), rows


def _comparisons(p: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in p.get("comparisons") or [] if isinstance(c, dict)]


def _cold_compile_usd(leg: Mapping[str, Any]) -> float:
    """What the first run's cold compile adds to a warm run's cost."""
    return (_number(leg.get("first_run_cost_usd")) or 0.0) - (_end(leg.get("cost_per_run_usd"), "mean") or 0.0)


def paybacks(p: Mapping[str, Any], colours: Mapping[str, str]) -> list[Payback]:
    """The figure's lines: each comparison with a saving. The first run saves the warm saving plus the
    difference of the two legs' cold compiles, as the break-even in verdict/projection.py counts it."""
    porting = _number(p.get("porting_usd")) or 0.0
    legs = p["legs"]
    out: list[Payback] = []
    for c in _comparisons(p):
        saving = c.get("saving_per_run_usd")
        each = tuple(_end(saving, k) for k in ("mean", "low", "high"))
        if c.get("reason") or each[0] is None:
            continue
        first_extra = _cold_compile_usd(legs.get(c.get("baseline")) or {}) - _cold_compile_usd(
            legs.get(c.get("leg")) or {})
        first = tuple(None if v is None else v + first_extra - porting for v in each)
        runs = _end(c.get("break_even_runs"), "mean") if porting else None
        out.append({"label": f"{c.get('leg')} vs {c.get('baseline')}", "leg": str(c.get("leg")),
                    "colour": colours.get(str(c.get("leg")), "#666666"),
                    "first": cast("tuple[float, float | None, float | None]", first),
                    "each": cast("tuple[float, float | None, float | None]", each), "runs": runs})
    return out


def _reasons(p: Mapping[str, Any]) -> list[str]:
    """Why a comparison has no curve: its own reason."""
    return [f"{c.get('leg')} vs {c.get('baseline')}: {c['reason']}" for c in _comparisons(p) if c.get("reason")]


def _figure_note(p: Mapping[str, Any], lines: list[Payback]) -> str:
    porting = _number(p.get("porting_usd")) or 0.0
    level = f"{(_number(p.get('confidence')) or 0.9):.0%}"
    parts = [f"the saving of the runs so far less the {usd(porting)} of porting" if porting else
             "no porting cost entered: the saving counts from run 1"]
    if any(line["each"][1] is not None for line in lines):
        parts.append(f"band: the saving's {level} interval")
    parts.append("the first run includes the cold compile")
    return "; ".join(parts)


def _off_chart(p: Mapping[str, Any], lines: list[Payback], horizon: int) -> list[str]:
    """What the figure cannot show: a break-even beyond it, or none at all."""
    out = []
    for line in lines:
        n = line["runs"]
        if n is not None and n > horizon:
            out.append(f"{line['label']}: pays back after {_runs_word(n)}, beyond this figure")
        elif (_number(p.get("porting_usd")) or 0.0) and n is None:
            out.append(f"{line['label']}: never pays back at this saving")
    return out


def _lines(ev: Evaluation, p: Mapping[str, Any]) -> tuple[list[Payback], int]:
    """The figure's lines and how many production runs it spans."""
    lines = paybacks(p, leg_colours(ev))
    return lines, payback_horizon([line["runs"] for line in lines], _number(p.get("runs_per_period")) or 1.0)


def _chart(ev: Evaluation, p: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(the figure's SVG or "", the lines of text under it)."""
    lines, horizon = _lines(ev, p)
    if not lines:
        return "", _reasons(p)
    svg = payback_chart(FIGURE_TITLE, lines, horizon, _figure_note(p, lines),
                        emulated=FIGURE_EMULATED if p.get("emulated") else "")
    return svg, _off_chart(p, lines, horizon) + _reasons(p)


def _standing(p: Mapping[str, Any]) -> str:
    """What the projection is from and under, in one line (an emulated one's source is the caution)."""
    level = f"{(_number(p.get('confidence')) or 0.9):.0%}"
    porting = _number(p.get("porting_usd")) or 0.0
    parts = [] if p.get("emulated") else [f"Projected {p.get('label')}"]
    parts += [f"{level} intervals", _period(p), f"porting {usd(porting)}" if porting else "no porting cost entered"]
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def _net_after(line: Payback, n: float) -> float:
    first, each = line["first"][0], line["each"][0]
    return first + (n - 1) * each


def _milestones(lines: list[Payback], horizon: int) -> list[str]:
    """The figure's lines in words, for report.md: the net saving after the first run, at the
    break-even and at the figure's horizon."""
    out = []
    for line in lines:
        points = sorted({1.0, float(horizon)} | ({line["runs"]} if line["runs"] and line["runs"] <= horizon else set()))
        out.append(f"{line['label']}, cumulative net saving: " + "; ".join(
            f"after {_runs_word(n)} {usd(_net_after(line, n))}" for n in points))
    return out


# --- the section --------------------------------------------------------------------------------------
def section_markdown(ev: Evaluation) -> list[str]:
    p = projection_of(ev)
    if p is None:
        return []
    out = ["", f"## {TITLE}", ""]
    if p.get("emulated"):
        out += [f"> **{EMULATED_HEAD}:** {md(p.get('label'))}", ""]
    out += [md(p.get("sentence") or ""), "", md(_standing(p)), ""]
    lines, horizon = _lines(ev, p)
    notes = _milestones(lines, horizon) + _off_chart(p, lines, horizon) + _reasons(p)
    out += [f"- {md(n)}" for n in notes] + ([""] if notes else [])
    names, rows = leg_table(p)
    out += [md_row(["", *names]), "|---|" + "---|" * len(names)]
    out += [md_row([label, *(f"{v} ({iv})" if iv else v for v, iv in cells)]) for label, cells in rows]
    rests = [(n, f.get("rests_on") or []) for n, f in p["legs"].items() if isinstance(f, dict)]
    if any(r for _, r in rests):
        out += ["", "**What these figures rest on**", ""] + [f"- {md(n)}: {md('; '.join(map(str, r)))}"
                                                           for n, r in rests if r]
    if p.get("assumptions"):
        out += ["", "**Assumptions**", ""] + [f"- {md(a)}" for a in p["assumptions"]]
    return out


def section_html(ev: Evaluation) -> str:
    p = projection_of(ev)
    if p is None:
        return ""
    e = html.escape
    colours = leg_colours(ev)
    caution = (f'<p class="caution"><b>{e(EMULATED_HEAD)}:</b> {e(str(p.get("label")))}</p>'
               if p.get("emulated") else "")
    standing = f'<p class="note">{e(_standing(p))}</p>'
    svg, notes = _chart(ev, p)
    notes_html = f'<ul class="reasons">{"".join(f"<li>{e(n)}</li>" for n in notes)}</ul>' if notes else ""
    names, rows = leg_table(p)
    colour = {n: colours.get(n, "#666666") for n in names}
    head = "".join(f'<th scope="col" style="border-top:3px solid {colour[n]}"><span class="sw" data-leg="{e(n)}" '
                   f'style="background:{colour[n]}"></span>{e(n)}</th>' for n in names)
    body = "".join(f'<tr><th scope="row">{e(label)}</th>' + "".join(
        f'<td class="n">{e(v)}' + (f'<span class="iv">{e(iv)}</span>' if iv else "") + "</td>" for v, iv in cells)
        + "</tr>" for label, cells in rows)
    table = f'<div class="scroll"><table class="proj"><tr><th></th>{head}</tr>{body}</table></div>'
    rests = "".join(f"<li><b>{e(n)}</b><ul>" + "".join(f"<li>{e(str(r))}</li>" for r in f.get("rests_on") or [])
                    + "</ul></li>" for n, f in p["legs"].items() if isinstance(f, dict) and f.get("rests_on"))
    details = (f"<details><summary>What these figures rest on</summary><ul>{rests}</ul></details>" if rests else "")
    if p.get("assumptions"):
        details += ("<details><summary>Assumptions</summary><ul>"
                    + "".join(f"<li>{e(str(a))}</li>" for a in p["assumptions"]) + "</ul></details>")
    return (f'<section class="projection"><h2>{e(TITLE)}</h2>{caution}<p class="sentence">'
            f'{e(str(p.get("sentence") or ""))}</p>{standing}<div class="grid"><div class="fig">{svg}{notes_html}</div>'
            f"<div>{table}{details}</div></div></section>")
