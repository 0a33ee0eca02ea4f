"""The report a decision is made on: report.html (one self-contained file, opens
offline, plots as inline SVG) and report.md, both from evaluation.json alone.

The page is a fixed head (verdict, the production decision where the evaluation has a projection,
parity figure, emulation banner) followed by SECTIONS,
an ordered list of (markdown, html) renderers; a new section is one more entry there.
Numbers and money are written by report.formatting, figures drawn by report.charts.
"""
from __future__ import annotations

import html
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract.documents import Evaluation
from bakeoff_runtime.report import decision_section, porting_section
from bakeoff_runtime.report import scaling as report_scaling
from bakeoff_runtime.report import spend as report_spend
from bakeoff_runtime.report.charts import bar_chart, decision_chart, leg_colours, line_chart, stacked_bar_chart
from bakeoff_runtime.report.formatting import (
    MONEY_RULE,
    inert_strings,
    md,
    md_row,
    money_tick,
    nice_ticks,
    num,
    seed_span,
    size,
    usd,
)
from bakeoff_runtime.report.palette import PALETTE
from bakeoff_runtime.verdict import checks as check_registry
from bakeoff_runtime.verdict.parity_tests import test_of

# PALETTE (report.palette's) is read by tracking.parent_run, so a leg has the same colour in MLflow as here.
__all__ = ["PALETTE", "SECTIONS", "leg_colours", "leg_rows", "nice_ticks", "render_html", "render_markdown", "usd",
           "verdict_sentence", "write_reports"]


def _emulated(ev: Evaluation) -> bool:
    return bool((ev.get("speed") or {}).get("emulated"))


EMULATED = "emulated: not indicative of the target hardware"
# Beside a leg's peak host memory when its jobs were forked from a warm interpreter (_fork_note says why).
WARM_FORK = " (warm fork)"


def verdict_sentence(ev: Evaluation) -> str:
    """The decision in words: what was shown, what broke, what would decide it."""
    base = ev["parity"]["baseline"]
    # The head says what kind of outcome it is, as the verdict's first line does: a comparison that did not
    # measure what it names is not a parity failure, and a bake-off that could not run is not undecided parity.
    summary = str(ev.get("summary") or "")
    head = {"pass": "Parity holds", "fail": "Parity fails", "inconclusive": "Inconclusive"}[ev["verdict"]]
    for words in ("not a valid comparison", "training breaks", "the bake-off could not run"):
        if summary.startswith(words):
            head = words[0].upper() + words[1:]
    parts, broken = [], []
    for c in ev["checks"]:
        if c["name"].startswith("parity:"):
            leg = c["name"][len("parity:"):].split("~")[0]
            figures = ev["legs"].get(leg)
            voided = figures.get("voided_by") if figures else None
            if voided:  # its numbers are not about the leg it names: said as such, not as parity
                parts.append(f"{leg} vs {base}: not counted ({', '.join(voided)} failed)")
                continue
            why, advice = c["why"], "; " + str((c.get("recommendation") or {}).get("why"))
            why = why[:-len(advice)] if why.endswith(advice) else why  # the advice is said once, below
            parts.append(f"{leg} vs {base}: {why}")
        elif c["status"] == "failed":  # what broke or was not measured comes first: it voids the rest
            broken.append(c["why"])
        elif c["status"] not in ("passed", "unchecked"):  # what could not be checked is in "What was measured"
            parts.append(c["why"])
    text = f"{head}: " + "; ".join(broken + parts) + "."
    rec = ev.get("recommendation")
    if rec:
        text += f" To decide it: {rec['why']}."
    text += _attempt_text(ev)
    rule = ev.get("rule") or {}
    if rule.get("changed"):
        text += (" Decided under a parity rule changed after the data (original: "
                 + _rule_text(rule["original"]) + f"; reason: {rule.get('reason')}).")
    costs = [(n, per_run) for n, f in ev["legs"].items() if (per_run := f.get("cost_per_run_usd_mean"))]
    if _emulated(ev):
        text += f" Speed and cost here are {EMULATED}; no cheapest leg is named from an emulation."
    elif len(costs) > 1:
        cheapest = min(costs, key=lambda c: c[1])
        text += (f" Cheapest per run: {cheapest[0]} (" + ", ".join(f"{n} {usd(c)}" for n, c in costs) + ").")
    return text


