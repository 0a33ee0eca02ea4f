"""The report's figures as inline SVG: no plotting library, so the evaluation step runs in any
image and report.html opens offline.

Every figure gives a leg the same colour, dash and marker (report.palette: `leg_colours`,
`leg_style`) and marks each leg-coloured element with `data-leg`, so tables and figures can be
checked against each other. Values are read by hovering: the curves' `<title>` elements carry each
seed's value and each leg's mean at a step (a browser shows them as tooltips; no script). Figures scale with
the page (viewBox, no fixed size); their fonts are sized to stay readable at phone width.
"""
from __future__ import annotations

import html
import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from bakeoff_runtime.contract.documents import Evaluation
from bakeoff_runtime.report import palette
from bakeoff_runtime.report.formatting import log_label, log_ticks, money_tick, nice_ticks, tick_label
from bakeoff_runtime.report.palette import DASHES, leg_style
from bakeoff_runtime.verdict.parity_tests import EQUIVALENCE, test_of

OUTCOME_COLOUR = {"passed": "#1a7f37", "failed": "#cf222e", "inconclusive": "#9a6700"}
PASS_BAND = "#2da44e"
INK, GRID, AXIS = "#1f2328", "#e6e8eb", "#57606a"
FONT = 14  # viewBox units: about 10 px at phone width, 15 px on a laptop
# Faint enough that two legs' bands overlapping still show both hues (at 0.13 a blue and an orange band
# mixed to one brown); each band's solid or dashed outline marks its edge.
BAND_OPACITY = 0.07
HOVER_COLUMNS = 60  # at most this many steps carry a hover title: the page stays small at any run length
MARKS_PER_LEG = 10  # markers along each leg's mean line, staggered so legs' markers do not sit on each other
Fmt = Callable[[float], str]
TickFmt = Callable[[float, float], str]


def leg_colours(ev: Evaluation) -> dict[str, str]:
    """One colour per leg, by the legs' order in evaluation.json: the same in every figure and table."""
    return palette.leg_colours(list(ev.get("legs") or {}))


def _e(s: Any) -> str:
    return html.escape(str(s))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "chart"


def _fit(text: str, width: float) -> str:
    """`text` shortened with an ellipsis to about `width` viewBox units (long leg names)."""
    room = max(3, int(width / (FONT * 0.56)))
    return text if len(text) <= room else text[: room - 1] + "\u2026"


def _label(x: float, y: float, text: str, width: float, anchor: str = "middle", extra: str = "") -> str:
    shown = _fit(text, width)
    tip = f"<title>{_e(text)}</title>" if shown != text else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{tip}{_e(shown)}</text>'


def figure(title: str, w: float, h: float, body: list[str], note: str = "", defs: str = "",
           emulated: str = "") -> str:
    """A captioned, self-scaling SVG; `note` is HTML-escaped text under the title (wraps on a phone)."""
    caption = _e(title) + (f' <span class="emu">{_e(emulated)}</span>' if emulated else "")
    note_html = f'<span class="note">{_e(note)}</span>' if note else ""
    return (f'<figure><figcaption>{caption}{note_html}</figcaption><svg class="chart" viewBox="0 0 {w:.0f} {h:.0f}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{_e(title)}" font-size="{FONT}" '
            f'fill="{INK}">{f"<defs>{defs}</defs>" if defs else ""}{"".join(body)}</svg></figure>')


def no_data(title: str, why: str = "no data") -> str:
    return f'<figure><figcaption>{_e(title)}</figcaption><p class="nodata">{_e(why)}</p></figure>'


def legend(items: Sequence[tuple[str, str, str | None]], x0: float, y0: float, right: float) -> tuple[list[str], float]:
    """items: (label, swatch markup with {x}/{y} placeholders, leg or None), laid out in rows
    that wrap at `right`. Returns the markup and the y just below the legend."""
    out, x, y = [], x0, y0
    for label, swatch, leg in items:
        width = 22 + len(label) * FONT * 0.56 + 14
        if x > x0 and x + width > right:
            x, y = x0, y + FONT + 8
        tag = f' data-leg="{_e(leg)}"' if leg else ""
        out.append(f"<g{tag}>" + swatch.format(x=x, y=y, x2=x + 16, ym=y - FONT * 0.35, yt=y - FONT * 0.8)
                   + f'<text x="{x + 22:.1f}" y="{y:.1f}">{_e(label)}</text></g>')
        x += width
    return out, y + 10


