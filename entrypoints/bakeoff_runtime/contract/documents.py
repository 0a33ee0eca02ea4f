"""The documents that cross the host/container seam, as types, and one reader per file.

Four documents: the evaluation config (config.json, what the Evaluate step reads), the job summary
(summary.json, what a job wrote), the job record (what `job_outputs.load_job` makes of a job's
files) and the evaluation (evaluation.json). Each is a TypedDict: at run time a plain dict, so the
JSON written is what it always was, but mypy checks every key its writers set and its readers read.

Keys a writer does not always set are `NotRequired`. A few keys are named at run time and so
cannot be spelt here: a run's parity metric value (`runs[i][<metric>]`, and `curves[<metric>]`)
and a throughput's `<unit>_per_sec`; they are read with `.get(name)`. Parts that vary by kind and
are read only by the module that writes them (a sequential design, the scaling, porting and
`measured` sections, a check's details) are typed as plain JSON objects.

Torch-free and free of `pipelines`: the container reads with these, and the host imports them.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:  # annotations stay strings at run time (the __future__ import): no typing_extensions needed
    from typing_extensions import NotRequired

    from bakeoff_runtime.contract.decision import DecisionConfig, Projection

JSON = dict[str, Any]

SUMMARY_SCHEMA = "bakeoff.summary/1"
EVALUATION_SCHEMA = "bakeoff.evaluation/3"  # /3 added fixed_design (an evaluation/2 lacks it)
PLAN_SCHEMA = "bakeoff.plan/1"
# What decides a verdict; fixed before the data (the evaluation records it).
PARITY_RULE_KEYS = ("metric", "direction", "margin", "margin_type", "alpha", "test", "baseline", "resolution")
# The schema ids each reader accepts. A file from before the schema key existed has none and is read
# as the current one (its keys were the same); any other id is a document this code does not know.
EVALUATION_SCHEMAS = (EVALUATION_SCHEMA, "bakeoff.evaluation/2")
SUMMARY_SCHEMAS = (SUMMARY_SCHEMA,)


class DocumentError(ValueError):
    """A file that is not the document its reader expects (wrong schema, not a JSON object)."""


# --- the evaluation config (one builder: pipelines/plan/evaluation_config.py; evaluate.py's run-time parts) ---
class Price(TypedDict):
    usd_per_hour: float | None
    source: str
    as_of: str | None
    note: str | None


class PerLeg(TypedDict):
    """What the spec gives one leg alone."""
    arguments: list[str]
    hyperparameters: dict[str, Any]
    environment: dict[str, str]


class LegConfig(TypedDict):
    image: str | None
    instance_type: str
    instance_count: int
    backend: str | None
    precision: str
    devices: int
    seeds: list[int]
    emulated_on: str | None
    price: Price | None
    per_leg: PerLeg
    derived_from: NotRequired[JSON]          # a scaling or ablation leg: what it was derived from
    global_batch_size: NotRequired[int | None]
    numerics_environment: NotRequired[dict[str, str]]  # the compiler's: compiler flags, rounding
    local_processes: NotRequired[int]        # the local engine's
    local_processes_why: NotRequired[str]
    processes_per_host: NotRequired[int]     # workers a job starts per instance (a plain script: one)


class ParityRule(TypedDict):
    """The spec's `parity`, with the baseline resolved."""
    metric: str
    direction: str
    test: str
    margin: float
    margin_type: str
    alpha: float
    power: float
    baseline: str
    target: float | None
    resolution: float | None
    design: NotRequired[str]   # two_stage (default) | fixed: verdict/two_stage.py


class ScalingSweep(TypedDict):
    mode: str
    legs: list[str]
    global_batch_size: int | None


class Ablation(TypedDict):
    leg: str
    ablation_leg: str
    precision: str
    ablation_precision: str


class MlflowConfig(TypedDict, total=False):
    tracking_uri: str
    experiment: str
    artifact_location: str | None
    parent_key: str  # evaluate.py's --parent-key


class Looks(TypedDict):
    """looks.for_evaluation: this look's number and the decisions taken before it."""
    this_look: int
    earlier: list[JSON]


class DecisionPart(TypedDict, total=False):
    """The spec's decision, where it declares one (pipelines/plan/evaluation_config._decision)."""
    decision: DecisionConfig


