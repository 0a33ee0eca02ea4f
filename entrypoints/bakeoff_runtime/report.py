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
    return num(v, "${:,.2f}" if v is not None and abs(v) >= 1 else "${:.4f}")


def size(v) -> str:
    if not v:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024:
            return f"{v:.0f} {unit}"
        v /= 1024
    return f"{v:.0f} PiB"


def verdict_sentence(ev: dict[str, Any]) -> str:
    p = ev["parity"]
    legs = ev["legs"]
    base = p["baseline"]
    others = [n for n in legs if n != base]
    checks = {c["name"]: c for c in ev["checks"]}
    parts = []
    for n in others:
        c = checks.get(f"parity:{n}~{base}")
        if c is None:
            continue
        if c["status"] == "passed":
            parts.append(f"{n} is equivalent to {base} on {p['metric']} (difference {num(c['diff'], '{:+.4g}')}, "
                         f"{int(round(c['ci_level'] * 100))}% CI [{num(c['ci'][0], '{:+.4g}')}, "
                         f"{num(c['ci'][1], '{:+.4g}')}] within +/-{num(c['margin'])}; TOST p={num(c['p_value'], '{:.3g}')})")
        elif c["status"] == "failed":
            parts.append(f"{n} is not shown equivalent to {base} on {p['metric']} (difference "
                         f"{num(c['diff'], '{:+.4g}')}, CI [{num(c['ci'][0], '{:+.4g}')}, {num(c['ci'][1], '{:+.4g}')}] "
                         f"not within +/-{num(c['margin'])})")
        else:
            parts.append(f"{n} vs {base}: {c['why']}")
    for c in ev["checks"]:
        if c["name"].startswith("stability:") and c["status"] == "failed":
            parts.append(c["why"].replace("runs did not complete", f"runs of {c['name'][10:]} did not complete"))
    costs = [(n, legs[n].get("cost_per_run_usd_mean")) for n in legs if legs[n].get("cost_per_run_usd_mean")]
    head = {"pass": "Parity holds", "fail": "Parity fails", "inconclusive": "Inconclusive"}[ev["verdict"]]
    text = f"{head}: " + "; ".join(parts) + "."
    if len(costs) > 1:
        cheapest = min(costs, key=lambda c: c[1])
        estimate = str(ev.get("cost_basis", "")).startswith("estimate")
        text += (" Cheapest per run" + (" (estimated)" if estimate else "") + f": {cheapest[0]} ("
                 + ", ".join(f"{n} {usd(c)}" for n, c in costs) + ").")
    return text


# --- rows of the per-leg table --------------------------------------------------------------
def leg_rows(ev: dict[str, Any]) -> list[tuple[str, list[str]]]:
    metric = ev["parity"]["metric"]
    legs = ev["legs"]

    def cache(f, state, key):
        c = f.get("compile_cache") or {}
        return num(c.get(f"{key}_{state}"), "{:.1f} s") + (f" ({c.get(f'{state}_runs')})" if c else "")

    def ci(f):
        m = f["metric"]
        return f"[{num(m['ci95'][0])}, {num(m['ci95'][1])}]" if m.get("ci95") else "-"

    spec = [
        ("instance", lambda f: f"{f.get('instance_count', 1)} x {f['instance_type']}"),
        ("runs on", lambda f: f.get("emulated_on") or "SageMaker"),
        ("backend / precision", lambda f: f"{f['backend']} / {f.get('precision') or '-'}"),
        ("devices", lambda f: num(f.get("devices"), "{:d}")),
        ("seeds (completed)", lambda f: f"{len(f['runs'])} ({f['completed']})"),
        (f"{metric} mean", lambda f: num(f["metric"].get("mean"))),
        (f"{metric} 95% CI", ci),
        (f"{metric} CV across seeds", lambda f: num(f["metric"].get("cv"), "{:.2%}")),
        ("steady-state throughput", lambda f: num(f.get("throughput_mean"), "{:,.0f}") + f" {f.get('throughput_unit', '')}"),
        ("time to first step", lambda f: num(f.get("time_to_first_step_s_mean"), "{:.1f} s")),
        ("time to first step cold (runs)", lambda f: cache(f, "cold", "time_to_first_step_s")),
        ("time to first step warm (runs)", lambda f: cache(f, "warm", "time_to_first_step_s")),
        ("compile time cold / warm", lambda f: (num((f.get("compile_cache") or {}).get("compile_time_s_cold"), "{:.1f} s")
                                                + " / " + num((f.get("compile_cache") or {}).get("compile_time_s_warm"), "{:.1f} s"))
         if f.get("compile_cache") else num(f.get("compile_time_s_mean"), "{:.1f} s")),
        ("peak device memory", lambda f: size(f.get("peak_device_memory_bytes_max"))),
        ("peak host memory", lambda f: size(f.get("peak_host_memory_bytes_max"))),
        ("wall time", lambda f: num(f.get("wall_time_s_mean"), "{:.0f} s")),
        ("billable time", lambda f: num(f.get("billable_s_mean"), "{:.0f} s")),
        ("price per instance-hour", lambda f: usd((f.get("price") or {}).get("usd_per_hour"))),
        ("cost per run", lambda f: usd(f.get("cost_per_run_usd_mean"))),
        ("cost per million " + next((f.get("throughput_unit", "tokens/s").split("/")[0] for f in legs.values()), "tokens"),
         lambda f: usd(f.get("cost_per_million_units_usd_mean"))),
        ("steps to target (runs reaching it)", lambda f: num(f.get("steps_to_target_mean"), "{:.0f}") +
         f" ({f.get('reached_target', 0)}/{len(f['runs'])})"),
        ("cost to reach target", lambda f: usd(f.get("cost_to_target_usd_mean"))),
        ("failed / diverged runs", lambda f: f"{f['failed']} / {f['diverged']}"),
        ("parity", lambda f: f.get("parity", "baseline")),
    ]
    return [(label, [get(f) for f in legs.values()]) for label, get in spec]


