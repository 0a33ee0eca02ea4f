"""Check a pipeline definition before anything leaves the machine.

- every step's Arguments against the SageMaker API model botocore ships (required
  members, unknown members, types, enums, lengths, ranges and patterns: what AWS
  checks on CreateTrainingJob / CreateProcessingJob), with expressions resolved to
  representative values;
- step names (pattern, length, uniqueness), parameters, and every `Get` resolving to
  a real step, property file, parameter or execution variable;
- the definition's size against the 1,048,576-character API limit.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.names import STEP_NAME_RE

MAX_DEFINITION_CHARS = 1_048_576
EXECUTION_VARIABLES = {"PipelineExecutionId", "PipelineExecutionArn", "PipelineName", "PipelineArn",
                       "StartDateTime", "CurrentDateTime", "PipelineExecutionDisplayName"}


@lru_cache(maxsize=1)
def operations() -> dict[str, tuple[str, str]]:
    """Step type -> (API operation, name field), as the step kinds declare them (pipelines/steps)."""
    from bakeoff.pipelines.steps import operations as declared

    return declared()


CONDITION_TYPES = {"Equals", "GreaterThan", "GreaterThanOrEqualTo", "LessThan", "LessThanOrEqualTo", "In", "Not", "Or"}
# Java regex classes AWS patterns use that Python's re lacks.
# Written for use inside [...] classes, which is where AWS's patterns put them.
_UNICODE_CLASSES = {r"\p{L}": "A-Za-z\u00aa\u00b5\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\uffff",
                    r"\p{Z}": " \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000",
                    r"\p{N}": "0-9\u00b2\u00b3\u00b9\u00bc-\u00be\u0660-\u0669", r"\p{M}": "\u0300-\u036f"}


class DefinitionError(SpecError):
    """The definition would be refused by SageMaker."""


@lru_cache(maxsize=1)
def _service_model():
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker")


def _placeholder(ref: str, params: dict[str, Any]) -> Any:
    head, _, rest = ref.partition(".")
    if head == "Parameters":
        return params[rest]["DefaultValue"] if rest in params else "placeholder"
    if head == "Execution":
        return {"PipelineExecutionId": "abcdefgh1234"}.get(rest, "placeholder")
    if head == "Steps":
        step, _, prop = rest.partition(".")
        if prop == "TrainingJobName":
            return f"pipelines-abcdefgh1234-{step}-0123456789"[:63]
        if "S3" in prop or "Uri" in prop:
            return "s3://placeholder-bucket/placeholder/key"
    return "placeholder"


def resolve(obj: Any, params: dict[str, Any]) -> Any:
    """Replace expressions by representative values, for validation."""
    if isinstance(obj, dict) and len(obj) == 1:
        (k, v), = obj.items()
        if k == "Get":
            return _placeholder(v, params)
        if k == "Std:Join":
            return v["On"].join(str(resolve(x, params)) for x in v["Values"])
        if k == "Std:JsonGet":
            return "pass"
    if isinstance(obj, dict):
        return {k: resolve(v, params) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolve(v, params) for v in obj]
    return obj


def _pattern(p: str):
    for java, py in _UNICODE_CLASSES.items():
        p = p.replace(java, py)
    try:
        return re.compile(p, re.S)
    except re.error:
        return None


def _check_shape(value: Any, shape, where: str, problems: list[str]) -> None:
    """Limits botocore's ParamValidator leaves out: max lengths, patterns, enums, max ranges."""
    meta = shape.metadata
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, v in value.items():
            if name in shape.members:
                _check_shape(v, shape.members[name], f"{where}.{name}", problems)
    elif shape.type_name == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{where}: {len(value)} items, at most {meta['max']} allowed")
        for i, v in enumerate(value):
            _check_shape(v, shape.member, f"{where}[{i}]", problems)
    elif shape.type_name == "map" and isinstance(value, dict):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{where}: {len(value)} entries, at most {meta['max']} allowed")
        for k, v in value.items():
            _check_shape(k, shape.key, f"{where} key {k!r}", problems)
            _check_shape(v, shape.value, f"{where}[{k!r}]", problems)
    elif shape.type_name == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{where}: {len(value)} characters, at most {meta['max']} allowed")
        if shape.enum and value not in shape.enum:
            shown = ", ".join(shape.enum[:6]) + (", ..." if len(shape.enum) > 6 else "")
            problems.append(f"{where}: {value!r} is not one of the allowed values ({shown})")
        pat = _pattern(meta["pattern"]) if "pattern" in meta else None
        if pat is not None and not pat.fullmatch(value):
            problems.append(f"{where}: {value[:80]!r} does not match {meta['pattern']}")
    elif shape.type_name in ("integer", "long", "float", "double") and isinstance(value, (int, float)) \
            and "max" in meta and value > meta["max"]:
        problems.append(f"{where}: {value} is above the maximum {meta['max']}")


