"""`bakeoff preflight`: find Trainium trouble on this machine before it costs money."""
from __future__ import annotations

from typing import Any

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.params import LEGS
from bakeoff.pipelines.spec.model import BakeoffSpec
from bakeoff.pipelines.terminal_text import data
from bakeoff_runtime.contract.backend_table import row

VERDICT_STYLE = {"ready": "green", "will recompile": "yellow", "will fall back": "red"}


def legs_to_check(spec: BakeoffSpec, names: list[str] | None) -> list[str]:
    if spec.entrypoint.mode == "script":
        from bakeoff.pipelines.spec.loader import locate

        file, line = locate(spec, ("entrypoint", "mode"))
        raise SpecError("preflight probes a Runtime script's steps; a script-mode bake-off reports CPU fallbacks and "
                        "recompilations in its blockers checks (`bakeoff run`), and PT_XLA_DEBUG_LEVEL=1 in a leg's "
                        "environment says where they come from", file=file, line=line, field="entrypoint.mode")
    if names:
        known = {leg.name for leg in spec.legs}
        for n in names:
            if n not in known:
                raise SpecError(f"no leg named {n!r} (legs: {', '.join(sorted(known))})", field=LEGS)
        return names
    trn = [leg.name for leg in spec.legs if row(leg.backend_name).accelerator == "neuron"]
    return trn or [spec.legs[0].name]


def _describe(p: dict[str, Any]) -> str:
    kind = p["kind"]
    if kind == "recompilation":
        return f"recompiled {p['graphs']} graph(s) at step {p['step']}: {p['cause']}"
    if kind == "cpu-fallback":
        return f"{p['op']} fell back to the CPU at {p.get('where') or 'an unknown line'}"
    if kind == "fp64":
        return (f"float64 parameter {p['parameter']}" if "parameter" in p else
                f"{p['dtype']} from {p['op']} at {p['where']}")
    return f"{p['count']} host transfer(s) ({p['op']}) inside the step at {p['where']}"


def render(results: list[tuple[str, dict[str, Any]]], spec: BakeoffSpec, console) -> None:
    for name, report in results:
        leg = spec.leg(name)
        style = VERDICT_STYLE.get(report["verdict"], "bold")
        console.print(f"preflight {name} ({leg.instance_type}, {leg.backend} {leg.precision}) on local xla:cpu, "
                      f"{report['steps']} steps: [{style}]{report['verdict'].upper()}[/{style}]", highlight=False)
        console.print(f"  graphs compiled: {report['graphs_compiled']} ({report['graphs_after_warmup']} after "
                      f"warm-up); fallback ops: {data(', '.join(report['fallback_ops']) or 'none')}", highlight=False)
        for p in report["problems"]:
            mark = "[red]BLOCKER[/red]" if p["blocker"] else "[yellow]warning[/yellow]"
            console.print(f"  {mark} {data(_describe(p))}", highlight=False)  # the job's text, shown as data
            console.print(f"          fix: {data(p['fix'])}", highlight=False)