# --- SVG ---------------------------------------------------------------------------------------
def _scale(lo, hi, a, b):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _axes(w, h, m, xlo, xhi, ylo, yhi, xlabel, ylabel) -> list[str]:
    out = [f'<line x1="{m}" y1="{h - m}" x2="{w - 10}" y2="{h - m}" stroke="#444"/>',
           f'<line x1="{m}" y1="10" x2="{m}" y2="{h - m}" stroke="#444"/>']
    for i in range(5):
        yv = ylo + (yhi - ylo) * i / 4
        y = _scale(ylo, yhi, h - m, 10)(yv)
        out.append(f'<text x="{m - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{num(yv, "{:.3g}")}</text>')
        out.append(f'<line x1="{m}" y1="{y:.1f}" x2="{w - 10}" y2="{y:.1f}" stroke="#eee"/>')
        xv = xlo + (xhi - xlo) * i / 4
        x = _scale(xlo, xhi, m, w - 10)(xv)
        out.append(f'<text x="{x:.1f}" y="{h - m + 14}" font-size="10" text-anchor="middle">{num(xv, "{:.0f}")}</text>')
    out.append(f'<text x="{(w + m) / 2:.0f}" y="{h - 4}" font-size="11" text-anchor="middle">{html.escape(xlabel)}</text>')
    out.append(f'<text x="12" y="{h / 2:.0f}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {h / 2:.0f})">{html.escape(ylabel)}</text>')
    return out


def line_chart(title: str, series: list[tuple[str, str, list[list[list[float]]]]], xlabel: str, ylabel: str,
               w: int = 560, h: int = 300) -> str:
    """Each series: (label, colour, runs); every run a thin line, the seeds' range a band."""
    pts = [p for _, _, runs in series for run in runs for p in run]
    if not pts:
        return f'<svg class="chart" width="{w}" height="60"><text x="10" y="30">{html.escape(title)}: no data</text></svg>'
    m = 56
    xlo, xhi = min(p[0] for p in pts), max(p[0] for p in pts)
    ylo, yhi = min(p[1] for p in pts), max(p[1] for p in pts)
    sx, sy = _scale(xlo, xhi, m, w - 10), _scale(ylo, yhi, h - m, 10)
    body = _axes(w, h, m, xlo, xhi, ylo, yhi, xlabel, ylabel)
    for i, (label, colour, runs) in enumerate(series):
        by_step: dict[float, list[float]] = {}
        for run in runs:
            for x, y in run:
                by_step.setdefault(x, []).append(y)
        steps = sorted(k for k, v in by_step.items() if len(v) > 1)
        if steps:
            upper = " ".join(f"{sx(x):.1f},{sy(max(by_step[x])):.1f}" for x in steps)
            lower = " ".join(f"{sx(x):.1f},{sy(min(by_step[x])):.1f}" for x in reversed(steps))
            body.append(f'<polygon points="{upper} {lower}" fill="{colour}" opacity="0.15"/>')
        for run in runs:
            if len(run) > 1:
                path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in run)
                body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.4" opacity="0.8"/>')
            elif run:
                body.append(f'<circle cx="{sx(run[0][0]):.1f}" cy="{sy(run[0][1]):.1f}" r="3" fill="{colour}"/>')
        body.append(f'<rect x="{w - 150}" y="{14 + 16 * i}" width="10" height="10" fill="{colour}"/>'
                    f'<text x="{w - 135}" y="{23 + 16 * i}" font-size="11">{html.escape(label)} ({len(runs)} seeds)</text>')
    return (f'<figure><figcaption>{html.escape(title)}</figcaption><svg class="chart" width="{w}" height="{h}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img">{"".join(body)}</svg></figure>')


