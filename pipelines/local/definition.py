"""Reading a pipeline definition the way SageMaker does: its expressions (Get, Std:Join,
Std:JsonGet) resolved against parameters, step properties and the execution, and its
condition steps evaluated to the Fail step they lead to."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Context:
    """What a definition's expressions can refer to during one local execution."""

    parameters: dict[str, Any]
    execution_id: str
    execution_arn: str
    training_job_names: dict[str, str] = field(default_factory=dict)  # step name -> TrainingJobName
    property_files: dict[tuple[str, str], Path] = field(default_factory=dict)  # (step, property file) -> file
    model_artifacts: dict[str, str] = field(default_factory=dict)  # step name -> its model.tar.gz URI

    def get(self, path: str) -> Any:
        if path.startswith("Parameters."):
            return self.parameters[path[len("Parameters."):]]
        if path == "Execution.PipelineExecutionId":
            return self.execution_id
        if path == "Execution.PipelineExecutionArn":
            return self.execution_arn
        m = re.fullmatch(r"Steps\.(?P<step>[^.]+)\.TrainingJobName", path)
        if m:
            return self.training_job_names[m["step"]]
        m = re.fullmatch(r"Steps\.(?P<step>[^.]+)\.ModelArtifacts\.S3ModelArtifacts", path)
        if m:
            return self.model_artifacts[m["step"]]
        m = re.fullmatch(r"Steps\.(?P<step>[^.]+)\.PropertyFiles\.(?P<file>.+)", path)
        if m:
            return self.property_files[(m["step"], m["file"])]
        raise KeyError(f"the local executor cannot resolve {path!r}")


def _json_path(document: Any, path: str) -> Any:
    """The subset of JsonPath the pipeline uses: dotted keys and [index]."""
    value = document
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


def resolve(value: Any, ctx: Context) -> Any:
    if isinstance(value, dict):
        if set(value) == {"Get"}:
            return ctx.get(value["Get"])
        if set(value) == {"Std:Join"}:
            join = value["Std:Join"]
            return join.get("On", "").join(str(resolve(v, ctx)) for v in join["Values"])
        if set(value) == {"Std:JsonGet"}:
            spec = value["Std:JsonGet"]
            document = json.loads(Path(resolve(spec["PropertyFile"], ctx)).read_text())
            return _json_path(document, spec["Path"])
        return {k: resolve(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, ctx) for v in value]
    return value


def parameter_values(definition: dict[str, Any], overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """Each parameter's default, or the override given for this execution (typed as declared)."""
    out: dict[str, Any] = {}
    for p in definition.get("Parameters", []):
        raw = (overrides or {}).get(p["Name"], p.get("DefaultValue"))
        out[p["Name"]] = {"Integer": int, "Float": float}.get(p["Type"], str)(raw) if raw is not None else None
    unknown = sorted(set(overrides or {}) - set(out))
    if unknown:
        raise KeyError(f"unknown pipeline parameter(s) {', '.join(unknown)}; the pipeline has: {', '.join(out)}")
    return out


_CONDITIONS = {
    "Equals": lambda a, b: a == b,
    "GreaterThan": lambda a, b: a > b, "GreaterThanOrEqualTo": lambda a, b: a >= b,
    "LessThan": lambda a, b: a < b, "LessThanOrEqualTo": lambda a, b: a <= b,
}


def walk_condition(step: dict[str, Any], ctx: Context) -> list[tuple[str, dict[str, Any]]]:
    """Follow a condition step (and those nested in it) as SageMaker would: [(name, step)] of
    the steps it leads to, the branch chosen at each condition."""
    taken: list[tuple[str, dict[str, Any]]] = []
    args = step["Arguments"]
    holds = all(_CONDITIONS[c["Type"]](resolve(c["LeftValue"], ctx), resolve(c["RightValue"], ctx))
                for c in args["Conditions"])
    for child in args["IfSteps" if holds else "ElseSteps"]:
        taken.append((child["Name"], child))
        if child["Type"] == "Condition":
            taken += walk_condition(child, ctx)
    return taken
