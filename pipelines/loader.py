"""Load a spec from YAML (or JSON) and turn validation errors into one line each:
file, line, field, what is wrong and how to fix it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .errors import SpecError
from .spec import BakeoffSpec, SpecFieldError


class _LineLoader(yaml.SafeLoader):
    """Records the line of every mapping key and sequence item, and refuses duplicate keys."""


def _walk(node: yaml.Node, path: tuple, lines: dict[tuple, int]) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise SpecError(f"duplicate key {key!r} (first at line {seen[key]}); keep one",
                                line=key_node.start_mark.line + 1, field=_dotted(path + (key,)))
            seen[key] = key_node.start_mark.line + 1
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), lines)


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_yaml(text: str, file: str | None = None) -> tuple[Any, dict[tuple, int]]:
    try:
        node = yaml.compose(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"not valid YAML: {problem}", file=file,
                        line=mark.line + 1 if mark else None) from None
    if node is None:
        raise SpecError("the spec is empty", file=file)
    lines: dict[tuple, int] = {}
    try:
        _walk(node, (), lines)
    except SpecError as exc:
        raise SpecError(exc.message, file=file, line=exc.line, field=exc.field) from None
    data = yaml.load(text, Loader=_LineLoader)
    if not isinstance(data, dict):
        raise SpecError("the spec must be a mapping of fields (name, legs, ...)", file=file, line=1)
    return data, lines


_HINTS = {
    "extra_forbidden": "unknown key; remove it or check its spelling (`bakeoff schema` lists every field)",
    "missing": "required field is missing; add it",
}


def _message(err: Any) -> tuple[tuple, str]:
    loc = tuple(err["loc"])
    ctx = err.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, SpecFieldError):
        return loc + cause.field, str(cause)
    if err["type"] in _HINTS:
        return loc, _HINTS[err["type"]]
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err["type"] in ("literal_error", "enum"):
        msg = f"{msg} (got {err.get('input')!r})"
    return loc, msg


def _strip_union_tags(loc: tuple) -> tuple:
    # pydantic puts union member names (e.g. 'int', 'list[int]') into loc; they are not fields.
    return tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in ("int", "str", "float", "bool"))))


def format_validation_error(exc: ValidationError, file: str | None, lines: dict[tuple, int]) -> SpecError:
    errors = exc.errors()
    first = errors[0]
    loc, msg = _message(first)
    loc = _strip_union_tags(loc)
    line = None
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            line = lines[loc[:n]]
            break
    more = f" (+{len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return SpecError(msg + more, file=file, line=line, field=_dotted(loc) or None)


def spec_from_dict(data: dict[str, Any], file: str | None = None,
                   lines: dict[tuple, int] | None = None) -> BakeoffSpec:
    try:
        return BakeoffSpec.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, file, lines or {}) from None


def load_spec(path: str | Path, overrides: list[str] | None = None) -> BakeoffSpec:
    """Read and validate a spec file; raises SpecError with file:line on bad input.
    `overrides` are `key.path=value` strings applied before validation."""
    path = Path(path)
    shown = str(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError("no such file; give the path to a bake-off spec (YAML)", file=shown) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", file=shown) from None
    data, lines = parse_yaml(text, shown)
    if overrides:
        from .overrides import apply_overrides

        data = apply_overrides(data, overrides)
    spec = spec_from_dict(data, shown, lines)
    spec._source_path = path.resolve()
    return spec


def spec_base_dir(spec: BakeoffSpec) -> Path:
    """Directory relative paths in the spec are resolved against (the spec file's)."""
    src = spec._source_path
    return src.parent if src else Path.cwd()
