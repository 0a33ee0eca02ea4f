"""A loose check against AWS's published (stale) pipeline-definition JSON Schema.

Each step is checked against the schema's own definition for its type, so an
error names the step type and the path inside it. The schema predates parts of
the API bakeoff uses; `KNOWN_GAPS` lists each such gap so it is tolerated
explicitly (and tested to still occur), never skipped silently.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Each gap: a name, why it is tolerated, and what it matches (step type, path inside
# the step with list indices dropped, and a fragment of the schema's message).
KNOWN_GAPS: list[dict[str, str]] = [
    {"name": "no-Std:Join", "owner": "*", "path": "*", "message": "Std:Join",
     "why": "the schema allows Std:Join in few places; the service accepts it wherever a string is expected "
            "(the SDK emits it for parameters in hyperparameters, container arguments and S3 URIs)"},
    {"name": "no-Std:JsonGet-in-conditions", "owner": "ConditionStep", "path": "Arguments/Conditions/LeftValue",
     "message": "Std:JsonGet", "why": "the schema predates Std:JsonGet (the SDK's JsonGet on a PropertyFile)"},
    {"name": "no-PropertyFiles", "owner": "ProcessingStep", "path": "", "message": "'PropertyFiles' was unexpected",
     "why": "the schema lacks ProcessingStep PropertyFiles, which JsonGet reads"},
    {"name": "no-training-Environment", "owner": "TrainingStep", "path": "Arguments",
     "message": "'Environment' was unexpected", "why": "CreateTrainingJob has had Environment since 2022"},
    {"name": "no-ContainerEntrypoint", "owner": "TrainingStep", "path": "Arguments/AlgorithmSpecification",
     "message": "'ContainerEntrypoint' was unexpected",
     "why": "CreateTrainingJob's AlgorithmSpecification has ContainerEntrypoint/ContainerArguments (botocore)"},
    {"name": "ExceptionType-is-a-list", "owner": "TrainingStep", "path": "RetryPolicies/ExceptionType", "message": "",
     "why": "the service and the SDK (SageMakerJobStepRetryPolicy.to_request) use a list of exception types; "
            "the schema has a single string"},
]


def known_gap(owner: str, path: str, message: str, at_path: list[str]) -> dict[str, str] | None:
    """The known gap an error belongs to. Sibling errors at one path (a oneOf's
    'Get is required', 'not of type string') share the gap of the path's root cause."""
    for gap in KNOWN_GAPS:
        if gap["owner"] not in ("*", owner) or (gap["path"] != "*" and gap["path"] != path):
            continue
        if gap["message"] in message or any(gap["message"] in m for m in at_path):
            return gap
    return None


def unexplained(errors: list[tuple[tuple[str, str, str], str]]) -> list[tuple[tuple[str, str, str], str]]:
    by_path: dict[tuple[str, str], list[str]] = {}
    for (owner, path, _), message in errors:
        by_path.setdefault((owner, path), []).append(message)
    return [(key, msg) for key, msg in errors if known_gap(key[0], key[1], msg, by_path[(key[0], key[1])]) is None]


def _signature(path) -> str:
    return "/".join(str(p) for p in path if not isinstance(p, int))


def schema_errors(definition: dict[str, Any], schema: dict[str, Any]) -> list[tuple[tuple[str, str, str], str]]:
    """(gap signature, message) for every leaf error, one per distinct signature."""
    import jsonschema

    defs = schema.get("definitions", {})
    cls = jsonschema.Draft7Validator
    found: dict[tuple[str, str, str], str] = {}

    def leaves(error):
        if error.context:
            # A oneOf/anyOf failure: follow the branch that failed least.
            branches: dict[Any, list] = {}
            for sub in error.context:
                branches.setdefault(sub.relative_schema_path[0], []).append(sub)
            best = min(branches.values(), key=lambda errs: (len(errs), -max(len(e.absolute_path) for e in errs)))
            for sub in best:
                yield from leaves(sub)
        else:
            yield error

    def check(instance, subschema, owner):
        validator = cls({**subschema, "definitions": defs})
        for err in validator.iter_errors(instance):
            for leaf in leaves(err):
                key = (owner, _signature(leaf.absolute_path), leaf.validator)
                found.setdefault(key, leaf.message[:300])

    top = {k: v for k, v in definition.items() if k != "Steps"}
    top_schema = {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != "Steps"}}
    top_schema["required"] = [r for r in schema.get("required", []) if r != "Steps"]
    check(top, top_schema, "Pipeline")

    def steps(items):
        for step in items:
            yield step
            if step.get("Type") == "Condition":
                yield from steps(step["Arguments"].get("IfSteps", []) + step["Arguments"].get("ElseSteps", []))

    for step in steps(definition.get("Steps", [])):
        name = f"{step.get('Type')}Step"
        if name not in defs:
            found[(name, "", "unknown-step-type")] = f"the schema has no {name}"
            continue
        body = step
        if step.get("Type") == "Condition":  # nested steps are checked on their own
            body = json.loads(json.dumps(step))
            body["Arguments"]["IfSteps"] = []
            body["Arguments"]["ElseSteps"] = []
        check(body, {"$ref": f"#/definitions/{name}"}, name)
    return sorted(found.items())


def load_published_schema(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())

