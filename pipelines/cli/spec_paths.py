"""The field paths `--set KEY=VALUE` takes, read off the spec's pydantic models, for shell completion.

A path is what pipelines/spec/loader.py's `apply_overrides` walks: field names joined by dots, a leg
chosen by its name or index (`legs.trn.instance_type`). Imported only while a shell is completing,
so pydantic and the spec models stay out of the CLI's start-up."""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import yaml

# A leg by index when the spec's own leg names cannot be read: every spec has at least two legs.
DEFAULT_LEGS = ("0", "1")
_MAX_SPEC_BYTES = 1_000_000  # a completion reads the spec's leg names only; a bigger file is not a spec


def _members(annotation: Any) -> list[Any]:
    """The types an annotation allows: `X | None`, `Optional[X]` and `Annotated[X, ...]` unwrapped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin is typing.Union or (hasattr(types, "UnionType") and isinstance(annotation, types.UnionType)):
        return [m for a in typing.get_args(annotation) for m in _members(a) if m is not type(None)]
    return [annotation]


def _model(annotation: Any) -> Any:
    from pydantic import BaseModel

    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    return None


def _listed_model(annotation: Any) -> Any:
    for member in _members(annotation):
        if typing.get_origin(member) is list:
            return _model(typing.get_args(member)[0])
    return None


def values(annotation: Any) -> list[str]:
    """The values a field can only take (a Literal's, a bool's), as `--set` reads them (YAML)."""
    out: list[str] = []
    for member in _members(annotation):
        if typing.get_origin(member) is typing.Literal:
            out += [str(v).lower() if isinstance(v, bool) else str(v) for v in typing.get_args(member)]
        elif member is bool:
            out += ["true", "false"]
    return list(dict.fromkeys(out))


def fields(model: Any, legs: tuple[str, ...] = DEFAULT_LEGS, prefix: str = "") -> dict[str, tuple[str, Any]]:
    """Every settable leaf path under `model`: path -> (its description, its annotation). A group (a
    nested model) is walked into; a list of legs is walked into once per leg name in `legs`; any other
    list or mapping is a leaf, set whole."""
    out: dict[str, tuple[str, Any]] = {}
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        nested, listed = _model(info.annotation), _listed_model(info.annotation)
        if nested is not None:
            out.update(fields(nested, legs, f"{path}."))
        elif listed is not None and path == "legs":
            for leg in legs:
                out.update(fields(listed, legs, f"{path}.{leg}."))
        else:
            out[path] = (" ".join((info.description or "").split()), info.annotation)
    return out


def leg_names(spec: str | None) -> tuple[str, ...]:
    """The leg names of the spec file on the command line, for `legs.<name>.`; the indices when it
    cannot be read (not given yet, missing, not YAML): a completion never fails on a bad spec."""
    if not spec:
        return DEFAULT_LEGS
    try:
        path = Path(spec)
        if path.stat().st_size > _MAX_SPEC_BYTES:
            return DEFAULT_LEGS
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return DEFAULT_LEGS
    legs = data.get("legs") if isinstance(data, dict) else None
    found = [leg.get("name") for leg in legs if isinstance(leg, dict)] if isinstance(legs, list) else []
    names = tuple(n for n in found if isinstance(n, str) and n and "." not in n and "=" not in n)
    return names or DEFAULT_LEGS


def candidates(prefix: str, spec: str | None) -> dict[str, str]:
    """What `--set <prefix>` completes to, each with its description.

    Before `=`: the next part of each path that starts with `prefix` (`storage.` for a group, with
    its fields offered once it is the only match, so a completion never stops at a dot; `name=` for a
    field). After `=`: the field's values where they are few (a choice, true/false)."""
    from bakeoff.pipelines.spec.model import BakeoffSpec

    paths = fields(BakeoffSpec, leg_names(spec))
    if "=" in prefix:
        key = prefix.split("=", 1)[0]
        if key not in paths:
            return {}
        description, annotation = paths[key]
        return {f"{key}={v}": description for v in values(annotation)}
    while True:
        start = prefix.rsplit(".", 1)[0] + "." if "." in prefix else ""
        offered: dict[str, str] = {}
        for path, (description, _) in paths.items():
            if not path.startswith(prefix):
                continue
            head, dot, _rest = path[len(start):].partition(".")
            offered.setdefault(f"{start}{head}." if dot else f"{path}=", "" if dot else description)
        if len(offered) == 1 and next(iter(offered)).endswith("."):
            prefix = next(iter(offered))  # one group: go on into it
            continue
        return offered