def marker(shape: str, x: float, y: float, r: float = 4.0) -> str:
    """The path data of a leg's marker centred on (x, y): a shape as well as a colour tells legs apart."""
    if shape == "square":
        r *= 0.9
        return f"M{x - r:.1f},{y - r:.1f}h{2 * r:.1f}v{2 * r:.1f}h{-2 * r:.1f}z"
    if shape in ("triangle", "triangle-down"):
        r *= 1.15
        k = 1 if shape == "triangle" else -1
        return f"M{x:.1f},{y - k * r:.1f}L{x + r:.1f},{y + k * r * 0.8:.1f}L{x - r:.1f},{y + k * r * 0.8:.1f}z"
    if shape == "diamond":
        r *= 1.25
        return f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y:.1f}L{x:.1f},{y + r:.1f}L{x - r:.1f},{y:.1f}z"
    if shape == "plus":
        t = r * 0.4
        return (f"M{x - t:.1f},{y - r:.1f}h{2 * t:.1f}v{r - t:.1f}h{r - t:.1f}v{2 * t:.1f}h{t - r:.1f}v{r - t:.1f}"
                f"h{-2 * t:.1f}v{t - r:.1f}h{t - r:.1f}v{-2 * t:.1f}h{r - t:.1f}z")
    return f"M{x - r:.1f},{y:.1f}a{r:.1f},{r:.1f} 0 1,0 {2 * r:.1f},0a{r:.1f},{r:.1f} 0 1,0 {-2 * r:.1f},0z"


def _swatch_band(colour: str, dash: str, shape: str | None = None) -> str:
    """A legend swatch: the band (faint fill, outline), the mean line in the leg's dash, its marker."""
    mark = (f'<path d="{marker(shape, 0, 0, 3.6)}" transform="translate({{x2:.1f}},{{ym:.1f}}) translate(-8,0)" '
            f'fill="{colour}" stroke="#fff" stroke-width="0.8"/>') if shape else ""
    return (f'<rect x="{{x:.1f}}" y="{{yt:.1f}}" width="16" height="{FONT * 0.8:.1f}" fill="{colour}" '
            f'fill-opacity="{BAND_OPACITY}" stroke="{colour}" stroke-dasharray="{dash}"/>'
            f'<line x1="{{x:.1f}}" y1="{{ym:.1f}}" x2="{{x2:.1f}}" y2="{{ym:.1f}}" stroke="{colour}" '
            f'stroke-width="2.2" stroke-dasharray="{dash}"/>' + mark)


def _swatch_box(fill: str, extra: str = "") -> str:
    return f'<rect x="{{x:.1f}}" y="{{yt:.1f}}" width="12" height="{FONT * 0.8:.1f}" fill="{fill}" {extra}/>'


# --- scales --------------------------------------------------------------------------------------
def _left_for(tick_labels: list[str]) -> int:
    """The plot's left edge: room for the widest y tick label and the rotated axis title."""
    return max(52, round(max(map(len, tick_labels), default=1) * FONT * 0.58 + FONT + 16))


# A coordinate never leaves this band: a value far off an axis (a trimmed curve's first steps, data
# beyond a degenerate axis) is drawn off the chart, not at "inf" or "nan".
_FAR = 1e6


def _within(x: float) -> float:
    return -_FAR if math.isnan(x) else min(_FAR, max(-_FAR, x))


def _scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    if not math.isfinite(span):  # ends further apart than the largest float: measured in halves
        half = hi / 2 - lo / 2
        return lambda v: _within(a + (v / 2 - lo / 2) / half * (b - a))
    return lambda v: _within(a + (v - lo) / span * (b - a))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def y_axis(points: list[tuple[float, float]], trim_from: float = 0.15):
    """The y axis of a curve plot: (ticks, transform, tick labeller, axis-label suffix, note).

    Log scale when the values span a factor of ten or more (a loss falling by orders of
    magnitude); otherwise, when the first steps' values would flatten the rest, the range is
    fitted to the steps after the first `trim_from` of the run and the early values run off
    the top. The axis label says which ("log scale" / "trimmed")."""
    ys = [y for _, y in points]
    lo, hi = min(ys), max(ys)
    if lo > 0 and hi / lo >= 10:
        ticks = log_ticks(lo, hi)
        return ticks, math.log10, lambda v, _s: log_label(v), " (log scale)", "y axis: log scale"
    xs = sorted({x for x, _ in points})
    cut = xs[0] + (xs[-1] - xs[0]) * trim_from
    late_xs = [x for x in xs if x >= cut]
    late = [y for x, y in points if x >= cut]
    if len(late_xs) >= 3:
        llo, lhi = min(late), max(late)
        span = (lhi - llo) or abs(lhi) * 0.05 or 1.0
        if (hi - lo) > 1.5 * span and (hi > lhi + 0.1 * span or lo < llo - 0.1 * span):
            ticks = nice_ticks(llo, lhi)
            return (ticks, float, tick_label, " (trimmed)",
                    f"y axis fitted to step {late_xs[0]:g} on; earlier values run off the chart")
    return nice_ticks(lo, hi), float, tick_label, "", ""