def _attempt_text(ev: Evaluation) -> str:
    """Where this decision stands among the attempts at its question (pipelines/local/questions.py): said
    when there were attempts before it, so a reader sees every try, not only the last."""
    attempt = ev.get("attempt")
    if not isinstance(attempt, dict) or (attempt.get("number") == 1 and attempt.get("stage") == 1):
        return ""
    text = f" Attempt {attempt.get('number')} at this question"
    if attempt.get("stage") == 2:
        text += " (stage 2 of its two-stage design, decided with stage 1's seeds)"
    if attempt.get("fresh_start"):
        text += f", started over on purpose (--fresh-start: {attempt['fresh_start']})"
    earlier = [a for a in attempt.get("earlier") or [] if isinstance(a, dict)]
    if earlier:
        text += "; before it: " + "; ".join(
            f"attempt {a.get('number')} (stage {a.get('stage')}, seeds {seed_span(sorted(a.get('seeds') or []))} in "
            f"{a.get('out')}): {a.get('verdict') or 'not decided'}" for a in earlier)
    return text + "."


MEASURED_MARK = {"passed": "ok", "failed": "FAIL", "warning": "note", "unchecked": "not checked",
                 "inconclusive": "undecided"}


def measured_rows(ev: Evaluation) -> list[tuple[str, str, str]]:
    """(status, check, why) of the checks that say whether the target was measured at all: those whose kind
    has a `measured` section in the check registry (verdict/checks/): each leg on its backend, the same model
    on every leg, blockers... Older evaluations have none."""
    return [(c["status"], c["name"], c["why"]) for c in ev.get("checks", []) if check_registry.is_measured(c)]


def _measured_md(ev: Evaluation) -> list[str]:
    rows = measured_rows(ev)
    if not rows:
        return []
    return ["", "**What was measured**", ""] + [f"- **{md(MEASURED_MARK.get(st, st))}** {md(n, code=True)}: {md(w)}"
                                                for st, n, w in rows]


def _measured_html(ev: Evaluation) -> str:
    rows = measured_rows(ev)
    if not rows:
        return ""
    return ('<div class="scroll"><table class="measured"><caption>What was measured</caption>' + "".join(
        f'<tr><td class="{e(st)}">{e(MEASURED_MARK.get(st, st))}</td><td><code>{e(n)}</code></td><td>{e(w)}</td></tr>'
        for st, n, w in rows) + "</table></div>")


def _rule_text(rule: dict[str, Any] | None) -> str:
    if not rule:
        return "not recorded"
    return (f"{rule.get('test', 'equivalence')} on {rule.get('metric')} ({rule.get('direction')}), margin "
            f"{rule.get('margin')} {rule.get('margin_type', 'absolute')}, alpha {rule.get('alpha')}, baseline "
            f"{rule.get('baseline')}")


# --- rows of the per-leg table --------------------------------------------------------------
def _empty(cell: str) -> bool:
    return cell.strip() in ("", "-")


def parity_word(f: Any) -> str:
    """A leg's parity outcome, or why it is void: a leg that failed a validity check is never shown as passed."""
    voided = f.get("voided_by") or []
    if voided:
        return f"void ({', '.join(voided)})"
    return str(f.get("parity", "baseline"))


def devices_note(f: Any) -> str:
    """" (used 1 of 8 devices)" beside a leg's cost when its jobs used fewer devices than the bill counts."""
    used, devices = f.get("devices_used"), f.get("devices")
    if used is None or not devices or used >= devices or f.get("cost_per_run_usd_mean") is None:
        return ""
    return f" (used {used} of {devices} devices)"


