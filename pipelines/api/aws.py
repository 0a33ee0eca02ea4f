"""The façade's SageMaker verbs: account_checks, deploy, start, wait, status, report, stop.

Every function takes `session` (a boto3.Session: its credentials and region), or `region` and
`profile` to make one; nothing is read from anywhere a caller cannot override. The clients made for
a session are kept with it and shared: the functions are safe to call from several threads.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from bakeoff.pipelines.errors import Either, RunError, SpecError, words
from bakeoff.pipelines.params import OUT_DIR, POLL, ROLE_ARN, STACK, WRITE
from bakeoff_runtime.contract.documents import DocumentError, Evaluation, read_evaluation, whole_evaluation_problem

from ._support import Progress, SpecLike, as_spec, note, ops_for, public
from .results import (
    AccountChecks,
    Decision,
    Deployment,
    Execution,
    ExecutionStatus,
    QuotaCheck,
    Report,
    Round,
    StepStatus,
    Synth,
    exit_code_of,
)
from .results import ProgressEvent as _Event

ExecutionLike = Execution | str
Cancel = threading.Event | Callable[[], bool]


class QuotaShortfall(SpecError):
    """The account's SageMaker quotas cannot hold the pipeline at its peak (exit code 2). `checks` is the
    whole AccountChecks; the message is its problems, one line each."""

    def __init__(self, checks: AccountChecks):
        self.checks = checks
        super().__init__("\n".join(checks.problems))

    def entries(self, cli: bool) -> list[dict[str, Any]]:
        """One error per short quota."""
        return [{"message": line, "file": None, "line": None, "field": None} for line in self.checks.problems]


def _account_checks(spec: Any, compiled: Any, ops: Any, *, quotas: bool = True) -> AccountChecks:
    """The quota and MLflow checks of a compiled pipeline in `ops`'s region and account."""
    from bakeoff.pipelines.sagemaker import mlflow_server
    from bakeoff.pipelines.sagemaker import quotas as quota_checks

    checked: tuple[QuotaCheck, ...] = ()
    problems: tuple[str, ...] = ()
    warnings: list[str] = []
    if quotas:
        client = ops.client("service-quotas", retries=quota_checks.RETRIES)
        found = quota_checks.check(compiled.definition, compiled.max_parallel_steps, client, ops.region)
        checked = tuple(QuotaCheck(quota_name=n.quota, quota_code=q.code if q else None, value=q.value if q else None,
                                   default_value=bool(q and q.default), needed=n.needed, steps=n.steps)
                        for n in found.needs for q in [found.quotas.get(n.quota)])
        problems, warnings = found.problems, list(found.warnings)
    server = client = None
    if spec.mlflow.enabled:
        server, client, more = mlflow_server.check(spec.mlflow.tracking_uri,
                                                   lambda region: ops.client("sagemaker", region=region))
        warnings += more
    return AccountChecks(region=ops.region, max_parallel_steps=compiled.max_parallel_steps, quotas=checked,
                         mlflow_server_version=server, mlflow_client_version=client, problems=problems,
                         warnings=tuple(warnings))


@public
def account_checks(spec: SpecLike | Synth, *, region: str | None = None, overrides: Sequence[str] = (),
                   session: Any = None, profile: str | None = None) -> AccountChecks:
    """Whether this AWS account can run the bake-off's pipeline (`bakeoff validate --aws`; `deploy` runs it too).

    For each SageMaker quota the compiled pipeline draws on (`<type> for training job usage`, its spot twin
    for managed-spot jobs, `<type> for processing job usage`, the account-wide training total), the
    instances its jobs hold at once at the pipeline's peak (Collective, Precompile and Preflight steps
    included, at most `max_parallel_steps` steps running), against the account's value from Service Quotas
    (servicequotas:ListServiceQuotas). Each shortfall is a line in `problems` naming the quota, its code, both
    numbers and the request that raises it. When the spec logs to a SageMaker MLflow tracking server, its
    version is compared with the client the jobs install: a different major.minor is a warning. What could
    not be read (a permission the caller lacks, a quota not listed) is a warning, never an error; no
    credentials or no region is an AwsError. Reads only; creates nothing."""
    from .local import synth

    synthesized = spec if isinstance(spec, Synth) else synth(spec, overrides=overrides, region=region)
    if synthesized._compiled is None:
        raise SpecError("this Synth was read back from JSON and carries no pipeline; pass the spec")
    ops = ops_for(session, region or synthesized.region, profile)
    return _account_checks(synthesized._spec, synthesized._compiled, ops)


