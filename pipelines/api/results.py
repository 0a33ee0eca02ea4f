"""What the façade returns: frozen pydantic models that serialise to JSON.

`result.model_dump(mode="json")` is what `bakeoff COMMAND --json` prints, so the two cannot drift;
`result.to_json()` gives the same as text. Fields cannot be reassigned (the models are frozen);
a model read back with `Model.model_validate(json.loads(text))` compares equal to the original.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, RootModel

from bakeoff.pipelines.errors import VERDICT_EXIT, verdict_error

if TYPE_CHECKING:
    # The evaluation as the Evaluate step writes it: the one definition both sides use
    # (bakeoff_runtime.contract.documents.Evaluation, a TypedDict mypy checks every key of).
    from bakeoff_runtime.contract.documents import Evaluation as EvaluationField
else:
    def _an_evaluation(body: dict[str, Any]) -> dict[str, Any]:
        from bakeoff_runtime.contract.documents import evaluation_from

        return evaluation_from(body)  # its schema id: one this bakeoff reads

    # At run time a TypedDict is a dict; pydantic reads it as one (the contract's TypedDicts are typing's, which
    # pydantic refuses before Python 3.12: docs.pydantic.dev, "Types with Fields", TypedDict) and the contract's
    # reader checks its schema id.
    EvaluationField = Annotated[dict[str, Any], AfterValidator(_an_evaluation)]


class Result(BaseModel):
    """Base of every result: frozen, no unknown fields, JSON out and back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self, indent: int | None = 2) -> str:
        """The result as `--json` prints it."""
        # ASCII only: a job's escape sequences or bidi controls in a reason arrive as \u001b, \u202e.
        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=True)


class ProgressEvent(Result):
    """One step of a long operation, given to a `progress` callback as it happens.

    `kind` names what happened: `note` (a line worth showing), `start` (jobs to run: `total`),
    `begin`/`advance`/`finish`/`skipped`/`stop` (a local training job), `upload` (an asset went to S3),
    `state` (an execution's state while waiting)."""

    kind: str = Field(description="what happened (see the class docstring)")
    message: str = Field("", description="a line a person can read")
    job: str | None = Field(None, description="the job it is about (`trn1-s0`), if any")
    index: int | None = Field(None, description="the job's position, counting from 1")
    total: int | None = Field(None, description="how many jobs (or steps) in all")
    steps: int | None = Field(None, description="training steps completed so far")
    status: str | None = Field(None, description="a job's or an execution's state")
    args: tuple[Any, ...] = Field((), description="the local progress display's own arguments (for renderers)",
                                  exclude=True, repr=False)


class LegPlan(Result):
    """One leg as the spec plans it, with its batch derivation on the target hardware."""

    name: str
    instance_type: str
    instance_count: int
    devices: int = Field(description="accelerator devices across the leg's instances")
    backend: str
    precision: str
    per_device_batch_size: int
    gradient_accumulation_steps: int
    global_batch_size: int
    arguments: tuple[str, ...] = Field((), description="script mode: the command-line arguments only this leg gets")
    processes_per_host: int = Field(1, description="processes a job starts on each instance: one per device for the "
                                                   "built-in trainers and a distributed script, one for a plain script")


class QuotaCheck(Result):
    """One SageMaker quota the pipeline draws on: the instances it holds at once, and the account's value."""

    quota_name: str = Field(description="the quota's name in Service Quotas, e.g. `ml.trn1.32xlarge for training "
                                        "job usage` (`... for spot training job usage` for managed spot)")
    quota_code: str | None = Field(None, description="its code (L-...) as Service Quotas lists it; None when not "
                                                     "listed or not read")
    value: float | None = Field(None, description="the account's value in the region; None when it was not read")
    default_value: bool = Field(False, description="the value is AWS's default: the account has no applied value")
    needed: int = Field(description="instances the pipeline holds at once at its peak, with at most "
                                    "max_parallel_steps steps running")
    steps: tuple[str, ...] = Field(description="the pipeline steps whose jobs count against it")

    @property
    def short(self) -> bool:
        """True when the account's value is known and below what the pipeline needs at once."""
        return self.value is not None and self.value < self.needed