def leg_rows(ev: Evaluation) -> list[tuple[str, list[str]]]:
    """(label, one cell per leg). A row whose every cell is empty ("-") is left out; speed and
    cost rows say when they come from an emulation."""
    metric = ev["parity"]["metric"]
    legs = ev["legs"]
    emu = " (emulated)" if _emulated(ev) else ""

    def cache(f, state, key):
        c = f.get("compile_cache") or {}
        value = c.get(f"{key}_{state}")
        return "-" if value is None else f"{value:.1f} s ({c.get(f'{state}_runs')})"

    def compile_time(f):
        c = f.get("compile_cache")
        if not c:
            return num(f.get("compile_time_s_mean"), "{:.1f} s")
        states = [f"{c[k]:.1f} s {state}" for state, k in (("cold", "compile_time_s_cold"), ("warm", "compile_time_s_warm"))
                  if c.get(k) is not None]
        return " / ".join(states) or "-"

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
        ("compile time" + emu, compile_time),
        ("peak device memory", lambda f: size(f.get("peak_device_memory_bytes_max"))),
        ("peak host memory", lambda f: size(f.get("peak_host_memory_bytes_max")) + (WARM_FORK if _forked(f) else "")),
        ("wall time" + emu, lambda f: num(f.get("wall_time_s_mean"), "{:.0f} s")),
        ("billable time" + emu, lambda f: num(f.get("billable_s_mean"), "{:.0f} s")),
        ("price per instance-hour", lambda f: usd((f.get("price") or {}).get("usd_per_hour"))),
        ("cost per run" + emu, lambda f: usd(f.get("cost_per_run_usd_mean")) + devices_note(f)),
        ("cost per million " + next((f.get("throughput_unit", "tokens/s").split("/")[0] for f in legs.values()), "tokens")
         + emu, lambda f: usd(f.get("cost_per_million_units_usd_mean"))),
        ("steps to target", lambda f: to_target(f, "steps_to_target_mean")),
        ("cost to reach target" + emu, lambda f: to_target(f, "cost_to_target_usd_mean")),
        ("failed / diverged / lost runs", lambda f: f"{f['failed']} / {f['diverged']} / {f.get('lost', 0)}"),
        ("parity", parity_word),
    ]
    rows = [(label, [get(f) for f in legs.values()]) for label, get in spec]
    return [(label, cells) for label, cells in rows if not all(_empty(c) for c in cells)]


# --- figures ------------------------------------------------------------------------------------
def _seed_values(f: Mapping[str, Any], key: str) -> list[float]:  # key: a run's figure, the metric's included
    return [r[key] for r in sorted(f["runs"], key=lambda r: r["seed"])
            if isinstance(r.get(key), (int, float)) and r.get("status") == "completed"]


def _seconds(v: float) -> str:
    return f"{v:,.0f} s" if v >= 100 else f"{v:.1f} s"


def charts(ev: Evaluation) -> list[str]:
    metric = ev["parity"]["metric"]
    legs = list(ev["legs"].items())
    colour = leg_colours(ev)
    runs = lambda f, key: [(r.get("seed", "?"), r["curves"].get(key) or [])  # noqa: E731
                           for r in f["runs"] if r.get("curves")]
    unit = next((f.get("throughput_unit") for _, f in legs if f.get("throughput_unit")), "tokens/s")
    emulated = EMULATED if _emulated(ev) else ""
    return [
        line_chart("Training loss, every seed", [(n, colour[n], runs(f, "train_loss")) for n, f in legs],
                   "step", "train loss"),
        line_chart(f"Validation {metric}, every seed", [(n, colour[n], runs(f, metric)) for n, f in legs],
                   "step", metric),
        bar_chart(f"Steady-state throughput ({unit})",
                  [(n, colour[n], f.get("throughput_mean"), _seed_values(f, "throughput")) for n, f in legs], unit,
                  lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.3g}", emulated=emulated),
        stacked_bar_chart("Where the time goes, mean per run", ["training", "compile", "start-up and other"],
                          [(n, colour[n], [max(0.0, (f.get("training_time_s_mean") or 0) - (f.get("compile_time_s_mean") or 0)),
                                           f.get("compile_time_s_mean") or 0,
                                           max(0.0, (f.get("wall_time_s_mean") or 0) - (f.get("training_time_s_mean") or 0))],
                            _seed_values(f, "wall_time_s")) for n, f in legs], "seconds", _seconds, emulated=emulated),
        bar_chart("Cost per run (USD)", [(n, colour[n], f.get("cost_per_run_usd_mean") or None,
                                          _seed_values(f, "cost_usd")) for n, f in legs],
                  "USD per run", usd, money_tick, money=True, emulated=emulated),
    ]


