"""`--set key.path=value` overrides, applied to the raw spec before validation."""
from __future__ import annotations

from typing import Any

import yaml

from .errors import SpecError


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides or []:
        if "=" not in item:
            raise SpecError(f"--set {item!r}: expected KEY=VALUE, e.g. --set training.max_steps=50")
        key, raw = item.split("=", 1)
        value = yaml.safe_load(raw) if raw else ""
        node: Any = data
        parts = key.split(".")
        for part in parts[:-1]:
            if isinstance(node, list):
                try:
                    node = node[int(part)]
                except (ValueError, IndexError):
                    raise SpecError(f"--set {key}: {part!r} is not an index of a list of {len(node)}") from None
            else:
                node = node.setdefault(part, {})
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return data