@public
def deploy(spec: SpecLike | Synth, *, role_arn: str, bucket: str | None = None, region: str | None = None,
           overrides: Sequence[str] = (), session: Any = None, profile: str | None = None,
           skip_quota_check: bool = False, progress: Progress | None = None) -> Deployment:
    """Upload the assets S3 lacks, then create or update the SageMaker pipeline (`bakeoff deploy`).

    `spec` is anything `load_spec` takes, or a `synth` result from this process. `role_arn` is the
    SageMaker execution role the jobs run as. The pipeline is tagged with the bake-off's name and
    spec hash. First the account checks run (`account_checks`): a quota below the pipeline's peak raises
    QuotaShortfall (a SpecError, exit code 2, carrying the checks) before anything is uploaded or created;
    `skip_quota_check=True` leaves the quotas out (a caller without servicequotas:ListServiceQuotas, or one
    who knows better). Their warnings come back in `warnings`. Returns the pipeline's ARN and what was
    uploaded; raises AwsError (with the service's error code) when AWS refuses."""
    from bakeoff.pipelines.plan.model import spec_hash

    from .local import synth

    if not role_arn:
        raise SpecError(words(ROLE_ARN, " is required: the SageMaker execution role ARN the jobs run as"))
    if isinstance(spec, Synth):
        if spec._compiled is None:
            raise SpecError("this Synth was read back from JSON and carries no asset bodies; pass the spec")
        if spec.role_arn != role_arn or (bucket and bucket != spec.bucket) or (region and region != spec.region):
            spec = synth(spec._spec, bucket=bucket or spec.bucket, role_arn=role_arn, region=region or spec.region)
        synthesized = spec
    else:
        synthesized = synth(spec, overrides=overrides, bucket=bucket, role_arn=role_arn, region=region)
    loaded, compiled = synthesized._spec, synthesized._compiled
    ops = ops_for(session, region or synthesized.region, profile)
    checks = _account_checks(loaded, compiled, ops, quotas=not skip_quota_check)
    if checks.problems:
        raise QuotaShortfall(checks)
    _check_looks(ops, compiled, progress)
    result = ops.deploy(compiled, tags={"bakeoff:name": loaded.name, "bakeoff:spec-hash": spec_hash(loaded)},
                        progress=lambda m: note(progress, m, kind="upload"))
    return Deployment(pipeline_arn=result["pipeline_arn"], pipeline_name=compiled.name, action=result["action"],
                      region=ops.region, bucket=compiled.bucket, uploaded=tuple(result["uploaded"]),
                      already_present=tuple(result["already_present"]), warnings=checks.warnings)


def _check_looks(ops: Any, compiled: Any, progress: Progress | None) -> None:
    """A deploy fixes the seeds the next execution decides on: seeds that overlap those an earlier
    execution of this pipeline decided on, without being the same set, would be a look at data
    already looked at that no design counts (pipelines/local/looks.py). `--until-decided` updates
    the pipeline round by round itself, under its own design, and does not come here."""
    from bakeoff.pipelines.errors import AwsError
    from bakeoff.pipelines.local.looks import judge, training_steps

    pipeline = compiled.name
    try:
        looks = ops.decided_looks(pipeline)
    except AwsError as exc:  # e.g. no sagemaker:ListPipelineExecutions: say so, do not block the deploy
        note(progress, f"the decisions of {pipeline}'s earlier executions could not be read ({exc}); a deploy with "
                       "more seeds after an undecided execution is a look that no design counts")
        return
    jobs, seeds = training_steps(compiled.definition)
    judge(looks, jobs, seeds, None, f"pipeline {pipeline}")