# --- text -----------------------------------------------------------------------------------------
def _design_text(ev: Evaluation) -> str:
    """What interval the decision reads, by the design its parity checks were decided in."""
    alpha = float(ev["parity"]["alpha"])
    checks = [c for c in ev["checks"] if c["name"].startswith("parity:") and c.get("ci_level")]
    design, stage = (checks[0].get("design"), checks[0].get("stage")) if checks else (None, None)
    level = f"{float(checks[0]['ci_level']) * 100:.1f}%" if checks else f"{(1 - 2 * alpha) * 100:.0f}%"
    if design == "two_stage" and stage == 2:
        return ("stage 2 of a two-stage design: the interval of the inverse-normal combination of both stages' "
                "one-sided tests (Lehmacher & Wassmer 1999).")
    if design == "two_stage":
        return (f"stage 1 of a two-stage design reads the {level} confidence interval (Pocock's level); if it is "
                "undecided, fresh seeds are its stage 2, decided together with these.")
    if design == "sequential":
        return f"a look of a group-sequential design reads the {level} repeated confidence interval."
    return f"a fixed design reads the {level} confidence interval of the difference."


def _statistics(ev: Evaluation) -> list[str]:
    p = ev["parity"]
    test = p.get("test", "equivalence")
    lines = [f"Parity metric {p['metric']} ({p['direction']}), baseline {p['baseline']}, {test} margin "
             f"{test_of(test).margin_text(p['margin'])} ({p.get('margin_type', 'absolute')}), alpha "
             f"{p['alpha']} per one-sided test over the whole design: " + _design_text(ev) + " Seeds completed on "
             "both legs are paired (same initial weights, same batches); Welch's t is used only when fewer than 2 "
             "seeds pair up.",
             "Assumed: the seeds are independent runs and the per-seed differences are close to normal; the t "
             "interval's error rates are exact under normality. Where the seeds show skew, each bound is the wider "
             "of the t bound and Hall's skewness-corrected one; skew that a few seeds do not show can still pass a "
             "leg at the margin more often than alpha."]
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
    if speed.get("jobs_at_once"):
        lines.append(f"The jobs ran {speed['jobs_at_once']} at a time on this machine, so their speed figures shared "
                     "its cores (`bakeoff run --jobs 1` gives each job the whole machine).")
    for leg in speed.get("unstable_legs") or []:
        lines.append(f"Throughput of {leg} varies by more than 20% across seeds: treat its speed and cost with care.")
    for leg in speed.get("crosscheck_disagrees") or []:
        lines.append(f"Throughput of {leg}: the steady-state figure and units over the whole loop (less compile and "
                     "validation) differ by more than 25%; if validation does not run inside `rt.validating()`, "
                     "its time is in the second figure.")
    lines.append(f"Cost basis: {ev.get('cost_basis')}; {MONEY_RULE}.")
    return lines


SEED_HEADER = ["leg", "seed", "status", "metric", "throughput", "first step (s)", "cache", "steps to target",
               "cost", "reason"]