class DerivedConfig(TypedDict, total=False):
    """What the spec derives legs for: only what it declares (pipelines/plan/evaluation_config._derived)."""
    scaling: dict[str, ScalingSweep]
    ablations: list[Ablation]


class StageFigures(TypedDict):
    """What a stage-1 parity check leaves for stage 2 (verdict/two_stage.stage_record)."""
    test: str           # paired | welch
    diff: float
    se: float
    df: float
    n_pairs: int
    seeds: list[int]
    skewness: NotRequired[float]  # the per-seed differences' sample skewness (verdict/skew.py)


class Attempt(TypedDict):
    """This decision's place among the attempts at its question (pipelines/local/questions.py): the
    local engine adds it to the evaluation config."""
    question: str                         # the question's key (legs, metric, rule, design, training setup)
    number: int                           # 1, 2, ...: attempts at this question, this one included
    stage: int                            # 1, or 2: the continuation of an inconclusive stage 1
    design: str                           # two_stage | fixed | sequential
    fresh_start: str | None               # --fresh-start's reason: a question started over on purpose
    earlier: list[JSON]                   # the attempts before this one: where, seeds, verdict, stage
    stage1: NotRequired[dict[str, JSON]]  # at stage 2: {"legs": {leg: StageFigures}, "breakage": {leg: p}}


class EvaluationConfig(DerivedConfig):
    bakeoff: str
    spec_hash: str
    legs: dict[str, LegConfig]
    entrypoint_mode: str
    parity: ParityRule
    cost_basis: str
    mlflow: MlflowConfig
    # From the engine's RunRecord (the local engine's; on SageMaker a round's design), or evaluate.py's
    # --margin (contract/rule.with_margin_parameter):
    emulated: NotRequired[bool]
    sequential: NotRequired[JSON]
    jobs_at_once: NotRequired[int]
    looks: NotRequired[Looks]
    attempt: NotRequired[Attempt]
    rule_original: NotRequired[JSON]
    rule_unrecorded: NotRequired[str]
    rule_change_reason: NotRequired[str | None]
    # evaluate.py, from the Preflight and collective steps' records (porting.read_records):
    preflight: NotRequired[JSON]
    collective: NotRequired[dict[str, JSON]]
    decision: NotRequired[DecisionConfig]  # the spec's decision: the projection's inputs (contract/decision.py)


# --- the job summary (telemetry.Telemetry.write_summary, script_summary.compose, a launcher's failure) ---
class Throughput(TypedDict):
    """Also `<unit>_per_sec` (e.g. tokens_per_sec): named by the unit, read with .get."""
    unit: str
    steady_state_from_step: int
    units_processed: float | None
    timing: str
    units_per_step: NotRequired[float | None]  # script mode
    step_time_s: NotRequired[float]
    measured_steps: NotRequired[int]
    window_s: NotRequired[float]
    overall_per_sec: NotRequired[float | None]
    note: NotRequired[str]


class XlaCounters(TypedDict):
    """PyTorch/XLA's own counters at the end of a job (torch_xla.debug.metrics)."""
    executions: int          # ExecuteComputation: graphs run on the XLA device
    graphs_compiled: int     # UncachedCompile
    graphs_cached: int       # CachedCompile
    tensors_created: int     # CreateXlaTensor


class CudaUsage(TypedDict):
    devices_used: int        # CUDA devices this process allocated memory on
    visible_devices: int
    peak_bytes: int


class DeviceEvidence(TypedDict):
    """What ran where, whatever the script did (training/evidence.DeviceWatch): the backend check's
    positive evidence. `xla` and `cuda` are there when the job imported torch_xla / initialised CUDA."""
    optimizer_steps: int
    training_forwards: int   # training forward passes of the model (its outermost module)
    processes: int           # WORLD_SIZE of the job
    torch_accelerator: NotRequired[dict[str, str]]  # what torch.accelerator answered the script
    xla: NotRequired[XlaCounters]
    cuda: NotRequired[CudaUsage]