class AccountChecks(Result):
    """`account_checks`: whether this AWS account can run the bake-off's pipeline: each SageMaker quota against
    the pipeline's peak, and the MLflow tracking server's version against the client the jobs install."""

    region: str = Field(description="the region the pipeline runs in (whose quotas were read)")
    max_parallel_steps: int | None = Field(description="the pipeline's ParallelismConfiguration, which bounds its "
                                                       "peak")
    quotas: tuple[QuotaCheck, ...] = Field(description="every quota the pipeline draws on (empty when the quota "
                                                       "check was skipped)")
    mlflow_server_version: str | None = Field(None, description="the SageMaker tracking server's MlflowVersion; "
                                                                "None when the spec logs elsewhere or it was not read")
    mlflow_client_version: str | None = Field(None, description="the MLflow client the jobs install (its pin)")
    problems: tuple[str, ...] = Field(description="one line per quota below the pipeline's need, saying what to "
                                                  "do; any makes `validate --aws` and `deploy` exit 2")
    warnings: tuple[str, ...] = Field(description="what could not be checked, and an MLflow client/server version "
                                                  "mismatch; none stops a deploy")

    @property
    def ok(self) -> bool:
        """True when no quota is short (warnings do not count)."""
        return not self.problems


class Validation(Result):
    """`validate`: the spec is valid and compiles to a pipeline SageMaker accepts; what it makes."""

    spec_file: str | None = Field(description="the spec file, None for a spec built in Python")
    name: str
    spec_hash: str
    seeds: tuple[int, ...]
    jobs: int = Field(description="training jobs (legs x seeds)")
    mode: str = Field("runtime", description="entrypoint.mode: `runtime` or `script` (the script batches itself)")
    process_model: str | None = Field(None, description="script mode: how the script is started and why (one "
                                                        "process, or torchrun with one process per device)")
    legs: tuple[LegPlan, ...]
    warnings: tuple[str, ...] = Field(description="design and seed-count warnings; none stops the bake-off")
    account: AccountChecks | None = Field(None, description="`validate --aws`: this account's quotas and MLflow "
                                                            "server, checked against the pipeline")


class RunSummary(Result):
    """`run_local`: a finished local bake-off (`bakeoff run`'s final summary)."""

    out_dir: str
    verdict: Literal["pass", "fail", "inconclusive"]
    exit_code: int = Field(description="the CLI's exit code for this verdict: 0 pass, 1 fail, 3 inconclusive")
    evaluation_path: str
    report_path: str | None = Field(description="report.html, when the evaluation step wrote one")
    executed: tuple[str, ...] = Field(description="jobs run this time")
    skipped: tuple[str, ...] = Field(description="jobs whose inputs did not change, not run again")
    mlflow_parent_run_id: str | None = None
    mlflow_tracking_uri: str | None = Field(None, description="the spec's MLflow server; None: the run "
                                                              "directory's own store (`bakeoff ui OUT_DIR`)")
    evaluation: EvaluationField = Field(repr=False, description="evaluation.json: the verdict, every check, each "
                                        "leg's runs and figures (bakeoff_runtime.contract.documents.Evaluation)")

    def raise_for_verdict(self) -> RunSummary:
        """Raise ParityFailed or ParityInconclusive (carrying the evaluation) unless the verdict is a pass;
        returns the summary itself when it is."""
        error = verdict_error(self.evaluation)
        if error is not None:
            raise error
        return self


class AssetInfo(Result):
    """A file the pipeline reads from S3, addressed by its content."""

    key: str
    sha256: str
    size: int


class Synth(Result):
    """`synth`: the SageMaker pipeline definition and the assets it reads (offline, deterministic:
    the same spec gives the same bytes)."""

    pipeline_name: str
    bucket: str
    role_arn: str
    region: str
    definition: dict[str, Any] = Field(repr=False)
    assets: tuple[AssetInfo, ...]
    _compiled: Any = PrivateAttr(default=None)
    _spec: Any = PrivateAttr(default=None)

    def definition_json(self) -> str:
        """The definition as `bakeoff synth` writes it (sorted keys, two-space indent)."""
        return json.dumps(self.definition, indent=2, sort_keys=True) + "\n"


class Deployment(Result):
    """`deploy`: the pipeline as created or updated, and what was uploaded for it."""

    pipeline_arn: str
    pipeline_name: str
    action: Literal["created", "updated"]
    region: str
    bucket: str
    uploaded: tuple[str, ...] = Field(description="S3 keys uploaded this time")
    already_present: tuple[str, ...] = Field(description="S3 keys that were there already")
    warnings: tuple[str, ...] = Field((), description="what the account checks could not check, and an MLflow "
                                                      "client/server version mismatch")


class Execution(Result):
    """A handle on a pipeline execution: pass it (or its `arn`) to wait, status, report and stop.
    It is JSON, so it travels between tasks (Airflow XCom, a Step Functions state)."""

    arn: str
    pipeline_name: str
    region: str
    parameters: dict[str, str] = Field(default_factory=dict, description="parameters it was started with")


