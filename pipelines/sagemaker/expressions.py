"""Pipeline-definition expressions (Get, Std:Join, Std:JsonGet) as plain dicts."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def get(path: str) -> dict[str, str]:
    return {"Get": path}


def param(name: str) -> dict[str, str]:
    return get(f"Parameters.{name}")


def join(*values: Any, on: str = "") -> dict[str, Any]:
    return {"Std:Join": {"On": on, "Values": list(values)}}


def as_string(value: Any) -> Any:
    """A parameter where the API wants a string (e.g. a hyperparameter)."""
    return join(value) if isinstance(value, dict) else str(value)


def json_get(step: str, property_file: str, path: str) -> dict[str, Any]:
    return {"Std:JsonGet": {"PropertyFile": {"Get": f"Steps.{step}.PropertyFiles.{property_file}"}, "Path": path}}


def step_references(value: Any) -> Iterator[str]:
    """Steps a value reads from ({"Get": "Steps.NAME..."}): SageMaker runs a step after those it reads."""
    if isinstance(value, dict):
        ref = value.get("Get")
        if isinstance(ref, str) and ref.startswith("Steps."):
            yield ref.split(".")[1]
        for item in value.values():
            yield from step_references(item)
    elif isinstance(value, list):
        for item in value:
            yield from step_references(item)


def step_dependencies(step: dict[str, Any]) -> set[str]:
    """The steps a step waits for: its DependsOn and the steps whose properties it reads (its
    arguments, a Condition's JsonGet property files)."""
    found = set(step.get("DependsOn") or [])
    found.update(step_references(step.get("Arguments")))
    found.update(step_references(step.get("PropertyFiles")))
    found.discard(str(step.get("Name")))
    return found
