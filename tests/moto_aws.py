"""AWS over HTTP for the tests: moto on 127.0.0.1 (its fixtures, `moto_server`/`aws` and `moto_env`/`aws_env`,
are in tests/conftest.py) and recorded answers for what moto does not implement (ListPipelineExecutionSteps):
the jobs a finished execution leaves, with a real evaluation in S3, and the step listing naming them; and, for
botocore's Stubber, every answer reading a finished execution's evaluation and billed time takes
(`_recorded_fetch`)."""
from __future__ import annotations

import datetime
import json
import socket
import types

import boto3

from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
ROLE = "arn:aws:iam::123456789012:role/bakeoff-test"
BUCKET = "bakeoff-test-bucket"  # the CLI's deploys (tests/*/test_aws_ops*.py); recorded executions' evaluations
API_BUCKET = "bakeoff-api-bucket"  # the Python API's deploys (the `aws` fixture makes it)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_with(responses: dict[str, object] | None = None) -> boto3.session.Session:
    """A caller's session; `responses` answers the named SageMaker operations without calling moto
    (a value, or a callable of the request's parameters as sent)."""
    session = boto3.session.Session(region_name="us-east-1")
    for operation, answer in (responses or {}).items():
        def hook(params, _answer=answer, **kw):
            body = _answer(json.loads(params.get("body") or b"{}")) if callable(_answer) else _answer
            return types.SimpleNamespace(status_code=200, headers={}), body
        session.events.register(f"before-call.sagemaker.{operation}", hook)
    return session


VALUES = {"pass": ([2.40, 2.41, 2.40], [2.41, 2.40, 2.41]), "fail": ([2.90, 2.91, 2.90], [2.40, 2.41, 2.40]),
          "inconclusive": ([2.40, 2.70, 2.20], [2.41, 2.45, 2.40])}


def recorded_execution(verdict: str = "pass", prefix: str = "exec1") -> dict[str, object]:
    """Training and processing jobs in moto and a real evaluation (the evaluation step's own code) in S3,
    as a finished execution leaves them, and the recorded ListPipelineExecutionSteps answer naming them."""
    import tempfile
    from pathlib import Path

    from evaluation_inputs import CONFIG, _jobs

    from bakeoff_runtime.verdict.evaluation import evaluate

    sm, s3 = boto3.client("sagemaker", region_name="us-east-1"), boto3.client("s3", region_name="us-east-1")
    try:
        arns, proc_arn = _make_jobs(sm, s3)
    except sm.exceptions.ResourceInUse:  # made by an earlier test against this server
        arns = {(leg, seed): f"arn:aws:sagemaker:us-east-1:123456789012:training-job/pipelines-abc-Train-{leg}-s{seed}"
                for leg in ("trn1", "p4d") for seed in range(3)}
        proc_arn = "arn:aws:sagemaker:us-east-1:123456789012:processing-job/pipelines-abc-Evaluate"
    evaluation = evaluate(CONFIG, _jobs(Path(tempfile.mkdtemp()), *VALUES[verdict]))
    assert evaluation["verdict"] == verdict
    if "bakeoff-test-bucket" not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket="bakeoff-test-bucket")
    s3.put_object(Bucket="bakeoff-test-bucket", Key=f"bakeoff/quickstart/evaluation/{prefix}/evaluation.json",
                  Body=json.dumps(evaluation).encode())
    return _recorded_steps(arns, proc_arn)


