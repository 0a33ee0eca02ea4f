"""What a verdict check is: a `CheckKind` (its name, how it runs, where `measured` shows it, whether it
counts toward the verdict, the type of its own keys) and the `Inputs` every kind runs on.

The check modules in this package import this module, and `checks/__init__.py` lists them in `CHECKS`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # scipy: the report reads the registry without it
    from bakeoff_runtime.verdict.two_stage import Stage


@dataclass(frozen=True)
class Inputs:
    """What a check reads: the legs' config and runs, the parity rule and the design's place. `earlier`: the
    checks the kinds before this one made, in order (same-computation reads the backend checks)."""
    base: str
    legs: dict[str, Any]                         # evaluation config's `legs` (LegConfig by leg)
    runs_by_leg: dict[str, list[dict]]           # runs.collect_runs
    metric: str
    parity: dict[str, Any] = field(default_factory=dict)
    power: float = 0.8
    values: dict[str, dict[int, float]] = field(default_factory=dict)   # completed seeds' metric, by leg
    look_alpha: float | None = None              # the level this look reads (sequential, stage 1 of 2)
    claims: int = 1                              # the family Holm's correction counts (multiplicity.py)
    compared: int = 1                            # the legs compared with the baseline (at least 1)
    stage: Stage | None = None
    earlier: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class CheckKind:
    """One kind of check: its checks are named `<name>` or `<name>:<leg>`.

    * `run`: the kind's checks (plain dicts: name, status, passed, why, then its own keys), in display order;
    * `section`: its key in evaluation.json's `measured` (what was measured at all: the report's
      "What was measured" and the MLflow parent run's validity tags read it); None: not shown there;
    * `per_leg`: `measured[section]` is {leg: brief}; else one brief (or None when it made no check);
    * `brief`: keys of the check copied beside status and why into its `measured` entry;
    * `counts`: whether a failed or undecided check of this kind decides the verdict (else reported only);
    * `details`: the TypedDict of its own keys (typing only: contract.documents.Check holds them all).
    """
    name: str
    run: Callable[[Inputs], list[dict[str, Any]]]
    section: str | None = None
    per_leg: bool = True
    brief: tuple[str, ...] = ()
    counts: bool = True
    details: type | None = None


def kind_of(check: Mapping[str, Any]) -> str:
    """The kind a check is of: its name's prefix ("backend:trn1" -> "backend")."""
    return str(check["name"]).split(":", 1)[0]
