"""The façade's offline verbs: load_spec, validate, plan, run_local, synth, preflight, schema."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipelines.errors import SpecError
from pipelines.spec.model import BakeoffSpec

from ._support import EventProgress, Progress, SpecLike, as_spec, public
from .results import AssetInfo, LegPlan, Preflight, RunSummary, Synth, Validation, exit_code_of, path_or_none


@public
def load_spec(spec: SpecLike, overrides: Sequence[str] | None = ()) -> BakeoffSpec:
    """Read and validate a spec.

    `spec` is a YAML file's path, a mapping shaped like the YAML, or a BakeoffSpec (returned as it is
    unless there are overrides). `overrides` are `key.path=value` strings applied before validation,
    as `--set` takes them. Raises SpecError (with file:line where there is one) on bad input."""
    return as_spec(spec, overrides)


@public
def validate(spec: SpecLike, *, overrides: Sequence[str] = (),
             previous_run: str | os.PathLike[str] | None = None) -> Validation:
    """Check a spec as `bakeoff validate` does and return the jobs it makes.

    The code bundle is packed (a missing script is found here), the pipeline definition is compiled
    offline and checked against botocore's SageMaker model, and a problem is blamed on the spec field
    it comes from (SpecError). `previous_run` is a run directory of this bake-off: its spread adds a
    warning when the declared seeds are unlikely to decide the verdict."""
    from pipelines.advice.seeds import design_warnings, seed_warnings
    from pipelines.plan.model import build_plan

    loaded = as_spec(spec, overrides)
    plan = build_plan(loaded)
    _check_compiles(loaded, plan)
    warnings = seed_warnings(loaded, Path(previous_run) if previous_run else None) + design_warnings(loaded) \
        + plan.notes
    legs = tuple(LegPlan(name=leg.name, instance_type=leg.instance_type, instance_count=leg.instance_count,
                         devices=leg.devices, backend=leg.backend, precision=leg.precision,
                         per_device_batch_size=leg.batching.per_device_batch_size,
                         gradient_accumulation_steps=leg.batching.gradient_accumulation_steps,
                         global_batch_size=leg.batching.global_batch_size,
                         arguments=(*loaded.arguments, *loaded.leg(leg.name).arguments),
                         processes_per_host=leg.processes_per_host) for leg in plan.legs)
    source = loaded._source_path
    return Validation(spec_file=str(source) if source else None, name=loaded.name, spec_hash=plan.spec_hash,
                      seeds=tuple(loaded.seed_list), jobs=len(plan.jobs), mode=loaded.entrypoint.mode,
                      process_model=plan.script.why if plan.script else None, legs=legs, warnings=tuple(warnings))


def _check_compiles(spec: BakeoffSpec, plan: Any) -> None:
    """What `synth` would refuse, found by `validate`."""
    from pipelines.names import parse_step_name
    from pipelines.sagemaker.compiler import compile_plan
    from pipelines.sagemaker.validate import definition_problems
    from pipelines.spec.loader import locate

    problems = definition_problems(compile_plan(plan).definition)
    if not problems:
        return
    first = problems[0]
    field: tuple = ("seeds",)
    named = re.search(r"\b(Train-[A-Za-z0-9-]+)", first)
    step = parse_step_name(named.group(1)) if named else None
    if "Environment" in first and step:
        field = ("legs", [leg.name for leg in spec.legs].index(step[0]), "environment")
    elif "HyperParameters" in first:
        field = ("hyperparameters",)
    file, line = locate(spec, field)
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    raise SpecError(f"SageMaker would refuse the pipeline: {first}{more}", file=file, line=line,
                    field=".".join(str(p) for p in field))


@public
def plan(spec: SpecLike, *, overrides: Sequence[str] = (), from_run: str | os.PathLike[str] | None = None,
         max_seeds: int | None = None) -> Any:
    """Seeds, jobs and cost of a verdict before spending (`bakeoff plan`): `pipelines.advice.budget.plan_budget`.

    `from_run` is a previous run directory whose paired spread and job hours size the plan (without it,
    the plan is the pilot to run); `max_seeds` caps the sequential (`until_decided`) design. Returns a
    frozen BudgetPlan (`.model_dump(mode="json")` is `bakeoff plan --json`)."""
    try:
        from pipelines.advice.budget import plan_budget
    except ImportError:
        raise SpecError("planning the seeds and cost needs pipelines.advice.budget, which this install lacks") from None
    if from_run is not None and not Path(from_run).exists():
        raise SpecError(f"--from {from_run}: no such run directory")
    return plan_budget(as_spec(spec, overrides), Path(from_run) if from_run else None, max_seeds=max_seeds)


@public
def run_local(spec: SpecLike, out_dir: str | os.PathLike[str], *, overrides: Sequence[str] = (), force: bool = False,
              mlflow: bool | None = None, rule_change: str | None = None,
              parameters: Mapping[str, str] | None = None, until_decided: bool = False,
              max_seeds: int | None = None, jobs: int | None = None, progress: Progress | None = None,
              **executor_options: Any) -> RunSummary:
    """Run the whole bake-off on this machine (`bakeoff run`): trn legs on PyTorch/XLA's CPU device,
    GPU legs on a GPU if there is one, else the CPU.

    Jobs whose inputs did not change are not run again unless `force`. `mlflow` False turns MLflow
    logging off (None: as the spec says). `rule_change` gives the reason for deciding finished jobs
    under a changed parity rule. `parameters` are pipeline parameters (`MaxSteps=50`), checked against
    the definition. `until_decided` adds seeds until the verdict is decided or `max_seeds`. `jobs`: training
    jobs at once (None: one per core, as the memory allows; 1: one after another, each with the whole machine);
    the same jobs are run and decided whatever it is.
    `progress` receives a ProgressEvent per job event; nothing is printed. Other keyword arguments go to
    `pipelines.local.LocalExecutor` (`use_gpu`, `python`).

    The verdict is in the result (`.verdict`, `.exit_code`); `.raise_for_verdict()` turns fail and
    inconclusive into ParityFailed / ParityInconclusive. Raises SpecError on bad input and RunError when
    the bake-off could not run."""
    loaded = as_spec(spec, overrides)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise SpecError(f"jobs {jobs!r}: give a whole number of training jobs to run at once, 1 or more",
                        field="--jobs")
    options: dict[str, Any] = {"force": force, "jobs": jobs, "mlflow": mlflow, "rule_change": rule_change,
                               "parameters": dict(parameters or {}), "progress": EventProgress(progress),
                               **executor_options}
    out = Path(out_dir)
    if until_decided:
        try:
            from pipelines.local.until_decided import run_until_decided
        except ImportError:
            raise SpecError("until_decided needs pipelines.local.until_decided, which this install lacks") from None
        result = run_until_decided(loaded, out, max_seeds=max_seeds, **options)
    else:
        from pipelines.local import LocalExecutor

        result = LocalExecutor(loaded, out, **options).run()
    return _summary(result, loaded.mlflow.tracking_uri)


def _summary(result: Any, tracking_uri: str | None = None) -> RunSummary:
    evaluation = dict(result.evaluation)
    return RunSummary(out_dir=str(result.out_dir), verdict=evaluation["verdict"],
                      exit_code=exit_code_of(evaluation["verdict"]), evaluation_path=str(result.evaluation_path),
                      report_path=path_or_none(Path(result.evaluation_path).with_name("report.html")),
                      executed=tuple(result.executed), skipped=tuple(result.skipped),
                      mlflow_parent_run_id=(evaluation.get("mlflow") or {}).get("parent_run_id"),
                      mlflow_tracking_uri=tracking_uri,
                      evaluation=evaluation)


@public
def synth(spec: SpecLike, *, overrides: Sequence[str] = (), bucket: str | None = None, role_arn: str | None = None,
          region: str | None = None) -> Synth:
    """The SageMaker pipeline definition of a spec and the assets it reads from S3 (`bakeoff synth`).

    Offline and deterministic: the same spec gives the same definition and asset bytes. `bucket`
    defaults to storage.bucket, `region` to storage.region, `role_arn` to a placeholder (deploy needs a
    real one). The definition is checked against botocore's SageMaker model (SpecError if refused)."""
    from pipelines.sagemaker.compiler import compile_pipeline
    from pipelines.sagemaker.validate import check_definition

    loaded = as_spec(spec, overrides)
    if bucket:
        from pipelines.spec.model import BUCKET_RE

        if not BUCKET_RE.match(bucket):
            raise SpecError(f"{bucket!r} is not an S3 bucket name", field="--bucket")
    compiled = compile_pipeline(loaded, bucket=bucket, role_arn=role_arn, region=region)
    check_definition(compiled.definition)
    result = Synth(pipeline_name=compiled.name, bucket=compiled.bucket, role_arn=compiled.role_arn,
                   region=region or loaded.storage.region, definition=compiled.definition,
                   assets=tuple(AssetInfo(key=a.key, sha256=a.sha256, size=len(a.body)) for a in compiled.assets))
    result._compiled = compiled
    result._spec = loaded
    return result


