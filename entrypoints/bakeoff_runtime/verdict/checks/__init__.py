"""The verdict's checks, one module each, listed in `CHECKS` in the order evaluation.json shows them.

A module declares `KIND`, a `registry.CheckKind`: its name (its checks' prefix), `run(inputs)` giving its
checks, its key in evaluation.json's `measured` (or none), whether it counts toward the verdict, and a
TypedDict of its own keys. `evaluate` runs every kind in order; `measured`, the report's "What was
measured" rows and the MLflow parent run's validity tags (through validity.is_validity_check) read this
list, so a new check is its module plus its line here (and, if it reads a new figure of the leg, that
figure's field in the evaluation config). Standard library only, like the rest of the verdict.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bakeoff_runtime.verdict.checks import (
    backend,
    blockers,
    parity,
    same_computation,
    same_model,
    seeds,
    stability,
)
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs, kind_of

__all__ = ["CHECKS", "CheckKind", "Inputs", "counts", "find", "is_measured", "kind_of", "measured", "measured_kinds",
           "run"]

CHECKS: tuple[CheckKind, ...] = (
    stability.KIND,          # stability:<leg>
    parity.KIND,             # parity:<leg>~<baseline>
    backend.KIND,            # backend:<leg>        (measured)
    same_model.KIND,         # same-model           (measured)
    same_computation.KIND,   # same-computation:<leg> (measured)
    seeds.KIND,              # seeds:<leg>          (measured)
    blockers.KIND,           # blockers:<leg>       (measured)
)


def _kinds(kinds: Sequence[CheckKind] | None) -> Sequence[CheckKind]:
    return CHECKS if kinds is None else kinds  # read when called: a registry extended later is seen


def find(name: str, kinds: Sequence[CheckKind] | None = None) -> CheckKind | None:
    """The kind named `name`, or None."""
    return next((k for k in _kinds(kinds) if k.name == name), None)


def measured_kinds(kinds: Sequence[CheckKind] | None = None) -> tuple[CheckKind, ...]:
    """The kinds `measured` shows: whether the target was measured at all."""
    return tuple(k for k in _kinds(kinds) if k.section is not None)


def run(inputs: Inputs, kinds: Sequence[CheckKind] | None = None) -> list[dict[str, Any]]:
    """Every kind's checks, kind after kind; each kind sees the checks made before it."""
    out: list[dict[str, Any]] = []
    for kind in _kinds(kinds):
        out += kind.run(replace(inputs, earlier=tuple(out)))
    return out


def is_measured(check: Mapping[str, Any], kinds: Sequence[CheckKind] | None = None) -> bool:
    """Whether a check says if the target was measured at all (its kind has a `measured` section)."""
    kind = find(kind_of(check), kinds)
    return kind is not None and kind.section is not None


def counts(check: Mapping[str, Any], kinds: Sequence[CheckKind] | None = None) -> bool:
    """Whether the check's kind counts toward the verdict (a kind this registry does not know does)."""
    kind = find(kind_of(check), kinds)
    return kind is None or kind.counts


def measured(checks: list[dict[str, Any]], kinds: Sequence[CheckKind] | None = None) -> dict[str, Any]:
    """evaluation.json's `measured`: each measured check's status and why, by its kind's section."""
    shown = measured_kinds(kinds)
    out: dict[str, Any] = {k.section: ({} if k.per_leg else None) for k in shown if k.section}
    by_name = {k.name: k for k in shown}
    for c in checks:
        name, _, leg = c["name"].partition(":")
        kind = by_name.get(name)
        if kind is None or kind.section is None:
            continue
        brief = {"status": c["status"], "why": c["why"], **{key: c.get(key) for key in kind.brief}}
        if kind.per_leg:
            out[kind.section][leg] = brief
        else:
            out[kind.section] = brief
    return out
