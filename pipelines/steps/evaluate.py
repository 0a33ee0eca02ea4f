"""The Evaluate step: a Processing job that reads every training job's output (and the Preflight
and Collective steps' findings), decides parity and writes evaluation.json, the property file the
gate reads. Compiled with its config asset (how this machine runs it: pipelines/local/kinds/evaluate.py).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from bakeoff.estimators.registry import instance_of
from bakeoff.pipelines.names import COLLECTIVE_STEP_PREFIX, EVALUATE_STEP, PREFLIGHT_STEP, PROPERTY_FILE
from bakeoff.pipelines.plan.evaluation_config import compiled_record, evaluation_config
from bakeoff.pipelines.plan.model import Plan
from bakeoff.pipelines.sagemaker.expressions import as_string, get, join, param
from bakeoff_runtime import contract
from bakeoff_runtime.contract.rule import MARGIN_PARAMETER

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

KIND = "evaluate"
STEP_TYPES = {"Processing": ("CreateProcessingJob", "ProcessingJobName")}
IAM_ACTIONS = ("sagemaker:CreateProcessingJob", "sagemaker:DescribeProcessingJob", "sagemaker:StopProcessingJob")
JOB_RESOURCES = ("processing-job",)


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Processing" and step.get("Name") == EVALUATE_STEP


def compile_step(plan: Plan, inputs: StepInputs, steps: list[dict[str, Any]],
                 outputs: dict[str, str], design: dict[str, Any] | None = None) -> tuple[dict[str, Any], str, bytes]:
    """The step, after every one of `steps`, and its config asset (key, body). `outputs`: each
    training step's S3 output prefix; `design`: a round's sequential design (more_seeds.round_pipeline)."""
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
    config_body = (json.dumps(evaluation_config(plan, compiled_record(plan, design)), indent=2, sort_keys=True)
                   + "\n").encode()
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
                                       "--margin", as_string(param(MARGIN_PARAMETER)),
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
    step, key, body = compile_step(c.plan, c.inputs, c.steps, c.outputs, c.design)
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