def validate_arguments(step_type: str, arguments: dict[str, Any], where: str) -> list[str]:
    """Problems SageMaker would report for this step's API request (empty when valid)."""
    from botocore.validate import ParamValidator

    op, name_field = operations()[step_type]
    shape = _service_model().operation_model(op).input_shape
    request = {name_field: "pipelines-placeholder-job", **arguments}
    report = ParamValidator().validate(request, shape)
    problems = []
    if report.has_errors():
        for line in report.generate_report().splitlines():
            line = line.strip()
            if "must be one of:" in line:  # the member list is long; the unknown name is what matters
                line = line.split(", must be one of:")[0]
            if line and line != "Parameter validation failed:":
                problems.append(f"{where}: {line}")
    _check_shape(request, shape, where, problems)
    return problems


def _all_steps(steps: list[dict]) -> list[dict]:
    out = []
    for step in steps:
        out.append(step)
        if step.get("Type") == "Condition":
            args = step.get("Arguments", {})
            out += _all_steps(args.get("IfSteps", []) + args.get("ElseSteps", []))
    return out


def _refs(obj: Any):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "Get" and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _refs(v)


def definition_problems(definition: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    if len(text) > MAX_DEFINITION_CHARS:
        problems.append(f"definition is {len(text):,} characters; SageMaker accepts at most {MAX_DEFINITION_CHARS:,}")
    params: dict[str, Any] = {}
    for p in definition.get("Parameters", []):
        if p["Name"] in params:
            problems.append(f"parameter {p['Name']!r} is defined twice")
        if p.get("Type") not in ("String", "Integer", "Float", "Boolean"):
            problems.append(f"parameter {p['Name']!r} has unknown type {p.get('Type')!r}")
        params[p["Name"]] = p
    steps = _all_steps(definition.get("Steps", []))
    names: dict[str, dict] = {}
    for step in steps:
        name = step.get("Name", "")
        if not STEP_NAME_RE.match(name):
            problems.append(f"step name {name!r} does not match ^[A-Za-z0-9-_]{{1,64}}$")
        if name in names:
            problems.append(f"step name {name!r} is used twice")
        names[name] = step
    for step in steps:
        where = f"step {step.get('Name')}"
        for ref in _refs(step):
            head, _, rest = ref.partition(".")
            if head == "Parameters" and rest not in params:
                problems.append(f"{where}: {ref} names no parameter")
            elif head == "Execution" and rest not in EXECUTION_VARIABLES:
                problems.append(f"{where}: {ref} is not an execution variable")
            elif head == "Steps":
                target, _, prop = rest.partition(".")
                if target not in names:
                    problems.append(f"{where}: {ref} names no step")
                elif target == step.get("Name"):
                    problems.append(f"{where}: {ref} refers to the step itself")
                elif prop.startswith("PropertyFiles."):
                    pf = prop.split(".", 1)[1]
                    if pf not in {f["PropertyFileName"] for f in names[target].get("PropertyFiles", [])}:
                        problems.append(f"{where}: {ref}: step {target} has no property file {pf}")
            elif head not in ("Parameters", "Execution", "Steps"):
                problems.append(f"{where}: {ref} is not a Parameters, Steps or Execution reference")
        for dep in step.get("DependsOn", []):
            if dep not in names:
                problems.append(f"{where}: DependsOn {dep!r} names no step")
        kind = step.get("Type")
        if kind in operations():
            problems += validate_arguments(kind, resolve(step["Arguments"], params), where)
        elif kind == "Condition":
            for cond in step["Arguments"].get("Conditions", []):
                if cond.get("Type") not in CONDITION_TYPES:
                    problems.append(f"{where}: unknown condition type {cond.get('Type')!r}")
        elif kind == "Fail":
            msg = resolve(step["Arguments"].get("ErrorMessage", ""), params)
            if len(str(msg)) > 3072:
                problems.append(f"{where}: ErrorMessage is longer than 3072 characters")
        else:
            problems.append(f"{where}: step type {kind!r} is not one bakeoff emits")
    return problems


def check_definition(definition: dict[str, Any]) -> None:
    problems = definition_problems(definition)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DefinitionError(f"the pipeline definition would be refused: {problems[0]}{more}")
