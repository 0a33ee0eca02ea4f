"""The façade's offline verbs: load_spec, validate, plan, run_local, synth, preflight, schema."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bakeoff.pipelines.errors import Either, Param, SpecError, Words, words
from bakeoff.pipelines.params import BUCKET, FROM_RUN, JOBS, PREVIOUS_RUN
from bakeoff.pipelines.spec.model import BakeoffSpec

from ._support import EventProgress, Progress, SpecLike, as_spec, public
from .results import AssetInfo, LegPlan, Preflight, RunSummary, Synth, Validation, exit_code_of, path_or_none

if TYPE_CHECKING:
    from bakeoff.pipelines.advice.budget import BudgetPlan
    from bakeoff_runtime.contract.documents import Evaluation


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
    from bakeoff.pipelines.advice.seeds import design_warnings, seed_warnings
    from bakeoff.pipelines.plan.model import build_plan

    if previous_run is not None:  # its spread is weighed with the statistics of the stats extra
        from bakeoff.pipelines.extras import require_stats

        require_stats(Either("validate(previous_run=...)", "bakeoff validate --from"))
    loaded = as_spec(spec, overrides)
    plan = build_plan(loaded)
    _check_compiles(loaded, plan)
    if previous_run is not None:
        found = _previous_record(Path(previous_run), Path.is_file)
        if found is not None:  # none: seed_warnings says there is no evaluation.json there
            _check_previous_evaluation(found, PREVIOUS_RUN)
    warnings = seed_warnings(loaded, Path(previous_run) if previous_run else None) + design_warnings(loaded) \
        + plan.notes
    legs = tuple(LegPlan(name=leg.name, instance_type=leg.instance_type, instance_count=leg.instance_count,
                         devices=leg.devices, backend=leg.backend, precision=leg.precision,
                         per_device_batch_size=leg.batching.per_device_batch_size,
                         gradient_accumulation_steps=leg.batching.gradient_accumulation_steps,
                         global_batch_size=leg.batching.global_batch_size,
                         arguments=(*loaded.arguments, *loaded.leg(leg.name).arguments),
                         processes_per_host=leg.processes_per_host) for leg in plan.legs)
    source = loaded.provenance.path
    return Validation(spec_file=str(source) if source else None, name=loaded.name, spec_hash=plan.spec_hash,
                      seeds=tuple(loaded.seed_list), jobs=len(plan.jobs), mode=loaded.entrypoint.mode,
                      process_model=plan.script.why if plan.script else None, legs=legs, warnings=tuple(warnings))


def _check_compiles(spec: BakeoffSpec, plan: Any) -> None:
    """What `synth` would refuse, found by `validate`."""
    from bakeoff.pipelines.names import parse_step_name
    from bakeoff.pipelines.sagemaker.compiler import compile_plan
    from bakeoff.pipelines.sagemaker.validate import definition_problems
    from bakeoff.pipelines.spec.loader import locate

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
         max_seeds: int | None = None) -> BudgetPlan:
    """Seeds, jobs and cost of a verdict before spending (`bakeoff plan`):
    `bakeoff.pipelines.advice.budget.plan_budget`.

    `from_run` is a previous run directory whose paired spread and job hours size the plan (without it,
    the plan is the pilot to run); `max_seeds` caps the sequential (`until_decided`) design. Returns a
    frozen BudgetPlan (`.model_dump(mode="json")` is `bakeoff plan --json`)."""
    from bakeoff.pipelines.extras import require_stats

    require_stats(Either("plan()", "bakeoff plan"))
    try:
        from bakeoff.pipelines.advice.budget import plan_budget
    except ImportError:
        raise SpecError("planning the seeds and cost needs bakeoff.pipelines.advice.budget, "
                        "which this install lacks") from None
    if from_run is not None and not Path(from_run).exists():
        raise SpecError(words(FROM_RUN.given(from_run), ": no such run directory"))
    run = Path(from_run) if from_run is not None else None
    if run is not None:
        if not run.is_dir():  # the evaluation.json itself: planned from the folder that holds it
            if run.name != "evaluation.json" or _previous_record(run.parent, Path.exists) != run:
                raise SpecError(words(FROM_RUN.given(from_run), ": not a run directory; give the ",
                                      _PREVIOUS_OUT, " (or the folder holding its evaluation.json)"))
            run = run.parent
        found = _previous_record(run, Path.exists)
        if found is not None:  # none: plan_budget says there is no evaluation.json there
            _check_previous_evaluation(found, FROM_RUN)
    return plan_budget(as_spec(spec, overrides), run, max_seeds=max_seeds)


# --- a previous run's record (`plan --from`, `validate --from`) --------------------------------
# Its evaluation.json is read from wherever the user points: checked here, before the planners read
# it, so that what is wrong with it is one line naming the file, its line and the field, never a crash
# in the arithmetic that would have used it.
MAX_RECORD_BYTES = 64 << 20  # an evaluation is kilobytes to a few megabytes (curves of many seeds)
HUGE = 1e100  # no metric's mean or spread is larger; past it the planners' sums overflow to inf
_PREVIOUS_OUT = Either("out_dir of a previous `run_local`", "--out directory of a previous `bakeoff run`")


def _fix(param: Param) -> Words:
    return words("give the directory of a previous ", Either("`run_local`", "`bakeoff run`"), " (", param,
                 " reads the evaluation.json bakeoff wrote there)")


def _previous_record(run: Path, present: Any) -> Path | None:
    """The evaluation.json a --from of `run` names, found as the planners find it: `run` itself (a file),
    else RUN/evaluation/evaluation.json, else RUN/evaluation.json (the first that is `present`)."""
    if run.is_file():
        return run
    return next((c for c in (run / "evaluation" / "evaluation.json", run / "evaluation.json") if present(c)), None)


def _check_previous_evaluation(path: Path, param: Param) -> Any:
    """The evaluation at `path` as the planners read it, checked: a JSON object of a schema this bakeoff
    reads whose fields the planners use have their types and finite values. SpecError (exit 2) naming
    the file, line and field otherwise."""
    import json
    import stat

    from bakeoff_runtime.contract.documents import DocumentError, evaluation_from

    where, fix = str(path), _fix(param)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise SpecError(words("not a file; ", fix), file=where, field=param)
        if info.st_size > MAX_RECORD_BYTES:
            raise SpecError(words(f"{info.st_size:,} bytes is not an evaluation (at most {MAX_RECORD_BYTES:,}); ", fix),
                            file=where, field=param)
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(words(f"cannot read it ({exc.strerror or exc}); ", fix), file=where, field=param) from None
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise SpecError(words("nested too deeply to be an evaluation; ", fix), file=where, field=param) from None
    except json.JSONDecodeError as exc:
        raise SpecError(words(f"not valid JSON ({exc.msg}); ", fix), file=where, line=exc.lineno, field=param) from None
    except _NotJson as exc:
        raise SpecError(words(f"{exc.args[0]}, which JSON has not and bakeoff never writes; ", fix), file=where,
                        line=_constant_line(raw, str(exc.args[1])), field=param) from None
    except ValueError as exc:  # bytes that are not UTF-8 (UnicodeDecodeError)
        raise SpecError(words(f"not JSON text ({exc}); ", fix), file=where, field=param) from None
    try:
        evaluation = evaluation_from(body, where)
    except DocumentError as exc:
        raise SpecError(words(f"{str(exc).removeprefix(where + ': ')}; ", fix), file=where, field=param) from None
    problem = _record_problem(evaluation)
    if problem is not None:
        loc, message = problem
        raise SpecError(words(f"{message}; ", fix), file=where, line=_json_line(raw, loc),
                        field="".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip("."))
    return evaluation


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"it holds {name}", name)


def _constant_line(raw: bytes, name: str) -> int | None:
    import re

    found = re.search(rb"[:\[,]\s*" + re.escape(name.encode()), raw)
    return raw[:found.start()].count(b"\n") + 1 if found else None


def _record_problem(evaluation: Any) -> tuple[tuple, str] | None:
    """The first field the planners read (pipelines/advice/budget.py, seeds.py) that is not of its type."""
    def bad(value: Any, kind: str, *, minimum: float = -HUGE, maximum: float = HUGE,
            whole: bool = False) -> str | None:
        """Why `value` is not `kind`: not a number, not whole, or outside [minimum, maximum] (so bounded that the
        planners' arithmetic stays finite); None when it is, or is null."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        from bakeoff.pipelines.spec.loader import _shown

        if value is None or (number and (not whole or isinstance(value, int)) and minimum <= value <= maximum):
            return None
        number_word = "a whole number" if whole else "a number"
        return f"{_shown(value)} is not {kind}: {number_word} from {minimum:g} to {maximum:g}"

    checks = evaluation.get("checks")
    if checks is not None and not isinstance(checks, list):
        return ("checks",), f"is {_json_type(checks)}, not a list of checks"
    for i, check in enumerate(checks or []):
        if not isinstance(check, dict):
            return ("checks", i), f"is {_json_type(check)}, not a check (an object)"
        for key in ("name", "test"):
            if check.get(key) is not None and not isinstance(check[key], str):
                return ("checks", i, key), f"is {_json_type(check[key])}, not text"
        for key, kind, most, whole in (("sd", "a standard deviation", HUGE, False),
                                       ("se", "a standard error", HUGE, False),
                                       ("n_pairs", "a count of seeds", 10**9, True),
                                       ("n_leg", "a count of seeds", 10**9, True),
                                       ("n_baseline", "a count of seeds", 10**9, True)):
            why = bad(check.get(key), kind, minimum=0, maximum=most, whole=whole)
            if why:
                return ("checks", i, key), why
        if check.get("test") == "paired" and check.get("sd") is not None and check.get("n_pairs") is None:
            return ("checks", i), "a paired check with an sd has no n_pairs (the seeds it was measured on)"
    legs = evaluation.get("legs")
    if legs is not None and not isinstance(legs, dict):
        return ("legs",), f"is {_json_type(legs)}, not an object of legs"
    for name, leg in (legs or {}).items():
        if not isinstance(leg, dict):
            return ("legs", name), f"is {_json_type(leg)}, not a leg (an object)"
        why = bad(leg.get("instance_count"), "an instance count", minimum=1,
                  maximum=10**6, whole=True)
        if why:
            return ("legs", name, "instance_count"), why
        metric = leg.get("metric")
        if metric is not None and not isinstance(metric, dict):
            return ("legs", name, "metric"), f"is {_json_type(metric)}, not an object"
        why = bad((metric or {}).get("mean"), "a mean")
        if why:
            return ("legs", name, "metric", "mean"), why
        runs = leg.get("runs")
        if runs is not None and not isinstance(runs, list):
            return ("legs", name, "runs"), f"is {_json_type(runs)}, not a list of runs"
        for j, run in enumerate(runs or []):
            if not isinstance(run, dict):
                return ("legs", name, "runs", j), f"is {_json_type(run)}, not a run (an object)"
            for key, kind, most in (("billable_s", "a time in seconds", 1e9),
                                    ("cost_usd", "a cost in dollars", 1e12)):
                why = bad(run.get(key), kind, minimum=0, maximum=most)
                if why:
                    return ("legs", name, "runs", j, key), why
    return None


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true or false", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _json_line(raw: bytes, loc: tuple) -> int | None:
    """The line of the field at `loc` in a JSON document, where it can be found (JSON is YAML's flow
    style: its composer keeps every node's line); None otherwise."""
    import yaml

    if len(raw) > 8 << 20:
        return None
    try:
        node = yaml.compose(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                node = next(v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                node = node.value[part]
            else:
                return None
        return int(node.start_mark.line) + 1 if node is not None else None
    except (yaml.YAMLError, StopIteration, IndexError, ValueError, RecursionError):
        return None


@public
def run_local(spec: SpecLike, out_dir: str | os.PathLike[str], *, overrides: Sequence[str] = (), force: bool = False,
              mlflow: bool | None = None, rule_change: str | None = None, fresh_start: str | None = None,
              parameters: Mapping[str, str] | None = None, until_decided: bool = False,
              max_seeds: int | None = None, jobs: int | None = None, progress: Progress | None = None,
              **executor_options: Any) -> RunSummary:
    """Run the whole bake-off on this machine (`bakeoff run`): trn legs on PyTorch/XLA's CPU device,
    GPU legs on a GPU if there is one, else the CPU.

    Jobs whose inputs did not change are not run again unless `force`. `mlflow` False turns MLflow
    logging off (None: as the spec says). `rule_change` gives the reason for deciding finished jobs
    under a changed parity rule. `fresh_start` gives the reason for deciding a question already decided
    (or whose design has ended) again as a new attempt: the same legs, rule and training setup decided
    before in any run directory (pipelines/local/questions.py); without it that run is refused, since
    an attempt nobody counts lifts the error rates above alpha. `parameters` are pipeline parameters
    (`MaxSteps=50`), checked against the definition. `until_decided` adds seeds until the verdict is
    decided or `max_seeds`. `jobs`: training jobs at once (None: one per core, as the memory allows;
    1: one after another, each with the whole machine);
    the same jobs are run and decided whatever it is.
    `progress` receives a ProgressEvent per job event; nothing is printed. Other keyword arguments go to
    `bakeoff.pipelines.local.LocalExecutor` (`use_gpu`, `python`).

    The verdict is in the result (`.verdict`, `.exit_code`); `.raise_for_verdict()` turns fail and
    inconclusive into ParityFailed / ParityInconclusive. Raises SpecError on bad input and RunError when
    the bake-off could not run."""
    loaded = as_spec(spec, overrides)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise SpecError(f"{jobs!r}: give a whole number of training jobs to run at once, 1 or more", field=JOBS)
    options: dict[str, Any] = {"force": force, "jobs": jobs, "mlflow": mlflow, "rule_change": rule_change,
                               "fresh_start": fresh_start,
                               "parameters": dict(parameters or {}), "progress": EventProgress(progress),
                               **executor_options}
    out = Path(out_dir)
    if until_decided:
        try:
            from bakeoff.pipelines.local.until_decided import run_until_decided
        except ImportError:
            raise SpecError("until_decided needs bakeoff.pipelines.local.until_decided, "
                            "which this install lacks") from None
        result = run_until_decided(loaded, out, max_seeds=max_seeds, **options)
    else:
        from bakeoff.pipelines.local import LocalExecutor

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
                      evaluation=cast("Evaluation", evaluation))


@public
def synth(spec: SpecLike, *, overrides: Sequence[str] = (), bucket: str | None = None, role_arn: str | None = None,
          region: str | None = None) -> Synth:
    """The SageMaker pipeline definition of a spec and the assets it reads from S3 (`bakeoff synth`).

    Offline and deterministic: the same spec gives the same definition and asset bytes. `bucket`
    defaults to storage.bucket, `region` to storage.region, `role_arn` to a placeholder (deploy needs a
    real one). The definition is checked against botocore's SageMaker model (SpecError if refused)."""
    from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
    from bakeoff.pipelines.sagemaker.validate import check_definition

    loaded = as_spec(spec, overrides)
    if bucket:
        from bakeoff.pipelines.spec.model import BUCKET_RE

        if not BUCKET_RE.match(bucket):
            raise SpecError(f"{bucket!r} is not an S3 bucket name", field=BUCKET)
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
    from bakeoff.pipelines.api.preflight_view import legs_to_check

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
    from bakeoff.pipelines.local import LocalExecutor

    reports = {}
    for name in names:
        executor = LocalExecutor(spec, out, force=True, mlflow=False, progress=EventProgress(progress))
        reports[name] = executor.preflight(name, steps)
    return reports


@public
def schema() -> dict[str, Any]:
    """The JSON Schema of the spec (`bakeoff schema`), for editors and validators."""
    return BakeoffSpec.model_json_schema()