def _axes(box, xt, yt, ty, xlabel, ylabel, xfmt: TickFmt, yfmt: TickFmt) -> list[str]:
    left, top, right, bottom = box
    sx = _scale(xt[0], xt[-1], left, right)
    sy = _scale(ty(yt[0]), ty(yt[-1]), bottom, top)
    out = []
    ystep = yt[1] - yt[0] if len(yt) > 1 else 1.0
    xstep = xt[1] - xt[0] if len(xt) > 1 else 1.0
    for v in yt:
        y = sy(ty(v))
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="{GRID}"/>'
                   f'<text data-axis="y" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(yfmt(v, ystep))}</text>')
    for v in xt:
        out.append(f'<text data-axis="x" x="{sx(v):.1f}" y="{bottom + FONT + 5}" text-anchor="middle">'
                   f'{_e(xfmt(v, xstep))}</text>')
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{AXIS}"/>'
               f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{AXIS}"/>')
    if xlabel:
        out.append(f'<text x="{(left + right) / 2:.0f}" y="{bottom + 2 * FONT + 10}" text-anchor="middle">'
                   f'{_e(xlabel)}</text>')
    mid = (top + bottom) / 2
    out.append(f'<text x="{FONT + 2}" y="{mid:.0f}" text-anchor="middle" transform="rotate(-90 {FONT + 2} {mid:.0f})">'
               f'{_e(ylabel)}</text>')
    return out


# --- curves ---------------------------------------------------------------------------------------
Run = tuple[Any, list[list[float]]]  # (seed, [[step, value], ...])


def _v(value: float) -> str:
    return f"{value:.4g}"


def _sampled(steps: list[float], count: int, offset: float = 0.0) -> list[float]:
    """About `count` of `steps`, evenly spread (the last always among them); `offset` in [0, 1) shifts
    the picks by that fraction of their spacing."""
    if len(steps) <= count:
        return steps
    gap = (len(steps) - 1) / (count - 1)
    picks = {min(len(steps) - 1, round(i * gap + offset * gap)) for i in range(count)}
    return [steps[i] for i in sorted(picks | {len(steps) - 1})]


def _at_step(name: str, runs: list[Run], step: float, where: str = "") -> str:
    """A leg's mean and each seed's value at `step`, one line: what a hover title says of the leg."""
    values = [(seed, y) for seed, run in runs for x, y in run if x == step]
    if not values:
        return f"{name}{where}: no value"
    mean = sum(y for _, y in values) / len(values)
    return f"{name}{where}: mean {_v(mean)} (" + ", ".join(f"seed {seed}: {_v(y)}" for seed, y in values) + ")"