def _pipeline_name(pipeline: SpecLike | Deployment) -> tuple[str, str | None]:
    """The pipeline's name and region: from a deployment, a spec (file, mapping or object), or a name."""
    from bakeoff.pipelines.sagemaker.compiler import pipeline_name

    if isinstance(pipeline, Deployment):
        return pipeline.pipeline_name, pipeline.region
    if isinstance(pipeline, str) and not Path(pipeline).is_file():
        return pipeline, None
    loaded = as_spec(pipeline)
    return pipeline_name(loaded), loaded.storage.region


@public
def start(pipeline: SpecLike | Deployment | None = None, parameters: Mapping[str, Any] | None = None, *,
          stack: str | None = None, display_name: str | None = None, description: str | None = None,
          max_parallel_steps: int | None = None, region: str | None = None, session: Any = None,
          profile: str | None = None) -> Execution:
    """Start an execution of a deployed pipeline (`bakeoff start`) and return its handle.

    `pipeline` is the pipeline's name, a `deploy` result, or the spec it was deployed from; or give
    `stack`, a CloudFormation stack with a BakeoffPipeline construct, whose PipelineName output names it.
    `parameters` (`{"MaxSteps": 50}`) are checked against the deployed definition first: an unknown
    one is a SpecError and nothing is started. `display_name` (e.g. "round-2-seeds-5-9": letters, digits
    and dashes, at most 82) and `description` are what SageMaker's console and execution list show;
    `max_parallel_steps` caps the steps this execution runs at once (the pipeline's own cap otherwise)."""
    if (pipeline is None) == (stack is None):
        raise SpecError("name the pipeline (a name, a spec or a deployment) or its CDK stack, one of the two",
                        field=STACK)
    if stack is not None:
        ops = ops_for(session, region, profile)
        name = ops.stack_pipeline(stack)
    else:
        assert pipeline is not None
        name, spec_region = _pipeline_name(pipeline)
        ops = ops_for(session, region or spec_region, profile)
    params = {k: str(v) for k, v in (parameters or {}).items()}
    arn = ops.start(name, params, display_name=display_name, description=description,
                    max_parallel_steps=max_parallel_steps)
    return Execution(arn=arn, pipeline_name=name, region=ops.region, parameters=params)


@public
def retry(execution: ExecutionLike, *, region: str | None = None, session: Any = None,
          profile: str | None = None) -> Execution:
    """Run again what an execution lost, keeping what it finished (`bakeoff retry`). A Failed execution is
    retried (RetryPipelineExecution: the same execution goes on, so a seed lost to infrastructure trains
    again and Evaluate decides with it; asking twice for the same failure is one retry). A Stopped one gets
    a selective execution of the steps that did not succeed, reusing the others' outputs (a new execution,
    whose handle is returned). Any other state is a SpecError. `wait` for its end as after `start`."""
    arn, ops = _ops_of(execution, region, session, profile)
    again = ops.retry_failed(arn)
    return Execution(arn=again, pipeline_name=_name_of(again), region=ops.region,
                     parameters=execution.parameters if isinstance(execution, Execution) else {})


@public
def start_until_decided(spec: SpecLike, *, role_arn: str, bucket: str | None = None, max_seeds: int | None = None,
                        parameters: Mapping[str, Any] | None = None, poll_s: float = 60.0,
                        timeout_s: float = 7 * 86400, region: str | None = None, session: Any = None,
                        profile: str | None = None, progress: Progress | None = None) -> Decision:
    """Run a bake-off on SageMaker in rounds until it is decided (`bakeoff start SPEC --until-decided`).

    The first round is the spec's seeds. After each round the pipeline is updated with more seeds
    and started again: the steps of the seeds already run keep their names and cache keys, so
    SageMaker's step cache serves them and only the new seeds train (checked before each update).
    Stops at pass or fail, or at `max_seeds` (default 4x the first round) with inconclusive and its
    recommendation. The group-sequential design (alpha spent per look) is in each round's evaluation."""
    from bakeoff.pipelines.extras import require_stats

    require_stats(Either("start_until_decided()", "bakeoff start --until-decided"))  # before the first round deploys
    from bakeoff.pipelines.sagemaker import more_seeds

    loaded = as_spec(spec)
    if not role_arn:
        raise SpecError(words(ROLE_ARN, " is required: the SageMaker execution role ARN the jobs run as"))
    ops = ops_for(session, region or loaded.storage.region, profile)
    executions: list[str] = []
    # One round loop, the tested one: deploy, start (named round-N-seeds-A-B), wait, retry a round whose
    # training steps were lost to infrastructure, read the evaluation costed by billed time.
    run_round = more_seeds.ops_round(ops, {k: str(v) for k, v in (parameters or {}).items()},
                                     progress=lambda m: note(progress, m, kind="state"), poll_s=poll_s,
                                     timeout_s=timeout_s, started=executions.append)
    evaluation, rounds = more_seeds.run_until_decided(loaded, run_round=run_round, max_seeds=max_seeds,
                                                      bucket=bucket, role_arn=role_arn, region=ops.region)
    evaluation = json.loads(json.dumps(evaluation, default=str))
    return Decision(verdict=evaluation["verdict"], exit_code=exit_code_of(evaluation["verdict"]),
                    pipeline_name=executions and _name_of(executions[-1]) or loaded.name, region=ops.region,
                    rounds=tuple(Round(round=r["round"], seeds=tuple(r["seeds"]), verdict=r.get("verdict"),
                                       execution_arn=executions[i] if i < len(executions) else None)
                                 for i, r in enumerate(rounds)),
                    evaluation=evaluation)


