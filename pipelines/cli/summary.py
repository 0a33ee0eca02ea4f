"""The terminal summary of an evaluation.json: the same for a local run and a SageMaker execution."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from bakeoff.pipelines.terminal_text import data
from bakeoff_runtime.report.document import devices_note, parity_word
from bakeoff_runtime.report.formatting import size

if TYPE_CHECKING:
    from bakeoff_runtime.contract.documents import Evaluation, LegFigures


def _num(v, fmt="{:.4g}"):
    return "-" if v is None else fmt.format(v)


def _usd(v) -> str:
    if v is None:
        return "-"
    return f"${v:,.2f}" if abs(v) >= 0.01 or v == 0 else f"${v:.3g}"


def _throughput(f) -> str:
    t = f.get("throughput") or {}
    mean = t.get("mean", f.get("throughput_mean"))
    if mean is None:
        return "-"
    text = f"{mean:,.0f} {f.get('throughput_unit', '')}"
    if t.get("cv") is not None:
        text += f" (CV {t['cv']:.0%}"
        # The stability flag is on the range (slowest to fastest seed), which a CV understates.
        if t.get("unstable") and t.get("relative_range") is not None:
            text += f", seeds span {t['relative_range']:.0%}"
        text += ")"
    return text


def _cold_warm(cache) -> str:
    if not cache:
        return "-"
    cold, warm = cache.get("time_to_first_step_s_cold"), cache.get("time_to_first_step_s_warm")
    if cold is None and warm is None:
        return "-"
    return f"{_num(cold, '{:.1f}s')} ({cache['cold_runs']}) / {_num(warm, '{:.1f}s')} ({cache['warm_runs']})"


# Below these a verdict still holds at its alpha, but says little a team should act on alone: the spread rests
# on a handful of pairs, or the metric is an early loss, before the runs have trained.
FEW_SEEDS = 3
FEW_STEPS = 100


def _steps_done(evaluation: Evaluation) -> list[int]:
    steps = [r.get("steps_completed") for f in evaluation["legs"].values() for r in f["runs"]]
    return [s for s in steps if isinstance(s, int) and not isinstance(s, bool) and s > 0]


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _wide_intervals(evaluation: Evaluation) -> list[tuple[str, float, float]]:
    """(leg, the width of its parity CI, the margin) for each leg whose interval is wider than the margin's
    band (-margin to +margin, twice the margin across): an interval that cannot fit in the band cannot show
    the legs equivalent however the difference falls, so the seeds are too few for the margin. (A width
    past the margin alone is usual in a run that passes: its interval only has to sit inside the band.)"""
    out = []
    for check in evaluation["checks"]:
        raw = cast("dict[str, Any]", check)
        ci, margin = raw.get("ci"), raw.get("margin")
        if not str(check["name"]).startswith("parity:") or not isinstance(ci, (list, tuple)) or len(ci) != 2:
            continue
        low, high, m = (_finite(v) for v in (*ci, margin))
        if low is not None and high is not None and m is not None and m > 0 and high - low > 2 * m:
            out.append((str(check["name"])[len("parity:"):].split("~")[0], high - low, m))
    return out


def small_run(evaluation: Evaluation) -> list[str]:
    """Why the verdict comes from a run too small to trust (empty: it does not), in a few words each:
    what the verdict's own line carries, the caution lines below it saying the rest."""
    out = []
    seeds = min((f["completed"] for f in evaluation["legs"].values()), default=0)
    if 0 < seeds < FEW_SEEDS:
        out.append(f"{seeds} seed{'s' if seeds != 1 else ''}")
    done = _steps_done(evaluation)
    if done and max(done) < FEW_STEPS:
        out.append(f"{max(done)} steps")
    out += [f"{leg}'s CI wider than the margin" for leg, _, _ in _wide_intervals(evaluation)]
    return out


