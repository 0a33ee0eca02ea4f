"""The Python API: everything the `bakeoff` command line does, as functions named after its verbs.

    from bakeoff.pipelines import load_spec, synth, deploy, start, wait, report

    spec = load_spec("bakeoff.yaml")
    deployment = deploy(spec, role_arn="arn:aws:iam::123456789012:role/bakeoff", bucket="my-bucket")
    execution = start(deployment, {"MaxSteps": 500})
    final = wait(execution, poll_s=60, timeout_s=6 * 3600)
    result = report(execution)          # result.verdict: "pass", "fail" or "inconclusive"
    result.raise_for_verdict()          # ParityFailed / ParityInconclusive, carrying the evaluation

Offline: `load_spec`, `validate`, `plan`, `synth`, `run_local`, `preflight`, `schema`, `instances`, `images`.
On SageMaker: `account_checks`, `deploy`, `start`, `start_until_decided`, `wait`, `status`, `report`, `stop`,
`project` (a finished run, local or SageMaker, read against a production decision),
`prices(refresh=True)`.

Each returns a frozen pydantic model (`bakeoff.pipelines.api.results`) whose `model_dump(mode="json")` is
exactly what the matching `bakeoff COMMAND --json` prints. Nothing prints; long operations take a
`progress` callback that receives `ProgressEvent`s. Errors are `bakeoff.pipelines.errors` classes, each with the
CLI's exit code: SpecError (2), ParityFailed (1), ParityInconclusive (3), AwsError (4, with the
service's error `code`), RunError (4); nothing else escapes.

AWS functions take `session=` (a boto3.Session) or `region=`/`profile=`; an `Execution` handle carries
its region. Clients are made once per session and region and shared, so the functions can be called
from several threads with one session.
"""
from __future__ import annotations

from bakeoff.pipelines.advice.budget import BudgetPlan, Design, LegCost, Spend
from bakeoff_runtime.contract.documents import Evaluation

from .aws import account_checks, deploy, render_report, report, retry, start, start_until_decided, status, stop, wait
from .catalog import images, instances, prices
from .local import load_spec, plan, preflight, run_local, schema, synth, validate
from .projection import project
from .results import (
    AccountChecks,
    AssetInfo,
    Decision,
    Deployment,
    Execution,
    ExecutionStatus,
    ImageRow,
    Images,
    InstanceInfo,
    Instances,
    Interval,
    LegComparison,
    LegKind,
    LegPlan,
    LegProjection,
    Preflight,
    PriceRow,
    Prices,
    ProgressEvent,
    Projection,
    QuotaCheck,
    Report,
    Result,
    Round,
    RunSummary,
    StepStatus,
    Synth,
    Validation,
)

__all__ = [
    # the verbs, in the order a bake-off uses them
    "load_spec", "validate", "plan", "synth", "run_local", "preflight", "account_checks", "deploy", "start",
    "start_until_decided", "wait", "status", "retry", "report", "project", "stop", "instances", "images", "prices",
    "schema",
    # what they return
    "Result", "ProgressEvent", "Validation", "LegPlan", "Synth", "AssetInfo", "RunSummary", "Deployment",
    "Execution", "ExecutionStatus", "StepStatus", "Report", "Instances", "LegKind", "InstanceInfo", "Prices",
    "PriceRow", "Images", "ImageRow", "Preflight", "Decision", "Round", "AccountChecks", "QuotaCheck", "Projection",
    "LegProjection", "LegComparison", "Interval", "BudgetPlan", "Design", "LegCost", "Spend",
    # the evaluation `Report`, `RunSummary` and `Decision` carry (a TypedDict: at run time a dict)
    "Evaluation",
    # the report writer `report` runs
    "render_report",
]
#: The verbs: one per CLI command.
VERBS = tuple(__all__[:20])
#: The result types the verbs return.
RESULTS = tuple(__all__[20:-2])
