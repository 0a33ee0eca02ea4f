"""What a job's MLflow run records beside its metrics, in MLflow's own places: the data it trained on as
dataset inputs (the run page's "Datasets used" and the runs table's Dataset column), and the machine's load as
system metrics (the run page's "System metrics" charts). Both run in the job's MLflow client process
(tracking/sink.py `serve`), never in the training process, and a failure of either is said once and
otherwise ignored: they never stop, slow or fail the job.

Datasets: one MLflow dataset per data channel the job was given (its code channel aside), with a digest of
the channel's content, so the runs of every leg show the same digest when they saw the same data. The digest
is the one the compiler names the channel's S3 prefix with (`data/<digest>/<channel>/`, pipelines/sagemaker/
compiler.py `_channel_assets`: sha256 over "name\\0sha256(file)\\n" lines, 32 hex digits), so it can be
checked against the pipeline's own data. A channel larger than HASH_LIMIT_BYTES is digested from its file
names and sizes instead (said in the dataset's name), so a job on terabytes never reads them twice.
MLflow API: `MlflowClient.log_inputs` with `mlflow.entities.DatasetInput` / `InputTag`, `MetaDataset` (mlflow/
data/meta_dataset.py: a dataset that holds only metadata, digest given), `resolve_dataset_source` (mlflow/data/
dataset_source_registry.py), the `mlflow.data.context` input tag (MLFLOW_DATASET_CONTEXT in mlflow/utils/
mlflow_tags.py).

System metrics: MLflow's own psutil-based monitor (mlflow/system_metrics/system_metrics_monitor.py
`SystemMetricsMonitor`, what `mlflow.start_run(log_system_metrics=True)` starts; docs: "System Metrics",
https://mlflow.org/docs/latest/ml/tracking/system-metrics/), started on the job's run once it exists and
finished before the run is ended. Its sampling interval is MLflow's MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL
when set, else SAMPLING_INTERVAL_S.
"""
from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Any

HASH_LIMIT_BYTES = 4 << 30
DATASET_ATTEMPTS = 3
SAMPLING_INTERVAL_S = 5


def channel_digest(path: Path) -> tuple[str, bool]:
    """(digest, whether it covers the content): the compiler's content address of a channel."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    size = sum(f.stat().st_size for f in files)
    whole = size <= HASH_LIMIT_BYTES
    lines = []
    for f in files:
        name = f.relative_to(path).as_posix() if path.is_dir() else f.name
        if whole:
            h = hashlib.sha256()
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            lines.append(f"{name}\0{h.hexdigest()}\n")
        else:
            lines.append(f"{name}\0{f.stat().st_size}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()[:32], whole


def log_datasets(client, run_id: str, channels: dict[str, str]) -> list[str]:
    """One dataset input per channel on the run; the digests logged."""
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    inputs, digests = [], []
    for name, where in sorted(channels.items()):
        path = Path(where)
        if name == "code" or not path.exists():
            continue
        digest, whole = channel_digest(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the registry's note on choosing among sources
            source = resolve_dataset_source(str(path))
        # Dataset marks `profile` abstract without being an ABC (mlflow/data/dataset.py) and MetaDataset leaves it
        # out: made as MetaDataset's own docstring shows, it works; only the type checker objects.
        dataset = MetaDataset(source, name=name if whole else f"{name} (digest of names and sizes)",  # type: ignore[abstract]
                              digest=digest)
        inputs.append(DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", name)]))
        digests.append(digest)
    for attempt in range(DATASET_ATTEMPTS) if inputs else ():
        try:
            client.log_inputs(run_id, datasets=inputs)
            break
        except Exception:
            # Two jobs logging the same dataset at once: the store's insert of the one dataset row the
            # experiment shares races (sqlite: "UNIQUE constraint failed: datasets.experiment_id, datasets.name,
            # datasets.digest", mlflow/store/tracking/sqlalchemy_store.py _log_inputs_impl); the next try finds it.
            if attempt == DATASET_ATTEMPTS - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    return digests


def start_system_metrics(run_id: str, tracking_uri: str) -> Any:
    """MLflow's system-metrics monitor on the run (None when it cannot start: said on stderr)."""
    try:
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        monitor = SystemMetricsMonitor(run_id, sampling_interval=SAMPLING_INTERVAL_S, tracking_uri=tracking_uri)
        monitor.start()
        return monitor
    except Exception as exc:  # psutil missing, an unreadable /proc: the job goes on without them
        print(f"[bakeoff] MLflow: no system metrics for this run ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None


def finish_system_metrics(monitor: Any) -> None:
    if monitor is None:
        return
    try:
        monitor.finish()
    except Exception as exc:
        print(f"[bakeoff] MLflow: system metrics not flushed ({type(exc).__name__}: {exc})", file=sys.stderr)
