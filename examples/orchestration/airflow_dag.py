"""An Airflow DAG that bakes off Trainium against GPUs on SageMaker and branches on the verdict.

    synth -> deploy -> start -> wait -> verdict -> adopt_trainium | keep_gpus | add_seeds

bakeoff does what only it can: `synth` compiles the spec offline, `deploy` uploads the code and creates or
updates the SageMaker pipeline, `verdict` reads the execution's evaluation (the Python API, `bakeoff.pipelines`).
Starting and watching the execution is the Amazon provider's (apache-airflow-providers-amazon; this file is
checked against 9.39.0 with Airflow 3.3.2 by tests/e2e/test_airflow_dag.py):

- `start` is `SageMakerStartPipelineOperator` without waiting: it calls StartPipelineExecution and returns
  the execution's ARN, which goes on by XCom.
- `wait` is `SageMakerPipelineSensor` in `mode="reschedule"`: it takes a worker slot only while it asks
  DescribePipelineExecution, every `poll_s`, and none in between (Airflow's sensors guide,
  airflow.apache.org/docs/apache-airflow/stable/core-concepts/sensors.html: "reschedule: The Sensor takes
  up a worker slot only when it is checking"). A bake-off of hours holds no worker.

Why not `SageMakerStartPipelineOperator(deferrable=True, wait_for_completion=True)`, which waits in the
triggerer: a fail or inconclusive verdict ends the execution Failed (the pipeline's gate is a Fail step),
and the provider's trigger then fails the task (its PipelineExecutionComplete waiter counts Failed and
Stopped as failure; `execute_complete` raises on any event but success: providers/amazon/aws/triggers/
sagemaker.py, waiters/sagemaker.json, operators/sagemaker.py in 9.39.0) without the execution's ARN in
XCom, so nothing downstream could read the verdict. Here the ARN is in XCom before the wait starts, and
`verdict` runs when the wait ends either way (trigger rule all_done_min_one_success on start and wait:
start succeeded, the wait finished), reading a verdict from a Failed execution too; an execution that
failed without deciding has no evaluation, and `verdict` fails saying so.

The callables below are plain functions, importable and testable without Airflow; the DAG itself is
only built where Airflow is installed. Configure with environment variables (or edit CONFIG):
BAKEOFF_SPEC (the spec file), BAKEOFF_ROLE_ARN (the SageMaker execution role), BAKEOFF_BUCKET,
BAKEOFF_REGION; AWS credentials come from the Airflow connection `aws_default` (the provider's default).
"""
from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Any

from bakeoff import deploy, report, synth

CONFIG: dict[str, Any] = {
    "spec": os.environ.get("BAKEOFF_SPEC", "bakeoff.yaml"),
    "role_arn": os.environ.get("BAKEOFF_ROLE_ARN", ""),
    "bucket": os.environ.get("BAKEOFF_BUCKET") or None,
    "region": os.environ.get("BAKEOFF_REGION") or None,
    "parameters": {},  # pipeline parameters, e.g. {"MaxSteps": "200"}
    "poll_s": 300,
    "timeout_s": 2 * 86400,
}

# The task each verdict leads to.
BRANCHES = {"pass": "adopt_trainium", "fail": "keep_gpus", "inconclusive": "add_seeds"}
# What the templated fields pull from `deploy`'s XCom (the Deployment as JSON) and from `start`'s (the ARN).
DEPLOYMENT = "ti.xcom_pull(task_ids='deploy')"
EXECUTION_ARN = "{{ ti.xcom_pull(task_ids='start') }}"


def synth_pipeline(spec: str, bucket: str | None = None, region: str | None = None) -> dict[str, Any]:
    """Compile offline first: a spec SageMaker would refuse fails here, before anything is uploaded."""
    result = synth(spec, bucket=bucket, region=region)
    return {"pipeline_name": result.pipeline_name, "steps": len(result.definition["Steps"]),
            "assets": [a.key for a in result.assets]}