class JobSummary(TypedDict):
    """summary.json. A job that failed before the Runtime started leaves only the first few keys
    (the launcher's record_failure, the local engine's record_stopped). A script may add keys of its
    own through `Runtime.extra`; those of bakeoff's own trainers (train.py, hf_causal_lm.py) are here."""
    schema: str
    status: str
    reason: NotRequired[str | None]
    failure_kind: NotRequired[str]
    leg: NotRequired[str | None]
    seed: NotRequired[int | str | None]
    backend: NotRequired[str | None]
    job_key: NotRequired[str | None]
    bakeoff: NotRequired[str]
    precision: NotRequired[str | None]
    instance_type: NotRequired[str | None]
    instance_count: NotRequired[int]
    emulated_on: NotRequired[str | None]
    spec_hash: NotRequired[str | None]
    compile_cache: NotRequired[str | None]
    world_size: NotRequired[int]
    precompile: NotRequired[bool]            # neuron_parallel_compile's run: not a result
    mode: NotRequired[str]                   # "script" in script mode
    script_arguments: NotRequired[list[str]]
    metric_source: NotRequired[str]
    step_hook: NotRequired[JSON | None]
    steps_completed: NotRequired[int | None]
    max_steps: NotRequired[int | None]
    first_train_loss: NotRequired[float | None]
    final_train_loss: NotRequired[float | None]
    metrics: NotRequired[dict[str, Any]]     # a value is a number, or the text of a non-finite one
    validation_history: NotRequired[list[JSON]]
    throughput: NotRequired[Throughput]
    validation_time_s: NotRequired[float]
    time_to_first_step_s: NotRequired[float | None]
    first_step_s: NotRequired[float | None]
    training_time_s: NotRequired[float | None]
    compile: NotRequired[JSON]
    peak_device_memory_bytes: NotRequired[int | None]
    peak_host_memory_bytes: NotRequired[int]
    model: NotRequired[JSON | None]
    evidence: NotRequired[DeviceEvidence | None]
    step_basis: NotRequired[str | None]     # script mode: what a step was counted by
    environment: NotRequired[dict[str, str]]
    preflight: NotRequired[JSON]
    mlflow: NotRequired[JSON]
    warnings: NotRequired[list[str]]
    notes: NotRequired[list[str]]
    wall_time_s: NotRequired[float]
    # bakeoff's own trainers, through Runtime.extra
    fairness: NotRequired[JSON]
    parameters: NotRequired[int]
    resumed_from_step: NotRequired[int]
    training_arguments: NotRequired[JSON]
    hf_config: NotRequired[JSON]


# --- the job record (job_outputs.load_job) ---------------------------------------------------------
class MetricDigest(TypedDict):
    train_curve: list[list[float]]   # [step, train_loss], down-sampled
    evals: list[JSON]                # every validation record of metrics.jsonl
    train_records: int
    first_nonfinite_train_step: int | None


class JobMeta(TypedDict, total=False):
    """job.json: what the platform knows of a job (the local engine writes it; `bakeoff report ARN`
    adds billed time). Absent on SageMaker, hence every key optional."""
    job_key: str
    name: str
    leg: str
    seed: int
    step_name: str
    training_job_name: str
    status: str
    reason: str | None
    exit_code: int | None
    lost: bool
    timed_out: bool
    failure_kind: str | None
    billable_s: float
    billable_basis: str
    mlflow_wait_s: float
    started: float
    log: str


class JobRecord(TypedDict):
    dir: str
    summary: JobSummary | None                  # None: unreadable or changed, and why
    summary_problem: str | None
    summary_problem_kind: str | None
    meta: JobMeta
    digest: MetricDigest
    failure: str | None


# --- the evaluation (evaluation.evaluate, evaluation.recost, evaluate.py's mlflow) ----------------
class Curves(TypedDict):
    """Also the parity metric's curve, under its name."""
    train_loss: list[list[float]]


class RunRow(TypedDict):
    """One job of a leg. Also the parity metric's value, under its name (None unless finite)."""
    seed: int
    status: str
    failure_kind: str | None
    reason: str | None
    job: str | None
    job_key: str | None
    throughput: float | None
    throughput_overall: float | None
    throughput_timing: str | None
    throughput_window_s: float | None
    steps_to_target: int | None
    time_to_target_s: float | None
    training_time_s: float | None
    validation_time_s: float | None
    curves: Curves
    environment: dict[str, str] | None
    time_to_first_step_s: float | None
    compile_time_s: float | None
    compiled_graphs: int | None
    peak_device_memory_bytes: int | None
    peak_host_memory_bytes: int | None
    wall_time_s: float | None
    units_processed: float | None
    billable_s: float | None
    cost_usd: float | None
    cost_per_million_units_usd: float | None
    cost_to_target_usd: float | None
    steps_completed: int | None
    mlflow_run_id: str | None
    cache_state: str | None
    cache_hits: int | None
    cache_misses: int | None
    mlflow_backfilled: NotRequired[bool]   # tracking.parent_run: the job's run was logged after it, from its files


