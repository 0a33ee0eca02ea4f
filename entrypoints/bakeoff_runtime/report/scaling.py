"""The report's scaling section: throughput and efficiency against devices, one line per
swept leg (inline SVG, no plotting library), the points as a table, strong vs weak stated,
emulation stated; and the precision ablations with their reading."""
from __future__ import annotations

import html
import math
from typing import Any

from bakeoff_runtime.contract.documents import Evaluation
from bakeoff_runtime.report.charts import leg_colours
from bakeoff_runtime.report.formatting import md, md_row, usd
from bakeoff_runtime.report.palette import PALETTE

W, H, M = 420, 260, 56


def _fmt(v, spec="{:.3g}") -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else spec.format(v)


def _ticks(hi: float) -> list[float]:
    hi = hi if hi > 0 else 1.0
    raw = hi / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(math.ceil(hi / step - 1e-9)) + 1)]


def _chart(title: str, sweeps: dict[str, list[dict]], key: str, ylabel: str, ideal: float | None = None,
           colours: dict[str, str] | None = None) -> str:
    """y = point[key] against devices on a log2 axis; one polyline per sweep."""
    pts = [(p["devices"], p[key]) for points in sweeps.values() for p in points
           if p.get(key) is not None and p.get("devices")]
    e = html.escape
    if not pts:
        return f"<p>{e(title)}: no data (no size completed).</p>"
    xs = sorted({x for x, _ in pts})
    lo, hi = math.log2(xs[0]), math.log2(xs[-1])
    span = (hi - lo) or 1.0
    yt = _ticks(max([y for _, y in pts] + ([ideal] if ideal else [])))

    def sx(x: float) -> float:
        return M + (math.log2(x) - lo) / span * (W - M - 20) if hi > lo else (W + M) / 2

    def sy(y: float) -> float:
        return H - M - y / (yt[-1] or 1) * (H - M - 10)

    body = [f'<line x1="{M}" y1="{H - M}" x2="{W - 10}" y2="{H - M}" stroke="#444"/>',
            f'<line x1="{M}" y1="10" x2="{M}" y2="{H - M}" stroke="#444"/>']
    for yv in yt:
        body.append(f'<line x1="{M}" y1="{sy(yv):.1f}" x2="{W - 10}" y2="{sy(yv):.1f}" stroke="#eee"/>'
                    f'<text x="{M - 6}" y="{sy(yv) + 4:.1f}" font-size="10" text-anchor="end">'
                    f'{f"{yv:,.0f}" if yt[-1] >= 10 else f"{yv:.3g}"}</text>')
    for x in xs:
        body.append(f'<text x="{sx(x):.1f}" y="{H - M + 14}" font-size="10" text-anchor="middle">{x}</text>')
    if ideal is not None:
        body.append(f'<line x1="{M}" y1="{sy(ideal):.1f}" x2="{W - 10}" y2="{sy(ideal):.1f}" stroke="#888" '
                    'stroke-dasharray="4,3"/>')
    for i, (leg, points) in enumerate(sweeps.items()):
        colour = (colours or {}).get(leg, PALETTE[i % len(PALETTE)])
        line = [(sx(p["devices"]), sy(p[key])) for p in points if p.get(key) is not None and p.get("devices")]
        if len(line) > 1:
            body.append(f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in line)}" fill="none" '
                        f'stroke="{colour}" stroke-width="1.6"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>' for x, y in line]
        body.append(f'<rect x="{W - 140}" y="{14 + 16 * i}" width="10" height="10" fill="{colour}"/>'
                    f'<text x="{W - 125}" y="{23 + 16 * i}" font-size="11">{e(leg)}</text>')
    body.append(f'<text x="{(W + M) / 2:.0f}" y="{H - 22}" font-size="11" text-anchor="middle">devices (log scale)'
                '</text>')
    body.append(f'<text x="12" y="{H / 2:.0f}" font-size="11" text-anchor="middle" '
                f'transform="rotate(-90 12 {H / 2:.0f})">{e(ylabel)}</text>')
    return (f'<figure><figcaption>{e(title)}</figcaption><svg class="chart scaling" viewBox="0 0 {W} {H}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img">{"".join(body)}</svg></figure>')


