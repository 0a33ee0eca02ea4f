"""Reading what training jobs left behind, in bounded memory.

A job's record of truth is its summary.json and metrics.jsonl, in its model dir
locally or inside the output.tar.gz SageMaker wrote. A bake-off can have a hundred
jobs of tens of thousands of logged steps each, so metrics are streamed into the
few things the evaluation needs (down-sampled curves, every validation record)
instead of being held as one dict per line.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

from bakeoff_runtime.contract import parse_job_name
from bakeoff_runtime.contract.documents import (
    MAX_SUMMARY_BYTES,
    JobMeta,
    JobRecord,
    JobSummary,
    MetricDigest,
    load_summary,
)
from bakeoff_runtime.contract.output_digest import COVERED, DIGEST_FILE, mismatch_of

CURVE_POINTS = 200       # points kept per training curve
MAX_EVAL_RECORDS = 2000  # validation records kept per job (they are few: one per eval_interval)


MAX_LINE_BYTES = 1 << 20  # a metrics.jsonl line longer than this is no record bakeoff wrote: skipped
SPOOL_BYTES = 8 << 20     # a member read from an archive is held in memory up to this, on disk beyond


def _from_tar(path: Path, name: str) -> bytes | None:
    found = _many_from_tar(path, (name,))
    handle = found.get(name)
    return handle.read(MAX_SUMMARY_BYTES) if handle is not None else None


def _many_from_tar(path: Path, names: tuple[str, ...]) -> dict[str, BinaryIO]:
    """The first regular member of each base name in `names`, in one pass over the archive (an
    output archive is read once, however many of its files the evaluation needs), each as a
    seekable file: in memory when small, spooled to disk when not (memory does not grow with a
    job's metrics)."""
    found: dict[str, BinaryIO] = {}
    try:
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                # Regular files only: extractfile() follows a link member to its target inside the
                # archive and raises KeyError when there is none (a hostile or broken output).
                if member.isfile() and base in names and base not in found:
                    handle = tar.extractfile(member)
                    if handle is not None:
                        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (the caller's)
                        shutil.copyfileobj(handle, spool)
                        spool.seek(0)
                        found[base] = cast(BinaryIO, spool)
                    if len(found) == len(names):
                        break
    except (tarfile.TarError, OSError, ValueError, KeyError):
        pass  # a truncated or corrupt archive: what was read before the damage stands
    return found


def _parse(line: bytes) -> dict | None:
    if len(line) > MAX_LINE_BYTES:
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None  # a torn last line of a job that died mid-write, or junk
    return record if isinstance(record, dict) else None


# As telemetry.py writes them (json.dumps' default separators).
_EVAL_MARKS = (b'"kind": "eval"',)


def _lines_of(fh: BinaryIO) -> Iterator[bytes]:
    """The file's lines, each at most MAX_LINE_BYTES (a longer one is read past, not held)."""
    fh.seek(0)
    while True:
        line = fh.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # the rest of an overlong line: skipped in bounded reads
                more = fh.readline(MAX_LINE_BYTES)
                if not more or more.endswith(b"\n"):
                    break
            yield b"{}"  # counted as a line, parsed as no record
            continue
        yield line.rstrip(b"\n")


def digest_metrics(data: bytes) -> MetricDigest:
    return digest_stream(io.BytesIO(data))


def digest_stream(fh: BinaryIO) -> MetricDigest:
    """A down-sampled training curve, every validation record (at most MAX_EVAL_RECORDS) and the step of
    the first non-finite training loss, from one job's metrics.jsonl, in two streaming passes: memory holds
    the points kept, never the file. The curve is sampled from training lines alone (every k-th line of
    both kinds could land on validation lines only: a Trainer that logs and evaluates at the same steps
    alternates them)."""
    evals: list[dict] = []
    n_train = 0
    first_nonfinite = None
    for line in _lines_of(fh):
        if not line:
            continue
        if any(mark in line for mark in _EVAL_MARKS):
            if len(evals) < MAX_EVAL_RECORDS and (record := _parse(line)) is not None:
                evals.append(record)
            continue
        n_train += 1
        if b"NaN" in line or b"Infinity" in line:
            record = _parse(line)
            value = (record or {}).get("train_loss")
            if record and record.get("kind") == "train" and isinstance(value, float) and not math.isfinite(value):
                step = record.get("step")
                if isinstance(step, (int, float)) and not isinstance(step, bool) and (
                        first_nonfinite is None or step < first_nonfinite):
                    first_nonfinite = int(step)
    stride = max(1, -(-n_train // CURVE_POINTS))
    train: list[list[float]] = []
    index = 0
    last = None
    for line in _lines_of(fh):
        if not line or any(mark in line for mark in _EVAL_MARKS):
            continue
        if index % stride == 0 or index == n_train - 1:  # every k-th, and always the last point of the curve
            record = _parse(line)
            point = _train_point(record)
            if point is not None:
                if index == n_train - 1 and index % stride:
                    last = point
                else:
                    train.append(point)
        index += 1
    if last is not None:
        train.append(last)
    return {"train_curve": train, "evals": evals, "train_records": n_train,
            "first_nonfinite_train_step": first_nonfinite}


def _train_point(record: dict | None) -> list[float] | None:
    if not record or record.get("kind") != "train":
        return None
    value, step = record.get("train_loss"), record.get("step", 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
        step = 0
    return [step, value]


def _outputs(job_dir: Path) -> tuple[dict[str, BinaryIO | None], bytes | None] | None:
    """The covered files (open, seekable) and the job's digest over them, from the first place that holds
    a summary.json: the job's own directories (opt/ml/model sorts before opt/ml/output/data, the copy
    SageMaker tars as output.tar.gz), else an output archive."""
    for path in sorted(job_dir.rglob("summary.json")):
        folder = path.parent
        files: dict[str, BinaryIO | None] = {
            name: (open(folder / name, "rb") if (folder / name).is_file() else None)  # noqa: SIM115
            for name in COVERED}
        digest = folder / DIGEST_FILE
        return files, _bounded_read(digest) if digest.is_file() else None
    for path in sorted(job_dir.rglob("*.tar.gz")):
        members = _many_from_tar(path, (*COVERED, DIGEST_FILE))
        if members.get("summary.json"):
            raw = members.get(DIGEST_FILE)
            return {name: members.get(name) for name in COVERED}, raw.read(MAX_SUMMARY_BYTES) if raw else None
    return None


def _bounded_read(path: Path, limit: int | None = None) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(limit or MAX_SUMMARY_BYTES)


def _sha256_of(fh: BinaryIO | None) -> str | None:
    if fh is None:
        return None
    fh.seek(0)
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    fh.seek(0)
    return h.hexdigest()


def named_job(directory_name: str) -> tuple[str, int] | None:
    """(leg, seed) of a job directory named as the Evaluate step fetches it (contract.job_name)."""
    return parse_job_name(directory_name)


def _not_this_job(job_dir: Path, summary: JobSummary) -> str | None:
    """An output fetched as one job (its directory is the job's name) that says it is another's."""
    named = parse_job_name(job_dir.name)
    leg, seed = summary.get("leg"), summary.get("seed")
    if not named or leg is None or seed is None or (named[0], str(named[1])) == (str(leg), str(seed)):
        return None
    return (f"its outputs changed after it finished: the output of {job_dir.name} is that of {leg}-s{seed}; "
            "its numbers are not used")


def load_job(job_dir: Path) -> JobRecord:
    """One job directory: its summary (or None, with why), metric digest, job.json and failure file."""
    summary, problem, problem_kind, digest = None, None, None, None
    found = _outputs(job_dir)
    if found is not None:
        files, raw_digest = found
        try:
            handle = files["summary.json"]
            summary, problem = load_summary(handle.read(MAX_SUMMARY_BYTES + 1) if handle else b"")
            problem_kind = "unreadable-output" if problem else None
            if summary is not None:
                shas = {name: _sha256_of(fh) for name, fh in files.items()}
                changed = (mismatch_of(shas, raw_digest, completed=summary.get("status") == "completed")
                           or _not_this_job(job_dir, summary))
                if changed:
                    summary, problem, problem_kind = None, changed, "changed-output"
            if summary is not None:
                metrics = files.get("metrics.jsonl")
                digest = digest_stream(metrics) if metrics is not None else digest_metrics(b"")
        finally:
            for fh in files.values():
                if fh is not None:
                    fh.close()
    # What the platform knows of the job (the local executor writes job.json beside the job
    # and into its output archive; on SageMaker `bakeoff report ARN` adds billed time later).
    meta_path = job_dir / "job.json"
    raw_meta = _bounded_read(meta_path) if meta_path.is_file() else None
    if raw_meta is None:
        for path in sorted(job_dir.rglob("*.tar.gz")):
            raw_meta = _from_tar(path, "job.json")
            if raw_meta:
                break
    meta: JobMeta = {}
    if raw_meta:
        try:
            loaded = json.loads(raw_meta)
            meta = cast(JobMeta, loaded) if isinstance(loaded, dict) else {}
        except ValueError:
            meta = {}
    failure_path = next(iter(sorted(job_dir.rglob("output/failure"))), None)
    failure_text = failure_path.read_text(errors="replace") if failure_path else None
    if failure_text is None:
        for path in sorted(job_dir.rglob("*.tar.gz")):
            raw = _from_tar(path, "failure")
            if raw:
                failure_text = raw.decode(errors="replace")
                break
    return {"dir": job_dir.name, "summary": summary, "summary_problem": problem, "summary_problem_kind": problem_kind,
            "meta": meta,
            "digest": digest or {"train_curve": [], "evals": [], "train_records": 0,
                                 "first_nonfinite_train_step": None},
            "failure": failure_text.strip() if failure_text else None}


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
        found = _many_from_tar(path, ("metrics.jsonl",)).get("metrics.jsonl")
        if found is not None:
            with found:
                for line in _lines_of(found):
                    record = _parse(line)
                    if record is not None:
                        yield record
            return


def load_jobs(jobs_dir: Path) -> list[JobRecord]:
    """Every job directory under `jobs_dir`, one at a time (memory is per job, not per bake-off)."""
    return [load_job(p) for p in sorted(Path(jobs_dir).iterdir()) if p.is_dir()]
