"""The parent MLflow run of a bake-off, written by the evaluation step.

Jobs run in separate processes (or separate SageMaker jobs), so each child logs
its own run; the evaluation then creates (or finds) one parent per bake-off
execution and links every child to it through the `mlflow.parentRunId` tag.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def log_parent(cfg: dict[str, Any], evaluation: dict[str, Any], evaluation_path: Path,
               extra_artifacts: list[Path] = ()) -> dict[str, Any]:
    tracking_uri, experiment = cfg.get("tracking_uri"), cfg.get("experiment")
    if not tracking_uri or not experiment:
        return {"enabled": False}
    try:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        exp = client.get_experiment_by_name(experiment)
        exp_id = exp.experiment_id if exp else client.create_experiment(
            experiment, artifact_location=cfg.get("artifact_location"))
        key = cfg.get("parent_key") or str(evaluation.get("spec_hash"))
        found = client.search_runs([exp_id], filter_string=f"tags.`bakeoff.parent_key` = '{key}'", max_results=1)
        tags = {"bakeoff.parent_key": key, "bakeoff.name": str(evaluation.get("bakeoff")),
                "bakeoff.spec_hash": str(evaluation.get("spec_hash")), "bakeoff.role": "parent",
                "bakeoff.verdict": evaluation["verdict"], "mlflow.runName": f"{evaluation.get('bakeoff')}"}
        if found:
            run_id = found[0].info.run_id
        else:
            run_id = client.create_run(exp_id, run_name=str(evaluation.get("bakeoff")), tags=tags).info.run_id
        children = []
        for leg, fig in evaluation["legs"].items():
            for run in fig["runs"]:
                if run.get("mlflow_run_id"):
                    children.append(run["mlflow_run_id"])
                    try:
                        client.set_tag(run["mlflow_run_id"], "mlflow.parentRunId", run_id)
                        client.set_tag(run["mlflow_run_id"], "bakeoff.spec_hash", str(evaluation.get("spec_hash")))
                    except Exception as exc:  # a child logged to another store
                        print(f"[bakeoff] WARNING: cannot link MLflow run {run['mlflow_run_id']}: {exc}",
                              file=sys.stderr)
        metrics, params = [], [Param("parity.metric", str(evaluation["parity"]["metric"])),
                               Param("parity.margin", str(evaluation["parity"]["margin"])),
                               Param("parity.alpha", str(evaluation["parity"]["alpha"])),
                               Param("parity.baseline", str(evaluation["parity"]["baseline"]))]
        for leg, fig in evaluation["legs"].items():
            params.append(Param(f"{leg}.instance_type", str(fig.get("instance_type"))))
            params.append(Param(f"{leg}.backend", str(fig.get("backend"))))
            for name, value in (("metric_mean", fig["metric"].get("mean")), ("metric_std", fig["metric"].get("std")),
                                ("throughput", fig.get("throughput_mean")),
                                ("time_to_first_step_s", fig.get("time_to_first_step_s_mean")),
                                ("compile_time_s", fig.get("compile_time_s_mean")),
                                ("wall_time_s", fig.get("wall_time_s_mean")),
                                ("cost_per_run_usd", fig.get("cost_per_run_usd_mean")),
                                ("completed", fig.get("completed"))):
                if isinstance(value, (int, float)):
                    metrics.append(Metric(f"{leg}.{name}", float(value), 0, 0))
        existing = {p for p in client.get_run(run_id).data.params}
        params = [p for p in params if p.key not in existing]
        client.log_batch(run_id, metrics=metrics, params=params,
                         tags=[RunTag(k, v) for k, v in tags.items()])
        client.log_artifact(run_id, str(evaluation_path))
        for path in extra_artifacts:
            if Path(path).exists():
                client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, "FINISHED")
        return {"enabled": True, "parent_run_id": run_id, "children": children}
    except Exception as exc:  # the verdict never depends on MLflow
        print(f"[bakeoff] WARNING: MLflow parent run not logged: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return {"enabled": True, "error": f"{exc.__class__.__name__}: {exc}"}
