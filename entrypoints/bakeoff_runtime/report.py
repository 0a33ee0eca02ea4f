"""The report a decision is made on: report.html (one self-contained file, opens
offline, plots as inline SVG) and report.md, both from evaluation.json alone.

No plotting library: the charts are a few lines of SVG each, so the evaluation step
runs in any image and the file opens anywhere.
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]


# --- numbers ------------------------------------------------------------------------------
def num(v, fmt="{:.4g}", none="-") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return none
    return fmt.format(v)


def usd(v) -> str:
    """One money format: dollars and cents, sub-cent amounts to three significant figures."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"${v:,.2f}" if abs(v) >= 0.01 or v == 0 else f"${v:.3g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0) * 0.1
    raw = (hi - lo) / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 12))
    return ticks


def tick_label(v: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    if step >= 1 and abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{decimals}f}"


def size(v) -> str:
    if not v:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024:
            return f"{v:.0f} {unit}"
        v /= 1024
    return f"{v:.0f} PiB"


def _emulated(ev: dict[str, Any]) -> bool:
    return bool((ev.get("speed") or {}).get("emulated"))


EMULATED = "emulated: not indicative of the target hardware"


def verdict_sentence(ev: dict[str, Any]) -> str:
    """The decision in words: what was shown, what broke, what would decide it."""
    base = ev["parity"]["baseline"]
    head = {"pass": "Parity holds", "fail": "Parity fails", "inconclusive": "Inconclusive"}[ev["verdict"]]
    parts = []
    for c in ev["checks"]:
        if c["name"].startswith("parity:"):
            leg = c["name"][len("parity:"):].split("~")[0]
            why = c["why"].split("; ")[0] if c.get("recommendation") else c["why"]
            parts.append(f"{leg} vs {base}: {why}")
        elif c["status"] != "passed":
            parts.append(c["why"])
    text = f"{head}: " + "; ".join(parts) + "."
    rec = ev.get("recommendation")
    if rec:
        text += f" To decide it: {rec['why']}."
    rule = ev.get("rule") or {}
    if rule.get("changed"):
        text += (" Decided under a parity rule changed after the data (original: "
                 + _rule_text(rule["original"]) + f"; reason: {rule.get('reason')}).")
    costs = [(n, f.get("cost_per_run_usd_mean")) for n, f in ev["legs"].items() if f.get("cost_per_run_usd_mean")]
    if _emulated(ev):
        text += f" Speed and cost here are {EMULATED}; no cheapest leg is named from an emulation."
    elif len(costs) > 1:
        cheapest = min(costs, key=lambda c: c[1])
        text += (f" Cheapest per run: {cheapest[0]} (" + ", ".join(f"{n} {usd(c)}" for n, c in costs) + ").")
    return text


def _rule_text(rule: dict[str, Any]) -> str:
    return (f"{rule.get('test', 'equivalence')} on {rule.get('metric')} ({rule.get('direction')}), margin "
            f"{rule.get('margin')} {rule.get('margin_type', 'absolute')}, alpha {rule.get('alpha')}, baseline "
            f"{rule.get('baseline')}")