def _per_seed(ev: Evaluation) -> tuple[list[str], list[list[str]]]:
    """The runs table (header, rows), less the columns that are empty on every row."""
    metric = ev["parity"]["metric"]
    rows = []
    for name, f in ev["legs"].items():
        for r in sorted(f["runs"], key=lambda r: r["seed"]):
            rows.append([name, str(r["seed"]), r["status"], num(r.get(metric), "{:.5g}"), num(r.get("throughput"), "{:,.0f}"),
                         num(r.get("time_to_first_step_s"), "{:.1f}"), r.get("cache_state") or "-",
                         num(r.get("steps_to_target"), "{:.0f}"), usd(r.get("cost_usd")),
                         (r.get("reason") or "")[:160]])
    header = [metric if h == "metric" else h for h in SEED_HEADER]
    keep = [j for j in range(len(header)) if j < 3 or any(not _empty(row[j]) for row in rows)]
    return [header[j] for j in keep], [[row[j] for j in keep] for row in rows]


def _environments(ev: Evaluation) -> dict[str, dict[str, str]]:
    out = {}
    for name, f in ev["legs"].items():
        env = next((r.get("environment") for r in f["runs"] if r.get("environment")), None) or {}
        out[name] = {**({"image": image} if (image := f.get("image")) else {}),
                     **{k: str(v) for k, v in sorted(env.items())}}
    return out


# --- sections: (markdown lines, html) renderers, in page order --------------------------------------
e = html.escape


def _swatch(ev: Evaluation, leg: str) -> str:
    colour = leg_colours(ev).get(leg, "#666")
    return f'<span class="sw" data-leg="{e(leg)}" style="background:{colour}"></span>'


def _forked(f: Mapping[str, Any]) -> bool:
    """Whether any of the leg's jobs was forked from its warm interpreter (the local engine's default)."""
    return any((r.get("environment") or {}).get("worker_start") for r in f.get("runs") or [])


def _fork_note(ev: Evaluation) -> str:
    if not any(_forked(f) for f in ev["legs"].values()):
        return ""
    return (f"{WARM_FORK.strip()}: the job was forked from its leg's warm interpreter, which had imported torch, so "
            "its peak host memory counts only the pages the job touched, not the import they share; a job "
            "started cold (as on SageMaker) peaks higher.")


def _legs_md(ev: Evaluation) -> list[str]:
    legs = list(ev["legs"])
    note = _fork_note(ev)
    return (["", "## Legs", "", md_row(["", *legs]), "|---|" + "---|" * len(legs)]
            + [md_row([label, *values]) for label, values in leg_rows(ev)] + (["", md(note)] if note else []))


def _legs_html(ev: Evaluation) -> str:
    colours = leg_colours(ev)
    head = "".join(f'<th scope="col" style="border-top:3px solid {colours[n]}">{_swatch(ev, n)}{e(n)}</th>'
                   for n in ev["legs"])
    body = "".join(f'<tr><th scope="row">{e(label)}</th>' + "".join(f'<td class="n">{e(v)}</td>' for v in values)
                   + "</tr>" for label, values in leg_rows(ev))
    note = _fork_note(ev)
    return (f'<h2>Legs</h2><div class="scroll"><table class="legs"><tr><th></th>{head}</tr>{body}</table></div>'
            + (f'<p class="note">{e(note)}</p>' if note else ""))


def _plots_html(ev: Evaluation) -> str:
    return '<h2>Plots</h2><div class="figures">' + "".join(charts(ev)) + "</div>"


def _checks_md(ev: Evaluation) -> list[str]:
    return ["", "## Checks", ""] + [f"- **{md(c['status'])}** {md(c['name'], code=True)}: {md(c['why'])}"
                                    for c in ev["checks"]]


def _checks_html(ev: Evaluation) -> str:
    return "<h2>Checks</h2><ul>" + "".join(f'<li><b class="{e(c["status"])}">{e(c["status"])}</b> '
                                           f'<code>{e(c["name"])}</code>: {e(c["why"])}</li>' for c in ev["checks"]) + "</ul>"


def _stats_md(ev: Evaluation) -> list[str]:
    return ["", "## Statistics", ""] + [f"- {md(line)}" for line in _statistics(ev)]


def _stats_html(ev: Evaluation) -> str:
    return "<h2>Statistics</h2><ul>" + "".join(f"<li>{e(line)}</li>" for line in _statistics(ev)) + "</ul>"


