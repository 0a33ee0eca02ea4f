"""What a compiled definition uses, read from the definition itself (the construct grants only that), and
the actions those uses need.

Sources: see the execution role's grants (pipelines/sagemaker/cdk/grants.py) and /work/notes/aws_facts.md
section 11.
"""
from __future__ import annotations

import re

LOG_GROUPS = ("/aws/sagemaker/TrainingJobs", "/aws/sagemaker/ProcessingJobs")
VPC_ACTIONS = (
    "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
)
# Each MlflowClient method the jobs and the Evaluate step call on a SageMaker tracking server
# (entrypoints/bakeoff_runtime/tracking/sink.py, parent_run.py, parent_extras.py, run_inputs.py, script_run.py), and the
# sagemaker-mlflow action of the REST call it makes (mlflow/store/tracking/rest_store.py:
# set_terminated is UpdateRun; log_artifact reads the run (GetRun) for its artifact URI and writes
# to S3 with the role's own S3 grant). Actions as the Service Authorization Reference names them,
# each on the mlflow-tracking-server resource ("Actions defined by Amazon SageMaker with MLflow",
# docs.aws.amazon.com/service-authorization/latest/reference/list_sagemaker-mlflow.html).
# Without SetExperimentTag the Evaluate step's parent run was dropped whole, without DeleteRun a
# job could not trash its earlier attempt's run (shared/reference/aws-first-run-review.md #9).
MLFLOW_CLIENT_ACTIONS = {
    "create_experiment": ("CreateExperiment",), "get_experiment": ("GetExperiment",),
    "get_experiment_by_name": ("GetExperimentByName",), "set_experiment_tag": ("SetExperimentTag",),
    "create_run": ("CreateRun",), "get_run": ("GetRun",), "search_runs": ("SearchRuns",),
    "log_batch": ("LogBatch",), "set_tag": ("SetTag",), "set_terminated": ("UpdateRun",),
    "delete_run": ("DeleteRun",), "get_metric_history": ("GetMetricHistory",), "log_artifact": ("GetRun",),
    # A job's datasets (tracking/run_inputs.py): the REST LogInputs call (AWS's managed
    # SageMakerStudioProjectRoleMachineLearningPolicy grants sagemaker-mlflow:LogInputs by that name).
    "log_inputs": ("LogInputs",),
    # The parent's legs table and decision image (tracking/parent_extras.py): MLflow's log_table reads the run
    # (GetRun) for its artifact URI, lists and downloads an earlier table from the artifact store (S3, the
    # role's own grant), writes the new one (log_artifact) and records it in a tag (SetTag):
    # mlflow/tracking/client.py MlflowClient.log_table and list_artifacts.
    "list_artifacts": ("GetRun",), "log_table": ("GetRun", "SetTag"),
}
# A script-mode script shares its job's run through MLflow's fluent API: mlflow.start_run() resumes it
# (GetRun, then UpdateRun to mark it running: mlflow/tracking/fluent.py), and the script may log single
# values (mlflow.log_metric, mlflow.log_param) or look experiments up (mlflow.search_experiments).
MLFLOW_SCRIPT_ACTIONS = ("LogMetric", "LogParam", "SearchExperiments")
# AccessUI is not granted: the Reference gives it no resource type (it is granted on "*" or not at all),
# and no job opens the MLflow UI.
MLFLOW_ACTIONS = tuple(f"sagemaker-mlflow:{a}" for a in sorted(
    {a for actions in MLFLOW_CLIENT_ACTIONS.values() for a in actions} | set(MLFLOW_SCRIPT_ACTIONS)))
# An MLflow App (arn:...:mlflow-app/ID) is not a tracking server: sagemaker-mlflow 0.5.0 signs its requests
# for the `sagemaker` service, not `sagemaker-mlflow` (sagemaker_mlflow/auth_provider.py,
# _get_auth_service_name), and its whole REST API is authorized by this one action on the App's ARN (AWS's
# "Set up IAM permissions for MLflow Apps", docs.aws.amazon.com/sagemaker/latest/dg/
# mlflow-app-setup-prerequisites-iam.html, and AWS's model-customization policy, which grants it with
# DescribeMlflowApp on mlflow-app/*). DescribeMlflowApp is `validate --aws`'s, the caller's, not the jobs'.
MLFLOW_APP_ACTIONS = ("sagemaker:CallMlflowAppApi",)