# --- rows of the per-leg table --------------------------------------------------------------
def leg_rows(ev: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(label, one cell per leg). Rows whose every cell is empty are left out; speed and
    cost rows say when they come from an emulation."""
    metric = ev["parity"]["metric"]
    legs = ev["legs"]
    emu = " (emulated)" if _emulated(ev) else ""

    def cache(f, state, key):
        c = f.get("compile_cache") or {}
        return num(c.get(f"{key}_{state}"), "{:.1f} s") + (f" ({c.get(f'{state}_runs')})" if c else "")

    def ci(f):
        m = f["metric"]
        return f"[{num(m['ci95'][0])}, {num(m['ci95'][1])}]" if m.get("ci95") else "-"

    def throughput(f):
        t = f.get("throughput") or {}
        if t.get("mean") is None:
            return "-"
        text = f"{t['mean']:,.0f} {f.get('throughput_unit', '')}"
        if t.get("n", 0) > 1:
            text += f" ({t['min']:,.0f} to {t['max']:,.0f})"
        if t.get("unstable"):
            text += " VARIES >20%"
        return text

    def to_target(f, key):
        frac = f.get("reached_target_fraction")
        if frac is None or not f["runs"]:
            return "-"
        reached = f"{f.get('reached_target', 0)}/{len(f['runs'])} reached"
        mean = f.get(f"{key}_of_reached")
        if mean is None:
            return reached
        value = usd(mean) if key.startswith("cost") else f"{mean:.0f}"
        return value + (f" ({reached}; mean of those)" if frac < 1 else "")

    spec = [
        ("instance", lambda f: f"{f.get('instance_count', 1)} x {f['instance_type']}"),
        ("runs on", lambda f: f.get("emulated_on") or "SageMaker"),
        ("backend / precision", lambda f: f"{f['backend']} / {f.get('precision') or '-'}"),
        ("devices", lambda f: num(f.get("devices"), "{:d}")),
        ("seeds (completed)", lambda f: f"{len(f['runs'])} ({f['completed']})"),
        (f"{metric} mean", lambda f: num(f["metric"].get("mean"))),
        (f"{metric} 95% CI", ci),
        (f"{metric} CV across seeds", lambda f: num(f["metric"].get("cv"), "{:.2%}")),
        ("steady-state throughput" + emu, throughput),
        ("time to first step" + emu, lambda f: num(f.get("time_to_first_step_s_mean"), "{:.1f} s")),
        ("time to first step cold (runs)" + emu, lambda f: cache(f, "cold", "time_to_first_step_s")),
        ("time to first step warm (runs)" + emu, lambda f: cache(f, "warm", "time_to_first_step_s")),
        ("compile time" + emu, lambda f: (num((f.get("compile_cache") or {}).get("compile_time_s_cold"), "{:.1f} s")
                                          + " cold / " + num((f.get("compile_cache") or {}).get("compile_time_s_warm"), "{:.1f} s") + " warm")
         if f.get("compile_cache") else num(f.get("compile_time_s_mean"), "{:.1f} s")),
        ("peak device memory", lambda f: size(f.get("peak_device_memory_bytes_max"))),
        ("peak host memory", lambda f: size(f.get("peak_host_memory_bytes_max"))),
        ("wall time" + emu, lambda f: num(f.get("wall_time_s_mean"), "{:.0f} s")),
        ("billable time" + emu, lambda f: num(f.get("billable_s_mean"), "{:.0f} s")),
        ("price per instance-hour", lambda f: usd((f.get("price") or {}).get("usd_per_hour"))),
        ("cost per run" + emu, lambda f: usd(f.get("cost_per_run_usd_mean"))),
        ("cost per million " + next((f.get("throughput_unit", "tokens/s").split("/")[0] for f in legs.values()), "tokens")
         + emu, lambda f: usd(f.get("cost_per_million_units_usd_mean"))),
        ("steps to target", lambda f: to_target(f, "steps_to_target_mean")),
        ("cost to reach target" + emu, lambda f: to_target(f, "cost_to_target_usd_mean")),
        ("failed / diverged / lost runs", lambda f: f"{f['failed']} / {f['diverged']} / {f.get('lost', 0)}"),
        ("parity", lambda f: f.get("parity", "baseline")),
    ]
    rows = [(label, [get(f) for f in legs.values()]) for label, get in spec]
    return [(label, cells) for label, cells in rows if any(c.strip("- ") for c in cells)]


# --- SVG ---------------------------------------------------------------------------------------
def _scale(lo, hi, a, b):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _axes(w, h, m, xticks, yticks, xlabel, ylabel) -> list[str]:
    """Axes with round tick values; the ticks' ends are the plot's range."""
    sx = _scale(xticks[0], xticks[-1], m, w - 10)
    sy = _scale(yticks[0], yticks[-1], h - m, 10)
    out = [f'<line x1="{m}" y1="{h - m}" x2="{w - 10}" y2="{h - m}" stroke="#444"/>',
           f'<line x1="{m}" y1="10" x2="{m}" y2="{h - m}" stroke="#444"/>']
    ystep = yticks[1] - yticks[0] if len(yticks) > 1 else 1.0
    xstep = xticks[1] - xticks[0] if len(xticks) > 1 else 1.0
    for yv in yticks:
        y = sy(yv)
        out.append(f'<text x="{m - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{tick_label(yv, ystep)}</text>')
        out.append(f'<line x1="{m}" y1="{y:.1f}" x2="{w - 10}" y2="{y:.1f}" stroke="#eee"/>')
    for xv in xticks:
        out.append(f'<text x="{sx(xv):.1f}" y="{h - m + 14}" font-size="10" text-anchor="middle">'
                   f'{tick_label(xv, xstep)}</text>')
    out.append(f'<text x="{(w + m) / 2:.0f}" y="{h - 4}" font-size="11" text-anchor="middle">{html.escape(xlabel)}</text>')
    out.append(f'<text x="12" y="{h / 2:.0f}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {h / 2:.0f})">{html.escape(ylabel)}</text>')
    return out


def _figure(title: str, w: int, h: int, body: list[str], note: str = "") -> str:
    caption = html.escape(title) + (f' <span class="note">{html.escape(note)}</span>' if note else "")
    return (f'<figure><figcaption>{caption}</figcaption><svg class="chart" viewBox="0 0 {w} {h}" '
            f'width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">{"".join(body)}</svg></figure>')


def line_chart(title: str, series: list[tuple[str, str, list[list[list[float]]]]], xlabel: str, ylabel: str,
               w: int = 560, h: int = 300, trim_start: float = 0.0) -> str:
    """Each series: (label, colour, runs); every run a thin line, the seeds' range a band.
    `trim_start`: the y range is fitted to steps after this fraction of the run, so a high
    first loss does not flatten the rest (points above it are clipped, and the axis says so)."""
    pts = [p for _, _, runs in series for run in runs for p in run]
    if not pts:
        return f'<svg class="chart" width="{w}" height="60"><text x="10" y="30">{html.escape(title)}: no data</text></svg>'
    m = 56
    xlo, xhi = min(p[0] for p in pts), max(p[0] for p in pts)
    cut = xlo + (xhi - xlo) * trim_start
    fit = [p[1] for p in pts if p[0] >= cut] or [p[1] for p in pts]
    trimmed = trim_start > 0 and max(p[1] for p in pts) > max(fit)
    xt, yt = nice_ticks(xlo, xhi), nice_ticks(min(fit), max(fit))
    sx, sy = _scale(xt[0], xt[-1], m, w - 10), _scale(yt[0], yt[-1], h - m, 10)
    clip = lambda y: min(max(y, yt[0]), yt[-1])  # noqa: E731
    label = ylabel + (f" (range fitted from step {cut:.0f}; earlier values clipped)" if trimmed else "")
    body = _axes(w, h, m, xt, yt, xlabel, label)
    for i, (name, colour, runs) in enumerate(series):
        by_step: dict[float, list[float]] = {}
        for run in runs:
            for x, y in run:
                by_step.setdefault(x, []).append(y)
        steps = sorted(k for k, v in by_step.items() if len(v) > 1)
        if steps:
            upper = " ".join(f"{sx(x):.1f},{sy(clip(max(by_step[x]))):.1f}" for x in steps)
            lower = " ".join(f"{sx(x):.1f},{sy(clip(min(by_step[x]))):.1f}" for x in reversed(steps))
            body.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.12" stroke="{colour}" '
                        f'stroke-opacity="0.35" stroke-dasharray="{2 + 2 * i},2"/>')
        for run in runs:
            if len(run) > 1:
                path = " ".join(f"{sx(x):.1f},{sy(clip(y)):.1f}" for x, y in run)
                body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.4" opacity="0.85"/>')
            elif run:
                body.append(f'<circle cx="{sx(run[0][0]):.1f}" cy="{sy(clip(run[0][1])):.1f}" r="3" fill="{colour}"/>')
        body.append(f'<rect x="{w - 150}" y="{14 + 16 * i}" width="10" height="10" fill="{colour}"/>'
                    f'<text x="{w - 135}" y="{23 + 16 * i}" font-size="11">{html.escape(name)} ({len(runs)} seeds)</text>')
    return _figure(title, w, h, body)


def bar_chart(title: str, bars: list[tuple[str, str, list[tuple[str, float, str]]]], unit: str,
              w: int = 560, h: int = 260, spread: dict[str, tuple[float, float]] | None = None,
              note: str = "") -> str:
    """bars: (label, colour-of-label, stacked parts [(part, value, colour)]); `spread`: label ->
    (min, max) across seeds, drawn as a whisker."""
    spread = spread or {}
    totals = [sum(v for _, v, _ in parts) for _, _, parts in bars]
    top = max(totals + [hi for _, hi in spread.values()] + [0]) or 1.0
    yt = nice_ticks(0, top, 4)
    m, bw = 56, max(20, (w - 80) / max(1, len(bars)) * 0.5)
    sy = _scale(0, yt[-1], h - 40, 14)
    body = [f'<line x1="{m}" y1="{h - 40}" x2="{w - 10}" y2="{h - 40}" stroke="#444"/>']
    step = yt[1] - yt[0] if len(yt) > 1 else 1.0
    for yv in yt[1:]:
        body.append(f'<line x1="{m}" y1="{sy(yv):.1f}" x2="{w - 10}" y2="{sy(yv):.1f}" stroke="#eee"/>'
                    f'<text x="{m - 6}" y="{sy(yv) + 4:.1f}" font-size="10" text-anchor="end">{tick_label(yv, step)}</text>')
    seen_parts = []
    for i, ((label, _, parts), total) in enumerate(zip(bars, totals, strict=False)):
        x = m + 20 + i * (w - 80) / max(1, len(bars))
        base = 0.0
        for part, value, colour in parts:
            if value <= 0:
                continue
            y0, y1 = sy(base), sy(base + value)
            body.append(f'<rect x="{x:.1f}" y="{y1:.1f}" width="{bw:.1f}" height="{y0 - y1:.1f}" fill="{colour}">'
                        f'<title>{html.escape(part)}: {num(value, "{:.4g}")} {html.escape(unit)}</title></rect>')
            base += value
            if (part, colour) not in seen_parts:
                seen_parts.append((part, colour))
        if label in spread:
            lo, hi = spread[label]
            cx = x + bw / 2
            body.append(f'<line x1="{cx:.1f}" y1="{sy(lo):.1f}" x2="{cx:.1f}" y2="{sy(hi):.1f}" stroke="#222"/>'
                        f'<line x1="{cx - 6:.1f}" y1="{sy(lo):.1f}" x2="{cx + 6:.1f}" y2="{sy(lo):.1f}" stroke="#222"/>'
                        f'<line x1="{cx - 6:.1f}" y1="{sy(hi):.1f}" x2="{cx + 6:.1f}" y2="{sy(hi):.1f}" stroke="#222"/>')
        label_y = sy(max(total, spread.get(label, (0, 0))[1])) - 4
        body.append(f'<text x="{x + bw / 2:.1f}" y="{label_y:.1f}" font-size="10" text-anchor="middle">'
                    f'{num(total, "{:,.0f}" if total >= 1000 else "{:.3g}")}</text>')
        body.append(f'<text x="{x + bw / 2:.1f}" y="{h - 26}" font-size="11" text-anchor="middle">{html.escape(label)}</text>')
    if len({part for part, _ in seen_parts}) > 1:
        for j, (part, colour) in enumerate(seen_parts):
            body.append(f'<rect x="{w - 170}" y="{14 + 16 * j}" width="10" height="10" fill="{colour}"/>'
                        f'<text x="{w - 155}" y="{23 + 16 * j}" font-size="11">{html.escape(part)}</text>')
    whisker = " (whisker: range across seeds)" if spread else ""
    body.append(f'<text x="{m}" y="{h - 6}" font-size="11">{html.escape(unit + whisker)}</text>')
    return _figure(title, w, h, body, note)


OUTCOME_COLOUR = {"passed": "#1a7f37", "failed": "#cf222e", "inconclusive": "#9a6700"}


def decision_chart(ev: dict[str, Any], w: int = 760) -> str:
    """Each leg's confidence interval of the difference from the baseline against the shaded
    +/- margin band (the region a pass must lie in), with the per-seed differences as dots."""
    p = ev["parity"]
    checks = [c for c in ev["checks"] if c["name"].startswith("parity:") and c.get("ci")]
    if not checks:
        return ""
    non_inferiority = p.get("test") == "non_inferiority"
    row, top, m = 46, 30, 120
    h = top + row * len(checks) + 40
    margins = [c["margin"] for c in checks]
    values = [v for c in checks for v in (*c["ci"], *(d for _, d in c.get("per_seed_diffs") or []))]
    reach = max([abs(v) for v in values] + [1.25 * mg for mg in margins])
    xt = nice_ticks(-reach, reach, 7)
    sx = _scale(xt[0], xt[-1], m, w - 20)
    body = [f'<line x1="{sx(0):.1f}" y1="{top - 12}" x2="{sx(0):.1f}" y2="{h - 36}" stroke="#666"/>']
    step = xt[1] - xt[0]
    for xv in xt:
        body.append(f'<text x="{sx(xv):.1f}" y="{h - 22}" font-size="10" text-anchor="middle">{tick_label(xv, step)}</text>')
    worse_right = p.get("direction", "minimize") == "minimize"
    for i, c in enumerate(checks):
        y = top + row * i + row / 2
        mg = c["margin"]
        if non_inferiority:
            x0, x1 = (sx(xt[0]), sx(mg)) if worse_right else (sx(-mg), sx(xt[-1]))
        else:
            x0, x1 = sx(-mg), sx(mg)
        body.append(f'<rect x="{x0:.1f}" y="{y - row / 2 + 4:.1f}" width="{x1 - x0:.1f}" height="{row - 8}" '
                    f'fill="#2da44e" fill-opacity="0.13"><title>pass region: {html.escape(_band(mg, non_inferiority, worse_right))}</title></rect>')
        colour = OUTCOME_COLOUR.get(c["status"], "#555")
        lo, hi = c["ci"]
        body.append(f'<line x1="{sx(lo):.1f}" y1="{y:.1f}" x2="{sx(hi):.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="5">'
                    f'<title>{int(round(c["ci_level"] * 100))}% CI [{lo:+.4g}, {hi:+.4g}]</title></line>')
        body.append(f'<line x1="{sx(c["diff"]):.1f}" y1="{y - 9:.1f}" x2="{sx(c["diff"]):.1f}" y2="{y + 9:.1f}" '
                    f'stroke="{colour}" stroke-width="2"/>')
        for seed, d in c.get("per_seed_diffs") or []:
            body.append(f'<circle cx="{sx(d):.1f}" cy="{y + 13:.1f}" r="3" fill="#222" fill-opacity="0.6">'
                        f'<title>seed {seed}: {d:+.4g}</title></circle>')
        leg = c["name"][len("parity:"):].split("~")[0]
        body.append(f'<text x="{m - 8}" y="{y - 2:.1f}" font-size="12" text-anchor="end" font-weight="600">{html.escape(leg)}</text>'
                    f'<text x="{m - 8}" y="{y + 12:.1f}" font-size="11" text-anchor="end" fill="{colour}">{html.escape(c["status"])}</text>')
    worse = "worse" if worse_right else "better"
    body.append(f'<text x="{(w + m) / 2:.0f}" y="{h - 6}" font-size="11" text-anchor="middle">'
                f'{html.escape(p["metric"])}: leg - {html.escape(p["baseline"])} (right: leg {worse}); shaded: pass region; '
                f'bar: {int(round(checks[0]["ci_level"] * 100))}% CI; dots: per-seed differences</text>')
    return _figure(f"The decision: each leg's difference from {p['baseline']} against the margin", w, h, body)


def _band(margin: float, non_inferiority: bool, worse_right: bool) -> str:
    if not non_inferiority:
        return f"-{margin:.4g} to +{margin:.4g}"
    return f"below +{margin:.4g}" if worse_right else f"above -{margin:.4g}"


def charts(ev: dict[str, Any]) -> list[str]:
    metric = ev["parity"]["metric"]
    legs = list(ev["legs"].items())
    colour = {name: PALETTE[i % len(PALETTE)] for i, (name, _) in enumerate(legs)}
    runs = lambda f, key: [r["curves"].get(key) or [] for r in f["runs"] if r.get("curves")]  # noqa: E731
    unit = next((f.get("throughput_unit") for _, f in legs if f.get("throughput_unit")), "tokens/s")
    emulated = EMULATED if _emulated(ev) else ""
    tp_spread = {n: (f["throughput"]["min"], f["throughput"]["max"]) for n, f in legs
                 if (f.get("throughput") or {}).get("n", 0) > 1}
    cost_spread = {n: (f["cost_per_run"]["min"], f["cost_per_run"]["max"]) for n, f in legs
                   if (f.get("cost_per_run") or {}).get("n", 0) > 1}
    return [
        line_chart("Training loss, every seed (band: range across seeds)",
                   [(n, colour[n], runs(f, "train_loss")) for n, f in legs], "step", "train loss", trim_start=0.1),
        line_chart(f"Validation {metric}, every seed", [(n, colour[n], runs(f, metric)) for n, f in legs],
                   "step", metric, trim_start=0.1),
        bar_chart(f"Steady-state throughput ({unit})",
                  [(n, colour[n], [("throughput", f.get("throughput_mean") or 0, colour[n])]) for n, f in legs], unit,
                  spread=tp_spread, note=emulated),
        bar_chart("Where the time goes, mean per run (s)",
                  [(n, colour[n], [("compile", f.get("compile_time_s_mean") or 0, "#ff7f0e"),
                                   ("training", max(0.0, (f.get("training_time_s_mean") or 0) - (f.get("compile_time_s_mean") or 0)), "#1f77b4"),
                                   ("start-up and other", max(0.0, (f.get("wall_time_s_mean") or 0) - (f.get("training_time_s_mean") or 0)), "#bbbbbb")])
                   for n, f in legs], "seconds", note=emulated),
        bar_chart("Cost per run (USD)", [(n, colour[n], [("cost", f.get("cost_per_run_usd_mean") or 0, colour[n])])
                                         for n, f in legs], "USD", spread=cost_spread, note=emulated),
    ]


# --- the documents ----------------------------------------------------------------------------
def _statistics(ev: dict[str, Any]) -> list[str]:
    p = ev["parity"]
    test = p.get("test", "equivalence")
    lines = [f"Parity metric {p['metric']} ({p['direction']}), baseline {p['baseline']}, {test} margin "
             f"{'+/-' if test == 'equivalence' else ''}{p['margin']} ({p.get('margin_type', 'absolute')}), alpha "
             f"{p['alpha']} per one-sided test: the decision reads the {int(round((1 - 2 * p['alpha']) * 100))}% "
             "confidence interval of the difference. Seeds completed on both legs are paired (same initial weights, "
             "same batches); Welch's t is used only when fewer than 2 seeds pair up."]
    rule = ev.get("rule") or {}
    if rule.get("changed"):
        lines.append(f"Rule changed after the data: original {_rule_text(rule['original'])}; now "
                     f"{_rule_text(rule['current'])}; reason: {rule.get('reason')}.")
    for c in ev["checks"]:
        if not c["name"].startswith("parity:"):
            continue
        if c.get("ci"):
            unpaired = (c.get("seeds_unpaired") or {})
            left_out = [f"{who} seeds {', '.join(map(str, v))}" for who, v in unpaired.items() if v]
            lines.append(f"{c['name']}: {c.get('test_label')}; difference {num(c['diff'], '{:+.4g}')}, "
                         f"{int(round(c['ci_level'] * 100))}% CI [{num(c['ci'][0], '{:+.4g}')}, "
                         f"{num(c['ci'][1], '{:+.4g}')}], "
                         + (f"SD of per-seed differences {num(c.get('sd'), '{:.3g}')}, " if c.get("test") == "paired" else "")
                         + ("p = " + num(c.get("p_value"), "{:.3g}") if c.get("p_value") is not None
                            else "no p-value (no spread)")
                         + f", margin {num(c['margin'])}: {c['status']}"
                         + (f"; not paired: {'; '.join(left_out)}" if left_out else "") + ".")
        else:
            lines.append(f"{c['name']}: {c['why']}.")
    if p.get("target_used") is not None:
        lines.append(f"Target {p['metric']} = {num(p['target_used'])} ({p.get('target_basis')}); steps and cost to "
                     "reach it are per seed, from each job's validation history and elapsed time; a seed that never "
                     "reached it counts as not reached.")
    speed = ev.get("speed") or {}
    if speed.get("emulated"):
        lines.append(f"Speed and cost: {EMULATED}. They are timed the same way as on SageMaker "
                     "(device-synchronised boundaries, validation excluded) but on this machine's CPU.")
    for leg in speed.get("unstable_legs") or []:
        lines.append(f"Throughput of {leg} varies by more than 20% across seeds: treat its speed and cost with care.")
    for leg in speed.get("crosscheck_disagrees") or []:
        lines.append(f"Throughput of {leg}: the steady-state figure and units over the whole loop (less compile and "
                     "validation) differ by more than 25%; if validation does not run inside `rt.validating()`, "
                     "its time is in the second figure.")
    lines.append(f"Cost basis: {ev.get('cost_basis')}.")
    return lines


def _per_seed(ev: dict[str, Any]) -> list[list[str]]:
    metric = ev["parity"]["metric"]
    rows = []
    for name, f in ev["legs"].items():
        for r in sorted(f["runs"], key=lambda r: r["seed"]):
            rows.append([name, str(r["seed"]), r["status"], num(r.get(metric), "{:.5g}"), num(r.get("throughput"), "{:,.0f}"),
                         num(r.get("time_to_first_step_s"), "{:.1f}"), r.get("cache_state") or "-",
                         num(r.get("steps_to_target"), "{:.0f}"), usd(r.get("cost_usd")),
                         (r.get("reason") or "")[:160]])
    return rows


SEED_HEADER = ["leg", "seed", "status", "metric", "throughput", "first step (s)", "cache", "steps to target",
               "cost", "reason"]


def _environments(ev: dict[str, Any]) -> dict[str, dict[str, str]]:
    out = {}
    for name, f in ev["legs"].items():
        env = next((r.get("environment") for r in f["runs"] if r.get("environment")), None) or {}
        out[name] = {**({"image": f["image"]} if f.get("image") else {}), **{k: str(v) for k, v in sorted(env.items())}}
    return out


def render_markdown(ev: dict[str, Any]) -> str:
    legs = list(ev["legs"])
    out = [f"# Bake-off {ev.get('bakeoff')}: {ev['verdict'].upper()}", "", verdict_sentence(ev), ""]
    if _emulated(ev):
        out += [f"> Speed and cost: {EMULATED}.", ""]
    out += [
           "| | " + " | ".join(legs) + " |", "|---|" + "---|" * len(legs)]
    out += [f"| {label} | " + " | ".join(values) + " |" for label, values in leg_rows(ev)]
    out += ["", "## Checks", ""] + [f"- **{c['status']}** `{c['name']}`: {c['why']}" for c in ev["checks"]]
    out += ["", "## Statistics", ""] + [f"- {line}" for line in _statistics(ev)]
    out += ["", "## Runs", "", "| " + " | ".join(SEED_HEADER) + " |", "|" + "---|" * len(SEED_HEADER)]
    out += ["| " + " | ".join(row) + " |" for row in _per_seed(ev)]
    out += ["", "## Environment", ""]
    for name, env in _environments(ev).items():
        out.append(f"- **{name}**: " + ", ".join(f"{k}={v}" for k, v in env.items()))
    out += ["", "Plots are in report.html."]
    return "\n".join(out) + "\n"


CSS = """body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1180px;
padding:0 1em;color:#222}svg.chart{max-width:100%;height:auto}.scroll{overflow-x:auto}
.note{font-weight:400;color:#9a6700}.banner{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px}
h1 .pass{color:#1a7f37}h1 .fail{color:#cf222e}h1 .inconclusive{color:#9a6700}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:4px 8px;font-size:13px}
th{background:#f6f8fa;text-align:left}td.n{text-align:right}.verdict{font-size:16px;line-height:1.5}
figure{display:inline-block;margin:0 1em 1em 0}figcaption{font-weight:600;font-size:13px}
.passed{color:#1a7f37}.failed{color:#cf222e}.inconclusive{color:#9a6700}code{font-size:12px}"""


def render_html(ev: dict[str, Any]) -> str:
    e = html.escape
    legs = list(ev["legs"])
    table = "<table><tr><th></th>" + "".join(f"<th>{e(n)}</th>" for n in legs) + "</tr>" + "".join(
        f"<tr><th>{e(label)}</th>" + "".join(f'<td class="n">{e(v)}</td>' for v in values) + "</tr>"
        for label, values in leg_rows(ev)) + "</table>"
    checks = "<ul>" + "".join(f'<li><b class="{e(c["status"])}">{e(c["status"])}</b> <code>{e(c["name"])}</code>: '
                              f'{e(c["why"])}</li>' for c in ev["checks"]) + "</ul>"
    stats = "<ul>" + "".join(f"<li>{e(line)}</li>" for line in _statistics(ev)) + "</ul>"
    seeds = "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in SEED_HEADER) + "</tr>" + "".join(
        "<tr>" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>" for row in _per_seed(ev)) + "</table>"
    envs = "".join(f"<h3>{e(n)}</h3><table>" + "".join(f"<tr><th>{e(k)}</th><td><code>{e(v)}</code></td></tr>"
                                                        for k, v in env.items()) + "</table>"
                   for n, env in _environments(ev).items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bake-off {e(str(ev.get('bakeoff')))}: {e(ev['verdict'])}</title>
<style>{CSS}</style></head><body>
<h1>Bake-off {e(str(ev.get('bakeoff')))}: <span class="{e(ev['verdict'])}">{e(ev['verdict'].upper())}</span></h1>
<p class="verdict">{e(verdict_sentence(ev))}</p>
{decision_chart(ev)}
{f'<p class="banner">Speed and cost: {e(EMULATED)}.</p>' if _emulated(ev) else ''}
<h2>Legs</h2><div class="scroll">{table}</div>
<h2>Plots</h2>{''.join(charts(ev))}
<h2>Checks</h2>{checks}
<h2>Statistics</h2>{stats}
<h2>Runs</h2><div class="scroll">{seeds}</div>
<h2>Environment</h2>{envs}
<p><small>spec hash {e(str(ev.get('spec_hash')))} · written by bakeoff's evaluation step from evaluation.json</small></p>
</body></html>
"""


def write_reports(ev: dict[str, Any], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "report.html", out_dir / "report.md"]
    for path, text in zip(paths, (render_html(ev), render_markdown(ev)), strict=True):
        # Whole or not at all: a reader never sees half a report.
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return paths