def line_chart(title: str, series: list[tuple[str, str, list[Run]]], xlabel: str, ylabel: str,
               w: int = 480, h: int = 300, note: str = "") -> str:
    """series: (leg, colour, runs) in the legs' order, each run (seed, [[step, value], ...]). Per leg:
    the range across seeds as a faint band with an outline in the leg's dash, each seed as a thin line,
    the mean as a thick line in the leg's dash with its marker at a few steps; all bands are drawn
    before any line so no leg's band hides another's curve. Hovering a step shows every leg's mean and
    each seed's value there (`<title>`); hovering a marker, that leg's."""
    finite = [[[x, y] for x, y in run if _finite(x) and _finite(y)] for _, _, runs in series for _, run in runs]
    pts = [(p[0], p[1]) for run in finite for p in run]
    if not pts:
        return no_data(title)
    clean: list[tuple[str, str, list[Run]]] = []
    it = iter(finite)
    for name, colour, runs in series:
        clean.append((name, colour, [(seed, next(it)) for seed, _ in runs]))
    styles = [leg_style(i) for i in range(len(clean))]
    items = [(f"{name} ({len(runs)} seed{'s' if len(runs) != 1 else ''})",
              _swatch_band(colour, styles[i].dash, styles[i].marker), name)
             for i, (name, colour, runs) in enumerate(clean)]
    yt, ty, yfmt, suffix, axis_note = y_axis(pts)
    left = _left_for([yfmt(v, yt[1] - yt[0] if len(yt) > 1 else 1.0) for v in yt])
    leg_svg, top = legend(items, left, FONT + 4, w - 10)
    box = (left, top + 6, w - 14, h - 2 * FONT - 20)
    xt = nice_ticks(min(p[0] for p in pts), max(p[0] for p in pts), 5, integer=True)
    ptop, right, bottom = box[1:]
    sx = _scale(xt[0], xt[-1], left, right)
    sy0 = _scale(ty(yt[0]), ty(yt[-1]), bottom, ptop)

    def sy(v: float) -> float:
        return sy0(ty(v))

    body = _axes(box, xt, yt, ty, xlabel, ylabel + suffix, tick_label, yfmt)
    clip = f"clip-{_slug(title)}"
    defs = (f'<clipPath id="{clip}"><rect x="{left}" y="{ptop}" width="{right - left}" '
            f'height="{bottom - ptop}"/></clipPath>')
    quiet = 'pointer-events="none"'  # lines and bands let the hover reach the step columns under them
    bands, seeds, means, marks = [], [], [], []
    for i, (name, colour, runs) in enumerate(clean):
        dash, shape = styles[i].dash, styles[i].marker
        by_step: dict[float, list[float]] = {}
        for _, run in runs:
            for x, y in run:
                by_step.setdefault(x, []).append(y)
        steps = sorted(by_step)
        leg = f'data-leg="{_e(name)}"'
        multi = [x for x in steps if len(by_step[x]) > 1]
        if len(multi) > 1:
            upper = " ".join(f"{sx(x):.1f},{sy(max(by_step[x])):.1f}" for x in multi)
            lower = " ".join(f"{sx(x):.1f},{sy(min(by_step[x])):.1f}" for x in reversed(multi))
            bands.append(f'<polygon {leg} points="{upper} {lower}" fill="{colour}" fill-opacity="{BAND_OPACITY}" '
                         f'stroke="{colour}" stroke-width="1.2" stroke-dasharray="{dash}" {quiet}/>')
        # one seed: its line is the only one, drawn at full strength in the leg's dash
        thin = ('stroke-width="0.9" stroke-opacity="0.35"' if len(runs) > 1
                else f'stroke-width="2.2" stroke-dasharray="{dash}"')
        for _, run in runs:
            if len(run) > 1:
                path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in run)
                seeds.append(f'<polyline {leg} points="{path}" fill="none" stroke="{colour}" {thin} {quiet}/>')
        if len(runs) > 1 and len(steps) > 1:
            path = " ".join(f"{sx(x):.1f},{sy(sum(by_step[x]) / len(by_step[x])):.1f}" for x in steps)
            means.append(f'<polyline {leg} points="{path}" fill="none" stroke="{colour}" stroke-width="2.4" '
                         f'stroke-dasharray="{dash}" {quiet}/>')
        # The leg's marker on its mean at a few steps (every step where there are few), each titled.
        for x in _sampled(steps, MARKS_PER_LEG, offset=i / max(2, len(clean)) if len(steps) > MARKS_PER_LEG else 0):
            mean = sum(by_step[x]) / len(by_step[x])
            marks.append(f'<path {leg} data-marker="{shape}" d="{marker(shape, sx(x), sy(mean))}" fill="{colour}" '
                         f'stroke="#fff" stroke-width="0.9"><title>{_e(_at_step(name, runs, x, f" at step {x:g}"))}'
                         '</title></path>')
        if len(steps) == 1:  # a single evaluation: each seed as a dot, as there is no line to draw
            for seed, run in runs:
                for x, y in run:
                    seeds.append(f'<circle {leg} cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.6" fill="{colour}" '
                                 f'fill-opacity="0.5"><title>{_e(name)} seed {_e(seed)}: {_v(y)}</title></circle>')
    every_step = sorted({x for _, _, runs in clean for _, run in runs for x, _ in run})
    shown = _sampled(every_step, HOVER_COLUMNS)
    columns = []
    for j, x in enumerate(shown):
        x0 = left if j == 0 else (sx(shown[j - 1]) + sx(x)) / 2
        x1 = right if j == len(shown) - 1 else (sx(x) + sx(shown[j + 1])) / 2
        lines = "\n".join(_at_step(name, runs, x) for name, _, runs in clean)
        columns.append(f'<rect data-step="{x:g}" x="{x0:.1f}" y="{ptop}" width="{max(0.1, x1 - x0):.1f}" '
                       f'height="{bottom - ptop}" fill="#fff" fill-opacity="0"><title>step {x:g}\n'
                       f'{_e(lines)}</title></rect>')
    body.append(f'<g clip-path="url(#{clip})">' + "".join(bands + columns + seeds + means + marks) + "</g>")
    body += leg_svg
    note = "; ".join(n for n in (note, "band: range across seeds; thick line: mean; thin lines: seeds; "
                                       "hover for each seed's value", axis_note) if n)
    return figure(title, w, h, body, note=note, defs=defs)


# --- bars -----------------------------------------------------------------------------------------
def _bar_frame(w: int, h: int, n: int, top_value: float, money: bool, tick_fmt: TickFmt, unit: str, top: float):
    yt = nice_ticks(0, top_value or 1.0, 4, multiples=(1, 2, 5, 10) if money else (1, 2, 2.5, 5, 10))
    step = yt[1] - yt[0] if len(yt) > 1 else 1.0
    left, right, bottom = _left_for([tick_fmt(v, step) for v in yt]), w - 12, h - FONT - 26
    sy = _scale(0, yt[-1], bottom, top)
    body = [f'<line x1="{left}" y1="{sy(v):.1f}" x2="{right}" y2="{sy(v):.1f}" stroke="{GRID}"/>'
            f'<text data-axis="y" x="{left - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{_e(tick_fmt(v, step))}</text>'
            for v in yt]
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{AXIS}"/>')
    mid = (top + bottom) / 2
    body.append(f'<text x="{FONT + 2}" y="{mid:.0f}" text-anchor="middle" transform="rotate(-90 {FONT + 2} {mid:.0f})">'
                f'{_e(unit)}</text>')
    slot = (right - left) / max(1, n)
    return body, sy, left, slot, min(90.0, slot * 0.55), bottom