class Spread(TypedDict):
    mean: float | None
    std: float | None
    cv: float | None
    min: float | None
    max: float | None
    n: int
    relative_range: float | None


class LegThroughput(Spread):
    unstable: bool
    crosscheck_ratio: float | None
    crosscheck_disagrees: bool
    timing: str | None


class MetricFigures(TypedDict):
    """stats.describe of the completed seeds' parity metric."""
    name: str
    n: int
    mean: float | None
    std: float | None
    cv: float | None
    min: float | None
    max: float | None
    ci95: list[float] | None
    values: list[float]


class CostMeans(TypedDict):
    """A leg's cost figures from its runs (evaluation._cost_means; recost redoes them)."""
    billable_s_mean: float | None
    cost_per_run: Spread
    cost_per_run_usd_mean: float | None
    cost_per_million_units_usd_mean: float | None
    cost_to_target_usd_mean: float | None
    cost_to_target_usd_mean_of_reached: float | None


class LegFigures(CostMeans):
    image: str | None
    instance_type: str | None
    instance_count: int
    backend: str | None
    precision: str | None
    devices: int | None
    devices_used: NotRequired[int | None]     # of `devices`, those its jobs used (a plain script: one per instance)
    voided_by: NotRequired[list[str]]         # failed checks that make its parity outcome void (backend:trn1...)
    emulated_on: str | None
    emulated: bool
    seeds: list[int]
    runs: list[RunRow]
    completed: int
    failed: int
    diverged: int
    lost: int
    metric: MetricFigures
    throughput_unit: str
    throughput_mean: float | None
    throughput: LegThroughput
    time_to_first_step_s_mean: float | None
    compile_time_s_mean: float | None
    training_time_s_mean: float | None
    reached_target: int
    reached_target_fraction: float | None
    steps_to_target_mean: float | None
    steps_to_target_mean_of_reached: float | None
    peak_device_memory_bytes_max: int | None
    peak_host_memory_bytes_max: int | None
    wall_time_s_mean: float | None
    price: Price | dict[str, Any]    # {} when the config gives no price
    compile_cache: JSON | None
    speed_representative: NotRequired[bool]  # from the leg's blockers check
    parity: NotRequired[str]                 # every leg but the baseline: its parity check's status


class Recommendation(TypedDict):
    seeds: int | None
    why: str
    next: NotRequired[str]  # the design's next step: "stage 2", "next round" or "fresh start"
    fresh_seeds: NotRequired[list[int]]  # stage 2's seeds: after every seed this question has run