def cautions(evaluation: Evaluation) -> list[str]:
    """What to keep in mind beside the verdict, most important first (empty: nothing)."""
    out = []
    if (evaluation.get("speed") or {}).get("emulated"):
        out.append("the legs ran emulated on this machine: the verdict compares the two backends' numerics here, not "
                   "on the target hardware; run on SageMaker to decide")
    legs = evaluation["legs"]
    seeds = min((f["completed"] for f in legs.values()), default=0)
    if 0 < seeds < FEW_SEEDS:
        out.append(f"{seeds} completed seed{'s' if seeds != 1 else ''} on the fewest leg: the spread rests on too few "
                   "pairs to plan from; `bakeoff plan --from RUN_DIR` sizes the seeds")
    done = _steps_done(evaluation)
    if done and max(done) < FEW_STEPS:
        out.append(f"each job trained at most {max(done)} steps: a smoke test's length; the parity of an early "
                   "loss says little about the trained model")
    for leg, width, margin in _wide_intervals(evaluation):
        out.append(f"the parity interval of {leg} spans {width:.4g}, wider than the whole margin band "
                   f"(+/-{margin:.4g}): the seeds are too few to place the difference within the margin; "
                   "`bakeoff plan --from RUN_DIR` sizes the seeds")
    return out


def verdict_line(evaluation: Evaluation) -> str:
    """The verdict's own line (rich markup), with its caution when the run was too small to trust it."""
    verdict = evaluation["verdict"]
    colour = {"pass": "green", "fail": "red", "inconclusive": "yellow"}[verdict]
    line = f"[bold {colour}]verdict: {verdict}[/bold {colour}]"
    small = small_run(evaluation)
    if small:
        line += f" [yellow]caution: from a run too small to trust ({data(', '.join(small))}); see below[/yellow]"
    return line


def render_summary(evaluation: Evaluation, console) -> None:
    from rich.table import Table

    emulated = bool((evaluation.get("speed") or {}).get("emulated"))
    emu = " (emulated)" if emulated else ""
    parity = evaluation["parity"]
    metric = parity["metric"]
    legs = evaluation["legs"]
    # Legs as columns: a bake-off has a few legs and many figures, so this fits a terminal.
    table = Table(title=data(f"bake-off {evaluation.get('bakeoff')}: {metric} ({parity['direction']}), "
                             f"baseline {parity['baseline']}"), title_justify="left")
    table.add_column("")
    for name in legs:
        table.add_column(data(name), justify="right")
    rows: list[tuple[str, Callable[[LegFigures], str | None]]] = [
        ("instance", lambda f: f["instance_type"]),
        ("runs on", lambda f: f.get("emulated_on") or f["backend"]),
        ("backend", lambda f: f"{f['backend']} {f.get('precision') or ''}".strip()),
        ("runs ok", lambda f: f"{f['completed']}/{len(f['runs'])}"),
        (f"{metric} mean", lambda f: _num(f["metric"].get("mean"))),
        (f"{metric} std", lambda f: _num(f["metric"].get("std"))),
        ("throughput" + emu, _throughput),
        ("time to first step" + emu, lambda f: _num(f.get("time_to_first_step_s_mean"), "{:.1f}s")),
        ("compile time" + emu, lambda f: _num(f.get("compile_time_s_mean"), "{:.1f}s")),
        ("first step cold/warm" + emu, lambda f: _cold_warm(f.get("compile_cache"))),
        ("peak device memory", lambda f: size(f.get("peak_device_memory_bytes_max"))),
        ("peak host memory", lambda f: size(f.get("peak_host_memory_bytes_max"))),
        ("wall time" + emu, lambda f: _num(f.get("wall_time_s_mean"), "{:.0f}s")),
        ("cost per run" + emu, lambda f: _usd(f.get("cost_per_run_usd_mean")) + devices_note(f)),
        ("parity", parity_word),
    ]
    for label, get in rows:
        cells = [data(get(f)) for f in legs.values()]
        if any(c != "-" for c in cells):  # a row of dashes says nothing (no device memory on CPU, say)
            table.add_row(data(label), *cells)  # a label may name the spec's metric
    console.print(table)
    for check in evaluation["checks"]:
        mark = {"passed": "[green]ok[/green]", "failed": "[red]FAIL[/red]", "warning": "[yellow]note[/yellow]",
                "unchecked": "[dim]not checked[/dim]"}.get(check["status"], "[yellow]undecided[/yellow]")
        console.print(f"  {mark} {data(check['name'])}: {data(check['why'])}", highlight=False)
    speed = evaluation.get("speed") or {}
    if emulated:
        console.print(f"  speed and cost: {data(speed.get('label'))}; no cheapest leg is named from an emulation",
                      highlight=False)
    if speed.get("jobs_at_once"):
        console.print(f"  [yellow]note[/yellow] the jobs ran {data(str(speed['jobs_at_once']))} at a time on this "
                      "machine: their speed figures shared its cores (--jobs 1 gives each job the whole machine)",
                      highlight=False)
    for leg in speed.get("unstable_legs") or []:
        console.print(f"  [yellow]note[/yellow] throughput of {data(leg)} varies by more than 20% across seeds",
                      highlight=False)
    slowed = [n for n, f in legs.items() if f.get("speed_representative") is False]
    if slowed:
        console.print(f"  [yellow]note[/yellow] the speed and cost of {data(', '.join(slowed))} are not representative "
                      "(CPU fallbacks, recompilations or warnings above; each blockers line says how to find them)",
                      highlight=False)
    basis = evaluation.get("cost_basis")
    if basis:
        console.print(f"  cost: {data(basis)}", highlight=False)
    rule = evaluation.get("rule") or {}
    if rule.get("changed"):
        original = rule["original"] or "not recorded"
        console.print("  [yellow]rule changed after the data[/yellow]: " + data(
            f"original {original}, now {rule['current']} ({rule.get('reason')})"), highlight=False)
    console.print(verdict_line(evaluation), highlight=False)
    for line in cautions(evaluation):
        console.print(f"  [yellow]caution[/yellow] {data(line)}", highlight=False)
    rec = evaluation.get("recommendation")
    if rec:
        console.print(f"to decide it: {data(rec['why'])}", highlight=False)
    projection = evaluation.get("projection")
    if projection:
        console.print(f"decision: {data(projection['sentence'])}", highlight=False)