def _runs_md(ev: Evaluation) -> list[str]:
    header, rows = _per_seed(ev)
    return (["", "## Runs", "", md_row(header), "|" + "---|" * len(header)]
            + [md_row(row) for row in rows])


def _runs_html(ev: Evaluation) -> str:
    header, rows = _per_seed(ev)
    body = "".join("<tr>" + f"<td>{_swatch(ev, row[0])}{e(row[0])}</td>" + "".join(
        f'<td class="n">{e(v)}</td>' for v in row[1:]) + "</tr>" for row in rows)
    return ('<h2>Runs</h2><div class="scroll"><table class="runs"><tr>' + "".join(f"<th>{e(h)}</th>" for h in header)
            + f"</tr>{body}</table></div>")


def _env_md(ev: Evaluation) -> list[str]:
    return ["", "## Environment", ""] + [f"- **{md(name)}**: " + ", ".join(md(f"{k}={v}") for k, v in env.items())
                                         for name, env in _environments(ev).items()]


def _env_html(ev: Evaluation) -> str:
    return "<h2>Environment</h2>" + "".join(
        f'<h3>{_swatch(ev, n)}{e(n)}</h3><div class="scroll"><table class="env">'
        + "".join(f"<tr><th>{e(k)}</th><td><code>{e(v)}</code></td></tr>" for k, v in env.items()) + "</table></div>"
        for n, env in _environments(ev).items())


def _none_md(ev: Evaluation) -> list[str]:
    return []


Section = tuple[Callable[[Evaluation], list[str]], Callable[[Evaluation], str]]

# Everything after the head, in page order. Each entry renders one section from evaluation.json:
# markdown lines (report.md) and HTML (report.html); return [] / "" to leave the section out.
SECTIONS: list[Section] = [
    (_legs_md, _legs_html),
    (_none_md, _plots_html),  # plots are in report.html only
    (report_scaling.section_markdown, report_scaling.section_html),  # scaling sweeps, precision ablations
    (porting_section.section_markdown, porting_section.section_html),  # what porting cost
    (report_spend.section_markdown, report_spend.section_html),  # what this verdict cost
    (_checks_md, _checks_html),
    (_stats_md, _stats_html),
    (_runs_md, _runs_html),
    (_env_md, _env_html),
]


# --- the documents ----------------------------------------------------------------------------
def render_markdown(ev: Evaluation) -> str:
    # Every piece of text below that came from the evaluation (and so, often, from a job) goes through md(),
    # after inert_strings() has taken out the escapes and control characters a job could have put in it.
    ev = inert_strings(ev)
    out = [f"# Bake-off {md(ev.get('bakeoff'))}: {md(str(ev['verdict']).upper())}", "", md(verdict_sentence(ev)),
           *decision_section.section_markdown(ev), *_measured_md(ev)]
    if _emulated(ev):
        out += ["", f"> Speed and cost: {EMULATED}."]
    for markdown, _ in SECTIONS:
        out += markdown(ev)
    out += ["", "Plots are in report.html."]
    return "\n".join(out) + "\n"


