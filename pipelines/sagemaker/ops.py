"""Operating bake-off pipelines through boto3: deploy, start, status, wait, report.

AWS errors come back as one line that says what to do (`AwsError`); throttling
is retried with backoff by botocore's adaptive retry mode before that.
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from bakeoff.pipelines.aws_session import aws, region_of
from bakeoff.pipelines.errors import AwsError, Cancelled, RunError, SpecError, TimedOut, words
from bakeoff.pipelines.params import BUCKET, MAX_PARALLEL, PARAMETERS, STACK
from bakeoff_runtime.contract import parse_training_step_name
from bakeoff_runtime.contract.documents import Evaluation, evaluation_from

from .compiler import CompiledPipeline

RETRIES = {"max_attempts": 10, "mode": "adaptive"}
SELECTED_STEPS_MAX = 50  # SelectiveExecutionConfig.SelectedSteps (botocore's SageMaker model: SelectedStepList)
# The execution states that end it: botocore's PipelineExecutionStatus enum, CompletedWithFailures included
# (steps that failed while others that depend on them on a run condition went on).
TERMINAL = {"Succeeded", "Failed", "Stopped", "CompletedWithFailures"}


class SageMakerOps:
    """The SageMaker and S3 clients of one session and region, and what bakeoff does with them.

    boto3 clients are thread-safe once made, sessions are not
    (https://github.com/boto/boto3/issues/1592, boto3's guide "Multithreading or multiprocessing with
    clients"): make one SageMakerOps per session and region, then share it between threads."""

    def __init__(self, region: str | None = None, session=None, arn: str | None = None, profile: str | None = None):
        """`region` wins; else the region of `arn` (an execution is where its ARN says);
        else the session's (AWS_DEFAULT_REGION, the profile). `session` (a boto3.Session) carries
        the credentials; without one, a new session of `profile` (or the default chain) is made."""
        import boto3
        from botocore.config import Config

        wanted = region or region_of(arn)
        with aws("connect to AWS"):
            self.session = session or boto3.session.Session(region_name=wanted, profile_name=profile)
            cfg = Config(retries=dict(RETRIES), user_agent_extra="bakeoff")  # botocore mutates it
            self.sm = self.session.client("sagemaker", region_name=wanted, config=cfg)
            self.s3 = self.session.client("s3", region_name=wanted, config=Config(retries=dict(RETRIES),
                                                                                  user_agent_extra="bakeoff"))
        self.region = self.sm.meta.region_name
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def client(self, service: str, region: str | None = None, retries: dict[str, Any] | None = None) -> Any:
        """Another client of this session (Service Quotas, SageMaker in another region), made once under a
        lock: the session is shared by the threads that share these operations, and sessions are not
        thread-safe (see the class docstring)."""
        from botocore.config import Config

        where = region or self.region
        if service == "sagemaker" and where == self.region:
            return self.sm
        with self._lock, aws(f"connect to {service} in {where}"):
            key = (service, where)
            if key not in self._clients:
                cfg = Config(retries=dict(retries or RETRIES), user_agent_extra="bakeoff")
                self._clients[key] = self.session.client(service, region_name=where, config=cfg)
            return self._clients[key]

    def stack_pipeline(self, stack: str) -> str:
        """The name of the pipeline a bakeoff CDK stack deployed: its `<construct>PipelineName`
        output (CDK names an output by its construct path plus 8 hex digits of hash)."""
        with aws(f"describe CloudFormation stack {stack}"):
            cfn = self.session.client("cloudformation", region_name=self.region)
            stacks = cfn.describe_stacks(StackName=stack).get("Stacks", [])
        outputs = stacks[0].get("Outputs", []) if stacks else []
        names = sorted({o["OutputValue"] for o in outputs
                        if re.sub(r"[0-9A-F]{8}$", "", o.get("OutputKey", "")).endswith("PipelineName")})
        if len(names) == 1:
            return names[0]
        if not names:
            raise SpecError(f"stack {stack} in {self.region} has no PipelineName output: is it a stack with a "
                            "BakeoffPipeline construct?", field=STACK)
        raise SpecError(words(f"stack {stack} deploys {len(names)} pipelines ({', '.join(names)}): name one of them "
                              "instead of ", STACK), field=STACK)

    # --- deploy ---------------------------------------------------------------------
    def upload_assets(self, compiled: CompiledPipeline, progress: Callable[[str], None] = lambda m: None) -> dict:
        from botocore.exceptions import ClientError

        uploaded, present = [], []
        with aws(f"reach bucket {compiled.bucket}"):
            try:
                self.s3.head_bucket(Bucket=compiled.bucket)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket", "NotFound"):
                    raise AwsError(words(f"S3 bucket {compiled.bucket!r} does not exist; create it (or deploy the "
                                         "CDK stack) or pass ", BUCKET, " with one that does"), code="NoSuchBucket",
                                   operation=f"reach bucket {compiled.bucket}") from None
                raise
        for asset in compiled.assets:
            try:
                self.s3.head_object(Bucket=compiled.bucket, Key=asset.key)
                present.append(asset.key)
                continue
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                    with aws(f"check s3://{compiled.bucket}/{asset.key}"):
                        raise
            with aws(f"upload s3://{compiled.bucket}/{asset.key}"):
                self.s3.put_object(Bucket=compiled.bucket, Key=asset.key, Body=asset.body,
                                   Metadata={"bakeoff-sha256": asset.sha256})
            uploaded.append(asset.key)
            progress(f"uploaded s3://{compiled.bucket}/{asset.key} ({len(asset.body):,} bytes)")
        return {"uploaded": uploaded, "already_present": present}

    def _pipeline_exists(self, name: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.sm.describe_pipeline(PipelineName=name)
            return True
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            text = str(exc).lower()
            if code in ("ResourceNotFound", "ResourceNotFoundException") or (
                    code == "ValidationException" and ("not exist" in text or "could not find" in text)):
                return False
            with aws(f"look up pipeline {name}"):
                raise

    def deploy(self, compiled: CompiledPipeline, tags: dict[str, str] | None = None,
               progress: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
        """Upload the assets that are missing, then create or update the pipeline."""
        assets = self.upload_assets(compiled, progress)
        body = compiled.to_json()
        tag_list = [{"Key": k, "Value": v} for k, v in sorted((tags or {}).items())]
        desc = f"bakeoff {compiled.name}"
        extra = {"ParallelismConfiguration": compiled.parallelism} if compiled.parallelism else {}
        if not self._pipeline_exists(compiled.name):
            with aws(f"create pipeline {compiled.name}"):
                arn = self.sm.create_pipeline(PipelineName=compiled.name, PipelineDefinition=body,
                                              PipelineDescription=desc, RoleArn=compiled.role_arn,
                                              Tags=tag_list, **extra)["PipelineArn"]
            action = "created"
        else:
            with aws(f"update pipeline {compiled.name}"):
                arn = self.sm.update_pipeline(PipelineName=compiled.name, PipelineDefinition=body,
                                              PipelineDescription=desc, RoleArn=compiled.role_arn,
                                              **extra)["PipelineArn"]
                if tag_list:
                    self.sm.add_tags(ResourceArn=arn, Tags=tag_list)
            action = "updated"
        return {"pipeline_arn": arn, "action": action, **assets}

    # --- executions -----------------------------------------------------------------
    def start(self, pipeline: str, parameters: dict[str, str] | None = None, *, display_name: str | None = None,
              description: str | None = None, max_parallel_steps: int | None = None) -> str:
        """StartPipelineExecution; `display_name` and `description` are what the console and
        ListPipelineExecutions show (pipelines/sagemaker/execution_labels.py checks them);
        `max_parallel_steps` overrides the pipeline's ParallelismConfiguration for this execution only
        (botocore's model: "overrides the parallelism configuration of the parent pipeline for this specific
        run"; at least 1)."""
        from .execution_labels import check_description, check_display_name

        if max_parallel_steps is not None and max_parallel_steps < 1:
            raise SpecError(f"{max_parallel_steps}: at least 1 step must run at a time", field=MAX_PARALLEL)
        labels: dict[str, Any] = {
            "PipelineExecutionDisplayName": check_display_name(display_name),
            "PipelineExecutionDescription": check_description(description),
            "ParallelismConfiguration": {"MaxParallelExecutionSteps": max_parallel_steps}
            if max_parallel_steps is not None else None}
        params = [{"Name": k, "Value": str(v)} for k, v in sorted((parameters or {}).items())]
        with aws(f"start pipeline {pipeline}"):
            known = {p["Name"] for p in json.loads(self.sm.describe_pipeline(PipelineName=pipeline)
                                                   ["PipelineDefinition"]).get("Parameters", [])}
        unknown = sorted(set(parameters or {}) - known)
        if unknown:
            raise SpecError(f"unknown pipeline parameter(s) {', '.join(unknown)}; this pipeline has: "
                            f"{', '.join(sorted(known))}", field=PARAMETERS)
        with aws(f"start pipeline {pipeline}"):
            return self.sm.start_pipeline_execution(PipelineName=pipeline, PipelineParameters=params,
                                                    **{k: v for k, v in labels.items() if v is not None})[
                "PipelineExecutionArn"]

    def retry_failed(self, execution_arn: str) -> str:
        """`bakeoff retry`: run again what an execution lost, keeping what it finished.

        Failed: RetryPipelineExecution (the same execution goes on). The token names the failure being
        retried (the execution's LastModifiedTime): asking twice for one failure is one retry, a later failure
        of the retried execution gets its own.
        Stopped (someone stopped it): a selective execution (StartPipelineExecution SelectiveExecutionConfig)
        of every step that did not succeed, with the stopped execution as its source, whose outputs the steps
        not selected reuse (docs.aws.amazon.com/sagemaker/latest/dg/pipelines-selective-ex.html). Those steps
        are everything downstream of what was lost, so they are connected in the graph through Evaluate, as
        the guide requires. AWS's API reference names Failed and Succeeded sources and the SDK names Stopped
        too; a refusal comes back as SageMaker's one line.
        Anything else is one line here, before any request."""
        with aws(f"describe execution {execution_arn}"):
            ex = self.sm.describe_pipeline_execution(PipelineExecutionArn=execution_arn)
        state = ex.get("PipelineExecutionStatus")
        if state == "Stopped":
            return self._rerun_lost(execution_arn)
        if state != "Failed":
            raise SpecError(f"execution {execution_arn} is {state}: only a Failed or Stopped execution can be "
                            "retried (`bakeoff status` shows its steps; `bakeoff start` runs the pipeline afresh, "
                            "and the step cache serves every training step that succeeded)", field="EXECUTION")
        return self.retry(execution_arn, str(ex.get("LastModifiedTime") or ex.get("CreationTime") or ""))

    def _rerun_lost(self, execution_arn: str) -> str:
        from bakeoff.pipelines.hashing import digest

        with aws(f"read the definition of {execution_arn}"):
            definition = json.loads(self.sm.describe_pipeline_definition_for_execution(
                PipelineExecutionArn=execution_arn)["PipelineDefinition"])
        # The steps alone: the caller has described the execution already.
        done = {s.get("StepName") for s in self.execution_steps(execution_arn) if s.get("StepStatus") == "Succeeded"}
        lost = [s["Name"] for s in definition.get("Steps", []) if s["Name"] not in done]
        pipeline = execution_arn.split(":pipeline/", 1)[-1].split("/", 1)[0]  # for the advice
        if not lost:
            raise SpecError(f"execution {execution_arn} was stopped after every step succeeded: nothing to run "
                            "again", field="EXECUTION")
        if len(lost) > SELECTED_STEPS_MAX:
            raise SpecError(f"{len(lost)} steps of {execution_arn} did not finish, more than the {SELECTED_STEPS_MAX} "
                            f"a selective execution takes: `bakeoff start {pipeline}` runs the pipeline again, and "
                            "the step cache serves every training step that succeeded", field="EXECUTION")
        with aws(f"run the lost steps of {execution_arn} again"):
            return self.sm.start_pipeline_execution(
                # The pipeline's ARN (which StartPipelineExecution takes): a name read from an ARN is in lower case.
                PipelineName=execution_arn.split("/execution/", 1)[0],
                ClientRequestToken=digest(f"{execution_arn}#selective", 32),
                PipelineExecutionDisplayName=f"rerun-{execution_arn.rsplit('/', 1)[-1]}"[:82],
                PipelineExecutionDescription=f"bakeoff retry of stopped execution {execution_arn}: "
                                             f"{', '.join(lost)}"[:3072],
                PipelineParameters=self._parameters_of(execution_arn),
                SelectiveExecutionConfig={"SourcePipelineExecutionArn": execution_arn,
                                          "SelectedSteps": [{"StepName": n} for n in lost]})["PipelineExecutionArn"]

    def _parameters_of(self, execution_arn: str) -> list[dict[str, str]]:
        """The stopped execution's own parameter values (MaxSteps, ParityMargin, the data URIs), so the
        steps run again run as their siblings did."""
        params: list[dict[str, str]] = []
        token = None
        with aws(f"read the parameters of {execution_arn}"):
            while True:
                page = self.sm.list_pipeline_parameters_for_execution(
                    PipelineExecutionArn=execution_arn, **({"NextToken": token} if token else {}))
                params += [{"Name": p["Name"], "Value": p["Value"]} for p in page.get("PipelineParameters", [])]
                token = page.get("NextToken")
                if not token:
                    return params

    def retry(self, execution_arn: str, attempt: int | str) -> str:
        """RetryPipelineExecution: the failed execution runs again, its failed steps afresh
        (docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryPipelineExecution.html; the
        token, 32-128 characters there, is the execution's ARN and the attempt, so a repeated
        call is the same request)."""
        from bakeoff.pipelines.hashing import digest

        with aws(f"retry execution {execution_arn}"):
            return self.sm.retry_pipeline_execution(
                PipelineExecutionArn=execution_arn,
                ClientRequestToken=digest(f"{execution_arn}#{attempt}", 32))["PipelineExecutionArn"]

    def execution_steps(self, execution_arn: str) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        token = None
        with aws(f"list the steps of {execution_arn}"):
            while True:
                kw = {"PipelineExecutionArn": execution_arn, "SortOrder": "Ascending"}
                if token:
                    kw["NextToken"] = token
                page = self.sm.list_pipeline_execution_steps(**kw)
                steps += page.get("PipelineExecutionSteps", [])
                token = page.get("NextToken")
                if not token:
                    return steps

    def status(self, execution_arn: str) -> dict[str, Any]:
        with aws(f"describe execution {execution_arn}"):
            ex = self.sm.describe_pipeline_execution(PipelineExecutionArn=execution_arn)
        steps = []
        for s in self.execution_steps(execution_arn):
            meta = s.get("Metadata", {})
            job = next((v.get("Arn") for k, v in meta.items() if isinstance(v, dict) and "Arn" in v), None)
            steps.append({"name": s.get("StepName"), "status": s.get("StepStatus"),
                          "failure_reason": s.get("FailureReason"), "job_arn": job,
                          "cache_hit": bool(s.get("CacheHitResult")),
                          "attempts": s.get("AttemptCount")})
        return {"execution_arn": execution_arn, "status": ex.get("PipelineExecutionStatus"),
                "failure_reason": ex.get("FailureReason"), "steps": steps}

    def wait(self, execution_arn: str, poll_s: float = 30.0, timeout_s: float = 7 * 86400,
             progress: Callable[[dict], None] = lambda s: None, sleep=time.sleep,
             cancelled: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """Poll until the execution ends. `sleep(seconds)` may return True to say the wait was
        cancelled meanwhile (threading.Event.wait does); `cancelled()` is asked before each poll."""
        deadline = time.monotonic() + timeout_s
        while True:
            if cancelled():
                raise Cancelled(f"stopped waiting for {execution_arn} (cancelled); the execution goes on: "
                                "`bakeoff stop` ends it")
            with aws(f"describe execution {execution_arn}"):
                ex = self.sm.describe_pipeline_execution(PipelineExecutionArn=execution_arn)
            state = ex.get("PipelineExecutionStatus")
            progress(ex)
            if state in TERMINAL:
                return {"execution_arn": execution_arn, "status": state, "failure_reason": ex.get("FailureReason")}
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimedOut(f"execution {execution_arn} still {state} after {timeout_s:g}s; "
                               "`bakeoff wait` again or `bakeoff status` to see its steps")
            if sleep(min(poll_s, left)) is True:
                raise Cancelled(f"stopped waiting for {execution_arn} (cancelled); the execution goes on: "
                                "`bakeoff stop` ends it")

    def stop(self, execution_arn: str) -> dict[str, Any]:
        """StopPipelineExecution: running steps are stopped and the execution ends as Stopped.
        ClientRequestToken is required by the API and makes the call idempotent
        (docs.aws.amazon.com/sdk-for-ruby/v3/api/Aws/SageMaker/Types/StopPipelineExecutionRequest.html):
        the execution's own ARN as the token makes a repeated stop the same request."""
        from bakeoff.pipelines.hashing import digest

        with aws(f"stop execution {execution_arn}"):
            self.sm.stop_pipeline_execution(PipelineExecutionArn=execution_arn,
                                            ClientRequestToken=digest(execution_arn, 32))
            ex = self.sm.describe_pipeline_execution(PipelineExecutionArn=execution_arn)
        return {"execution_arn": execution_arn, "status": ex.get("PipelineExecutionStatus"),
                "failure_reason": ex.get("FailureReason")}

    # --- looks ----------------------------------------------------------------------
    def decided_looks(self, pipeline: str, limit: int = 50) -> list[dict[str, Any]]:
        """The decisions this pipeline's executions took (the newest `limit`), oldest first, as
        looks (pipelines/local/looks.py): the training jobs each decided on (from the definition it
        ran), its design and verdict. An execution that never finished its Evaluate step decided
        nothing and is left out."""
        from bakeoff.pipelines.local.looks import design_of, training_steps

        if not self._pipeline_exists(pipeline):
            return []
        summaries: list[dict[str, Any]] = []
        token = None
        with aws(f"list executions of {pipeline}"):
            while len(summaries) < limit:
                page = self.sm.list_pipeline_executions(PipelineName=pipeline, SortBy="CreationTime",
                                                        SortOrder="Descending", MaxResults=min(50, limit),
                                                        **({"NextToken": token} if token else {}))
                summaries += page.get("PipelineExecutionSummaries", [])
                token = page.get("NextToken")
                if not token:
                    break
        looks: list[dict[str, Any]] = []
        for summary in reversed(summaries[:limit]):
            if summary.get("PipelineExecutionStatus") not in ("Succeeded", "Failed", "CompletedWithFailures"):
                continue  # running, stopped or stopping: no verdict to have looked at
            arn = summary["PipelineExecutionArn"]
            try:
                evaluation = self._evaluation(arn)
            except RunError:
                continue
            with aws(f"read the definition of {arn}"):
                body = self.sm.describe_pipeline_definition_for_execution(PipelineExecutionArn=arn)
            jobs, seeds = training_steps(json.loads(body.get("PipelineDefinition") or "{}"))
            if not jobs:
                continue
            seq = evaluation.get("sequential") or {}
            design = design_of(seq if seq.get("max_seeds") else None)
            looks.append({"look": len(looks) + 1, "jobs": jobs, "seeds": seeds, "design": design,
                          "verdict": evaluation.get("verdict"), "execution_arn": arn})
        return looks

    # --- report ---------------------------------------------------------------------
    def fetch_evaluation(self, execution_arn: str) -> tuple[Evaluation, dict[tuple[str, int], float]]:
        """evaluation.json of an execution and each training job's BillableTimeInSeconds."""
        steps = self.execution_steps(execution_arn)
        billable: dict[tuple[str, int], float] = {}
        for s in steps:
            meta = s.get("Metadata", {})
            named = parse_training_step_name(s.get("StepName", ""))
            if named and "TrainingJob" in meta:
                name = meta["TrainingJob"]["Arn"].rsplit("/", 1)[-1]
                with aws(f"describe training job {name}"):
                    job = self.sm.describe_training_job(TrainingJobName=name)
                seconds = job.get("BillableTimeInSeconds")
                if seconds is None and job.get("TrainingStartTime") and job.get("TrainingEndTime"):
                    seconds = (job["TrainingEndTime"] - job["TrainingStartTime"]).total_seconds()
                if seconds is not None:
                    billable[named] = float(seconds)
        return self._evaluation(execution_arn, steps), billable

    def _evaluation(self, execution_arn: str, steps: list[dict[str, Any]] | None = None) -> Evaluation:
        """evaluation.json of an execution, read from its Evaluate step's output alone (a look needs
        only the verdict: describing every training job for its billed time is the report's work)."""
        evaluation_uri = None
        for s in self.execution_steps(execution_arn) if steps is None else steps:
            meta = s.get("Metadata", {})
            if s.get("StepName") == "Evaluate" and "ProcessingJob" in meta:
                name = meta["ProcessingJob"]["Arn"].rsplit("/", 1)[-1]
                with aws(f"describe processing job {name}"):
                    job = self.sm.describe_processing_job(ProcessingJobName=name)
                for out in job.get("ProcessingOutputConfig", {}).get("Outputs", []):
                    if out.get("OutputName") == "evaluation":
                        evaluation_uri = out["S3Output"]["S3Uri"].rstrip("/") + "/evaluation.json"
        if evaluation_uri is None:
            raise RunError(f"execution {execution_arn} has no finished Evaluate step yet; "
                           "`bakeoff status` shows where it is")
        bucket, _, key = evaluation_uri[len("s3://"):].partition("/")
        with aws(f"read {evaluation_uri}"):
            body = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        return evaluation_from(json.loads(body), evaluation_uri)