class Check(TypedDict):
    """One check: stability:<leg>, parity:<leg>~<baseline>, and the validity kinds (blockers:,
    ...). Beyond the first four keys, what its kind found: a parity check carries stats.compare's
    figures, a stability check its breakage; the validity kinds' own keys are typed as JSON."""
    name: str
    status: str       # passed | failed | inconclusive
    passed: bool
    why: str
    recommendation: NotRequired[JSON]
    counts_toward_verdict: NotRequired[bool]   # false for an ablation leg's checks
    ablation: NotRequired[bool]
    holm: NotRequired[JSON]                    # multiplicity.apply: a fail claim not shown across the legs
    # a stability check
    breakage: NotRequired[JSON]
    lost_seeds: NotRequired[list[int]]
    script_bug: NotRequired[str]
    could_not_run: NotRequired[bool]           # its runs failed for reasons that are not the leg's
    # a parity check (stats.compare, then evaluation._parity_check)
    test: NotRequired[str | None]              # paired | welch | None (nothing to compare)
    test_kind: NotRequired[str]                # equivalence | non_inferiority
    test_label: NotRequired[str]
    outcome: NotRequired[str]                  # pass | fail | inconclusive
    margin: NotRequired[float]                 # in metric units (a relative margin already scaled)
    alpha: NotRequired[float]
    direction: NotRequired[str]
    diff: NotRequired[float]
    sd: NotRequired[float | None]
    sd_observed: NotRequired[float]
    sd_floored: NotRequired[bool]
    se: NotRequired[float]
    df: NotRequired[float]
    n_pairs: NotRequired[int]
    n_leg: NotRequired[int]
    n_baseline: NotRequired[int]
    ci: NotRequired[list[float]]
    ci_level: NotRequired[float]
    continuity_correction: NotRequired[float]
    skewness: NotRequired[float]               # the per-seed differences' sample skewness (verdict/skew.py)
    skew_visible: NotRequired[bool]            # beyond what 90% of normal samples show: Hall's bound read too
    ci_t: NotRequired[list[float]]             # the plain t interval
    ci_skew_corrected: NotRequired[list[float]]  # Hall's interval, where the skew is visible
    skew_widened: NotRequired[bool]            # the decision's interval is wider than the t interval
    p_value: NotRequired[float | None]
    p_lower: NotRequired[float | None]
    p_upper: NotRequired[float | None]
    identical: NotRequired[bool]
    better: NotRequired[bool]
    worse: NotRequired[bool]
    better_by: NotRequired[float]
    step: NotRequired[float | None]
    step_basis: NotRequired[str | None]
    seeds_paired: NotRequired[list[int]]
    seeds_unpaired: NotRequired[dict[str, list[int]]]
    per_seed_diffs: NotRequired[list[list[float]]]   # [seed, difference]
    unseen_rate: NotRequired[float | None]
    outlier: NotRequired[JSON]
    no_step: NotRequired[bool]
    why_short: NotRequired[str]
    # the design it was decided in (verdict/two_stage.py, group_sequential.py)
    design: NotRequired[str]                   # two_stage | fixed | sequential
    stage: NotRequired[int]                    # 1, or 2: decided on both stages combined
    stage1: NotRequired[JSON]                  # at stage 2: stage 1's difference, SE and df
    stage2_alone: NotRequired[JSON]            # at stage 2: this stage's own figures and interval
    ci_basis: NotRequired[str]                 # "two-stage": the combination test inverted
    fail_p: NotRequired[float | None]          # the stage-wise p of a fail claim (Holm reads it)
    holm_level: NotRequired[float | None]      # the level Holm's correction reads that p against
    # a validity check (validity.py): backend:, same-model, seeds:, blockers:
    ran_on: NotRequired[list[str]]
    tolerance: NotRequired[float]
    models: NotRequired[JSON]
    first_losses: NotRequired[JSON]
    fallback_ops: NotRequired[list[str]]
    recompiles_after_warmup: NotRequired[int | None]
    warnings: NotRequired[list[str]]
    speed_representative: NotRequired[bool]


class RuleRecord(TypedDict):
    current: JSON
    original: JSON | None
    changed: bool
    reason: str | None


class ParityRecord(ParityRule):
    target_used: float | None
    target_basis: str


class Speed(TypedDict):
    emulated: bool
    label: str
    unstable_legs: list[str]
    crosscheck_disagrees: list[str]
    jobs_at_once: NotRequired[int]   # a local run's jobs shared the machine's cores


class ScalingSections(TypedDict, total=False):
    """scaling.sections: only what the spec declares (a sweep, ablations)."""
    scaling: dict[str, list[JSON]]      # declared leg -> its sweep's points
    scaling_sweeps: dict[str, JSON]
    ablations: list[JSON]


class FixedDesign(TypedDict):
    """verdict/fixed_design.py: the fixed design sized for `power` at the largest paired spread found."""
    power: float
    sigma: float
    max_seeds: int            # the most seeds per leg it was sized up to
    seeds: int | None         # per leg; None when max_seeds do not reach the power
    jobs: int | None
    cost_usd: float | None    # None where a leg's jobs had no price
    sigma_df: NotRequired[int]           # the spread's degrees of freedom
    planned_sigma: NotRequired[float]    # its 80% upper confidence limit, what the seeds are planned on


