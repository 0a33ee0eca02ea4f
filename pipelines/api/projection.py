"""`project`: a finished bake-off (a run directory or a SageMaker execution) read against a production
decision, without re-running anything (`bakeoff project`)."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bakeoff.pipelines.api._support import Progress, public
from bakeoff.pipelines.api.results import Execution, Projection
from bakeoff.pipelines.errors import Either, SpecError
from bakeoff.pipelines.spec.decision import Decision
from bakeoff.pipelines.spec.fields import _Model

ExecutionLike = Execution | str


@public
def project(target: ExecutionLike | os.PathLike[str], decision: Mapping[str, Any] | None = None, *,
            out_dir: str | os.PathLike[str] | None = None, render: bool = True, region: str | None = None,
            session: Any = None, profile: str | None = None, progress: Progress | None = None) -> Projection:
    """Project a finished bake-off to the production run `decision` describes (the spec's `decision:`
    section as a mapping; what it leaves out comes from the decision the run was evaluated under, then
    from the defaults). Writes evaluation.json with the projection, and report.html, to `out_dir`
    (default `./bakeoff-project-NAME`): the run directory is read, never written."""
    from bakeoff.pipelines.api.aws import render_report, report
    from bakeoff.pipelines.extras import require_stats

    require_stats(Either("project()", "bakeoff project"))  # before the execution is read
    source = report(target, render=False, out_dir=Path(_scratch(target, out_dir)), region=region, session=session,
                    profile=profile, progress=progress)
    evaluation: dict[str, Any] = dict(source.evaluation)
    given = _decision_of(evaluation, decision)
    try:
        checked = _Given.model_validate({"decision": given}).decision  # errors named as the spec's field
    except ValidationError as exc:
        from bakeoff.pipelines.spec.loader import format_validation_error

        raise format_validation_error(exc, None, {}) from None
    legs = set(evaluation.get("legs") or {})
    for kind in ("instances", "purchase"):
        for name in getattr(checked, kind):
            if name not in legs:
                raise SpecError(f"decision.{kind}: {name!r} is not a leg of this bake-off ({', '.join(sorted(legs))})")
    from bakeoff_runtime.verdict.projection import project as projected

    measured_batch = ((evaluation.get("projection") or {}).get("decision") or {}).get("measured_batch")
    evaluation["projection"] = projected(evaluation, checked.to_config(measured_batch=measured_batch))
    path = Path(source.evaluation_path)
    path.write_text(json.dumps(evaluation, indent=2, sort_keys=True, default=str) + "\n")
    html = render_report(path, path.parent) if render else None
    return Projection.of(json.loads(json.dumps(evaluation["projection"], default=str)), source=source.source,
                         evaluation_path=str(path), report_path=str(html) if html else None)


class _Given(_Model):
    decision: Decision


def _is_execution(target: Any) -> bool:
    return isinstance(target, Execution) or (isinstance(target, str) and target.startswith("arn:"))


def _scratch(target: Any, out_dir: str | os.PathLike[str] | None) -> str:
    if out_dir is not None:
        return str(out_dir)
    if _is_execution(target):
        arn = target.arn if isinstance(target, Execution) else str(target)
        return f"bakeoff-project-{arn.rsplit('/', 1)[-1]}"
    return f"bakeoff-project-{Path(target).resolve().name}"


def _decision_of(evaluation: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The spec-shaped decision: the one the run was evaluated under (its spec's `decision:`, carried in its
    projection), with `given`'s sections laid over it."""
    base = _spec_shaped(evaluation["projection"]["decision"]) if evaluation.get("projection") else {}
    out = dict(base)
    for key, value in (given or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _spec_shaped(config: Mapping[str, Any]) -> dict[str, Any]:
    """A projection's inputs (contract/decision.py) back in the spec's words (pipelines/spec/decision.py)."""
    run = config.get("production") or {}
    production = {k: v for k, v in (("steps", run.get("steps")), ("batch", run.get("batch"))) if v is not None}
    if run.get("units") and run.get("unit") in ("tokens", "samples"):
        production[run["unit"]] = run["units"]
    return {"production": production, "instances": dict(config.get("instances") or {}),
            "runs_per_period": config.get("runs_per_period", 1.0), "period": config.get("period", "quarter"),
            "purchase": {k: dict(v) for k, v in (config.get("purchase") or {}).items()},
            "porting": dict(config.get("porting") or {}), "confidence": config.get("confidence", 0.9)}
