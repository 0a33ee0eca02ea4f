"""Load a spec from YAML (or JSON) and turn every problem into one line: file, line,
field, what is wrong and what to do.

The YAML is read as plain data and nothing else: UTF-8 only, the core tags only (no
`!!python/...`, no custom tags), a bounded size, depth and alias expansion (so an alias
bomb or a recursive alias is refused in milliseconds, not after gigabytes), and no
duplicate keys.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from bakeoff.pipelines.errors import Either, SpecError, Words, words
from bakeoff.pipelines.params import OVERRIDES
from bakeoff.pipelines.spec.model import BakeoffSpec, SpecFieldError

MAX_SPEC_BYTES = 1 << 20  # a spec is a few KB; anything near this is not one
MAX_DEPTH = 32
MAX_NODES = 20_000  # counting every alias expansion
_CORE_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")}


class _LineLoader(yaml.SafeLoader):
    """Records the line of every mapping key and sequence item, and refuses duplicate keys."""


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0


def _walk(node: yaml.Node, path: tuple, lines: dict[tuple, int], depth: int, budget: _Budget) -> None:
    budget.nodes += 1
    line = node.start_mark.line + 1
    if budget.nodes > MAX_NODES:
        raise SpecError(f"the document expands to more than {MAX_NODES:,} values (aliases or nesting): a bake-off "
                        "spec needs none of that; write the values out", line=line)
    if depth > MAX_DEPTH:
        raise SpecError(f"nesting deeper than {MAX_DEPTH} levels (or a recursive alias): a bake-off spec is a few "
                        "levels deep", line=line, field=_dotted(path) or None)
    if node.tag not in _CORE_TAGS:
        raise SpecError(f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')!r} is not allowed: a spec is plain "
                        "data (strings, numbers, booleans, lists, mappings)", line=line, field=_dotted(path) or None)
    lines.setdefault(path, line)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecError("a key must be a plain name", line=key_node.start_mark.line + 1,
                                field=_dotted(path) or None)
            key = key_node.value
            if key in seen:
                raise SpecError(f"duplicate key {key!r} (first at line {seen[key]}); keep one",
                                line=key_node.start_mark.line + 1, field=_dotted(path + (key,)))
            seen[key] = key_node.start_mark.line + 1
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines, depth + 1, budget)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), lines, depth + 1, budget)


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def decode(raw: bytes, file: str | None) -> str:
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{len(raw):,} bytes is not a bake-off spec (at most {MAX_SPEC_BYTES:,}); give the spec "
                        "file", file=file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save the spec as "
                        "UTF-8", file=file, line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        raise SpecError("the file holds NUL bytes: not a YAML spec", file=file,
                        line=text[:text.index("\x00")].count("\n") + 1)
    return text


def _compose(text: str, file: str | None, what: str) -> tuple[Any, dict[tuple, int]]:
    """The data of `text`, read only after its nodes were checked (core tags, depth, size), and the line
    of each key and item; (None, {}) for an empty document. `what` names it in an error."""
    try:
        node = yaml.compose(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"not valid YAML: {problem}", file=file,
                        line=mark.line + 1 if mark else None) from None
    except RecursionError:  # the composer recurses per level: far past MAX_DEPTH, refused before _walk
        raise SpecError(f"nesting deeper than {MAX_DEPTH} levels: {what} is a few levels deep",
                        file=file) from None
    if node is None:
        return None, {}
    lines: dict[tuple, int] = {}
    try:
        _walk(node, (), lines, 0, _Budget())
    except SpecError as exc:
        raise SpecError(exc.message, file=file, line=exc.line, field=exc.field) from None
    # Every node is core-tagged, bounded and finite: constructing it is safe.
    return yaml.load(text, Loader=_LineLoader), lines


def parse_value(text: str, where: str) -> Any:
    """A `--set` value, read as the spec file is (core tags only, bounded depth, size and alias
    expansion): what it holds becomes part of the spec, so it gets no looser a reader."""
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(f"a value of {len(text):,} characters is not a spec field's (at most {MAX_SPEC_BYTES:,})",
                        file=where)
    if "\x00" in text:
        raise SpecError("the value holds a NUL character", file=where)
    data, _ = _compose(text, where, "a spec field's value")
    return data


def parse_yaml(text: str, file: str | None = None) -> tuple[Any, dict[tuple, int]]:
    data, lines = _compose(text, file, "a bake-off spec")
    if data is None and not lines:
        raise SpecError("the spec is empty; `bakeoff init DIR` writes one to start from", file=file)
    if not isinstance(data, dict):
        raise SpecError("the spec must be a mapping of fields (name, legs, ...)", file=file, line=1)
    return data, lines


# --- validation errors as one line ---------------------------------------------------------
def _known_keys(loc: tuple) -> list[str]:
    """The field names the model accepts at `loc` (for suggestions)."""
    model: Any = BakeoffSpec
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return []
        annotation = model.model_fields[part].annotation
        args = getattr(annotation, "__args__", ())
        nested = [a for a in (annotation, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        if not nested:
            return []
        model = nested[0]
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _field_info(loc: tuple) -> Any:
    """The pydantic FieldInfo at `loc`, or None (used to quote a field's bounds)."""
    model: Any = BakeoffSpec
    info = None
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        info = model.model_fields[part]
        args = getattr(info.annotation, "__args__", ())
        nested = [a for a in (info.annotation, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        model = nested[0] if nested else None
    return info


def _bounds(loc: tuple) -> str:
    info = _field_info(loc)
    words = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    parts = []
    for m in getattr(info, "metadata", ()) or ():
        for attr, sym in words.items():
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v:,}" if isinstance(v, int) else f"{sym} {v}")
    return " and ".join(parts)


def _message(err: Any) -> tuple[tuple, str]:
    loc = tuple(err["loc"])
    ctx = err.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, SpecFieldError):
        return loc + cause.field, str(cause)
    if err["type"] == "extra_forbidden":
        known = _known_keys(loc[:-1])
        near = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}?" if near else f"known keys here: {', '.join(known)}" if known else \
            "remove it (`bakeoff schema` lists every field)"
        return loc, f"unknown key {loc[-1]!r}; {hint}"
    if err["type"] == "missing":
        return loc, "required field is missing; add it"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err["type"] in ("int_parsing", "int_from_float", "int_type"):
        bounds = _bounds(loc)
        got = err.get("input")
        # YAML 1.1 reads `1e30` (no dot) as text, so say what was read rather than "unable to parse".
        msg = f"must be a whole number{' ' + bounds if bounds else ''} (got {_shown(got)})"
    elif err["type"] in ("literal_error", "enum"):
        msg = f"{msg} (got {_shown(err.get('input'))})"
    elif err["type"] in ("finite_number",):
        msg = "must be a finite number (not .inf or .nan)"
    elif err["type"].startswith(("less_than", "greater_than")):
        msg = f"{msg} (got {_shown(err.get('input'))})"
    return loc, msg