def deploy_pipeline(spec: str, role_arn: str, bucket: str | None = None, region: str | None = None,
                    session: Any = None) -> dict[str, Any]:
    """Upload what S3 lacks and create or update the pipeline; returns the Deployment as JSON."""
    return deploy(spec, role_arn=role_arn, bucket=bucket, region=region, session=session).model_dump(mode="json")


def display_name(run_id: str) -> str:
    """The execution's name in SageMaker's console, from the DAG run's id: SageMaker takes 1-82 letters,
    digits and dashes between them (pipelines/sagemaker/execution_labels.py)."""
    words = re.sub(r"[^a-zA-Z0-9]+", "-", run_id).strip("-")
    return f"airflow-{words}"[:82].rstrip("-")


def fetch_verdict(execution_arn: str | None, out_dir: str | None = None, session: Any = None) -> dict[str, Any]:
    """The execution's verdict and report (evaluation.json re-costed by billable time, report.html)."""
    if not execution_arn:
        raise ValueError("no pipeline execution to read: the start task pushed no ARN")
    result = report(execution_arn, out_dir=out_dir or f"bakeoff-report-{execution_arn.rsplit('/', 1)[-1]}",
                    session=session)
    return {"verdict": result.verdict, "summary": result.evaluation.get("summary"),
            "report_path": result.report_path, "evaluation_path": result.evaluation_path}


def choose_branch(verdict: dict[str, Any]) -> str:
    """The task to follow for a verdict (what `@task.branch` returns)."""
    return BRANCHES[verdict["verdict"]]


def _build_dag():
    # Airflow 3 has the TaskFlow decorators in airflow.sdk, Airflow 2 in airflow.decorators; `@task.branch`
    # follows the task id its function returns and skips the others (Airflow 2.5 docs,
    # _modules/airflow/example_dags/example_branch_operator_decorator.html).
    try:
        from airflow.sdk import dag, task
    except ImportError:
        from airflow.decorators import dag, task
    from airflow.providers.amazon.aws.operators.sagemaker import SageMakerStartPipelineOperator
    from airflow.providers.amazon.aws.sensors.sagemaker import SageMakerPipelineSensor

    @dag(dag_id="bakeoff_trn_vs_gpu", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         tags=["bakeoff"], user_defined_macros={"display_name": display_name})
    def bakeoff_trn_vs_gpu():
        checked = task(task_id="synth")(synth_pipeline)(CONFIG["spec"], CONFIG["bucket"], CONFIG["region"])
        deployment = task(task_id="deploy")(deploy_pipeline)(CONFIG["spec"], CONFIG["role_arn"], CONFIG["bucket"],
                                                             CONFIG["region"])
        checked >> deployment
        start = SageMakerStartPipelineOperator(
            task_id="start", pipeline_name=f"{{{{ {DEPLOYMENT}['pipeline_name'] }}}}",
            region_name=f"{{{{ {DEPLOYMENT}['region'] }}}}", display_name="{{ display_name(run_id) }}",
            pipeline_params=CONFIG["parameters"] or None, wait_for_completion=False)
        wait = SageMakerPipelineSensor(
            task_id="wait", pipeline_exec_arn=EXECUTION_ARN, region_name=f"{{{{ {DEPLOYMENT}['region'] }}}}",
            mode="reschedule", poke_interval=CONFIG["poll_s"], timeout=CONFIG["timeout_s"], verbose=False)
        deployment >> start >> wait
        verdict = task(task_id="verdict", trigger_rule="all_done_min_one_success")(fetch_verdict)(start.output)
        wait >> verdict
        branch = task.branch(task_id="branch_on_verdict")(choose_branch)(verdict)
        for task_id in BRANCHES.values():
            branch >> task(task_id=task_id)(lambda: None)()

    return bakeoff_trn_vs_gpu()


try:
    import airflow  # noqa: F401
except ImportError:  # the callables above stay importable (and testable) without Airflow
    bakeoff_dag = None
else:
    bakeoff_dag = _build_dag()
