"""An Airflow DAG that bakes off Trainium against GPUs on SageMaker and branches on the verdict.

    synth -> deploy -> start -> wait -> verdict -> adopt_trainium | keep_gpus | add_seeds

Every task is one call into bakeoff's Python API and passes JSON on (XCom): a deployment, then an
execution handle, then the verdict. The callables below are plain functions, importable and testable
without Airflow; the DAG itself is only built where Airflow is installed.

Configure with environment variables (or edit CONFIG): BAKEOFF_SPEC (the spec file), BAKEOFF_ROLE_ARN
(the SageMaker execution role), BAKEOFF_BUCKET, BAKEOFF_REGION.

A long bake-off holds a worker slot while `wait_for_execution` polls; on a busy cluster, make that task
a sensor in reschedule mode that calls `pipelines.status` instead.
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from pipelines import Deployment, Execution, deploy, report, start, synth, wait

CONFIG: dict[str, Any] = {
    "spec": os.environ.get("BAKEOFF_SPEC", "bakeoff.yaml"),
    "role_arn": os.environ.get("BAKEOFF_ROLE_ARN", ""),
    "bucket": os.environ.get("BAKEOFF_BUCKET") or None,
    "region": os.environ.get("BAKEOFF_REGION") or None,
    "parameters": {},
    "poll_s": 60.0,
    "timeout_s": 2 * 86400.0,
}

# The task each verdict leads to.
BRANCHES = {"pass": "adopt_trainium", "fail": "keep_gpus", "inconclusive": "add_seeds"}


def synth_pipeline(spec: str, bucket: str | None = None, region: str | None = None) -> dict[str, Any]:
    """Compile offline first: a spec SageMaker would refuse fails here, before anything is uploaded."""
    result = synth(spec, bucket=bucket, region=region)
    return {"pipeline_name": result.pipeline_name, "steps": len(result.definition["Steps"]),
            "assets": [a.key for a in result.assets]}


def deploy_pipeline(spec: str, role_arn: str, bucket: str | None = None, region: str | None = None,
                    session: Any = None) -> dict[str, Any]:
    """Upload what S3 lacks and create or update the pipeline; returns the Deployment as JSON."""
    return deploy(spec, role_arn=role_arn, bucket=bucket, region=region, session=session).model_dump(mode="json")


def start_execution(deployment: dict[str, Any], parameters: dict[str, Any] | None = None,
                    session: Any = None) -> dict[str, Any]:
    """Start an execution; returns its handle (ARN, pipeline, region, parameters) as JSON."""
    return start(Deployment.model_validate(deployment), parameters, session=session).model_dump(mode="json")


def wait_for_execution(execution: dict[str, Any], poll_s: float = 60.0, timeout_s: float = 2 * 86400.0,
                       session: Any = None) -> dict[str, Any]:
    """Block until the execution ends; its final state as JSON."""
    return wait(Execution.model_validate(execution), poll_s=poll_s, timeout_s=timeout_s,
                session=session).model_dump(mode="json")


def fetch_verdict(execution: dict[str, Any], out_dir: str | None = None, session: Any = None) -> dict[str, Any]:
    """The execution's verdict and report (evaluation.json re-costed by billable time, report.html)."""
    handle = Execution.model_validate(execution)
    result = report(handle, out_dir=out_dir or f"bakeoff-report-{handle.arn.rsplit('/', 1)[-1]}", session=session)
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

    @dag(dag_id="bakeoff_trn_vs_gpu", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         tags=["bakeoff"])
    def bakeoff_trn_vs_gpu():
        checked = task(task_id="synth")(synth_pipeline)(CONFIG["spec"], CONFIG["bucket"], CONFIG["region"])
        deployment = task(task_id="deploy")(deploy_pipeline)(CONFIG["spec"], CONFIG["role_arn"], CONFIG["bucket"],
                                                             CONFIG["region"])
        checked >> deployment
        execution = task(task_id="start")(start_execution)(deployment, CONFIG["parameters"])
        final = task(task_id="wait")(wait_for_execution)(execution, CONFIG["poll_s"], CONFIG["timeout_s"])
        verdict = task(task_id="verdict")(fetch_verdict)(execution)
        final >> verdict
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
