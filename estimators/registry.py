"""The table of leg kinds. Adding one (trn3, p6...) is one module with a `KIND`
and one line here; third-party packages can add theirs through the
`bakeoff.leg_kinds` entry-point group.
"""
from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from .base import InstanceType, LegKind

BUILTIN_KIND_MODULES = (
    "bakeoff.estimators.trn1",
    "bakeoff.estimators.trn2",
    "bakeoff.estimators.gpu",
    "bakeoff.estimators.cpu",
)


@lru_cache(maxsize=1)
def kinds() -> dict[str, LegKind]:
    found: dict[str, LegKind] = {}
    modules = list(BUILTIN_KIND_MODULES)
    try:
        from importlib.metadata import entry_points

        modules += [ep.value for ep in entry_points(group="bakeoff.leg_kinds")]
    except Exception:  # a broken third-party plugin must not break the built-ins
        pass
    for mod in modules:
        kind = importlib.import_module(mod).KIND
        found[kind.name] = kind
    return found


@lru_cache(maxsize=1)
def _by_instance() -> dict[str, tuple[LegKind, InstanceType]]:
    return {name: (kind, inst) for kind in kinds().values() for name, inst in kind.instances.items()}


def all_instance_types() -> list[str]:
    return sorted(_by_instance())


def lookup_instance(name: str) -> tuple[LegKind, InstanceType] | None:
    return _by_instance().get(name)


def instance_of(name: str) -> tuple[LegKind, InstanceType]:
    """The kind and catalog row of a known instance type (KeyError otherwise)."""
    return _by_instance()[name]


def suggest_instance(name: str) -> str | None:
    close = difflib.get_close_matches(name, all_instance_types(), n=1, cutoff=0.5)
    if not close and not name.startswith("ml."):
        close = difflib.get_close_matches("ml." + name, all_instance_types(), n=1, cutoff=0.5)
    return close[0] if close else None


def kind_for_backend(backend: str) -> list[str]:
    """Instance kinds on which `backend` can run (for error messages)."""
    return [k.name for k in kinds().values() if k.supports(backend)]