def bar_chart(title: str, bars: list[tuple[str, str, list[tuple[str, float, str]]]], unit: str,
              w: int = 560, h: int = 260) -> str:
    """bars: (label, colour-of-label, stacked parts [(part, value, colour)])."""
    totals = [sum(v for _, v, _ in parts) for _, _, parts in bars]
    top = max(totals + [0]) or 1.0
    m, bw = 56, max(20, (w - 80) / max(1, len(bars)) * 0.5)
    sy = _scale(0, top, h - 40, 14)
    body = [f'<line x1="{m}" y1="{h - 40}" x2="{w - 10}" y2="{h - 40}" stroke="#444"/>']
    seen_parts = []
    for i, ((label, _, parts), total) in enumerate(zip(bars, totals)):
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
        body.append(f'<text x="{x + bw / 2:.1f}" y="{sy(total) - 4:.1f}" font-size="10" text-anchor="middle">'
                    f'{num(total, "{:,.0f}" if total >= 1000 else "{:.3g}")}</text>')
        body.append(f'<text x="{x + bw / 2:.1f}" y="{h - 26}" font-size="11" text-anchor="middle">{html.escape(label)}</text>')
    if len({part for part, _ in seen_parts}) > 1:
        for j, (part, colour) in enumerate(seen_parts):
            body.append(f'<rect x="{w - 170}" y="{14 + 16 * j}" width="10" height="10" fill="{colour}"/>'
                        f'<text x="{w - 155}" y="{23 + 16 * j}" font-size="11">{html.escape(part)}</text>')
    body.append(f'<text x="{m}" y="{h - 6}" font-size="11">{html.escape(unit)}</text>')
    return (f'<figure><figcaption>{html.escape(title)}</figcaption><svg class="chart" width="{w}" height="{h}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img">{"".join(body)}</svg></figure>')


def charts(ev: dict[str, Any]) -> list[str]:
    metric = ev["parity"]["metric"]
    legs = list(ev["legs"].items())
    colour = {name: PALETTE[i % len(PALETTE)] for i, (name, _) in enumerate(legs)}
    runs = lambda f, key: [r["curves"].get(key) or [] for r in f["runs"] if r.get("curves")]
    unit = next((f.get("throughput_unit") for _, f in legs if f.get("throughput_unit")), "tokens/s")
    out = [
        line_chart("Training loss, every seed (band: range across seeds)",
                   [(n, colour[n], runs(f, "train_loss")) for n, f in legs], "step", "train loss"),
        line_chart(f"Validation {metric}, every seed", [(n, colour[n], runs(f, metric)) for n, f in legs],
                   "step", metric),
        bar_chart(f"Steady-state throughput ({unit})",
                  [(n, colour[n], [("throughput", f.get("throughput_mean") or 0, colour[n])]) for n, f in legs], unit),
        bar_chart("Where the time goes, mean per run (s)",
                  [(n, colour[n], [("compile", f.get("compile_time_s_mean") or 0, "#ff7f0e"),
                                   ("training", max(0.0, (f.get("training_time_s_mean") or 0) - (f.get("compile_time_s_mean") or 0)), "#1f77b4"),
                                   ("start-up and other", max(0.0, (f.get("wall_time_s_mean") or 0) - (f.get("training_time_s_mean") or 0)), "#bbbbbb")])
                   for n, f in legs], "seconds"),
        bar_chart("Cost per run (USD)", [(n, colour[n], [("cost", f.get("cost_per_run_usd_mean") or 0, colour[n])])
                                         for n, f in legs], "USD"),
    ]
    return out


