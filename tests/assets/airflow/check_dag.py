"""Run inside a venv with Airflow and the Amazon provider (tests/e2e/test_airflow_dag.py makes it): parse
examples/orchestration/airflow_dag.py with a DagBag and render the provider tasks' templated fields, then
print what was found as JSON. No AWS call is made: rendering only fills in templates.

    python check_dag.py DAG_FILE XCOM_JSON

XCOM_JSON: what the upstream tasks pushed (`{"deploy": {...}, "start": "arn:..."}`), handed to the
templates through the rendering context's `ti.xcom_pull`, as a running task's context does.
"""
import json
import sys

from airflow.dag_processing.dagbag import DagBag


class PushedXCom:
    """The rendering context's task instance: only what the templates ask of it."""

    def __init__(self, pushed):
        self.pushed = pushed

    def xcom_pull(self, task_ids=None, key="return_value", **_):
        assert key == "return_value", key
        return self.pushed[task_ids]


def main(dag_file: str, pushed: str) -> None:
    bag = DagBag(dag_folder=dag_file)
    out = {"import_errors": {str(k): str(v) for k, v in bag.import_errors.items()}, "dags": sorted(bag.dags)}
    dag = bag.dags.get("bakeoff_trn_vs_gpu")
    if dag is None:
        print(json.dumps(out))
        return
    env = dag.get_template_env()
    ti = PushedXCom(json.loads(pushed))
    tasks = {}
    for task in dag.tasks:
        info = {"class": f"{type(task).__module__}.{type(task).__name__}", "trigger_rule": str(task.trigger_rule.value),
                "upstream": sorted(task.upstream_task_ids), "mode": getattr(task, "mode", None),
                "deferrable": getattr(task, "deferrable", None),
                "wait_for_completion": getattr(task, "wait_for_completion", None)}
        if task.task_id in ("start", "wait"):
            task.render_template_fields({"ti": ti, "run_id": "manual__2026-12-07T02:30:00.123+00:00", "dag": dag,
                                         "task": task}, env)
            info["rendered"] = {f: getattr(task, f) for f in task.template_fields}
        tasks[task.task_id] = info
    out["tasks"] = tasks
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