class Evaluation(TypedDict):
    """evaluation.json, as the Evaluate step writes it and `report`, `run_local` and `start_until_decided`
    return it (their `evaluation`): the verdict and its cause, the parity rule it was decided under, every
    check, each leg's runs and figures, cost, and where the spec declares one, the projection."""

    schema: str
    verdict: str                      # pass | fail | inconclusive
    summary: str
    first_line: NotRequired[str]      # the verdict and its cause in one bounded line (the Fail steps read it)
    failed_checks: str                # names, or "none"
    undecided_checks: str
    recommendation: Recommendation | None
    to_decide: str                    # always a string: the pipeline's Fail step reads it with JsonGet
    bakeoff: str | None
    spec_hash: str | None
    parity: ParityRecord
    rule: RuleRecord
    sequential: JSON | None
    looks: Looks | None
    attempt: NotRequired[JSON]       # the question, this attempt and stage, the attempts before it
    speed: Speed
    cost_basis: str
    legs: dict[str, LegFigures]
    checks: list[Check]
    measured: JSON
    porting: JSON
    fixed_design: NotRequired[FixedDesign | None]  # /3; the report sizes it itself for an evaluation/2
    mlflow: NotRequired[JSON]                     # evaluate.py, once the parent run is logged
    projection: NotRequired[Projection]           # the decision, where the spec declares one (verdict/projection.py)
    # ScalingSections' keys, spelt here (not inherited) so that the API's reference documents them in place
    scaling: NotRequired[dict[str, list[JSON]]]
    scaling_sweeps: NotRequired[dict[str, JSON]]
    ablations: NotRequired[list[JSON]]


def run_metric(row: RunRow, metric: str) -> Any:
    """A run's parity metric value, the one key of a run named at run time."""
    return cast("dict[str, Any]", row)[metric]


# --- readers ------------------------------------------------------------------------------------------
def _object(body: object, what: str, where: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise DocumentError(f"{where}: not {what} (a JSON object was expected, found {type(body).__name__})")
    return body


def _schema(body: dict[str, Any], known: tuple[str, ...], what: str, where: str) -> None:
    found = body.get("schema")
    if found is not None and found not in known:
        raise DocumentError(f"{where}: {what} of schema {found!r}, which this bakeoff does not read "
                            f"(it reads {', '.join(map(repr, known))})")


def evaluation_from(body: object, where: str = "evaluation.json") -> Evaluation:
    """An evaluation already parsed from JSON (S3, a test): checked as `read_evaluation` checks a file."""
    checked = _object(body, "an evaluation", where)
    _schema(checked, EVALUATION_SCHEMAS, "an evaluation", where)
    return cast(Evaluation, checked)  # the schema id vouches for the keys


# What the report and the terminal summary take for granted of a whole evaluation: a file someone edited
# by hand, or one cut short, is not one they can show (`--from`, which reads a few fields, checks its own).
_EVALUATION_SHAPE: dict[str, tuple[type, ...]] = {"verdict": (str,), "legs": (dict,), "parity": (dict,)}
_EVALUATION_OPTIONAL: dict[str, tuple[type, ...]] = {"summary": (str,), "checks": (list,), "rule": (dict,),
                                                      "speed": (dict,)}
VERDICTS = ("pass", "fail", "inconclusive")


def whole_evaluation_problem(ev: Mapping[str, Any]) -> str | None:
    """What keeps `ev` from being a whole evaluation bakeoff wrote, in words; None when nothing does."""
    for key, types in _EVALUATION_SHAPE.items():
        if not isinstance(ev.get(key), types):
            return f"its {key!r} is {'missing' if key not in ev else type(ev[key]).__name__}"
    for key, types in _EVALUATION_OPTIONAL.items():
        if key in ev and not isinstance(ev[key], types):
            return f"its {key!r} is {type(ev[key]).__name__}"
    if ev["verdict"] not in VERDICTS:
        return f"its verdict is {str(ev['verdict'])[:40]!r}"
    bad = next((name for name, leg in ev["legs"].items() if not isinstance(leg, dict)), None)
    return f"leg {str(bad)[:40]!r} is not an object" if bad is not None else None


def read_evaluation(path: Path | str) -> Evaluation:
    """evaluation.json. Raises OSError for a file that cannot be read, ValueError for one that is not
    JSON, and DocumentError (a ValueError) for one that is not an evaluation this code reads (nested past
    the parser's depth included)."""
    try:
        body = json.loads(Path(path).read_text())
    except RecursionError:
        raise DocumentError(f"{path}: nests too deeply to be an evaluation") from None
    return evaluation_from(body, str(path))


def summary_from(body: object, where: str = "summary.json") -> JobSummary:
    checked = _object(body, "a job summary", where)
    _schema(checked, SUMMARY_SCHEMAS, "a job summary", where)
    return cast(JobSummary, checked)


def read_summary(path: Path | str) -> JobSummary:
    """summary.json, checked as `read_evaluation` checks evaluation.json."""
    return summary_from(json.loads(Path(path).read_text()), str(path))


# The fields of summary.json that bakeoff reads, and the JSON types they must have. A job writes this
# file (a user's script runs in that job), so a wrong type is that run's problem: never a crash of the
# engine that peeks at it or of the evaluation that judges it.
_NUMBER = (int, float)
SUMMARY_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,), "reason": (str,), "failure_kind": (str,), "leg": (str,), "seed": (int, str),
    "metrics": (dict,), "throughput": (dict,), "compile": (dict,), "model": (dict,), "mlflow": (dict,),
    "evidence": (dict,), "environment": (dict,),
    "preflight": (dict,), "warnings": (list,), "notes": (list,),
    "validation_history": (list,), "time_to_first_step_s": _NUMBER, "wall_time_s": _NUMBER,
    "steps_completed": (int,), "peak_host_memory_bytes": _NUMBER, "peak_device_memory_bytes": _NUMBER,
}
MAX_SUMMARY_BYTES = 8 * 1024 * 1024
_JSON_NAMES = {str: "text", int: "a whole number", float: "a number", dict: "an object", list: "a list"}


