"""The Training steps, one per leg x seed: the bake-off's measurements.

Compiled here from the plan's jobs; run locally as one batch (pipelines/local/kinds/training.py).
"""
from __future__ import annotations

import shlex
from typing import Any

from bakeoff.estimators.compile_cache import cache_key, cache_uri
from bakeoff.pipelines.names import parse_step_name
from bakeoff.pipelines.plan.model import Plan, PlannedJob, encode_hyperparameters
from bakeoff.pipelines.sagemaker.expressions import as_string, param
from bakeoff_runtime import contract
from bakeoff_runtime.contract.backend_table import row

from .request import (
    CACHE_EXPIRY,
    CAPACITY_RETRY,
    RESOURCE_LIMIT_RETRY,
    SCRIPT_TRAIN_COMMAND,
    TRAIN_COMMAND,
    Compilation,
    StepInputs,
    apply_security,
    data_parameter_name,
    s3,
)

KIND = "training"
# What the kind is in a definition, for the validator (botocore's operation and the request's name
# field, pipelines/sagemaker/validate.py) and the CDK role (pipelines/sagemaker/cdk/grants.py).
STEP_TYPES = {"Training": ("CreateTrainingJob", "TrainingJobName")}
IAM_ACTIONS = ("sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob")
JOB_RESOURCES = ("training-job",)


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Training" and parse_step_name(str(step.get("Name"))) is not None