def _name_of(execution_arn: str) -> str:
    # arn:aws:sagemaker:REGION:ACCOUNT:pipeline/NAME/execution/ID
    return execution_arn.split(":pipeline/", 1)[-1].split("/", 1)[0]


def _arn(execution: ExecutionLike) -> tuple[str, str | None]:
    if isinstance(execution, Execution):
        return execution.arn, execution.region
    if isinstance(execution, str) and execution.startswith("arn:"):
        return execution, None
    raise SpecError(f"{execution!r} is not a pipeline execution ARN (arn:aws:sagemaker:REGION:ACCOUNT:pipeline/"
                    "NAME/execution/ID) or an Execution")


def _ops_of(execution: ExecutionLike, region: str | None, session: Any, profile: str | None) -> tuple[str, Any]:
    arn, own_region = _arn(execution)
    return arn, ops_for(session, region or own_region, profile, arn=arn)


@public
def status(execution: ExecutionLike, *, region: str | None = None, session: Any = None,
           profile: str | None = None) -> ExecutionStatus:
    """The execution's state and each step's state, failure reason, job ARN and cache hit (`bakeoff status`)."""
    arn, ops = _ops_of(execution, region, session, profile)
    raw = ops.status(arn)
    return ExecutionStatus(execution_arn=arn, status=raw["status"], failure_reason=raw["failure_reason"],
                           steps=tuple(StepStatus(**s) for s in raw["steps"]))


@public
def wait(execution: ExecutionLike, *, timeout_s: float = 7 * 86400, poll_s: float = 30.0, cancel: Cancel | None = None,
         progress: Progress | None = None, region: str | None = None, session: Any = None,
         profile: str | None = None) -> ExecutionStatus:
    """Wait until the execution ends (`bakeoff wait`); returns its final state (Succeeded, Failed, Stopped).

    Polls every `poll_s` seconds. `cancel` is a threading.Event (setting it ends the wait at once) or a
    callable asked before each poll; a cancelled wait raises Cancelled, one past `timeout_s` raises
    TimedOut (both RunError; the execution goes on). `progress` gets a `state` event whenever the
    execution's state changes."""
    arn, ops = _ops_of(execution, region, session, profile)
    if poll_s <= 0 or timeout_s < 0:
        raise SpecError(f"poll_s must be above 0 and timeout_s at least 0 (got {poll_s}, {timeout_s})",
                        field=POLL)
    last: dict[str, Any] = {}

    def on_state(ex: dict[str, Any]) -> None:
        state = ex.get("PipelineExecutionStatus")
        if progress is not None and last.get("state") != state:
            progress(_Event(kind="state", status=state, message=f"{arn}: {state}"))
        last["state"] = state

    if isinstance(cancel, threading.Event):
        event = cancel
        final = ops.wait(arn, poll_s=poll_s, timeout_s=timeout_s, progress=on_state, sleep=event.wait,
                         cancelled=event.is_set)
    else:
        asked = cancel or (lambda: False)
        final = ops.wait(arn, poll_s=poll_s, timeout_s=timeout_s, progress=on_state, cancelled=asked)
    return ExecutionStatus(execution_arn=arn, status=final["status"], failure_reason=final["failure_reason"])


