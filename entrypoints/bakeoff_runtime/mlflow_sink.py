"""MLflow logging that never stops or slows training.

A daemon thread owns the MLflow client: the training loop only puts records on a
bounded queue (dropping, and counting, when it is full). If mlflow is missing or
the tracking server is down, the sink says so once and training carries on;
metrics.jsonl and summary.json remain the record of truth.

One MLflow run per job: a job that runs again under the same job key (a re-run, a
retry) replaces the runs of its earlier attempts, which are closed (KILLED if they
were left RUNNING by a killed process) and moved to MLflow's trash, so the experiment
shows one child per job and no curve is drawn twice.

Params: a job's run carries only what identifies it or differs between legs (CHILD_PARAMS), so
MLflow's compare view is not a table of identical rows; the hyperparameters every job shares
go into one `bakeoff.hyperparameters` tag, which the evaluation logs as params of the parent.
"""
from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from typing import Any

_STOP = object()

# What identifies a job or differs between legs by design (the batch split follows the devices).
CHILD_PARAMS = ("leg", "backend", "instance_type", "precision", "seed", "instance_count", "world_size",
                "per_device_batch_size", "gradient_accumulation_steps", "emulated_on")
SHARED_TAG = "bakeoff.hyperparameters"
MAX_TAG_CHARS = 8000  # MLflow's limit on a tag value (mlflow/utils/validation.py MAX_TAG_VAL_LENGTH)