def compile_step(plan: Plan, job: PlannedJob, inputs: StepInputs) -> tuple[dict[str, Any], str]:
    """A leg x seed's Training step (`Train-<leg>-s<seed>`), and the S3 prefix of its output."""
    bucket, prefix, code_uri, data = inputs.bucket, inputs.prefix, inputs.code_uri, inputs.data
    spec = plan.spec
    leg = spec.leg(job.leg)
    planned = plan.leg(job.leg)
    ENV = contract.ENV
    env = dict(job.environment)
    hps = encode_hyperparameters(job.hyperparameters)
    script_mode = spec.entrypoint.mode == "script"
    if script_mode:
        # The script counts its own steps; MaxSteps is the Runtime's.
        if spec.entrypoint.script_mode.install_requirements:
            env[ENV["install_requirements"]] = "1"
    else:
        hps["max_steps"] = as_string(param("MaxSteps"))
    key = cache_key(backend=planned.backend, image=planned.image, precision=leg.precision, environment=env,
                    hyperparameters=job.hyperparameters, world_size=planned.batching.world_size)
    cache = cache_uri(bucket, prefix, planned.backend, key)
    from bakeoff.pipelines.plan.packages import needed

    wanted = needed(spec, plan.bundle)
    if wanted:
        # Each job installs bakeoff's pin where its image lacks the package (the Neuron image has
        # transformers, AWS's PyTorch GPU image does not): pipelines/plan/packages.py.
        env[ENV["install_packages"]] = ",".join(wanted)
    if spec.security.network_isolation:
        # An isolated container has no network (CreateTrainingJob EnableNetworkIsolation), so an s3:// cache
        # cannot be read or written; the Neuron cache stays at its on-instance default and the job compiles
        # cold (`validate` says so). The tag below still names where the cache would be.
        pass
    else:
        env[ENV["compile_cache"]] = cache
        if row(leg.backend_name).torch_neuronx:  # Neuron reads and writes its cache there itself
            env["NEURON_COMPILE_CACHE_URL"] = cache
    if spec.mlflow.enabled and spec.mlflow.tracking_uri and not spec.security.network_isolation:
        # An isolated job cannot reach the server: the Evaluate step back-fills its run.
        env["MLFLOW_TRACKING_URI"] = spec.mlflow.tracking_uri
        env[ENV["mlflow_experiment"]] = spec.experiment
        env[ENV["mlflow_install"]] = "1"  # AWS's PyTorch 2.9 images ship without mlflow
    # Every AWS client the container makes (the Neuron cache's S3, MLflow's plugin, the graph cache) is in the
    # pipeline's region: AWS documents no region variable in training containers (aws/sagemaker-training-toolkit
    # #12, #207), and botocore reads AWS_DEFAULT_REGION, not AWS_REGION, so a region-less client raises
    # NoRegionError or goes to S3's global endpoint, which a private subnet's regional gateway endpoint does
    # not serve. The script's own setting wins.
    env.setdefault("AWS_DEFAULT_REGION", spec.storage.region)
    # A script that raises still exits 0 (its failure is in summary.json), so the pipeline
    # reaches Evaluate and a crashed leg gets a verdict; the platform's own failures do not.
    env[ENV["continue_on_failure"]] = "1"
    step_name = job.step_name
    output = s3(bucket, prefix, spec.name, "jobs", job.name)
    channels = [{
        "ChannelName": "code",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": code_uri,
                                        "S3DataDistributionType": "FullyReplicated"}},
        "InputMode": "File",
    }]
    for name in data:
        channels.append({
            "ChannelName": name,
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": param(data_parameter_name(name)),
                                            "S3DataDistributionType": "FullyReplicated"}},
            "InputMode": "File",
        })
    args: dict[str, Any] = {
        "AlgorithmSpecification": {
            "TrainingImage": planned.image,
            "TrainingInputMode": "File",
            "ContainerEntrypoint": (["/bin/sh", "-c", SCRIPT_TRAIN_COMMAND, "launch.py"] if script_mode else
                                    ["/bin/sh", "-c", TRAIN_COMMAND.format(script=shlex.quote(job.script))]),
            **({"ContainerArguments": [job.script, *spec.arguments, *leg.arguments]} if script_mode else {}),
            "MetricDefinitions": inputs.defs,
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "HyperParameters": hps,
        "RoleArn": inputs.role,
        "InputDataConfig": channels,
        "OutputDataConfig": {"S3OutputPath": output},
        "ResourceConfig": {"InstanceType": leg.instance_type, "InstanceCount": leg.instance_count,
                           "VolumeSizeInGB": leg.volume_size_gb},
        "StoppingCondition": {"MaxRuntimeInSeconds": leg.max_runtime_s},
        "Environment": dict(sorted(env.items())),
        "Tags": [
            {"Key": "bakeoff:name", "Value": spec.name},
            {"Key": "bakeoff:leg", "Value": leg.name},
            {"Key": "bakeoff:seed", "Value": str(job.seed)},
            {"Key": "bakeoff:spec-hash", "Value": inputs.shash},
            {"Key": "bakeoff:backend", "Value": leg.backend},
            {"Key": "bakeoff:compile-cache", "Value": cache},
        ],
    }
    apply_security(args, spec, [leg.instance_type])
    spot = leg.managed_spot is True or (leg.managed_spot == "after_first_seed" and job.seed != spec.seed_list[0])
    if spot or spec.training.checkpoint_interval:
        # Static per job content: a restarted or spot-interrupted job resumes; the
        # runtime refuses a checkpoint written by other inputs or by a finished run.
        args["CheckpointConfig"] = {"S3Uri": s3(bucket, prefix, spec.name, "checkpoints", job.name, key),
                                    "LocalPath": "/opt/ml/checkpoints"}
    if spot:
        args["EnableManagedSpotTraining"] = True
        args["StoppingCondition"]["MaxWaitTimeInSeconds"] = leg.max_wait_s or 2 * leg.max_runtime_s
    step = {
        "Name": step_name,
        "Type": "Training",
        "Arguments": args,
        "CacheConfig": {"Enabled": True, "ExpireAfter": CACHE_EXPIRY},
        "RetryPolicies": [CAPACITY_RETRY, RESOURCE_LIMIT_RETRY],
    }
    return step, output


def compile(c: Compilation) -> None:
    """One step per planned job; a leg's `after_first_seed` spot seeds wait for its on-demand first seed
    (a leg with a Precompile step waits for that instead: precompile.compile)."""
    for job in c.plan.jobs:
        step, c.outputs[job.step_name] = compile_step(c.plan, job, c.inputs)
        c.steps.append(step)
    for leg in c.plan.spec.legs:
        if not leg.precompile and leg.managed_spot == "after_first_seed":
            spot_seeds_after_the_first(c.plan, leg.name, c.steps)


def spot_seeds_after_the_first(plan: Plan, leg: str, steps: list[dict[str, Any]]) -> None:
    """`after_first_seed`: the spot seeds start once the on-demand first seed has filled the leg's
    compile cache. Started together they would all compile cold, and a spot seed interrupted
    mid-compile leaves a cache entry Neuron marks failed for every later job of the leg."""
    jobs = plan.jobs_of(leg)
    on_demand = plan.spec.seed_list[0]  # the seed compile_step keeps off spot
    first = next(j.step_name for j in jobs if j.seed == on_demand)
    later = {j.step_name for j in jobs if j.seed != on_demand}
    for step in steps:
        if step["Name"] in later:
            step["DependsOn"] = sorted({*step.get("DependsOn", []), first})