def _client(name, env):
    return boto3.client(name, endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


# Recorded shape of ListPipelineExecutionSteps (moto does not implement it).
def _recorded_steps(training_arns, processing_arn, failure=None):
    steps = [{"StepName": f"Train-{leg}-s{seed}", "StepStatus": "Succeeded", "AttemptCount": 1,
              "StartTime": datetime.datetime(2026, 12, 1, 10), "EndTime": datetime.datetime(2026, 12, 1, 11),
              "Metadata": {"TrainingJob": {"Arn": arn}}} for (leg, seed), arn in training_arns.items()]
    if failure:
        steps[0].update(StepStatus="Failed", FailureReason=failure)
        steps[1]["CacheHitResult"] = {"SourcePipelineExecutionArn": "arn:aws:sagemaker:us-east-1:123456789012:x"}
    steps.append({"StepName": "Evaluate", "StepStatus": "Succeeded", "AttemptCount": 1,
                  "Metadata": {"ProcessingJob": {"Arn": processing_arn}}})
    return {"PipelineExecutionSteps": steps}


# Recorded answers to what `SageMakerOps.fetch_evaluation` asks of a finished execution, in the order it asks.
def _recorded_fetch(sm_stub, s3_stub, execution, training_arns, processing_arn, billed, evaluation):
    """Adds to botocore Stubbers (which check each answer against the SageMaker and S3 service models): the
    step listing (`_recorded_steps`), each training job's DescribeTrainingJob with its BillableTimeInSeconds
    (`billed`, by (leg, seed)), the Evaluate step's DescribeProcessingJob, whose output is s3://b/eval/exec1,
    and `evaluation` as the evaluation.json there."""
    import io

    from botocore.response import StreamingBody

    sm_stub.add_response("list_pipeline_execution_steps", _recorded_steps(training_arns, processing_arn),
                         {"PipelineExecutionArn": execution, "SortOrder": "Ascending"})
    for key, arn in training_arns.items():
        name = arn.rsplit("/", 1)[-1]
        sm_stub.add_response("describe_training_job", {
            "TrainingJobName": name, "TrainingJobArn": arn, "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
            "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
            "AlgorithmSpecification": {"TrainingInputMode": "File"}, "ResourceConfig": {"VolumeSizeInGB": 1},
            "StoppingCondition": {}, "CreationTime": datetime.datetime(2026, 1, 1),
            "BillableTimeInSeconds": billed[key]}, {"TrainingJobName": name})
    name = processing_arn.rsplit("/", 1)[-1]
    sm_stub.add_response("describe_processing_job", {
        "ProcessingJobName": name, "ProcessingJobArn": processing_arn, "ProcessingJobStatus": "Completed",
        "ProcessingResources": {"ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge",
                                                  "VolumeSizeInGB": 30}},
        "AppSpecification": {"ImageUri": "x"}, "CreationTime": datetime.datetime(2026, 1, 1),
        "ProcessingOutputConfig": {"Outputs": [{"OutputName": "evaluation", "S3Output": {
            "S3Uri": "s3://b/eval/exec1", "LocalPath": "/opt/ml/processing/evaluation",
            "S3UploadMode": "EndOfJob"}}]}}, {"ProcessingJobName": name})
    body = json.dumps(evaluation).encode()
    s3_stub.add_response("get_object", {"Body": StreamingBody(io.BytesIO(body), len(body))},
                         {"Bucket": "b", "Key": "eval/exec1/evaluation.json"})


def _make_jobs(sm, s3):
    arns = {}
    for leg, inst in (("trn1", "ml.trn1.32xlarge"), ("p4d", "ml.p4d.24xlarge")):
        for seed in range(3):
            name = f"pipelines-abc-Train-{leg}-s{seed}"
            arns[(leg, seed)] = sm.create_training_job(
                TrainingJobName=name, RoleArn=ROLE,
                AlgorithmSpecification={"TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1",
                                        "TrainingInputMode": "File"},
                OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/out"},
                ResourceConfig={"InstanceType": inst, "InstanceCount": 1, "VolumeSizeInGB": 10},
                StoppingCondition={"MaxRuntimeInSeconds": 3600})["TrainingJobArn"]
    proc_arn = sm.create_processing_job(
        ProcessingJobName="pipelines-abc-Evaluate", RoleArn=ROLE,
        AppSpecification={"ImageUri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1"},
        ProcessingResources={"ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge",
                                               "VolumeSizeInGB": 30}},
        ProcessingOutputConfig={"Outputs": [{"OutputName": "evaluation", "S3Output": {
            "S3Uri": f"s3://{BUCKET}/bakeoff/quickstart/evaluation/exec1", "LocalPath": "/opt/ml/processing/evaluation",
            "S3UploadMode": "EndOfJob"}}]})["ProcessingJobArn"]
    return arns, proc_arn