HEADER = ["leg", "size", "devices", "processes that ran", "global batch", "throughput", "speed-up", "efficiency",
          "cost per million units", "parity"]


def _rows(ev: Evaluation) -> list[list[str]]:
    rows = []
    for source, points in (ev.get("scaling") or {}).items():
        for p in points:
            rows.append([source if p["leg"] == source else f"{source} / {p['leg']}",
                         f"{p['instance_count']} x {p['instance_type']}", str(p["devices"]), str(p["processes"]),
                         _fmt(p.get("global_batch_size"), "{}"),
                         f"{_fmt(p.get('throughput'), '{:,.0f}')} {p.get('throughput_unit') or ''}".strip(),
                         _fmt(p.get("speedup"), "{:.2f}x"), _fmt(p.get("efficiency"), "{:.2f}"),
                         f"{usd(p.get('usd_per_million_units'))} per M {p.get('unit') or 'units'}",
                         p.get("parity") or "baseline"])
    return rows


def _notes(ev: Evaluation) -> list[str]:
    out = [f"{leg}: {info['note']}" for leg, info in (ev.get("scaling_sweeps") or {}).items()]
    if ev.get("scaling"):
        first: dict[str, Any] = next(iter((ev.get("scaling_sweeps") or {}).values()), {})
        basis = first.get("efficiency_basis")
        if basis:
            out.append(f"Efficiency: {basis}.")
    return out


def _ablation_lines(ev: Evaluation) -> list[str]:
    return [f"Precision ablation {a['ablation_leg']} ({a['ablation_precision']}) of {a['leg']} ({a['precision']}): "
            f"the ablation comparison is `{a['comparison']}` ({a.get('ablation_parity') or '-'}; not counted in the "
            f"verdict); {a['leg']} in {a['precision']}: {a.get('leg_parity') or 'baseline'}; metric "
            f"{_fmt(a.get('metric_mean'), '{:.4g}')} vs {_fmt(a.get('ablation_metric_mean'), '{:.4g}')}. "
            f"Reading: {a['reading']}." for a in ev.get("ablations") or []]


def section_html(ev: Evaluation) -> str:
    """The scaling and ablation section of report.html ('' when the spec has neither)."""
    e = html.escape
    parts = []
    if ev.get("scaling"):
        sweeps = ev["scaling"]
        colours = leg_colours(ev)  # the colour each leg has in every other figure of the report
        emulated = any(info.get("emulated") for info in (ev.get("scaling_sweeps") or {}).values())
        tag = " (emulated on this machine)" if emulated else ""
        table = ("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in HEADER) + "</tr>"
                 + "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>" for row in _rows(ev))
                 + "</table>")
        parts += ["<h2>Scaling</h2>",
                  _chart(f"Throughput vs devices{tag}", sweeps, "throughput",
                         next((p["throughput_unit"] for ps in sweeps.values() for p in ps
                               if p.get("throughput_unit")), "throughput"), colours=colours),
                  _chart(f"Scaling efficiency vs devices{tag} (dashed: ideal)", sweeps, "efficiency", "efficiency",
                         ideal=1.0, colours=colours),
                  f'<div class="scroll">{table}</div>',
                  "<ul>" + "".join(f"<li>{e(n)}</li>" for n in _notes(ev)) + "</ul>"]
    if ev.get("ablations"):
        parts += ["<h2>Precision ablation</h2>",
                  "<ul>" + "".join(f"<li>{e(n)}</li>" for n in _ablation_lines(ev)) + "</ul>"]
    return "\n".join(parts)


def section_markdown(ev: Evaluation) -> list[str]:
    """The same section as report.md lines (the plots are in report.html)."""
    out: list[str] = []
    if ev.get("scaling"):
        out += ["", "## Scaling", "", md_row(HEADER), "|" + "---|" * len(HEADER)]
        out += [md_row(row) for row in _rows(ev)]
        out += [""] + [f"- {md(n)}" for n in _notes(ev)]
    if ev.get("ablations"):
        out += ["", "## Precision ablation", ""] + [f"- {md(n)}" for n in _ablation_lines(ev)]
    return out
