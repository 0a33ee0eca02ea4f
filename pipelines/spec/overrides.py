"""`--set key.path=value` overrides, applied to the raw spec before validation.

A path names fields with dots; a leg is selected by index (`legs.1.x`, `legs[1].x`) or by
name (`legs.trn1.x`). Every problem is blamed on the `--set` argument.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from pipelines.errors import SpecError

_PART = re.compile(r"[^.\[\]]+|\[\d+\]")


_KEY = re.compile(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+|\[\d+\])*")


def _parts(key: str, item: str) -> list[str | int]:
    """`legs[1].precision`, `legs.1.precision` and `legs.trn1.precision` alike."""
    if not _KEY.fullmatch(key):
        raise SpecError(f"{key!r} is not a field path (names with dots, a list index as .1 or [1]), e.g. "
                        "--set training.max_steps=50", file=f"--set {item}")
    return [int(t[1:-1]) if t.startswith("[") else (int(t) if t.isdigit() else t) for t in _PART.findall(key)]


def _select_leg(legs: list, part: str | int, item: str) -> int:
    if isinstance(part, int):
        if not 0 <= part < len(legs):
            raise SpecError(f"there is no legs[{part}]; the spec has {len(legs)} leg(s) (0-{len(legs) - 1})",
                            file=f"--set {item}")
        return part
    names = [leg.get("name") if isinstance(leg, dict) else None for leg in legs]
    if part in names:
        return names.index(part)
    raise SpecError(f"there is no leg named {part!r}; legs are {', '.join(str(n) for n in names)} (or give an "
                    "index: legs.0)", file=f"--set {item}")


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The spec with the overrides applied, and (dotted field, argument) for each, so that a
    validation error in an overridden field can be blamed on its argument."""
    touched: list[tuple[str, str]] = []
    for item in overrides or []:
        if "=" not in item:
            raise SpecError("expected KEY=VALUE, e.g. --set training.max_steps=50", file=f"--set {item}")
        key, raw = item.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SpecError(f"the value is not valid YAML ({problem}); quote it, e.g. --set 'seeds=[1, 2]'",
                            file=f"--set {item}") from None
        parts = _parts(key.strip(), item)
        node: Any = data
        dotted = ""
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                index = _select_leg(node, part, item) if dotted == "legs" else part
                if not isinstance(index, int) or not 0 <= index < len(node):
                    raise SpecError(f"{dotted} is a list of {len(node)}; use an index 0-{len(node) - 1}",
                                    file=f"--set {item}")
                dotted += f"[{index}]"
                if last:
                    node[index] = value
                else:
                    node = node[index]
                continue
            if not isinstance(node, dict):
                raise SpecError(f"{dotted or 'the spec'} is a value ({node!r}), not a group of fields; set "
                                f"{dotted} itself", file=f"--set {item}")
            name = str(part)
            dotted = f"{dotted}.{name}" if dotted else name
            if last:
                node[name] = value
            else:
                if node.get(name) is None:
                    node[name] = {}
                node = node[name]
        touched.append((dotted, item))
    return data, touched
