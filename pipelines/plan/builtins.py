"""The built-in trainers a spec can name (`entrypoint.builtin`): the script each runs and
what it needs installed where it runs."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Builtin:
    script: str  # in entrypoints/
    requires: str | None = None  # a module the script imports
    extra: str | None = None  # bakeoff's optional extra that installs it


BUILTINS = {
    "reference-lm": Builtin("train.py"),
    "hf-causal-lm": Builtin("hf_causal_lm.py", requires="transformers", extra="hf"),
}


def builtin_script(name: str) -> str:
    return BUILTINS[name].script


def missing_requirement(spec) -> str | None:
    """Why the spec's built-in trainer cannot run in this Python (jobs run locally with it), or None."""
    name = spec.entrypoint.builtin
    need = BUILTINS[name] if name else None
    if need is None or need.requires is None or importlib.util.find_spec(need.requires) is not None:
        return None
    return (f"entrypoint.builtin {name!r} needs {need.requires}, which is not installed here: "
            f"pip install 'bakeoff[{need.extra}]' (or uv sync --extra {need.extra})")