def _spread(body: list[str], leg: str, cx: float, bw: float, values: list[float], sy, colour: str) -> None:
    """Per-seed values as dots over a min-max whisker."""
    if len(values) > 1:
        lo, hi = sy(min(values)), sy(max(values))
        body.append(f'<g data-whisker="{_e(leg)}" stroke="{INK}" stroke-width="1.2">'
                    f'<line x1="{cx:.1f}" y1="{lo:.1f}" x2="{cx:.1f}" y2="{hi:.1f}"/>'
                    f'<line x1="{cx - 7:.1f}" y1="{lo:.1f}" x2="{cx + 7:.1f}" y2="{lo:.1f}"/>'
                    f'<line x1="{cx - 7:.1f}" y1="{hi:.1f}" x2="{cx + 7:.1f}" y2="{hi:.1f}"/></g>')
    for j, v in enumerate(values):
        dx = (j - (len(values) - 1) / 2) * min(6.0, bw * 0.6 / max(1, len(values)))
        body.append(f'<circle data-seed="{_e(leg)}" cx="{cx + dx:.1f}" cy="{sy(v):.1f}" r="3.2" fill="#fff" '
                    f'stroke="{INK}" stroke-width="1.2"/>')


def bar_chart(title: str, bars: list[tuple[str, str, float | None, list[float]]], unit: str, value_fmt: Fmt,
              tick_fmt: TickFmt = tick_label, *, money: bool = False, w: int = 480, h: int = 280,
              emulated: str = "") -> str:
    """bars: (leg, colour, mean, per-seed values). The bar is the mean; each seed is a dot and
    the seeds' range a whisker, so the spread behind a difference is in view."""
    bars = [(leg, colour, mean if _finite(mean) else None, [v for v in seeds if _finite(v)])
            for leg, colour, mean, seeds in bars]
    shown = [b for b in bars if b[2] is not None]
    if not shown:
        return no_data(title, "no leg reported this")
    top_value = max([b[2] or 0 for b in shown] + [v for b in shown for v in b[3]])
    body, sy, left, slot, bw, bottom = _bar_frame(w, h, len(bars), top_value, money, tick_fmt, unit, FONT + 14)
    for i, (leg, colour, mean, seeds) in enumerate(bars):
        cx = left + slot * (i + 0.5)
        body.append(_label(cx, bottom + FONT + 5, leg, slot - 4))
        if mean is None:
            body.append(f'<text x="{cx:.1f}" y="{bottom - 6}" text-anchor="middle">-</text>')
            continue
        body.append(f'<rect data-leg="{_e(leg)}" x="{cx - bw / 2:.1f}" y="{sy(mean):.1f}" width="{bw:.1f}" '
                    f'height="{bottom - sy(mean):.1f}" fill="{colour}" fill-opacity="0.85">'
                    f'<title>{_e(leg)}: {_e(value_fmt(mean))} (mean of {len(seeds)})</title></rect>')
        _spread(body, leg, cx, bw, seeds, sy, colour)
        label_y = sy(max([mean] + seeds)) - 7
        body.append(f'<text x="{cx:.1f}" y="{label_y:.1f}" text-anchor="middle" font-weight="600">'
                    f'{_e(value_fmt(mean))}</text>')
    return figure(title, w, h, body, note="bar: mean; dots: seeds; whisker: range across seeds", emulated=emulated)


PART_STYLES = ["solid", "hatch", "light"]


def _part_fill(style: str, colour: str, pid: str) -> str:
    if style == "solid":
        return f'fill="{colour}" fill-opacity="0.85"'
    if style == "hatch":
        return f'fill="url(#{pid})"'
    return f'fill="{colour}" fill-opacity="0.25"'


def _hatch(pid: str, colour: str) -> str:
    return (f'<pattern id="{pid}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
            f'<rect width="6" height="6" fill="{colour}" fill-opacity="0.3"/>'
            f'<line x1="0" y1="0" x2="0" y2="6" stroke="{colour}" stroke-width="3.2"/></pattern>')