class StepStatus(Result):
    """One step of an execution."""

    name: str
    status: str | None
    failure_reason: str | None = None
    job_arn: str | None = None
    cache_hit: bool = False
    attempts: int | None = None


class ExecutionStatus(Result):
    """An execution's state (`status`, `wait`, `stop`); `steps` is empty from `wait` and `stop`."""

    execution_arn: str
    status: str | None = Field(description="Executing, Stopping, Stopped, Failed, CompletedWithFailures or "
                                           "Succeeded")
    failure_reason: str | None = None
    steps: tuple[StepStatus, ...] = ()

    @property
    def finished(self) -> bool:
        """True once the execution can change no more (Succeeded, Failed, CompletedWithFailures or Stopped)."""
        return self.status in ("Succeeded", "Failed", "Stopped", "CompletedWithFailures")

    @property
    def succeeded(self) -> bool:
        """True when the execution succeeded (every step, the parity gate included)."""
        return self.status == "Succeeded"


class Report(Result):
    """`report`: the verdict and evaluation of a run directory or an execution, and its files
    (`bakeoff report --json` prints exactly this)."""

    verdict: Literal["pass", "fail", "inconclusive"]
    exit_code: int = Field(description="the CLI's exit code for this verdict: 0 pass, 1 fail, 3 inconclusive")
    source: str = Field(description="the run directory or execution ARN it was read from")
    evaluation_path: str = Field(description="the evaluation.json read (or written, with `write`)")
    report_path: str | None = Field(description="report.html: the run directory's own, or one rendered for this "
                                                "call")
    evaluation: EvaluationField = Field(repr=False, description="evaluation.json: the verdict, every check, each "
                                        "leg's runs and figures (bakeoff_runtime.contract.documents.Evaluation)")

    def raise_for_verdict(self) -> Report:
        """Raise ParityFailed or ParityInconclusive (carrying the evaluation) unless the verdict is a pass;
        returns the report itself when it is."""
        error = verdict_error(self.evaluation)
        if error is not None:
            raise error
        return self


class Round(Result):
    """One round of a bake-off run until decided on SageMaker."""

    round: int
    seeds: tuple[int, ...]
    verdict: str | None
    execution_arn: str | None = Field(None, description="the execution that ran this round")


class Decision(Result):
    """`start_until_decided`: the rounds SageMaker ran and the verdict they ended with."""

    verdict: Literal["pass", "fail", "inconclusive"]
    exit_code: int = Field(description="the CLI's exit code for this verdict: 0 pass, 1 fail, 3 inconclusive")
    pipeline_name: str
    region: str
    rounds: tuple[Round, ...]
    evaluation: EvaluationField = Field(repr=False, description="evaluation.json of the last round")


class InstanceInfo(Result):
    """An instance type a leg kind runs on, with its bundled price."""

    name: str
    accelerator: str | None
    accelerators: int
    devices: int
    usd_per_hour: float | None = Field(description="bundled on-demand price, None where none is bundled")
    price_basis: str | None = None
    price_as_of: str | None = None


class LegKind(Result):
    """A kind of leg (Trainium, GPU, CPU): its backends and instance types."""

    name: str
    description: str
    backends: tuple[str, ...]
    instances: tuple[InstanceInfo, ...]


class Instances(Result):
    """`instances`: every leg kind and the instance types it knows."""

    kinds: tuple[LegKind, ...]


class PriceRow(Result):
    """One instance type's training price: bundled, and from the Price List cache when refreshed."""

    instance: str
    bundled_usd_per_hour: float | None
    bundled_basis: str | None
    bundled_source: str | None
    price_list_usd_per_hour: float | None
    price_list_spot_usd_per_hour: float | None
    price_list_as_of: str | None


class Prices(Result):
    """`prices`: every known instance type's price in a region."""

    region: str
    cache: str | None = Field(description="the Price List cache file read, None when there is none")
    refreshed: int | None = Field(None, description="prices fetched by this call (`refresh=True`)")
    rows: tuple[PriceRow, ...]


class ImageRow(Result):
    """A backend's training image in a region."""

    backend: str
    default: bool
    uri: str
    framework: str
    python: str
    detail: str
    source: str
    note: str | None
    end_of_patch: str | None = Field(None, description="the last day AWS patches the image (YYYY-MM-DD), or the "
                                                      "day its line stopped being published")
    past_end_of_patch: bool = Field(False, description="the image gets no more security fixes today: image "
                                                       "scanning in a platform account will flag it")


