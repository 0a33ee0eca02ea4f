"""Reading what training jobs left behind, in bounded memory.

A job's record of truth is its summary.json and metrics.jsonl, in its model dir
locally or inside the output.tar.gz SageMaker wrote. A bake-off can have a hundred
jobs of tens of thousands of logged steps each, so metrics are streamed into the
few things the evaluation needs (down-sampled curves, every validation record)
instead of being held as one dict per line.
"""
from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path
from typing import Any, Iterable, Iterator

CURVE_POINTS = 200       # points kept per training curve
MAX_EVAL_RECORDS = 2000  # validation records kept per job (they are few: one per eval_interval)


def _from_tar(path: Path, name: str) -> bytes | None:
    try:
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.name.rsplit("/", 1)[-1] == name:
                    handle = tar.extractfile(member)
                    return handle.read() if handle else None
    except (tarfile.TarError, OSError, ValueError):
        return None
    return None


def _parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None  # a torn last line of a job that died mid-write
    return record if isinstance(record, dict) else None


def digest_metrics(lines: Iterable[bytes], total_lines: int | None = None) -> dict[str, Any]:
    """Down-sampled training curve plus every validation record.

    Only validation lines and every k-th training line are JSON-decoded; the rest are
    skipped by a substring test, so the cost grows with the points kept, not the steps.
    """
    stride = max(1, -(-total_lines // CURVE_POINTS)) if total_lines else 1
    train: list[list[float]] = []
    evals: list[dict] = []
    last_train = None
    n_train = 0
    first_nonfinite_train = None
    for line in lines:
        if b'"kind": "eval"' in line or b'"kind":"eval"' in line:
            record = _parse(line)
            if record is not None and len(evals) < MAX_EVAL_RECORDS:
                evals.append(record)
            continue
        if b'"kind": "train"' not in line and b'"kind":"train"' not in line:
            continue
        n_train += 1
        nonfinite = b"NaN" in line or b"Infinity" in line
        if n_train % stride and not nonfinite:
            last_train = line
            continue
        record = _parse(line)
        if record is None:
            continue
        value = record.get("train_loss")
        if isinstance(value, (int, float)):
            if not math.isfinite(value) and first_nonfinite_train is None:
                first_nonfinite_train = record.get("step")
            train.append([record.get("step", 0), value])
        last_train = None
    if last_train is not None:  # always keep the last point of the curve
        record = _parse(last_train)
        if record is not None and isinstance(record.get("train_loss"), (int, float)):
            train.append([record.get("step", 0), record["train_loss"]])
    if len(train) > 2 * CURVE_POINTS:  # no line count was given: thin what was kept
        step = -(-len(train) // CURVE_POINTS)
        train = train[::step] + ([train[-1]] if (len(train) - 1) % step else [])
    return {"train_curve": train, "evals": evals, "train_records": n_train,
            "first_nonfinite_train_step": first_nonfinite_train}


def _lines(data: bytes) -> Iterator[bytes]:
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        yield data[start:end]
        start = end + 1


def _digest_bytes(data: bytes) -> dict[str, Any]:
    return digest_metrics(_lines(data), data.count(b'"kind": "train"') + data.count(b'"kind":"train"'))


def _load_summary(raw: bytes | str) -> tuple[dict | None, str | None]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        return None, f"summary.json is not valid JSON ({exc.msg} at line {exc.lineno})"
    if not isinstance(body, dict):
        return None, "summary.json is not a JSON object"
    return body, None


def load_job(job_dir: Path) -> dict[str, Any]:
    """One job directory: its summary (or None, with why), metric digest, job.json and failure file."""
    summary, problem, digest = None, None, None
    # opt/ml/model sorts before opt/ml/output/data (the copy SageMaker tars as output.tar.gz).
    for path in sorted(job_dir.rglob("summary.json")):
        summary, problem = _load_summary(path.read_bytes())
        metrics = path.with_name("metrics.jsonl")
        digest = _digest_bytes(metrics.read_bytes()) if metrics.exists() else None
        break
    if summary is None and problem is None:
        for path in sorted(job_dir.rglob("*.tar.gz")):
            raw = _from_tar(path, "summary.json")
            if raw:
                summary, problem = _load_summary(raw)
                digest = _digest_bytes(_from_tar(path, "metrics.jsonl") or b"")
                break
    meta_path = job_dir / "job.json"
    meta: dict[str, Any] = {}
    if meta_path.exists():
        try:
            loaded = json.loads(meta_path.read_text())
            meta = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            meta = {}
    failure = next(iter(sorted(job_dir.rglob("output/failure"))), None)
    return {"dir": job_dir.name, "summary": summary, "summary_problem": problem, "meta": meta,
            "digest": digest or {"train_curve": [], "evals": [], "train_records": 0,
                                 "first_nonfinite_train_step": None},
            "failure": failure.read_text(errors="replace").strip() if failure else None}


def iter_records(job_dir: Path) -> Iterator[dict]:
    """Every metric record a job logged, streamed (for the MLflow back-fill)."""
    for path in sorted(Path(job_dir).rglob("metrics.jsonl")):
        with open(path, "rb") as fh:
            for line in fh:
                record = _parse(line)
                if record is not None:
                    yield record
        return
    for path in sorted(Path(job_dir).rglob("*.tar.gz")):
        raw = _from_tar(path, "metrics.jsonl")
        if raw:
            for line in _lines(raw):
                record = _parse(line)
                if record is not None:
                    yield record
            return


def load_jobs(jobs_dir: Path) -> list[dict[str, Any]]:
    """Every job directory under `jobs_dir`, one at a time (memory is per job, not per bake-off)."""
    return [load_job(p) for p in sorted(Path(jobs_dir).iterdir()) if p.is_dir()]
