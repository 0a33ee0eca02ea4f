"""Script mode's MLflow run: the job's child run, made before the script starts, shared with it.

The launcher creates the run the Runtime would have (same tags, so the Evaluate step finds it by
job key) and hands it to the script as `MLFLOW_RUN_ID` (with `MLFLOW_EXPERIMENT_NAME`): a script
that logs to MLflow itself resumes it on `mlflow.start_run()` (mlflow/tracking/fluent.py: "If you
pass a run_id or the MLFLOW_RUN_ID environment variable is set ... other parameters are ignored"),
so its own metrics land beside the ones bakeoff reads from its output, and the verdict may use
them. MLflow being down costs nothing but this run: the sink says so once and the job goes on.
Torch-free.
"""
from __future__ import annotations

import math
import os
from typing import Any

from bakeoff_runtime.contract import MLFLOW_WRITES_ENV, JobEnvironment, TrainingEnv
from bakeoff_runtime.contract.script_mode import LEG_HP, SEED_HP
from bakeoff_runtime.tracking.identity import mlflow_identity
from bakeoff_runtime.tracking.script_writes import RECORD_FILE, own_values, read_record
from bakeoff_runtime.tracking.sink import MlflowSink

READY_WAIT_S = 30.0


class ScriptRun:
    def __init__(self, env: TrainingEnv, arguments: list[str]):
        job = JobEnvironment.from_environ()
        hps = env.hyperparameters
        leg, seed = hps.get(LEG_HP) or job.leg, hps.get(SEED_HP)
        info = {"bakeoff": job.name, "leg": leg, "seed": seed, "backend": job.backend,
                "instance_type": job.instance_type or env.instance_type, "instance_count": env.host_count,
                "emulated_on": job.emulated_on or None, "job_key": job.job_key or None,
                "spec_hash": job.spec_hash or None, "mode": "script"}
        tags = {f"bakeoff.{k}": str(v) for k, v in mlflow_identity(info, job.leg_backend).items()
                if v not in (None, "")}
        tags["mlflow.runName"] = f"{leg}-s{seed}"
        self.experiment = job.mlflow_experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME")
        self.sink = MlflowSink(os.environ.get("MLFLOW_TRACKING_URI"), self.experiment, f"{leg}-s{seed}", tags,
                               params={**{k: v for k, v in hps.items() if not k.startswith("bakeoff_")},
                                       "leg": leg, "seed": seed, "arguments": " ".join(arguments)},
                               artifact_location=job.mlflow_artifact_location or None, job_key=job.job_key or None,
                               datasets={name: str(path) for name, path in env.channels.items() if name != "code"})
        self.ours: set[str] = set()
        self.record = env.output_dir / RECORD_FILE
        self.record.unlink(missing_ok=True)  # an earlier attempt's: this script's writes only
        self.foreign: dict[str, int] = {}  # metric -> values in the run its script did not log
        if self.sink.enabled:
            self.sink.wait_ready(READY_WAIT_S)

    @property
    def run_id(self) -> str | None:
        return self.sink.run_id if not self.sink.error else None

    def environment(self) -> dict[str, str]:
        """What points the script's own MLflow calls at this run."""
        if not self.run_id or not self.experiment:
            return {}
        return {"MLFLOW_RUN_ID": self.run_id, "MLFLOW_EXPERIMENT_NAME": self.experiment,
                MLFLOW_WRITES_ENV: str(self.record)}

    def log(self, name: str, value: float, step: int) -> None:
        self.ours.add(name)
        if math.isfinite(value):
            self.sink.log_metrics({name: value}, step)

    def logged_by_script(self) -> dict[str, list[float]]:
        """The metrics the script logged to the run itself (not those bakeoff read from its output): only the
        values its own processes recorded logging (tracking/script_writes.py); the others, logged to this run
        from elsewhere, are counted in `foreign` and left out."""
        if not self.run_id:
            return {}
        try:
            from mlflow.tracking import MlflowClient

            from bakeoff_runtime.tracking.plugins import quiet_header_provider

            quiet_header_provider(os.environ.get("MLFLOW_TRACKING_URI"))
            client = MlflowClient(tracking_uri=os.environ.get("MLFLOW_TRACKING_URI"))
            names = set(client.get_run(self.run_id).data.metrics) - self.ours
            history = {name: [(m.step, m.value) for m in sorted(client.get_metric_history(self.run_id, name),
                                                                key=lambda m: (m.step, m.timestamp))]
                       for name in sorted(names)}
        except Exception as exc:  # the verdict does not need MLflow: the log regexes still count
            print(f"[bakeoff] WARNING: cannot read back what the script logged to MLflow: "
                  f"{type(exc).__name__}: {exc}", flush=True)
            return {}
        own, self.foreign = own_values(history, read_record(self.record, self.run_id))
        if self.foreign:
            print(f"[bakeoff] WARNING: {self.foreign_note()}", flush=True)
        return own

    def foreign_note(self) -> str:
        said = ", ".join(f"{name} ({n} value{'s' if n > 1 else ''})" for name, n in sorted(self.foreign.items()))
        return (f"MLflow: this job's run holds values its script did not log, written to the run by another "
                f"process: {said}; not used")

    def close(self, status: str) -> dict[str, Any]:
        mlflow_status = {"completed": "FINISHED", "diverged": "FAILED"}.get(status, "FAILED")
        self.sink.set_tags({"bakeoff.status": status})
        return self.sink.close(mlflow_status)