@public
def preflight(spec: SpecLike, *, overrides: Sequence[str] = (), legs: Sequence[str] | None = None, steps: int = 6,
              out_dir: str | os.PathLike[str] | None = None, progress: Progress | None = None) -> Preflight:
    """A few training steps of each trn leg on PyTorch/XLA's CPU device (`bakeoff preflight`):
    recompilations, CPU fallbacks, fp64 and host transfers, each named with its fix.

    `legs` defaults to every trn leg; `out_dir` keeps the job's files (default: a temporary
    directory, removed afterwards unless a leg did not finish). `.blockers` is True when a leg
    would not run well on Trainium."""
    from pipelines.api.preflight_view import legs_to_check

    loaded = as_spec(spec, overrides)
    names = legs_to_check(loaded, list(legs) if legs else None)
    if out_dir:
        return Preflight(_preflight_legs(loaded, names, steps, Path(out_dir), progress))
    import shutil
    import tempfile

    # Without out_dir the job files are scratch: removed once every leg has its report, kept when one
    # did not finish, since its error names the job's stdout.log there.
    out = Path(tempfile.mkdtemp(prefix="bakeoff-preflight-"))
    reports = _preflight_legs(loaded, names, steps, out, progress)
    shutil.rmtree(out, ignore_errors=True)
    return Preflight(reports)


def _preflight_legs(spec: BakeoffSpec, names: list[str], steps: int, out: Path,
                    progress: Progress | None) -> dict[str, dict[str, Any]]:
    from pipelines.local import LocalExecutor

    reports = {}
    for name in names:
        executor = LocalExecutor(spec, out, force=True, mlflow=False, progress=EventProgress(progress))
        reports[name] = executor.preflight(name, steps)
    return reports


@public
def schema() -> dict[str, Any]:
    """The JSON Schema of the spec (`bakeoff schema`), for editors and validators."""
    return BakeoffSpec.model_json_schema()
