"""The parent MLflow run of a bake-off, written by the evaluation step.

Jobs run in separate processes (or separate SageMaker jobs), so each child logs
its own run; the evaluation then creates (or finds) one parent per bake-off
execution and links every child to it through the `mlflow.parentRunId` tag.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

_STATUS = {"completed": "FINISHED", "diverged": "FAILED", "lost": "KILLED"}


def _find_child(client, exp_id: str, run: dict) -> Any:
    """The job's own MLflow run: by the id its summary names, else by its job key (a job
    killed before it could write its summary still tagged its run with the key)."""
    if run.get("mlflow_run_id"):
        try:
            found = client.get_run(run["mlflow_run_id"])
            if found.info.lifecycle_stage == "active":
                return found
        except Exception:
            pass
    if run.get("job_key"):
        hits = client.search_runs([exp_id], filter_string=f"tags.`bakeoff.job_key` = '{run['job_key']}'",
                                  order_by=["attributes.start_time DESC"], max_results=1)
        if hits:
            return hits[0]
    return None


def backfill_child(client, exp_id: str, leg: str, figures: dict, run: dict, jobs_dir: Path | None) -> str:
    """Create the MLflow run a job could not log itself (no MLflow in its image, no network,
    the server down), from what the job left: metrics.jsonl and summary.json."""
    from mlflow.entities import Metric, Param, RunTag

    from .job_outputs import iter_records

    tags = {"mlflow.runName": f"{leg}-s{run['seed']}", "bakeoff.leg": leg, "bakeoff.seed": str(run["seed"]),
            "bakeoff.backend": str(figures.get("backend")), "bakeoff.instance_type": str(figures.get("instance_type")),
            "bakeoff.status": str(run["status"]), "bakeoff.backfilled": "true",
            **({"bakeoff.job_key": str(run["job_key"])} if run.get("job_key") else {})}
    run_id = client.create_run(exp_id, run_name=tags["mlflow.runName"], tags=tags).info.run_id
    client.log_batch(run_id, params=[Param(k, str(v)) for k, v in (
        ("leg", leg), ("seed", run["seed"]), ("backend", figures.get("backend")),
        ("instance_type", figures.get("instance_type")), ("precision", figures.get("precision")))])
    batch: list = []
    job_dir = (jobs_dir / run["job"]) if (jobs_dir and run.get("job")) else None
    if job_dir is not None and job_dir.exists():
        for record in iter_records(job_dir):
            step, ts = int(record.get("step", 0)), int(1000 * float(record.get("time_s") or 0))
            for key, value in record.items():
                if key in ("kind", "step", "time_s") or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                if value == value and abs(value) != float("inf"):
                    batch.append(Metric(key, float(value), ts, step))
            if len(batch) >= 900:
                client.log_batch(run_id, metrics=batch)
                batch = []
        summaries = sorted(job_dir.rglob("summary.json"))
        if summaries:
            client.log_artifact(run_id, str(summaries[0]))
    if batch:
        client.log_batch(run_id, metrics=batch)
    status = _STATUS.get(run["status"], "FAILED")
    client.log_batch(run_id, tags=[RunTag("bakeoff.backfilled_from", str(run.get("job")))])
    client.set_terminated(run_id, status)
    return run_id


def log_parent(cfg: dict[str, Any], evaluation: dict[str, Any], evaluation_path: Path,
               extra_artifacts: list[Path] = (), jobs_dir: Path | None = None) -> dict[str, Any]:
    tracking_uri, experiment = cfg.get("tracking_uri"), cfg.get("experiment")
    if not tracking_uri or not experiment:
        return {"enabled": False}
    from .mlflow_net import bound_waits, unreachable

    bound_waits()
    down = unreachable(tracking_uri)
    if down:
        print(f"[bakeoff] WARNING: MLflow parent run not logged: the tracking server is unreachable: {down}",
              file=sys.stderr)
        return {"enabled": True, "error": f"unreachable: {down}"}
    try:
        from .mlflow_install import use_installed_mlflow

        use_installed_mlflow()
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
                "bakeoff.verdict": evaluation["verdict"], "mlflow.runName": f"{evaluation.get('bakeoff')}",
                # Throughput and cost metrics below are emulated on a local run: say so where they are read.
                "bakeoff.speed_and_cost": str((evaluation.get("speed") or {}).get("label", ""))}
        if found:
            run_id = found[0].info.run_id
        else:
            run_id = client.create_run(exp_id, run_name=str(evaluation.get("bakeoff")), tags=tags).info.run_id
        children, backfilled = [], []
        for leg, fig in evaluation["legs"].items():
            for run in fig["runs"]:
                child = _find_child(client, exp_id, run) if run.get("job") else None
                if child is not None:
                    run["mlflow_run_id"] = child.info.run_id
                    if child.info.status == "RUNNING":  # its process died before it could end the run
                        client.set_terminated(child.info.run_id, _STATUS.get(run["status"], "FAILED"))
                elif run.get("job"):
                    try:
                        run["mlflow_run_id"] = backfill_child(client, exp_id, leg, fig, run, jobs_dir)
                        run["mlflow_backfilled"] = True
                        backfilled.append(run["mlflow_run_id"])
                    except Exception as exc:
                        print(f"[bakeoff] WARNING: cannot back-fill the MLflow run of {leg} seed {run['seed']}: "
                              f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
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
        data = client.get_run(run_id).data
        params = [p for p in params if p.key not in data.params]
        # Written once: a re-evaluation logs only the figures that changed.
        metrics = [m for m in metrics if data.metrics.get(m.key) != m.value]
        client.log_batch(run_id, metrics=metrics, params=params,
                         tags=[RunTag(k, v) for k, v in tags.items()])
        client.log_artifact(run_id, str(evaluation_path))
        for path in extra_artifacts:
            if Path(path).exists():
                client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, "FINISHED")
        return {"enabled": True, "parent_run_id": run_id, "children": children, "backfilled": backfilled}
    except Exception as exc:  # the verdict never depends on MLflow
        print(f"[bakeoff] WARNING: MLflow parent run not logged: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return {"enabled": True, "error": f"{exc.__class__.__name__}: {exc}"}
