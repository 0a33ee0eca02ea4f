"""The terminal summary of an evaluation.json: the same for a local run and a SageMaker execution."""
from __future__ import annotations

from typing import Any


def _num(v, fmt="{:.4g}"):
    return "-" if v is None else fmt.format(v)


def _bytes(v):
    if not v:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024:
            return f"{v:.0f} {unit}"
        v /= 1024
    return f"{v:.0f} PiB"


def render_summary(evaluation: dict[str, Any], console) -> None:
    from rich.table import Table

    verdict = evaluation["verdict"]
    colour = {"pass": "green", "fail": "red", "inconclusive": "yellow"}[verdict]
    parity = evaluation["parity"]
    metric = parity["metric"]
    table = Table(title=f"bake-off {evaluation.get('bakeoff')}: {metric} ({parity['direction']}), "
                        f"baseline {parity['baseline']}", title_justify="left")
    for col in ("leg", "instance", "backend", "runs ok", f"{metric} mean", "std", "throughput",
                "first step", "compile", "peak host mem", "wall", "cost/run", "parity"):
        table.add_column(col, justify="left" if col in ("leg", "instance", "backend", "parity") else "right")
    for name, f in evaluation["legs"].items():
        m = f["metric"]
        inst = f["instance_type"] + (f" -> {f['emulated_on']}" if f.get("emulated_on") else "")
        table.add_row(
            name, inst, f["backend"], f"{f['completed']}/{len(f['runs'])}", _num(m.get("mean")), _num(m.get("std")),
            _num(f.get("throughput_mean"), "{:,.0f}") + f" {f.get('throughput_unit', '')}",
            _num(f.get("time_to_first_step_s_mean"), "{:.1f}s"), _num(f.get("compile_time_s_mean"), "{:.1f}s"),
            _bytes(f.get("peak_host_memory_bytes_max")), _num(f.get("wall_time_s_mean"), "{:.0f}s"),
            _num(f.get("cost_per_run_usd_mean"), "${:.4f}"), f.get("parity", "baseline"))
    console.print(table)
    for check in evaluation["checks"]:
        mark = {"passed": "[green]ok[/green]", "failed": "[red]FAIL[/red]"}.get(check["status"], "[yellow]??[/yellow]")
        console.print(f"  {mark} {check['name']}: {check['why']}", highlight=False)
    basis = evaluation.get("cost_basis")
    if basis:
        console.print(f"  cost: {basis}", highlight=False)
    console.print(f"[bold {colour}]verdict: {verdict}[/bold {colour}] - {evaluation['summary']}", highlight=False)