def stacked_bar_chart(title: str, parts: list[str], bars: list[tuple[str, str, list[float], list[float]]],
                      unit: str, value_fmt: Fmt, *, w: int = 480, h: int = 280, emulated: str = "") -> str:
    """bars: (leg, colour, one value per part, per-seed totals). Parts keep the leg's colour and
    differ by fill (solid, hatched, light) so colour still means the leg; the legend is grey."""
    bars = [(leg, colour, [v if _finite(v) else 0.0 for v in values], [t for t in totals if _finite(t)])
            for leg, colour, values, totals in bars]
    if not any(sum(v) > 0 for _, _, v, _ in bars):
        return no_data(title, "no leg reported this")
    items = [(p, _swatch_box(*_legend_fill(PART_STYLES[j], f"hatch-{_slug(title)}-legend")), None)
             for j, p in enumerate(parts)]
    leg_svg, top = legend(items, 64, FONT + 4, w - 10)
    top_value = max([sum(v) for _, _, v, _ in bars] + [t for *_, ts in bars for t in ts])
    body, sy, left, slot, bw, bottom = _bar_frame(w, h, len(bars), top_value, False, tick_label, unit, top + 14)
    defs = [_hatch(f"hatch-{_slug(title)}-legend", "#6e7781")]
    for i, (leg, colour, values, totals) in enumerate(bars):
        cx = left + slot * (i + 0.5)
        pid = f"hatch-{_slug(title)}-{i}"
        defs.append(_hatch(pid, colour))
        body.append(_label(cx, bottom + FONT + 5, leg, slot - 4))
        base = 0.0
        for j, (part, value) in enumerate(zip(parts, values, strict=True)):
            if value <= 0:
                continue
            y0, y1 = sy(base), sy(base + value)
            body.append(f'<rect data-leg="{_e(leg)}" x="{cx - bw / 2:.1f}" y="{y1:.1f}" width="{bw:.1f}" '
                        f'height="{y0 - y1:.1f}" {_part_fill(PART_STYLES[j % 3], colour, pid)} stroke="{colour}">'
                        f'<title>{_e(leg)} {_e(part)}: {_e(value_fmt(value))}</title></rect>')
            base += value
        _spread(body, leg, cx, bw, totals, sy, colour)
        body.append(f'<text x="{cx:.1f}" y="{sy(max([base] + totals)) - 7:.1f}" text-anchor="middle" '
                    f'font-weight="600">{_e(value_fmt(base))}</text>')
    body += leg_svg
    return figure(title, w, h, body, note="dots and whisker: each seed's wall time", defs="".join(defs),
                  emulated=emulated)


def _legend_fill(style: str, pid: str) -> tuple[str, str]:
    grey = "#6e7781"
    if style == "hatch":
        return f"url(#{pid})", f'stroke="{grey}"'
    return grey, f'fill-opacity="{0.85 if style == "solid" else 0.25}" stroke="{grey}"'


# --- the decision --------------------------------------------------------------------------------
def _level(ci_level: float) -> str:
    """An interval's level as the checks word it: 90, 93.9 (stage 1 of the two-stage design)."""
    pct = round(float(ci_level) * 100, 1)
    return f"{pct:g}"