def split_params(params: dict[str, Any], tags: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the child's params, the shared hyperparameters as one tag): identifying values come from
    the run's `bakeoff.*` tags when the hyperparameters do not hold them (backend, instance type)."""
    child = {}
    for key in CHILD_PARAMS:
        value = params.get(key, tags.get(f"bakeoff.{key}"))
        if value not in (None, ""):
            child[key] = str(value)
    shared = {k: v for k, v in sorted(params.items()) if k not in CHILD_PARAMS}
    body = json.dumps(shared, sort_keys=True, default=str)
    return child, ({SHARED_TAG: body} if shared and len(body) <= MAX_TAG_CHARS else {})


class MlflowSink:
    def __init__(self, tracking_uri: str | None, experiment: str | None, run_name: str,
                 tags: dict[str, str], params: dict[str, Any], artifact_location: str | None = None,
                 maxsize: int = 10_000, job_key: str | None = None):
        self.enabled = bool(tracking_uri) and bool(experiment)
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.tags = tags
        self.params = params
        self.artifact_location = artifact_location
        self.job_key = job_key
        self.replaced: list[str] = []
        self.wait_s = 0.0
        self.run_id: str | None = None
        self.error: str | None = None
        self.dropped = 0
        from .mlflow_names import Cleaner

        self._clean = Cleaner(run_name)
        self._q: queue.Queue = queue.Queue(maxsize=maxsize)
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="bakeoff-mlflow", daemon=True)
            self._thread.start()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the run exists (or the sink gave up): its id is known only then."""
        return self._ready.wait(timeout)

    # --- called from the training loop -------------------------------------------------
    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self._put(("metrics", metrics, step))

    def set_tags(self, tags: dict[str, str]) -> None:
        self._put(("tags", tags, None))

    def log_artifact(self, path: str) -> None:
        self._put(("artifact", path, None))

    def _put(self, item) -> None:
        if not self.enabled or self.error:
            return
        try:
            self._q.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def close(self, status: str = "FINISHED", timeout: float | None = None) -> dict[str, Any]:
        """Flush what is queued (bounded by `timeout`) and end the run. The time spent here is
        `wait_s`: MLflow's, not training's (the local executor keeps it out of billable time)."""
        if timeout is None:
            timeout = float(os.environ.get("BAKEOFF_MLFLOW_FLUSH_TIMEOUT", 30))
        started = time.time()
        if self._thread is not None:
            try:
                self._q.put(("end", status, None), timeout=5)
                self._q.put(_STOP, timeout=5)
            except queue.Full:
                pass
            self._thread.join(timeout)
            if self._thread.is_alive():
                self.error = self.error or f"MLflow did not finish within {timeout:.0f}s; gave up"
        self.wait_s = round(time.time() - started, 3)
        return {"enabled": self.enabled, "run_id": self.run_id, "error": self.error, "dropped": self.dropped,
                "wait_s": self.wait_s, **({"replaced": self.replaced} if self.replaced else {})}

    # --- the logging thread -------------------------------------------------------------
    def _warn(self, msg: str) -> None:
        self.error = msg
        print(f"[bakeoff] WARNING: MLflow logging disabled: {msg} (training continues)", file=sys.stderr, flush=True)

    def _run(self) -> None:
        from .mlflow_net import bound_waits, unreachable

        # A dead tracking server must cost seconds, not MLflow's default minutes of retries.
        bound_waits()
        down = unreachable(self.tracking_uri)
        if down:
            self._warn(f"tracking server {self.tracking_uri!r} is unreachable: {down}")
            self._ready.set()
            return self._drain()
        try:
            from .mlflow_install import use_installed_mlflow

            use_installed_mlflow()
            import mlflow
            from mlflow.entities import Metric, RunTag
            from mlflow.tracking import MlflowClient
        except Exception as exc:  # mlflow is optional inside training images
            self._warn(f"mlflow not importable ({exc.__class__.__name__}: {exc})")
            return self._drain()
        try:
            experiment = self.experiment
            assert experiment  # the thread runs only when enabled: with a tracking URI and an experiment
            client = MlflowClient(tracking_uri=self.tracking_uri)
            exp = client.get_experiment_by_name(experiment)
            if exp is None:
                try:
                    exp_id = client.create_experiment(experiment, artifact_location=self.artifact_location)
                except Exception:  # created concurrently by another job
                    concurrent = client.get_experiment_by_name(experiment)
                    if concurrent is None:
                        raise
                    exp_id = concurrent.experiment_id
            else:
                exp_id = exp.experiment_id
            earlier = self._earlier_attempts(client, exp_id)
            child_params, shared_tag = split_params(self.params, self.tags)
            run = client.create_run(exp_id, run_name=self.run_name,
                                    tags=self._clean.tags({**self.tags, **shared_tag}))
            self.run_id = run.info.run_id
            self._replace(client, earlier)
            params = [mlflow.entities.Param(k, v) for k, v in self._clean.params(child_params).items()]
            for i in range(0, len(params), 100):
                client.log_batch(self.run_id, params=params[i:i + 100])
        except Exception as exc:
            self._warn(f"cannot reach tracking store {self.tracking_uri!r} ({exc.__class__.__name__}: {exc})")
            return self._drain()
        finally:
            self._ready.set()

        pending: list = []
        while True:
            item = self._q.get()
            if item is _STOP:
                break
            kind, payload, step = item
            try:
                if kind == "metrics":
                    ts = int(time.time() * 1000)
                    pending.extend(Metric(k, float(v), ts, step) for k, v in self._clean.metrics(payload).items()
                                   if v is not None)
                    # Batch while more is queued: one round trip per burst, not per value.
                    if self._q.empty() or len(pending) >= 500:
                        client.log_batch(self.run_id, metrics=pending)
                        pending = []
                    continue
                if pending:
                    client.log_batch(self.run_id, metrics=pending)
                    pending = []
                if kind == "tags":
                    client.log_batch(self.run_id, tags=[RunTag(k, v) for k, v in self._clean.tags(payload).items()])
                elif kind == "artifact":
                    if os.path.exists(payload):
                        client.log_artifact(self.run_id, payload)
                elif kind == "end":
                    client.set_terminated(self.run_id, status=payload)
            except Exception as exc:
                self._warn(f"logging to {self.tracking_uri!r} failed ({exc.__class__.__name__}: {exc})")
                return self._drain()

    def _earlier_attempts(self, client, exp_id: str) -> list:
        if not self.job_key:
            return []
        return list(client.search_runs([exp_id], filter_string=f"tags.`bakeoff.job_key` = '{self.job_key}'",
                                       max_results=100))

    def _replace(self, client, earlier: list) -> None:
        for old in earlier:
            if old.info.status == "RUNNING":  # its process was killed before it could end the run
                client.set_terminated(old.info.run_id, status="KILLED")
            client.set_tag(old.info.run_id, "bakeoff.replaced_by", self.run_id)
            client.delete_run(old.info.run_id)
            self.replaced.append(old.info.run_id)

    def _drain(self) -> None:
        while True:
            try:
                if self._q.get_nowait() is _STOP:
                    return
            except queue.Empty:
                return