def load_summary(raw: bytes | str) -> tuple[JobSummary | None, str | None]:
    """(summary, None) for the bytes of a summary.json this code reads, whose read fields have their types;
    (None, what is wrong) otherwise, in words for the run's reason. Bounded: a file over MAX_SUMMARY_BYTES
    or nested past the parser's depth is refused, not read."""
    if len(raw) > MAX_SUMMARY_BYTES:
        return None, f"summary.json is {len(raw):,} bytes, more than {MAX_SUMMARY_BYTES:,}: not read"
    try:
        body = json.loads(raw)
    except RecursionError:
        return None, "summary.json nests too deeply to read"
    except json.JSONDecodeError as exc:
        return None, f"summary.json is not valid JSON ({exc.msg} at line {exc.lineno})"
    except ValueError as exc:  # bytes that are not UTF-8 (a UnicodeDecodeError): it had no msg or lineno to show
        return None, f"summary.json is not valid JSON ({exc})"
    if not isinstance(body, dict):
        return None, "summary.json is not a JSON object"
    try:
        summary = summary_from(body)
    except DocumentError as exc:  # a schema this code does not know: its keys may mean other things
        return None, str(exc)
    for key, types in SUMMARY_TYPES.items():
        value = body.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            return None, (f"summary.json's {key!r} is a {type(value).__name__}, not "
                          f"{' or '.join(_JSON_NAMES[t] for t in types)}")
    return summary, None


def summary_or_none(path: Path | str) -> JobSummary | None:
    """summary.json where a job may not have written one yet (or at all): None when it is missing,
    unreadable, too large, not JSON, not a summary this code reads or has a read field of the wrong type
    (`load_summary`). For the code that only peeks at a job (its status, its reason, its metrics' names);
    the Evaluate step reads with `load_summary` and says what was wrong."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SUMMARY_BYTES + 1)
    except OSError:
        return None
    return load_summary(raw)[0]


def evaluation_config_from(body: object, where: str = "config.json") -> EvaluationConfig:
    """The evaluation config has no schema id (its asset is content-addressed, so adding one would move
    every stored config): what it must be is a JSON object with its rule and its legs."""
    checked = _object(body, "an evaluation config", where)
    missing = [k for k in ("parity", "legs") if not isinstance(checked.get(k), dict)]
    if missing:
        raise DocumentError(f"{where}: not an evaluation config (no {' or '.join(missing)} object)")
    return cast(EvaluationConfig, checked)


def read_evaluation_config(source: Path | str) -> EvaluationConfig:
    """config.json, or an inline JSON object (evaluate.py's --config takes either)."""
    text = str(source)
    if text.lstrip().startswith("{"):
        return evaluation_config_from(json.loads(text), "--config")
    return evaluation_config_from(json.loads(Path(text).read_text()), text)