def mlflow_actions(arn: str) -> list[str]:
    """The actions the jobs and Evaluate need on a SageMaker MLflow resource: a tracking server's
    sagemaker-mlflow actions, or an App's one data-plane action."""
    return list(MLFLOW_APP_ACTIONS if ":mlflow-app/" in arn else MLFLOW_ACTIONS)


# Starting, watching, stopping, retrying and reporting a pipeline (`bakeoff start/status/wait/stop/retry/report`;
# retry: RetryPipelineExecution on an execution's ARN, docs.aws.amazon.com/sagemaker/latest/APIReference/
# API_RetryPipelineExecution.html). The
# per-action resource types of the Service Authorization Reference were not retrieved, so
# the pipeline actions name both the pipeline and its executions: whichever ARN an action is
# authorized on, it is one of this pipeline's.
START_ACTIONS = (
    "sagemaker:StartPipelineExecution", "sagemaker:DescribePipeline", "sagemaker:ListPipelineExecutions",
    "sagemaker:DescribePipelineExecution", "sagemaker:ListPipelineExecutionSteps",
    "sagemaker:ListPipelineParametersForExecution", "sagemaker:StopPipelineExecution",
    "sagemaker:RetryPipelineExecution",
)
REPORT_JOB_ACTIONS = ("sagemaker:DescribeTrainingJob", "sagemaker:DescribeProcessingJob")
_ECR_IMAGE = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
                        r"(?P<repo>[^:@]+)")
_KMS_ARN = re.compile(r"^arn:(?P<partition>aws[a-z\-]*):kms:(?P<region>[a-z0-9\-]+):(?P<account>\d{12}):"
                      r"(?P<kind>key|alias)/(?P<name>.+)$")



def image_repositories(definition: dict) -> list[tuple[str, str, str]]:
    repos = set()
    for image in image_uris(definition):
        m = _ECR_IMAGE.match(image)
        if m:
            repos.add((m["account"], m["region"], m["repo"]))
    return sorted(repos)


def image_uris(definition: dict) -> list[str]:
    out = []
    for step in _all_steps(definition.get("Steps", [])):
        args = step.get("Arguments", {})
        image = args.get("AlgorithmSpecification", {}).get("TrainingImage") or \
            args.get("AppSpecification", {}).get("ImageUri")
        if isinstance(image, str):
            out.append(image)
    return out


def _all_steps(steps: list[dict]) -> list[dict]:
    """Steps, including those nested in Condition steps."""
    out = []
    for step in steps:
        out.append(step)
        args = step.get("Arguments", {})
        if step.get("Type") == "Condition":
            out += _all_steps(args.get("IfSteps", []) + args.get("ElseSteps", []))
    return out


def all_steps(definition: dict) -> list[dict]:
    return _all_steps(definition.get("Steps", []))


# -------------------------------------------------------------
def uses_vpc(definition: dict) -> bool:
    return any("VpcConfig" in s.get("Arguments", {}) or "VpcConfig" in s.get("Arguments", {}).get("NetworkConfig", {})
               for s in all_steps(definition))


def kms_keys(definition: dict) -> tuple[list[str], list[str]]:
    """(output keys, volume keys) the definition names."""
    output: set[str] = set()
    volume: set[str] = set()
    for s in all_steps(definition):
        args = s.get("Arguments", {})
        for where, found in ((args.get("OutputDataConfig", {}), output),
                             (args.get("ProcessingOutputConfig", {}), output),
                             (args.get("ResourceConfig", {}), volume),
                             (args.get("ProcessingResources", {}).get("ClusterConfig", {}), volume)):
            key = where.get("KmsKeyId") or where.get("VolumeKmsKeyId")
            if isinstance(key, str) and key:
                found.add(key)
    return sorted(output), sorted(volume)


def lists_its_own_steps(definition: dict) -> bool:
    """The Evaluate step finds the training jobs itself (ListPipelineExecutionSteps) when
    there are more than its container arguments can name."""
    for s in all_steps(definition):
        arguments = s.get("Arguments", {}).get("AppSpecification", {}).get("ContainerArguments", [])
        if "--execution-arn" in [a for a in arguments if isinstance(a, str)]:
            return True
    return False


def data_uris(definition: dict) -> dict[str, str]:
    """`*DataUri` parameter -> its default S3 URI (those outside the artifacts bucket)."""
    out = {}
    for p in definition.get("Parameters", []):
        if p["Name"].endswith("DataUri") and isinstance(p.get("DefaultValue"), str):
            out[p["Name"]] = p["DefaultValue"]
    return out
