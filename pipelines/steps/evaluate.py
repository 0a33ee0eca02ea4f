"""The Evaluate step: a Processing job that reads every training job's output (and the Preflight
and Collective steps' findings), decides parity and writes evaluation.json, the property file the
gate reads. Compiled with its config asset; run locally as the compiled request, with this run
directory's own record added to its config (a round's design, the looks before, the rule fixed
before the data), which reaches a SageMaker execution another way.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bakeoff_runtime import contract
from bakeoff_runtime.contract.documents import (
    Evaluation,
    EvaluationConfig,
    MlflowConfig,
    ParityRule,
    evaluation_config_from,
    read_evaluation,
)
from bakeoff_runtime.verdict import porting
from estimators.prices import price_for
from estimators.registry import instance_of
from pipelines.errors import RunError
from pipelines.names import COLLECTIVE_STEP_PREFIX, EVALUATE_STEP, PREFLIGHT_STEP, PROPERTY_FILE
from pipelines.plan.model import Plan, evaluation_config
from pipelines.sagemaker.expressions import as_string, get, join, param

from .request import (
    EVAL_COMMAND,
    EVAL_CONFIG,
    EVAL_INSTANCE,
    EVAL_JOBS_DIR,
    EVAL_OUT,
    EVAL_RECORDS,
    MAX_EVAL_JOB_ARGUMENTS,
    MAX_PROCESSING_INPUTS,
    Compilation,
    StepInputs,
    apply_processing_security,
    s3,
)

if TYPE_CHECKING:
    from pipelines.local.definition import Context
    from pipelines.local.run_state import Engine, LocalRun
    from pipelines.local.store import LocalS3
    from pipelines.local.substitutions import Substitutions

KIND = "evaluate"
STEP_TYPES = {"Processing": ("CreateProcessingJob", "ProcessingJobName")}
IAM_ACTIONS = ("sagemaker:CreateProcessingJob", "sagemaker:DescribeProcessingJob", "sagemaker:StopProcessingJob")
JOB_RESOURCES = ("processing-job",)


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Processing" and step.get("Name") == EVALUATE_STEP


def compile_step(plan: Plan, inputs: StepInputs, steps: list[dict[str, Any]],
                 outputs: dict[str, str]) -> tuple[dict[str, Any], str, bytes]:
    """The step, after every one of `steps`, and its config asset (key, body). `outputs`: each
    training step's S3 output prefix."""
    spec = plan.spec
    job_args: list[Any] = [join(f"--job={job.name}={outputs[job.step_name]}/",
                                get(f"Steps.{job.step_name}.TrainingJobName"), "/output/output.tar.gz")
                           for job in plan.jobs]
    record_inputs, record_args = records(steps)
    if len(job_args) > MAX_EVAL_JOB_ARGUMENTS - len(record_args):
        # Too many for one argument each: the Evaluate step asks SageMaker for the execution's
        # training jobs (ListPipelineExecutionSteps; the role needs that permission).
        job_args = ["--execution-arn", get("Execution.PipelineExecutionArn"),
                    "--job-prefix", s3(inputs.bucket, inputs.prefix, spec.name, "jobs") + "/"]
    config_body = (json.dumps(config(plan), indent=2, sort_keys=True) + "\n").encode()
    config_key = f"{inputs.prefix}/{spec.name}/eval-config/{hashlib.sha256(config_body).hexdigest()}/config.json"
    eval_kind = instance_of(EVAL_INSTANCE)[0]
    ENV = contract.ENV
    # Its S3 and SageMaker clients in the pipeline's region (as the training jobs': pipelines/steps/training.py).
    eval_env = {ENV["name"]: spec.name, ENV["spec_hash"]: inputs.shash, "AWS_DEFAULT_REGION": spec.storage.region}
    if spec.mlflow.enabled and spec.mlflow.tracking_uri:
        eval_env["MLFLOW_TRACKING_URI"] = spec.mlflow.tracking_uri
        eval_env[ENV["mlflow_install"]] = "1"
    step: dict[str, Any] = {
        "Name": EVALUATE_STEP,
        "Type": "Processing",
        "Arguments": {
            "ProcessingResources": {"ClusterConfig": {"InstanceCount": 1, "InstanceType": EVAL_INSTANCE,
                                                      "VolumeSizeInGB": 30}},
            "AppSpecification": {
                "ImageUri": eval_kind.default_image("cpu", spec.storage.region),
                "ContainerEntrypoint": ["/bin/sh", "-c", EVAL_COMMAND, "evaluate"],
                "ContainerArguments": ["--config", EVAL_CONFIG, "--out", EVAL_OUT, "--jobs", EVAL_JOBS_DIR,
                                       "--margin", as_string(param("ParityMargin")),
                                       "--parent-key", get("Execution.PipelineExecutionId"), *job_args],
            },
            "RoleArn": inputs.role,
            "ProcessingInputs": [
                {"InputName": "code", "S3Input": {"S3Uri": inputs.code_uri,
                                                  "LocalPath": "/opt/ml/processing/input/code",
                                                  "S3DataType": "S3Prefix", "S3InputMode": "File",
                                                  "S3DataDistributionType": "FullyReplicated"}},
                {"InputName": "config", "S3Input": {"S3Uri": s3(inputs.bucket, config_key),
                                                    "LocalPath": "/opt/ml/processing/input/config",
                                                    "S3DataType": "S3Prefix", "S3InputMode": "File",
                                                    "S3DataDistributionType": "FullyReplicated"}},
            ],
            "ProcessingOutputConfig": {"Outputs": [{
                "OutputName": "evaluation",
                "S3Output": {"S3Uri": join(s3(inputs.bucket, inputs.prefix, spec.name, "evaluation") + "/",
                                           get("Execution.PipelineExecutionId")),
                             "LocalPath": EVAL_OUT, "S3UploadMode": "EndOfJob"}}]},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
            "Environment": eval_env,
        },
        "PropertyFiles": [{"PropertyFileName": PROPERTY_FILE, "OutputName": "evaluation",
                           "FilePath": "evaluation.json"}],
        "DependsOn": [s["Name"] for s in steps],
    }
    step["Arguments"]["ProcessingInputs"] += record_inputs
    step["Arguments"]["AppSpecification"]["ContainerArguments"] += record_args
    apply_processing_security(step["Arguments"], spec)
    return step, config_key, config_body


