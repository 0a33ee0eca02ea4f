"""The spec reference: every field of every model of a bake-off spec, with its type, default, limits and
description, from the spec's JSON Schema (`bakeoff schema`, which pydantic makes from the models in
pipelines/spec/): the document YAML is checked against, so the reference names what a spec file spells."""
from __future__ import annotations

import json
from typing import Any

from bakeoff.pipelines.reference.markdown import GENERATED, cell, code, table

ROOT = "BakeoffSpec"
_LIMITS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"),
           ("minLength", "length >="), ("maxLength", "length <="), ("minItems", "items >="),
           ("maxItems", "items <="), ("pattern", "matches"))


def _ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def type_text(schema: dict[str, Any]) -> str:
    """A field's type as a reader says it, nested models linked to their sections."""
    if (model := _ref(schema)) is not None:
        return f"[{model}](#{model.lower()})"
    if "anyOf" in schema:
        return " or ".join(type_text(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " \\| ".join(code(json.dumps(v)) for v in schema["enum"])
    if "const" in schema:
        return code(json.dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "array":
        return f"list of {type_text(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of string to {type_text(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "any")


def _limits(schema: dict[str, Any]) -> str:
    found = [f"{word} {code(schema[key])}" for key, word in _LIMITS if key in schema]
    for option in schema.get("anyOf", []):
        found += [f"{word} {code(option[key])}" for key, word in _LIMITS if key in option]
    return ", ".join(found)


def models(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every model of the schema by name, the root first, then in the order a reader meets them."""
    defs = schema.get("$defs", {})
    found: dict[str, dict[str, Any]] = {ROOT: schema}
    queue = [schema]
    while queue:
        for ref in _refs(queue.pop(0)):
            if ref not in found:
                found[ref] = defs[ref]
                queue.append(defs[ref])
    return found


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [_ref(node)] if _ref(node) else []
        return [r for r in own if r] + [r for key, value in node.items() if key != "$defs" for r in _refs(value)]
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def _places(found: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Where each model sits in a spec (`training.optimizer`, `legs[]`), for its section's first line."""
    places: dict[str, list[str]] = {ROOT: [""]}
    for model in found:
        for prefix in places.get(model, []):
            for field, prop in found[model].get("properties", {}).items():
                path = f"{prefix}.{field}" if prefix else field
                for option in prop.get("anyOf", [prop]):
                    for inner, suffix in ((option, ""), (option.get("items", {}), "[]"),
                                          (option.get("additionalProperties") or {}, ".<name>")):
                        if isinstance(inner, dict) and (ref := _ref(inner)) and ref in found:
                            places.setdefault(ref, []).append(path + suffix)
    return places


def page(schema: dict[str, Any] | None = None) -> str:
    if schema is None:
        from bakeoff.pipelines.api.local import schema as spec_schema

        schema = spec_schema()
    found = models(schema)
    places = _places(found)
    out = [GENERATED, "# Spec fields\n\n",
           "Every field a bake-off spec (YAML) can hold, model by model, from the spec's JSON Schema "
           "(`bakeoff schema` prints it). A default of `required` means the spec must give the field; — means an "
           "empty list or map, or a nested model whose fields have their own defaults. Any field can be set from "
           "the command line with `--set PATH=VALUE` (e.g. `--set training.max_steps=50`).\n\n"]
    for model, body in found.items():
        out.append(f"## {model} {{ #{model.lower()} }}\n\n")
        where = [code(p) for p in places.get(model, []) if p]
        if model == ROOT:
            out.append("The spec file itself.\n\n")
        elif where:
            out.append(f"At {', '.join(where)}.\n\n")
        if body.get("description"):
            out.append(f"{body['description'].strip()}\n\n")
        required = set(body.get("required", []))
        rows = []
        for field, prop in body.get("properties", {}).items():
            default = "required" if field in required else (code(json.dumps(prop["default"])) if "default" in prop
                                                           else "—")
            limits = _limits(prop)
            about = cell(prop.get("description", "")) + (f" Limits: {limits}." if limits else "")
            rows.append((code(field), type_text(prop), default, about.strip()))
        out.append(table(("Field", "Type", "Default", "Description"), rows) + "\n")
    return "".join(out)