def decision_chart(ev: Evaluation, colours: dict[str, str], w: int = 520) -> str:
    """Each leg's confidence interval of the difference from the baseline against the shaded
    +/- margin band (the region a pass must lie in), with the per-seed differences as dots."""
    p = ev["parity"]
    checks = [c for c in ev["checks"] if c["name"].startswith("parity:") and c.get("ci")]
    if not checks:
        return ""
    test = test_of(p.get("test") or EQUIVALENCE)
    names = [c["name"][len("parity:"):].split("~")[0] for c in checks]
    row, top = 50, 8
    # Room on the left for the longest leg name (after its swatch) and the longest outcome word,
    # in bold ("inconclusive" was clipped to "conclusive" with a fixed 80 px).
    label = max([len(n) * FONT * 0.6 + 30 for n in names] + [len(str(c.get("status"))) * FONT * 0.68 + 14
                                                             for c in checks])
    m = round(min(w * 0.4, max(80.0, label)))
    h = top + row * len(checks) + 2 * FONT + 26
    values = [v for c in checks for v in (*c["ci"], *(d for _, d in c.get("per_seed_diffs") or []))]
    reach = max([abs(v) for v in values if _finite(v)] + [1.25 * c["margin"] for c in checks if _finite(c["margin"])],
                default=1.0)
    reach = reach if math.isfinite(reach) else sys.float_info.max
    xt = nice_ticks(-reach, reach, 7)
    right = w - 30  # room for the last tick's label
    sx = _scale(xt[0], xt[-1], m, right)
    bottom = top + row * len(checks)
    step = xt[1] - xt[0]
    body = [f'<line x1="{sx(v):.1f}" y1="{top}" x2="{sx(v):.1f}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text data-axis="x" x="{sx(v):.1f}" y="{bottom + FONT + 5}" text-anchor="middle">'
            f'{tick_label(v, step)}</text>'
            for v in xt]
    body.append(f'<line x1="{sx(0):.1f}" y1="{top}" x2="{sx(0):.1f}" y2="{bottom}" stroke="{AXIS}"/>'
                f'<line x1="{m}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{AXIS}"/>')
    worse_right = p.get("direction", "minimize") == "minimize"
    for i, c in enumerate(checks):
        y = top + row * i + row / 2 - 4
        mg = c["margin"]
        x0, x1 = (sx(v) for v in test.pass_span(mg, worse_right, xt[0], xt[-1]))
        body.append(f'<rect x="{x0:.1f}" y="{y - row / 2 + 8:.1f}" width="{x1 - x0:.1f}" height="{row - 10}" '
                    f'fill="{PASS_BAND}" fill-opacity="0.15"><title>pass region: '
                    f'{_e(test.pass_region(mg, worse_right))}</title></rect>')
        leg = c["name"][len("parity:"):].split("~")[0]
        colour = colours.get(leg, AXIS)
        lo, hi = c["ci"]
        tag = f'data-leg="{_e(leg)}"'
        body.append(f'<line {tag} x1="{sx(lo):.1f}" y1="{y:.1f}" x2="{sx(hi):.1f}" y2="{y:.1f}" stroke="{colour}" '
                    f'stroke-width="6"><title>{_level(c["ci_level"])}% CI [{lo:+.4g}, {hi:+.4g}]</title>'
                    f'</line><line x1="{sx(c["diff"]):.1f}" y1="{y - 10:.1f}" x2="{sx(c["diff"]):.1f}" '
                    f'y2="{y + 10:.1f}" stroke="{INK}" stroke-width="2"/>')
        placed: list[float] = []
        for seed, d in c.get("per_seed_diffs") or []:
            if not math.isfinite(d):
                continue
            stack = min(3, sum(abs(sx(d) - x) < 5 for x in placed))  # equal differences stack, not hide
            placed.append(sx(d))
            body.append(f'<circle {tag} cx="{sx(d):.1f}" cy="{y + 14 + 5 * stack:.1f}" r="3.5" fill="{colour}" '
                        f'stroke="{INK}" stroke-width="0.8"><title>seed {seed}: {d:+.4g}</title></circle>')
        status = c["status"]
        figures = ev["legs"].get(leg)
        voided = (figures.get("voided_by") if figures else None) or []
        word, shade = ("void", OUTCOME_COLOUR["failed"]) if voided else (status, OUTCOME_COLOUR.get(status, AXIS))
        why = f"<title>{_e(status)} on {_e(p['metric'])}, but void: {_e(', '.join(voided))} failed</title>" \
            if voided else ""
        body.append(f'<rect {tag} x="{m - 16}" y="{y - 12:.1f}" width="9" height="9" fill="{colour}"/>'
                    + _label(m - 22, y - 3, leg, m - 26, "end", ' font-weight="600"')
                    + f'<text x="{m - 8}" y="{y + 13:.1f}" text-anchor="end" font-weight="600" '
                    f'fill="{shade}">{_e(word)}{why}</text>')
    side = "worse" if worse_right else "better"
    body.append(f'<text x="{(w + m) / 2:.0f}" y="{h - 6}" text-anchor="middle">{_e(p["metric"])}: leg - '
                f'{_e(p["baseline"])} (right: leg {side})</text>')
    level = _level(checks[0]["ci_level"])
    note = (f"bar: {level}% CI of the difference; tick: its mean; dots: per-seed paired differences; "
            f"green: pass region ({test.pass_region(checks[0]['margin'], worse_right)})")
    return figure(f"The decision: each leg's difference from {p['baseline']} against the margin", w, h, body,
                  note=note)



# --- the payback --------------------------------------------------------------------------------
PAYBACK_RUNS_CAP = 200  # beyond this many production runs a payback is no longer a plan to draw


class Payback(TypedDict):
    """One comparison's cumulative net saving: after run n it is first + (n - 1) x each, for the mean
    and each end of the interval (None where there is no interval), the porting cost already taken
    off `first`; `runs`: the break-even, None where it never comes."""
    label: str
    leg: str
    colour: str
    first: tuple[float, float | None, float | None]
    each: tuple[float, float | None, float | None]
    runs: float | None


def payback_horizon(break_evens: Sequence[float | None], runs_per_period: float) -> int:
    """How many production runs the payback figure spans: twice the furthest break-even and twice a
    period's runs, at least 8, at most PAYBACK_RUNS_CAP, ended on a round tick."""
    furthest = max([float(b) for b in break_evens if b is not None and _finite(b)] or [0.0])
    period = 2 * runs_per_period if _finite(runs_per_period) else 0.0
    return int(nice_ticks(0, min(PAYBACK_RUNS_CAP, max(2 * furthest, period, 8.0)), 6, integer=True)[-1])


def money_tick_whole(v: float, step: float) -> str:
    """A money tick without cents once the step is whole dollars: "$5,000" reads faster than "$5,000.00"."""
    if step < 1:
        return money_tick(v, step)
    return ("-" if v < 0 and abs(v) >= step * 1e-6 else "") + "$" + tick_label(abs(v), step)