def compile(c: Compilation) -> None:
    """The Evaluate step after every step so far, and its config asset."""
    step, key, body = compile_step(c.plan, c.inputs, c.steps, c.outputs)
    c.steps.append(step)
    c.assets.append((key, body))


def records(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """What the Evaluate step reads of the run's own non-training steps (the Preflight step, each
    leg's Collective step): their model.tar.gz under EVAL_RECORDS, each a ProcessingInput by
    property reference (which also orders the step before the Evaluate step), and the `--records`
    arguments. Those past the input limit (MAX_PROCESSING_INPUTS, less the code and config
    inputs) travel as `--record=KIND/LEG=URI` arguments, the same reference resolved by the
    pipeline and fetched by evaluate.py, so no leg's "what porting cost" row is lost to the
    limit. Returns (inputs, arguments)."""
    found = [(PREFLIGHT_STEP, "preflight", "preflight")] if any(s["Name"] == PREFLIGHT_STEP for s in steps) else []
    found += [(s["Name"], f"collective-{s['Name'][len(COLLECTIVE_STEP_PREFIX):]}",
               f"collective/{s['Name'][len(COLLECTIVE_STEP_PREFIX):]}")
              for s in steps if s["Name"].startswith(COLLECTIVE_STEP_PREFIX)]
    if not found:
        return [], []
    room = MAX_PROCESSING_INPUTS - 2
    inputs = [{"InputName": name, "S3Input": {
        "S3Uri": get(f"Steps.{step}.ModelArtifacts.S3ModelArtifacts"), "LocalPath": f"{EVAL_RECORDS}/{where}",
        "S3DataType": "S3Prefix", "S3InputMode": "File", "S3DataDistributionType": "FullyReplicated"}}
        for step, name, where in found[:room]]
    fetched = [join(f"--record={where}=", get(f"Steps.{step}.ModelArtifacts.S3ModelArtifacts"))
               for step, _, where in found[room:]]
    return inputs, ["--records", EVAL_RECORDS, *fetched]


def config(plan: Plan) -> EvaluationConfig:
    spec = plan.spec
    mlflow: MlflowConfig = {}
    if spec.mlflow.enabled and spec.mlflow.tracking_uri:
        mlflow = {"tracking_uri": spec.mlflow.tracking_uri, "experiment": spec.experiment}
    config = evaluation_config(
        spec, prices={leg.name: price_for(leg.instance_type, leg.price_per_hour) for leg in spec.legs},
        images={leg.name: leg.image for leg in plan.legs}, emulated_on={},
        cost_basis="estimate: job wall time x on-demand price (`bakeoff report` uses BillableTimeInSeconds)",
        mlflow=mlflow)
    # The numerics a leg's jobs run with (compiler flags, stochastic rounding), for "what porting cost".
    numerics_env = porting.NUMERICS_ENV
    for name, leg_cfg in config["legs"].items():
        env = plan.jobs_of(name)[0].environment if plan.jobs_of(name) else {}
        leg_cfg["numerics_environment"] = {k: env[k] for k in numerics_env if k in env}
        leg_cfg["processes_per_host"] = plan.leg(name).processes_per_host  # "used 1 of 8 devices" beside the cost
    return config


# --- run locally ------------------------------------------------------------------------------
def run_local(run: LocalRun, node: str) -> None:
    run.evaluation, run.evaluation_path = decide_locally(run.executor, run.steps, run.ctx, run.subs, run.store,
                                                         run.rule_original)


def decide_locally(x: Engine, steps: dict[str, Any], ctx: Context, subs: Substitutions, store: LocalS3,
                   rule_original: dict | None, *, installed_code: bool = False) -> tuple[Evaluation, Path]:
    """`installed_code`: run this bakeoff's evaluate.py, not the one in the run's code bundle
    (deciding a run directory again: its bundle is data, never run)."""
    from estimators.prices import price_for
    from pipelines.advice.price_list import cached
    from pipelines.local import looks
    from pipelines.local.definition import resolve
    from pipelines.local.files import write_json_atomically
    from pipelines.local.verdict_inputs import input_fingerprint

    eval_dir = x.out / "evaluation"
    eval_dir.mkdir(parents=True, exist_ok=True)
    # A verdict of an earlier run must never outlive a failed evaluation of this one.
    for stale in ("evaluation.json", "report.html", "report.md", "gate.json", "inputs.json"):
        (eval_dir / stale).unlink(missing_ok=True)
    fingerprint = input_fingerprint(x.out)
    step = steps[EVALUATE_STEP]
    request = resolve(step["Arguments"], ctx)
    (eval_dir / "request.json").write_text(json.dumps(request, indent=2, sort_keys=True) + "\n")
    steps_file = eval_dir / "execution-steps.json"
    steps_file.write_text(json.dumps({"PipelineExecutionSteps": [
        {"StepName": name, "Metadata": {"TrainingJob": {"Arn": f"arn:aws:sagemaker:local:000000000000:"
                                                               f"training-job/{job}"}}}
        for name, job in sorted(ctx.training_job_names.items())]}, indent=2))
    job = subs.processing(request, eval_dir, steps_file)
    if installed_code:
        job = subs.installed_evaluation(job)
    refreshed = cached(x.spec.storage.region)
    legs = x.plan.spec.legs if x.plan else x.spec.legs  # with a sweep's derived legs
    prices = {leg.name: price_for(leg.instance_type, leg.price_per_hour, refreshed) for leg in legs}
    config_uri = next(uri for name, (uri, _) in job.inputs.items() if name == "config")
    config_path = store.path(config_uri)
    config_file = config_path if config_path.is_file() else next(config_path.rglob("*.json"))
    body = config_file.read_bytes()
    _check_address(config_uri, body, config_file)
    config = evaluation_config_from(json.loads(body), str(config_file))
    config = subs.evaluation_config(config, prices)  # the printed substitution: emulated figures, prices
    # The Preflight step's findings and the collective checks reach the step as its inputs, as
    # on SageMaker (records, above). What is added below is this run directory's own record,
    # which reaches a SageMaker execution another way: a round's design (the round's config
    # asset: sagemaker/more_seeds.with_design), the looks taken before (judged before the
    # execution starts: api/aws._check_looks) and the rule fixed before the data (the
    # ParityMargin parameter, in evaluate.py). Here that rule is the run's (x.rule: the spec's with
    # the run's parameters, recorded in parity-rule.json before any job ran), the one the doomed-leg
    # watch judged by: the step's `--margin` (the same parameter) then finds nothing to change.
    config["parity"] = cast("ParityRule", {**config["parity"], **x.rule.as_dict()})
    if x.sequential:
        config["sequential"] = x.sequential
    attempt = x.attempt
    if attempt is not None:  # which attempt at the question, and stage 1's figures at stage 2
        config["attempt"] = attempt
    at_once = _jobs_at_once(x, installed_code)
    if at_once > 1:  # the speed figures shared this machine's cores: the report says so
        config["jobs_at_once"] = at_once
    config["looks"] = looks.for_evaluation(x.out, x.look)
    if rule_original and "unrecorded" in rule_original:
        config["rule_unrecorded"] = rule_original["unrecorded"]
        config["rule_change_reason"] = x.rule_change
    elif rule_original is not None:
        config["rule_original"] = rule_original
        config["rule_change_reason"] = x.rule_change
    x.verify_outputs()  # what the jobs left is what they left, not what one of them rewrote later
    x.progress.note("evaluation: deciding parity (the Evaluate step)")
    outcome = x.processor(job, eval_dir, store, x.process,
                             config_override=cast("dict[str, Any]", config))  # written as JSON
    out_dir = job.outputs["evaluation"][0]
    produced = out_dir / step["PropertyFiles"][0]["FilePath"]
    if outcome.exit_code != 0 or not produced.exists():
        log = (eval_dir / "stdout.log").read_text(errors="replace").strip().splitlines() or ["no output"]
        raise RunError(f"the evaluation step failed: {log[-1][:300]} (see {eval_dir / 'stdout.log'}); no verdict "
                       "was written")
    for item in out_dir.iterdir():  # beside the run, where people look for them (whole, or not at all)
        if item.is_file():
            tmp = eval_dir / f".{item.name}.tmp"
            shutil.copy2(item, tmp)
            tmp.replace(eval_dir / item.name)
    write_json_atomically(eval_dir / "inputs.json", {"fingerprint": fingerprint})
    for pf in step.get("PropertyFiles", []):
        local = job.outputs[pf["OutputName"]][0]
        ctx.property_files[(EVALUATE_STEP, pf["PropertyFileName"])] = local / pf["FilePath"]
    path = eval_dir / "evaluation.json"
    return read_evaluation(path), path


def _check_address(uri: str, body: bytes, path: Path) -> None:
    """The config asset is content-addressed (`.../eval-config/<sha256>/config.json`, compile_step): a body
    that does not hash to its address was written after it was compiled. A training job runs as the same
    user as `bakeoff run` and can write the run's local store, so what decides the verdict is checked
    against its address, not trusted. (On SageMaker the training jobs' role must not write this prefix:
    the README's "What protects a verdict".)"""
    address = uri.rstrip("/").split("/")[-2] if uri.endswith(".json") else uri.rstrip("/").split("/")[-1]
    if hashlib.sha256(body).hexdigest() != address:
        raise RunError(f"the Evaluate step's config in the run's store ({path}) does not match its address: it was "
                       "changed after it was compiled (a process wrote to the store during the run); no verdict "
                       "was written")


def _jobs_at_once(x: Engine, deciding_again: bool) -> int:
    """Training jobs at once when the jobs ran: this run's `--jobs`, or, deciding a run
    directory again, what its plan.json recorded (1 where it recorded none)."""
    from pipelines.local.files import recorded_local

    if not deciding_again:
        return x.jobs
    try:
        return int(recorded_local(x.out).get("jobs_at_once") or 1)
    except (ValueError, TypeError):
        return 1