class Images(RootModel[tuple[ImageRow, ...]]):
    """`images`: the training images of each backend in a region (a list, as `images --json` prints)."""

    model_config = ConfigDict(frozen=True)

    def to_json(self, indent: int | None = 2) -> str:
        """The result as `--json` prints it."""
        # ASCII only: a job's escape sequences or bidi controls in a reason arrive as \u001b, \u202e.
        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=True)


class Preflight(RootModel[dict[str, dict[str, Any]]]):
    """`preflight`: each checked leg's preflight report, by leg name (as `preflight --json` prints)."""

    model_config = ConfigDict(frozen=True)

    @property
    def blockers(self) -> bool:
        """True when any leg has a problem that stops it from running well on Trainium."""
        return any(report.get("blockers") for report in self.root.values())

    def to_json(self, indent: int | None = 2) -> str:
        """The result as `--json` prints it."""
        # ASCII only: a job's escape sequences or bidi controls in a reason arrive as \u001b, \u202e.
        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=True)


def exit_code_of(verdict: str) -> int:
    """The CLI's exit code for a verdict (an unknown one is could-not-run, 4)."""
    return VERDICT_EXIT.get(verdict, 4)


def path_or_none(path: Path | None) -> str | None:
    return str(path) if path is not None and path.exists() else None


class Interval(Result):
    """A figure and its interval at the projection's confidence (None where it cannot be given)."""

    mean: float | None
    low: float | None
    high: float | None


class LegProjection(Result):
    """One leg's production run (bakeoff_runtime.verdict.projection.project_leg)."""

    instance_type: str | None
    instances: int = Field(description="instances of a production run")
    instances_measured: int = Field(description="instances the bake-off's jobs ran on")
    unit: str | None = Field(description="what the throughput counts (tokens, samples)")
    seeds: int = Field(description="seeds whose steady-state throughput the projection rests on")
    scaling: dict[str, Any] = Field(description="basis (as measured | interpolated | extrapolated | assumed linear), "
                                    "factor and its bounds, note")
    throughput: Interval = Field(description="units/s of a production run")
    hours_per_run: Interval = Field(description="a warm run (the compile cache kept)")
    first_run_extra_hours: float = Field(description="the first run's cold compile beyond a warm start")
    usd_per_instance_hour: float | None = Field(description="after the purchase option")
    price: dict[str, Any] = Field(description="on-demand price, its source and date, and the purchase option")
    cost_per_run_usd: Interval
    first_run_cost_usd: float | None
    amortised_cost_per_run_usd: float | None = Field(description="the cold compile shared by one period's runs")
    cost_per_period_usd: Interval
    rests_on: list[str] = Field(description="the measured quantities the figures come from")
    reason: str | None = Field(description="why it could not be projected")


class LegComparison(Result):
    """A leg against the baseline: the saving, and when the porting pays back."""

    leg: str
    baseline: str
    parity: str = Field(description="the parity check's status: only `passed` gets a saving")
    pairing: str | None
    saving_per_run_usd: Interval | None
    saving_pct: Interval | None = Field(description="of the baseline's cost per run")
    saving_per_period_usd: Interval | None
    porting_usd: float
    break_even_runs: Interval | None = Field(description="production runs until the saving covers the porting; "
                                             "None where it never does")
    break_even_weeks: Interval | None
    never_pays_back: bool
    reason: str | None = Field(description="why there is no saving")


class Projection(Result):
    """`project`: what a production run costs on each leg, the saving and its interval, and the break-even;
    `.sentence` says it in one line. Labelled, never a winner, when the speeds were emulated."""

    sentence: str
    emulated: bool
    label: str = Field(description="where the speeds come from")
    confidence: float
    period: str
    runs_per_period: float
    porting_usd: float
    legs: dict[str, LegProjection]
    comparisons: tuple[LegComparison, ...]
    assumptions: tuple[str, ...]
    production: dict[str, Any] = Field(description="the production size, and how each leg read it")
    decision: dict[str, Any] = Field(description="the inputs, defaults filled in")
    source: str = Field(description="the run directory or execution ARN it was projected from")
    evaluation_path: str = Field(description="evaluation.json with this projection")
    report_path: str | None

    @classmethod
    def of(cls, projection: Mapping[str, Any], *, source: str, evaluation_path: str,
           report_path: str | None) -> Projection:
        body = {k: v for k, v in projection.items() if k != "schema"}
        return cls.model_validate({**body, "source": source, "evaluation_path": evaluation_path,
                                   "report_path": report_path})