def _shown(value: object, most: int = 80) -> str:
    """A bad value as the error line quotes it: one line, never the whole of a huge input."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


def _strip_union_tags(loc: tuple) -> tuple:
    # pydantic puts union member names (e.g. 'int', 'list[int]') into loc; they are not fields.
    return tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in ("int", "str", "float", "bool"))))


def _rank(err: Any) -> int:
    """Which error to show first: an unknown key explains a `missing` one (`leg:` for `legs:`)."""
    return {"extra_forbidden": 0, "missing": 2}.get(err["type"], 1)


# Past this many, the rest are counted, not listed: a wrong top-level type can fail every nested field.
MOST_ERRORS_SHOWN = 10


def format_validation_error(exc: ValidationError, file: str | None, lines: dict[tuple, int]) -> SpecError:
    """Every error of the input (the most telling first), each with its own line and field."""
    found: list[SpecError] = []
    errors = sorted(exc.errors(), key=_rank)
    explained = {_strip_union_tags(tuple(e["loc"]))[:-1] + (near,) for e in errors if e["type"] == "extra_forbidden"
                 for near in difflib.get_close_matches(str(e["loc"][-1]), _known_keys(tuple(e["loc"])[:-1]), n=1,
                                                       cutoff=0.6)}
    places: set[tuple] = set()
    for err in errors:
        loc, msg = _message(err)
        loc = _strip_union_tags(loc)
        if loc in places or (err["type"] == "missing" and loc in explained):
            continue  # one line per field (a union's members each complain), none for what a typo explains
        places.add(loc)
        line = None
        for n in range(len(loc), -1, -1):
            if loc[:n] in lines:
                line = lines[loc[:n]]
                break
        found.append(SpecError(msg, file=file, line=line, field=_dotted(loc) or None))
    shown = found[:MOST_ERRORS_SHOWN]
    if len(found) > len(shown):
        shown[-1] = SpecError(f"{shown[-1].message} (and {len(found) - len(shown)} more errors after this one)",
                              file=shown[-1].file, line=shown[-1].line, field=shown[-1].field)
    first = shown[0]
    return SpecError(first.message, file=first.file, line=first.line, field=first.field, also=tuple(shown[1:]))


def spec_from_dict(data: dict[str, Any], file: str | None = None,
                   lines: dict[tuple, int] | None = None) -> BakeoffSpec:
    """A validated spec from a mapping shaped like the YAML; SpecError (naming the field) on bad input."""
    try:
        return BakeoffSpec.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, file, lines or {}) from None


def load_spec(path: str | Path, overrides: list[str] | None = None) -> BakeoffSpec:
    """Read and validate a spec file; raises SpecError with file:line on bad input.
    `overrides` are `key.path=value` strings applied before validation; an error in one is
    blamed on the `--set` argument, not on a line of the file."""
    path = Path(path)
    shown = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError("no such file; give the path to a bake-off spec (YAML)", file=shown) from None
    except IsADirectoryError:
        raise SpecError("is a directory; give the spec file inside it", file=shown) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", file=shown) from None
    data, lines = parse_yaml(decode(raw, shown), shown)
    if overrides:
        data, touched = apply_overrides(data, overrides)
        try:
            spec = BakeoffSpec.model_validate(data)
        except ValidationError as exc:
            error = format_validation_error(exc, shown, lines)
            in_file = {_dotted(loc) for loc in lines}
            blamed = next((arg for prefix, arg in touched if error.field and
                           (error.field == prefix or error.field.startswith((prefix + ".", prefix + "["))
                            # a group the override made (`--set hyperparameters.a.b=1`): not the file's
                            or (error.field not in in_file and prefix.startswith((error.field + ".",
                                                                                  error.field + "["))))), None)
            if blamed is not None:
                raise SpecError(error.message, file=_where(blamed), field=error.field) from None
            raise error from None
    else:
        spec = spec_from_dict(data, shown, lines)
    from bakeoff.pipelines.spec.model import Provenance

    return spec.sourced(Provenance(path.resolve(), lines))


def spec_base_dir(spec: BakeoffSpec) -> Path:
    """Directory relative paths in the spec are resolved against (the spec file's)."""
    src = spec.provenance.path
    return src.parent if src else Path.cwd()


def locate(spec: BakeoffSpec, field: tuple) -> tuple[str | None, int | None]:
    """(file, line) of a field of a loaded spec, for errors found after validation."""
    src, lines = spec.provenance.path, spec.provenance.lines
    for n in range(len(field), -1, -1):
        if field[:n] in lines:
            return (str(src) if src else None), lines[field[:n]]
    return (str(src) if src else None), None


# --- `--set key.path=value` overrides (pipelines/spec/overrides.py is their public name) ------------------
# A path names fields with dots; a leg is selected by index (`legs.1.x`, `legs[1].x`) or by name
# (`legs.trn1.x`). Every problem is blamed on the `--set` argument, in one line. The value is read as the
# spec file is (parse_value), and the path is as bounded: what either holds becomes part of the spec.
_PART = re.compile(r"[^.\[\]]+|\[\d+\]")


_KEY = re.compile(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+|\[\d+\])*")
SHOWN_CHARS = 120  # of an argument or a value quoted in an error line


def _shown_arg(text: str) -> str:
    """An argument as an error line quotes it: control characters escaped (one line, nothing the terminal
    acts on) and at most SHOWN_CHARS of it."""
    out = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return out if len(out) <= SHOWN_CHARS else f"{out[:SHOWN_CHARS]}... ({len(text):,} characters)"


def _where(item: str) -> Words:
    return words(OVERRIDES.given(_shown_arg(item)))


def _parts(key: str, item: str) -> list[str | int]:
    """`legs[1].precision`, `legs.1.precision` and `legs.trn1.precision` alike."""
    if not _KEY.fullmatch(key):
        raise SpecError(words(f"'{_shown_arg(key)}' is not a field path (names with dots, a list index as .1 or [1]), "
                              "e.g. ", OVERRIDES.given("training.max_steps=50")), file=_where(item))
    parts: list[str | int] = [int(t[1:-1]) if t.startswith("[") else (int(t) if t.isdigit() else t)
                              for t in _PART.findall(key)]
    if len(parts) > MAX_DEPTH:
        raise SpecError(f"a field path of {len(parts):,} parts: a bake-off spec is at most {MAX_DEPTH} levels deep",
                        file=_where(item))
    return parts


def _indices(n: int) -> str:
    return "it is empty" if n == 0 else f"use an index 0-{n - 1}"


def _select_leg(legs: list, part: str | int, item: str) -> int:
    if isinstance(part, int):
        if not 0 <= part < len(legs):
            raise SpecError(f"there is no legs[{part}]; the spec has {len(legs)} leg(s)"
                            + (f" (0-{len(legs) - 1})" if legs else ""), file=_where(item))
        return part
    names = [leg.get("name") if isinstance(leg, dict) else None for leg in legs]
    if part in names:
        return names.index(part)
    known = _shown_arg(", ".join(str(n) for n in names)) or "none"
    raise SpecError(f"there is no leg named {part!r}; legs are {known} (or give an index: legs.0)", file=_where(item))


def _value(raw: str, item: str) -> Any:
    if not raw:
        return ""
    try:
        return parse_value(raw, _where(item))
    except SpecError as exc:
        # a shell splits an unquoted value; a Python string arrives whole
        hint = Either("", "; quote it, e.g. --set 'seeds=[1, 2]'") if exc.message.startswith("not valid YAML") else ""
        message = exc.message.replace("not valid YAML: ", "the value is not valid YAML (", 1)
        if message != exc.message:
            message += ")"
        raise SpecError(words(message, hint), file=exc.file) from None


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The spec with the overrides applied, and (dotted field, argument) for each, so that a
    validation error in an overridden field can be blamed on its argument.

    `data` itself is not changed: each group and list on an override's path is copied before it is
    (a mapping handed to the API stays the caller's)."""
    data = dict(data)
    touched: list[tuple[str, str]] = []
    for item in overrides or []:
        if not isinstance(item, str) or "=" not in item:
            raise SpecError(words("expected KEY=VALUE, e.g. ", OVERRIDES.given("training.max_steps=50")),
                            file=_where(str(item)))
        key, raw = item.split("=", 1)
        value = _value(raw, item)
        parts = _parts(key.strip(), item)
        node: Any = data
        dotted = ""
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                index = _select_leg(node, part, item) if dotted == "legs" else part
                if not isinstance(index, int) or not 0 <= index < len(node):
                    raise SpecError(f"{dotted} is a list of {len(node)}; {_indices(len(node))}", file=_where(item))
                dotted += f"[{index}]"
                if last:
                    node[index] = value
                else:
                    node[index] = _copied(node[index])
                    node = node[index]
                continue
            if not isinstance(node, dict):
                raise SpecError(f"{dotted or 'the spec'} is a value ({_shown(node)}), not a group of fields; set "
                                f"{dotted} itself", file=_where(item))
            name = str(part)
            dotted = f"{dotted}.{name}" if dotted else name
            if last:
                node[name] = value
            else:
                node[name] = {} if node.get(name) is None else _copied(node[name])
                node = node[name]
        touched.append((dotted, item))
    return data, touched


def _copied(node: Any) -> Any:
    """A group or list on an override's path, copied one level (what is changed is the copy)."""
    if isinstance(node, dict):
        return dict(node)
    if isinstance(node, list):
        return list(node)
    return node