def _payback_ends(p: Payback, horizon: int) -> list[tuple[float, float] | None]:
    """The mean's, the low end's and the high end's net saving after run 1 and after `horizon` runs."""
    out: list[tuple[float, float] | None] = []
    for first, each in zip(p["first"], p["each"], strict=True):
        if first is not None and each is not None and _finite(first) and _finite(each):
            out.append((first, first + (horizon - 1) * each))
        else:
            out.append(None)
    return out


def payback_chart(title: str, lines: Sequence[Payback], horizon: int, note: str = "", *, w: int = 560,
                  h: int = 320, emulated: str = "") -> str:
    """Cumulative net saving against production runs: per comparison its mean as a line and its
    interval as a shaded band (every band drawn before any line), the zero line, and each break-even
    that falls on the chart marked and labelled."""
    drawn = [(p, ends) for p in lines if (ends := _payback_ends(p, horizon))[0] is not None]
    if not drawn:
        return no_data(title, "no comparison has a saving to draw")
    values = [v for _, ends in drawn for pair in ends if pair for v in pair]
    yt = nice_ticks(min(values + [0.0]), max(values + [0.0]), 5, multiples=(1, 2, 5, 10))
    ystep = yt[1] - yt[0] if len(yt) > 1 else 1.0
    left = _left_for([money_tick_whole(v, ystep) for v in yt])
    items = [(p["label"], _swatch_band(p["colour"], DASHES[i % len(DASHES)]), p["leg"])
             for i, (p, _) in enumerate(drawn)]
    leg_svg, top = legend(items, left, FONT + 4, w - 10)
    box = (left, top + 6, w - 16, h - 2 * FONT - 20)
    ptop, right, bottom = box[1:]
    # Run 1 is the first tick: there is no run 0 to save on.
    xt = [1.0] + [t for t in nice_ticks(0, horizon, 6, integer=True) if 1 < t <= horizon]
    body = _axes(box, xt, yt, float, "production runs", "cumulative net saving", tick_label, money_tick_whole)
    sx, sy = _scale(1, horizon, left, right), _scale(yt[0], yt[-1], bottom, ptop)
    x1, xh = sx(1), sx(horizon)
    clip = f"clip-{_slug(title)}"
    defs = (f'<clipPath id="{clip}"><rect x="{left}" y="{ptop}" width="{right - left}" '
            f'height="{bottom - ptop}"/></clipPath>')
    bands, means, marks = [], [], []
    for i, (p, (mean, low, high)) in enumerate(drawn):
        tag, colour = f'data-leg="{_e(p["leg"])}"', p["colour"]
        if low and high:
            bands.append(f'<polygon {tag} data-band="interval" points="{x1:.1f},{sy(low[0]):.1f} '
                         f'{xh:.1f},{sy(low[1]):.1f} {xh:.1f},{sy(high[1]):.1f} {x1:.1f},{sy(high[0]):.1f}" '
                         f'fill="{colour}" fill-opacity="0.16" stroke="{colour}" stroke-width="1" '
                         f'stroke-dasharray="{DASHES[i % len(DASHES)]}"/>')
        assert mean is not None  # drawn keeps only the lines with a mean
        means.append(f'<polyline {tag} points="{x1:.1f},{sy(mean[0]):.1f} {xh:.1f},{sy(mean[1]):.1f}" '
                     f'fill="none" stroke="{colour}" stroke-width="2.4"/>')
        n = p["runs"]
        if n is None or not _finite(n) or not 1 <= n <= horizon:
            continue
        x, text = sx(n), f"pays back after {n:.0f} run{'' if n == 1 else 's'}"
        y_at = mean[0] + (n - 1) * (mean[1] - mean[0]) / max(1, horizon - 1)
        ty = ptop + FONT + 2 + i * (FONT + 6)
        anchor, dx = ("start", 7) if x < (left + right) / 2 else ("end", -7)
        marks.append(f'<g data-break-even="{n:.0f}" {tag}><line x1="{x:.1f}" y1="{ptop}" x2="{x:.1f}" '
                     f'y2="{bottom}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="5,3"/>'
                     f'<circle cx="{x:.1f}" cy="{sy(y_at):.1f}" r="4.5" fill="#fff" stroke="{colour}" '
                     f'stroke-width="2"/><text x="{x + dx:.1f}" y="{ty:.1f}" text-anchor="{anchor}" '
                     f'font-weight="600" paint-order="stroke" stroke="#fff" stroke-width="4">{_e(text)}</text></g>')
    zero = (f'<line data-zero="1" x1="{left}" y1="{sy(0):.1f}" x2="{right}" y2="{sy(0):.1f}" stroke="{INK}" '
            'stroke-width="1.3"/>')
    body.append(f'<g clip-path="url(#{clip})">' + "".join(bands) + zero + "".join(means) + "</g>")
    body += marks + leg_svg
    return figure(title, w, h, body, note=note, defs=defs, emulated=emulated)
