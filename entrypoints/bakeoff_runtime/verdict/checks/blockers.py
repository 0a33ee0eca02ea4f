"""`blockers:<leg>`: CPU fallbacks, recompilations after warm-up and the Runtime's warnings.
They do not decide quality, so they never fail the verdict, but the leg's speed and cost
are marked as not representative of the target.
"""
from __future__ import annotations

from typing import Any, TypedDict

from bakeoff_runtime.verdict.checks._summary import _object, _records
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs


class Details(TypedDict, total=False):
    """A blockers check's own keys."""
    fallback_ops: list[str]
    recompiles_after_warmup: int | None
    warnings: list[str]
    speed_representative: bool          # evaluate copies it to the leg's figures


# Graphs that may first compile after warm-up in a healthy run: the last step's (always synced)
# and a logging step's. More than this is a shape or value that changes from step to step.
RECOMPILE_ALLOWANCE = 2
PREFLIGHT_HINT = "run `bakeoff preflight SPEC` to see where and how to fix them"
# Script mode has no preflight probes: PyTorch/XLA's own debugging output (PT_XLA_DEBUG_LEVEL, read by
# torch-xla 2.9's _XLAC; docs.pytorch.org/xla "Troubleshoot") says where each compile and transfer comes from.
SCRIPT_HINT = ("give the leg `environment: {PT_XLA_DEBUG_LEVEL: \"1\"}` to have PyTorch/XLA print where each "
               "compilation and transfer comes from")


def _texts(value: object) -> list[str]:
    """The text items of a list a job wrote (anything else in it is passed over, bounded in length)."""
    return [v[:500] for v in value if isinstance(v, str)] if isinstance(value, list) else []


def blockers_check(leg: str, cfg: dict, runs: list[dict]) -> dict[str, Any]:
    name = f"blockers:{leg}"
    records = _records(runs)
    if not records:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: no run completed, so there is nothing to look for blockers in"}
    fallbacks: set[str] = set()
    recompiles: list[int] = []
    warnings: set[str] = set()
    for s in records:
        compile_ = _object(s.get("compile"))
        fallbacks.update(_texts(compile_.get("fallback_ops")))
        if isinstance(compile_.get("recompiles_after_warmup"), int):
            recompiles.append(compile_["recompiles_after_warmup"])
        warnings.update(_texts(s.get("warnings")))
    found = []
    if fallbacks:
        found.append(f"CPU fallbacks of {', '.join(sorted(fallbacks)[:5])}")
    if recompiles and max(recompiles) > RECOMPILE_ALLOWANCE:
        found.append(f"up to {max(recompiles)} graph recompilations after warm-up")
    found += sorted(warnings)
    out = {"name": name, "fallback_ops": sorted(fallbacks),
           "recompiles_after_warmup": max(recompiles) if recompiles else None, "warnings": sorted(warnings)}
    if found:
        hint = SCRIPT_HINT if any(s.get("mode") == "script" for s in records) else PREFLIGHT_HINT
        return {**out, "status": "warning", "passed": False, "speed_representative": False,
                "why": f"{leg}: " + "; ".join(found) + f". Its speed and cost are not representative of "
                       f"{cfg.get('instance_type')}; {hint}"}
    basis = (f"no CPU fallbacks, {max(recompiles)} graphs compiled after warm-up (at most {RECOMPILE_ALLOWANCE} "
             "expected)" if recompiles else "no CPU fallbacks")
    return {**out, "status": "passed", "passed": True, "speed_representative": True, "why": f"{leg}: {basis}"}


def run(inputs: Inputs) -> list[dict[str, Any]]:
    return [blockers_check(leg, inputs.legs[leg], inputs.runs_by_leg[leg]) for leg in inputs.legs]


KIND = CheckKind("blockers", run, section="blockers", details=Details)