def render_projection(result) -> None:
    """`bakeoff project`'s terminal output: one row per leg, then the sentence."""
    from rich.table import Table

    from bakeoff.pipelines.cli.output import console as make_console

    console = make_console()
    level = f"{result.confidence:.0%}"
    table = Table(title=data(f"one production run, {level} intervals ({result.label})"), title_justify="left")
    for column in ("leg", "instances", "throughput", "hours per run", "cost per run", "first run", "per "
                   + result.period):
        table.add_column(column, justify="left" if column == "leg" else "right")

    def span(i, fmt) -> str:
        if i is None or i.mean is None:
            return "-"
        return fmt(i.mean) + (f" ({fmt(i.low)}-{fmt(i.high)})" if i.low is not None else "")

    for name, leg in result.legs.items():
        if leg.reason and leg.throughput.mean is None:
            table.add_row(data(name), str(leg.instances), data(leg.reason), "", "", "", "")
            continue
        table.add_row(data(name), f"{leg.instances} x {data(leg.instance_type or '?')}",
                      span(leg.throughput, lambda v: f"{v:,.0f}") + f" {data(leg.unit or '')}/s",
                      span(leg.hours_per_run, lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.3g}"),
                      span(leg.cost_per_run_usd, _usd),
                      _usd(leg.first_run_cost_usd), span(leg.cost_per_period_usd, _usd))
    console.print(table)
    for leg in result.legs.values():
        if leg.scaling.get("basis") not in ("as measured", None):
            console.print(f"  scaling: {data(leg.scaling.get('note') or '')}", highlight=False)
    if result.emulated:
        console.print(f"  [yellow]note[/yellow] {data(result.label)}", highlight=False)
    console.print(f"decision: {data(result.sentence)}", highlight=False)
