"""Pipeline-definition expressions (Get, Std:Join, Std:JsonGet) as plain dicts."""
from __future__ import annotations

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