# --- the documents ----------------------------------------------------------------------------
def _statistics(ev: dict[str, Any]) -> list[str]:
    p = ev["parity"]
    lines = [f"Parity metric {p['metric']} ({p['direction']}), baseline {p['baseline']}, equivalence margin "
             f"+/-{p['margin']} ({p.get('margin_type', 'absolute')}), alpha {p['alpha']} per one-sided test."]
    for c in ev["checks"]:
        if c["name"].startswith("parity:") and c["status"] in ("passed", "failed"):
            lines.append(f"{c['name']}: TOST (two one-sided Welch t-tests) p = {num(c['p_value'], '{:.3g}')} "
                         f"(lower {num(c['p_lower'], '{:.3g}')}, upper {num(c['p_upper'], '{:.3g}')}), difference "
                         f"{num(c['diff'], '{:+.4g}')}, {int(round(c['ci_level'] * 100))}% CI "
                         f"[{num(c['ci'][0], '{:+.4g}')}, {num(c['ci'][1], '{:+.4g}')}], bootstrap 95% CI "
                         + (f"[{num(c['bootstrap_ci95'][0], '{:+.4g}')}, {num(c['bootstrap_ci95'][1], '{:+.4g}')}]"
                            if c.get("bootstrap_ci95") else "-") + f", margin {num(c['margin'])}: {c['status']}.")
        elif c["name"].startswith("parity:"):
            lines.append(f"{c['name']}: {c['why']}.")
    if p.get("target_used") is not None:
        lines.append(f"Target {p['metric']} = {num(p['target_used'])} ({p.get('target_basis')}); steps and cost to "
                     "reach it are per seed, from each job's validation history and elapsed time.")
    lines.append(f"Cost basis: {ev.get('cost_basis')}.")
    return lines


def _per_seed(ev: dict[str, Any]) -> list[list[str]]:
    metric = ev["parity"]["metric"]
    rows = []
    for name, f in ev["legs"].items():
        for r in sorted(f["runs"], key=lambda r: r["seed"]):
            rows.append([name, str(r["seed"]), r["status"], num(r.get(metric)), num(r.get("throughput"), "{:,.0f}"),
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
    out = [f"# Bake-off {ev.get('bakeoff')}: {ev['verdict'].upper()}", "", verdict_sentence(ev), "",
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


CSS = """body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1180px;color:#222}
h1 .pass{color:#1a7f37}h1 .fail{color:#cf222e}h1 .inconclusive{color:#9a6700}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:4px 8px;font-size:13px}
th{background:#f6f8fa;text-align:left}td.n{text-align:right}.verdict{font-size:16px;line-height:1.5}
figure{display:inline-block;margin:0 1em 1em 0}figcaption{font-weight:600;font-size:13px}
.passed{color:#1a7f37}.failed{color:#cf222e}.insufficient_replicates{color:#9a6700}code{font-size:12px}"""


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
<html lang="en"><head><meta charset="utf-8"><title>bake-off {e(str(ev.get('bakeoff')))}: {e(ev['verdict'])}</title>
<style>{CSS}</style></head><body>
<h1>Bake-off {e(str(ev.get('bakeoff')))}: <span class="{e(ev['verdict'])}">{e(ev['verdict'].upper())}</span></h1>
<p class="verdict">{e(verdict_sentence(ev))}</p>
<h2>Legs</h2>{table}
<h2>Plots</h2>{''.join(charts(ev))}
<h2>Checks</h2>{checks}
<h2>Statistics</h2>{stats}
<h2>Runs</h2>{seeds}
<h2>Environment</h2>{envs}
<p><small>spec hash {e(str(ev.get('spec_hash')))} · written by bakeoff's evaluation step from evaluation.json</small></p>
</body></html>
"""


def write_reports(ev: dict[str, Any], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "report.html", out_dir / "report.md"]
    paths[0].write_text(render_html(ev))
    paths[1].write_text(render_markdown(ev))
    return paths