@public
def stop(execution: ExecutionLike, *, region: str | None = None, session: Any = None,
         profile: str | None = None) -> ExecutionStatus:
    """Stop an execution (StopPipelineExecution): its running jobs are stopped and it ends as Stopped.
    Returns its state right after the request (usually Stopping); `wait` for the end."""
    arn, ops = _ops_of(execution, region, session, profile)
    raw = ops.stop(arn)
    return ExecutionStatus(execution_arn=arn, status=raw["status"], failure_reason=raw["failure_reason"])


@public
def report(target: ExecutionLike | os.PathLike[str], *, out_dir: str | os.PathLike[str] | None = None,
           render: bool = True, region: str | None = None, session: Any = None, profile: str | None = None,
           progress: Progress | None = None, write: bool = False) -> Report:
    """The verdict and evaluation of a local run directory or a SageMaker execution (`bakeoff report`).

    For a run directory: its evaluation as it is; nothing is written into the directory unless `write` (a
    stale verdict is never returned: one whose jobs changed after it was written is decided again in the
    directory with `write`, and refused without it). `out_dir` gets a copy of the evaluation and the report.
    Without either, the report is the run's own report.html, or (none there) one rendered into a private
    temporary folder when `render`. For an execution: evaluation.json
    from S3, each job re-costed by its BillableTimeInSeconds, written to `out_dir` (default
    `./bakeoff-report-ID`), report.html beside it when `render`. The verdict is `.verdict`;
    `.raise_for_verdict()` turns a fail or inconclusive verdict into ParityFailed / ParityInconclusive."""
    if isinstance(target, Execution) or (isinstance(target, str) and target.startswith("arn:")):
        from bakeoff.pipelines.sagemaker.billable import apply_billable_time

        arn, ops = _ops_of(target, region, session, profile)
        evaluation, billable = ops.fetch_evaluation(arn)
        evaluation = apply_billable_time(evaluation, billable)
        out = Path(out_dir or f"bakeoff-report-{arn.rsplit('/', 1)[-1]}")
        out.mkdir(parents=True, exist_ok=True)
        path = out / "evaluation.json"
        path.write_text(json.dumps(evaluation, indent=2, sort_keys=True, default=str) + "\n")
        source = arn
    else:
        run_dir = Path(target)
        if not run_dir.is_dir():
            raise SpecError(f"{str(target)!r} is neither a run directory nor a pipeline execution ARN")
        from bakeoff.pipelines.local.run_dir import check

        check(run_dir)  # a run directory is data: a link in it would lead the report's writes outside it
        path = run_dir / "evaluation" / "evaluation.json"
        if write and out_dir is None and not _writable(path.parent):
            raise SpecError(words(f"{path.parent} is read-only: ", WRITE, " cannot write there; leave ", WRITE,
                                  " out to read it, or give ", OUT_DIR.given("DIR")))
        evaluation = _current_evaluation(run_dir, path, progress, write)
        source = str(run_dir)
        if out_dir is not None:
            out = Path(out_dir).resolve()
            out.mkdir(parents=True, exist_ok=True)
            copied = out / "evaluation.json"
            if copied.resolve() != path.resolve():
                copied.write_text(path.read_text())
            path = copied
        elif not write:
            # The run directory is data: read, never written. Its own report, else one rendered elsewhere.
            own = path.parent / "report.html"
            if own.exists() or not render:
                return _report_of(evaluation, source, path, own if own.exists() else None)
            import tempfile

            private = Path(tempfile.mkdtemp(prefix="bakeoff-report-"))  # 0700, this user's
            copied = private / "evaluation.json"
            copied.write_text(path.read_text())
            return _report_of(evaluation, source, path, render_report(copied, private))
    html = render_report(path, path.parent) if render else None
    if html is None and (path.parent / "report.html").exists():
        html = path.parent / "report.html"
    return _report_of(evaluation, source, path, html)