CSS = """*{box-sizing:border-box}
body{margin:0;background:#fff;color:#1f2328;font:15px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
.page{max-width:1120px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:1.75em;line-height:1.2;margin:.5em 0 .3em}h2{font-size:1.3em;margin:1.6em 0 .5em;padding-bottom:.2em;
border-bottom:1px solid #d0d7de}h3{font-size:1.05em;margin:1em 0 .3em}
.verdict{font-size:1.05em;max-width:72em}.banner{background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;
padding:6px 10px}h1 .pass,.passed{color:#1a7f37}h1 .fail,.failed{color:#cf222e}h1 .inconclusive,.inconclusive{color:#9a6700}
.warning{color:#9a6700}.unchecked{color:#57606a}table.measured{margin:4px 0 10px}table.measured caption{text-align:left;
font-weight:600}table.measured td{padding:1px 8px 1px 0;vertical-align:top}table.measured td:first-child{white-space:nowrap}
figure{margin:0 0 1em;min-width:0}figcaption{font-weight:600;font-size:14px;margin-bottom:4px}
figcaption .note{display:block;font-weight:400;font-size:12.5px;color:#59636e}.emu{font-weight:400;color:#9a6700}
svg.chart{display:block;width:100%;height:auto;max-width:620px}.decision{max-width:660px}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,380px),1fr));gap:20px 32px}
.nodata{color:#59636e;font-style:italic}p.note{font-size:13px;color:#59636e;max-width:72em}
.scroll{overflow-x:auto;max-width:100%;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:13px}td,th{border:1px solid #d8dee4;padding:4px 8px;
vertical-align:top}th{background:#f6f8fa;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.legs td.n{min-width:8em;max-width:20em}.legs th[scope=col]{white-space:nowrap}
.legs th[scope=row]{position:sticky;left:0;z-index:1;min-width:8em;max-width:16em}
.runs td{white-space:nowrap}.env td code{overflow-wrap:anywhere}.env th{white-space:nowrap}
.sw{display:inline-block;width:.75em;height:.75em;border-radius:2px;margin-right:.4em;vertical-align:-.05em}
code{font-size:12px}pre{overflow-x:auto;max-width:100%;font-size:12px}footer{margin-top:2em;color:#59636e;font-size:12px}
@media (max-width:600px){body{font-size:14px}.page{padding:8px 12px 32px}h1{font-size:1.45em}}"""


def render_html(ev: Evaluation) -> str:
    ev = inert_strings(ev)  # job text: no escape or control character reaches the page (html.escape leaves them)
    name = e(str(ev.get("bakeoff")))
    verdict = e(ev["verdict"])
    decision = decision_chart(ev, leg_colours(ev))
    banner = f'<p class="banner">Speed and cost: {e(EMULATED)}.</p>' if _emulated(ev) else ""
    sections = "\n".join(filter(None, (render(ev) for _, render in SECTIONS)))
    # The production decision is what the bake-off was run to answer: the first screen, under the verdict.
    production = decision_section.section_html(ev)
    css = CSS + ("\n" + decision_section.CSS if production else "")
    production_block = "\n" + production if production else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bake-off {name}: {verdict}</title>
<style>{css}</style></head><body><main class="page">
<h1>Bake-off {name}: <span class="{verdict}">{verdict.upper()}</span></h1>
<p class="verdict">{e(verdict_sentence(ev))}</p>{production_block}
{_measured_html(ev)}
{f'<div class="decision">{decision}</div>' if decision else ''}
{banner}
{sections}
<footer>spec hash {e(str(ev.get('spec_hash')))} · {e(MONEY_RULE)} · written by bakeoff's evaluation step from
evaluation.json</footer>
</main></body></html>
"""


def render_decision_html(ev: Evaluation) -> str | None:
    """The decision section alone, as a page (decision.html: the MLflow parent run's plot artifact, which
    MLflow's artifact view shows as it is); None without a projection."""
    production = decision_section.section_html(ev)
    if not production:
        return None
    name = e(str(ev.get("bakeoff") or "bake-off"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bake-off {name}: the decision</title>
<style>{CSS}
{decision_section.CSS}</style></head><body><main class="page">
{production}
</main></body></html>
"""


def write_reports(ev: Evaluation, out_dir: Path) -> list[Path]:
    """report.html and report.md, and decision.html where the evaluation projects a production run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "report.html", out_dir / "report.md"]
    texts = [render_html(ev), render_markdown(ev)]
    decision = render_decision_html(ev)
    if decision is not None:
        paths.append(out_dir / "decision.html")
        texts.append(decision)
    for path, text in zip(paths, texts, strict=True):
        # Whole or not at all: a reader never sees half a report.
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.unlink(missing_ok=True)  # a link planted there is removed, never written through
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        tmp.replace(path)  # a rename replaces a link at `path`; it does not follow it
    return paths

