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
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from bakeoff_runtime.contract import parse_job_name
from bakeoff_runtime.contract.documents import DocumentError, JobMeta, JobRecord, JobSummary, MetricDigest, summary_from
from bakeoff_runtime.contract.output_digest import COVERED, DIGEST_FILE, mismatch

CURVE_POINTS = 200       # points kept per training curve
MAX_EVAL_RECORDS = 2000  # validation records kept per job (they are few: one per eval_interval)


def _from_tar(path: Path, name: str) -> bytes | None:
    return _many_from_tar(path, (name,)).get(name)


def _many_from_tar(path: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    """The first regular member of each base name in `names`, in one pass over the archive (an
    output archive is read once, however many of its files the evaluation needs)."""
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                # Regular files only: extractfile() follows a link member to its target inside the
                # archive and raises KeyError when there is none (a hostile or broken output).
                if member.isfile() and base in names and base not in found:
                    handle = tar.extractfile(member)
                    if handle is not None:
                        found[base] = handle.read()
                    if len(found) == len(names):
                        break
    except (tarfile.TarError, OSError, ValueError, KeyError):
        pass  # a truncated or corrupt archive: what was read before the damage stands
    return found


def _parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None  # a torn last line of a job that died mid-write
    return record if isinstance(record, dict) else None


# As telemetry.py writes them (json.dumps' default separators).
_EVAL_MARKS = (b'"kind": "eval"',)


def _line_at(data: bytes, pos: int) -> bytes:
    start = data.rfind(b"\n", 0, pos) + 1
    end = data.find(b"\n", pos)
    return data[start:end if end >= 0 else len(data)]


def _lines_with(data: bytes, marks: tuple[bytes, ...], limit: int) -> list[bytes]:
    """The lines holding any of `marks`, in order, found by byte search (no per-line loop)."""
    found: list[tuple[int, bytes]] = []
    for mark in marks:
        pos = data.find(mark)
        while pos >= 0 and len(found) < limit:
            found.append((pos, _line_at(data, pos)))
            end = data.find(b"\n", pos)
            pos = data.find(mark, end + 1) if end >= 0 else -1
    return [line for _, line in sorted(found)]


def digest_metrics(data: bytes) -> MetricDigest:
    """A down-sampled training curve, every validation record and the step of the first
    non-finite training loss, from one job's metrics.jsonl.

    Byte searches find the validation lines and any NaN/Infinity; the training curve takes
    every k-th line of a split done in C. Only the lines kept are JSON-decoded, so the cost
    grows with the points kept, not with the steps logged.
    """
    evals = [r for r in map(_parse, _lines_with(data, _EVAL_MARKS, MAX_EVAL_RECORDS)) if r is not None]
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    # The curve is sampled from the training lines alone: every k-th line of all of them could land on
    # validation lines only (a Trainer that logs and evaluates at the same steps alternates the two).
    lines = [ln for ln in lines if not any(mark in ln for mark in _EVAL_MARKS)]
    n_train = len(lines)
    stride = max(1, -(-len(lines) // CURVE_POINTS))
    picked = lines[::stride]
    if lines and (len(lines) - 1) % stride:
        picked.append(lines[-1])  # always keep the last point of the curve
    train = []
    for record in map(_parse, picked):
        if record is not None and record.get("kind") == "train" and isinstance(record.get("train_loss"), (int, float)):
            train.append([record.get("step", 0), record["train_loss"]])
    first_nonfinite = None
    for mark in (b"NaN", b"Infinity"):
        pos = data.find(mark)
        while pos >= 0:
            record = _parse(_line_at(data, pos))
            value = (record or {}).get("train_loss")
            if record and record.get("kind") == "train" and isinstance(value, float) and not math.isfinite(value):
                step = record.get("step")
                if first_nonfinite is None or (step is not None and step < first_nonfinite):
                    first_nonfinite = step
                break
            pos = data.find(mark, pos + 1)
    return {"train_curve": train, "evals": evals, "train_records": n_train,
            "first_nonfinite_train_step": first_nonfinite}


def _lines(data: bytes) -> Iterator[bytes]:
    for line in data.split(b"\n"):
        if line:
            yield line


def _digest_bytes(data: bytes) -> MetricDigest:
    return digest_metrics(data)


# The fields of summary.json the evaluation reads, and the JSON types they must have: a job writes
# this file, so a wrong type is that run's problem, never the evaluation's crash.
_NUMBER = (int, float)
SUMMARY_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,), "reason": (str,), "failure_kind": (str,), "leg": (str,), "seed": (int, str),
    "metrics": (dict,), "throughput": (dict,), "compile": (dict,), "model": (dict,), "mlflow": (dict,),
    "preflight": (dict,), "warnings": (list,), "notes": (list,),
    "validation_history": (list,), "time_to_first_step_s": _NUMBER, "wall_time_s": _NUMBER,
    "steps_completed": (int,), "peak_host_memory_bytes": _NUMBER, "peak_device_memory_bytes": _NUMBER,
}
MAX_SUMMARY_BYTES = 8 * 1024 * 1024


def _load_summary(raw: bytes | str) -> tuple[JobSummary | None, str | None]:
    if len(raw) > MAX_SUMMARY_BYTES:
        return None, f"summary.json is {len(raw):,} bytes, more than {MAX_SUMMARY_BYTES:,}: not read"
    try:
        body = json.loads(raw)
    except RecursionError:
        return None, "summary.json nests too deeply to read"
    except json.JSONDecodeError as exc:
        return None, f"summary.json is not valid JSON ({exc.msg} at line {exc.lineno})"
    except ValueError as exc:  # bytes that are not UTF-8 (a UnicodeDecodeError): it had no msg or lineno to show
        return None, f"summary.json is not valid JSON ({exc})"
    if not isinstance(body, dict):
        return None, "summary.json is not a JSON object"
    try:
        summary = summary_from(body)
    except DocumentError as exc:  # a schema this evaluation does not know: its keys may mean other things
        return None, str(exc)
    for key, types in SUMMARY_TYPES.items():
        value = body.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            return None, (f"summary.json's {key!r} is a {type(value).__name__}, not "
                          f"{' or '.join(_JSON_NAMES[t] for t in types)}")
    return summary, None


_JSON_NAMES = {str: "text", int: "a whole number", float: "a number", dict: "an object", list: "a list"}


def _outputs(job_dir: Path) -> tuple[dict[str, bytes | None], bytes | None] | None:
    """The covered files' bytes and the job's digest over them, from the first place that holds a
    summary.json: the job's own directories (opt/ml/model sorts before opt/ml/output/data, the copy
    SageMaker tars as output.tar.gz), else an output archive."""
    for path in sorted(job_dir.rglob("summary.json")):
        folder = path.parent
        files = {name: (folder / name).read_bytes() if (folder / name).is_file() else None for name in COVERED}
        digest = folder / DIGEST_FILE
        return files, digest.read_bytes() if digest.is_file() else None
    for path in sorted(job_dir.rglob("*.tar.gz")):
        members = _many_from_tar(path, (*COVERED, DIGEST_FILE))
        if members.get("summary.json"):
            return {name: members.get(name) for name in COVERED}, members.get(DIGEST_FILE)
    return None


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
        summary, problem = _load_summary(files["summary.json"] or b"")
        problem_kind = "unreadable-output" if problem else None
        if summary is not None:
            changed = (mismatch(files, raw_digest, completed=summary.get("status") == "completed")
                       or _not_this_job(job_dir, summary))
            if changed:
                summary, problem, problem_kind = None, changed, "changed-output"
        if summary is not None:
            digest = _digest_bytes(files.get("metrics.jsonl") or b"")
    # What the platform knows of the job (the local executor writes job.json beside the job
    # and into its output archive; on SageMaker `bakeoff report ARN` adds billed time later).
    meta_path = job_dir / "job.json"
    raw_meta = meta_path.read_bytes() if meta_path.exists() else None
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
        raw = _from_tar(path, "metrics.jsonl")
        if raw:
            for line in _lines(raw):
                record = _parse(line)
                if record is not None:
                    yield record
            return


def load_jobs(jobs_dir: Path) -> list[JobRecord]:
    """Every job directory under `jobs_dir`, one at a time (memory is per job, not per bake-off)."""
    return [load_job(p) for p in sorted(Path(jobs_dir).iterdir()) if p.is_dir()]