def _report_of(evaluation: Mapping[str, Any], source: str, path: Path, html: Path | None) -> Report:
    plain: dict[str, Any] = json.loads(json.dumps(evaluation, default=str))  # JSON values, as a reader gets them
    return Report(verdict=plain["verdict"], exit_code=exit_code_of(plain["verdict"]), source=source,
                  evaluation_path=str(path), report_path=str(html) if html else None,
                  evaluation=cast(Evaluation, plain))


def _run_into(run_dir: object) -> Either:
    return Either(f"`run_local(SPEC, {str(run_dir)!r})`", f"`bakeoff run SPEC --out {run_dir}`")


def _report_written(run_dir: object) -> Either:
    return Either(f"`report({str(run_dir)!r}, write=True)`", f"`bakeoff report {run_dir} --write`")


def _writable(directory: Path) -> bool:
    """Whether a file can be made in `directory` (or, where it does not exist yet, in the nearest folder above
    it that does), found by making one: os.access answers yes for root on a read-only mount, and permissions
    are not the only thing that refuses."""
    import tempfile

    while not directory.exists() and directory.parent != directory:
        directory = directory.parent  # an interrupted run has no evaluation/ yet: deciding it makes one
    try:
        fd, probe = tempfile.mkstemp(prefix=".bakeoff-write-probe-", dir=directory)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def render_report(evaluation_path: Path, out_dir: Path) -> Path:
    """Write report.html (and report.md) with the entrypoints' report writer, the code the
    evaluation step runs; returns report.html's path."""
    import subprocess

    from bakeoff.pipelines.plan.bundle import REPORT_SCRIPT, entrypoints_dir

    proc = subprocess.run([sys.executable, str(entrypoints_dir() / REPORT_SCRIPT), "--evaluation",
                           str(evaluation_path), "--out", str(out_dir)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RunError(f"could not write the report: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return out_dir / "report.html"


def _current_evaluation(run_dir: Path, path: Path, progress: Progress | None, write: bool = True) -> Evaluation:
    """The verdict of a local run directory, decided again from its jobs when they changed
    after it was written (or it was never written), which `write` allows: a stale verdict is never shown."""
    from bakeoff.pipelines.local.verdict_inputs import stale_evaluation

    why = stale_evaluation(run_dir)
    if why is None:
        try:
            evaluation = read_evaluation(path)
            problem = whole_evaluation_problem(evaluation)
            if problem is None:
                return evaluation
            raise DocumentError(f"{path}: not an evaluation bakeoff wrote: {problem}")
        except (DocumentError, ValueError) as exc:
            # Another bakeoff's document, or one edited or cut short: decided again when the directory can be.
            if not (run_dir / "spec.json").exists() or not (run_dir / "pipeline.json").exists():
                raise SpecError(str(exc)) from None
            why = f"its evaluation.json cannot be read ({str(exc)[:200]})"
    if not (run_dir / "spec.json").exists() or not (run_dir / "pipeline.json").exists():
        if path.exists():
            raise RunError(words(f"{run_dir}: {why}, and it holds no spec to decide again from; run ",
                                 _run_into(run_dir)))
        raise SpecError(words(f"no evaluation at {path}; run ", _run_into(run_dir), " first"))
    from bakeoff.pipelines.local.executor import LocalExecutor
    from bakeoff.pipelines.spec.model import BakeoffSpec

    from ._support import EventProgress

    if not write:
        raise SpecError(words(f"{run_dir}: {why}; deciding again writes into the run directory: ",
                              _report_written(run_dir), f" does, or copy it (cp -r {run_dir} DEST) and run ",
                              _report_written("DEST")))
    if not _writable(run_dir):
        raise SpecError(words(f"{run_dir}: {why}, and it is read-only, so it cannot be decided again there; copy it "
                              f"somewhere writable (cp -r {run_dir} DEST) and run ", _report_written("DEST")))
    note(progress, f"{run_dir}: {why}; deciding again from its jobs")
    spec = BakeoffSpec.model_validate(json.loads((run_dir / "spec.json").read_text()))
    return LocalExecutor(spec, run_dir, progress=EventProgress(progress)).reevaluate().evaluation.copy()


