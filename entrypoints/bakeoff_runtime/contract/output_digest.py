"""The digest a job writes over its own outputs when it finishes, and the check the Evaluate
step makes of every output it reads against it.

A job's published output (output.tar.gz) is what the verdict is decided from. Anything that
rewrites it afterwards (another job on the same machine or role, a hand edit, a torn copy)
would otherwise change the verdict with no sign. The job records the sha256 of its summary.json
and metrics.jsonl beside them; an output whose files do not match is a lost run ("its outputs
changed after it finished"), never its numbers used. What this cannot catch: an actor who
rewrites the whole output consistently, digest included. Against that the guard is who may
write the output prefix (on SageMaker, the execution role's S3 permissions).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

DIGEST_FILE = "outputs.sha256.json"
COVERED = ("summary.json", "metrics.jsonl")
SCHEMA = "bakeoff.outputs-digest/1"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
    """A file's sha256, read in chunks: a job's metrics.jsonl can be hundreds of megabytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def record(directory: Path) -> None:
    """Write the digest of the covered files in `directory` (call after writing them)."""
    files = {name: _sha256_file(directory / name) for name in COVERED if (directory / name).is_file()}
    tmp = directory / f".{DIGEST_FILE}.tmp"
    tmp.write_text(json.dumps({"schema": SCHEMA, "files": files}, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, directory / DIGEST_FILE)


def mismatch(found: dict[str, bytes | None], raw_digest: bytes | None, completed: bool) -> str | None:
    """Why these outputs are not the ones the job recorded, or None when they are.

    `found`: each covered file's bytes as read (None: absent). A digest is required of a job
    that completed (its numbers decide the verdict); a job that died before writing one is
    judged by what it left, but a digest it did write is always checked."""
    return mismatch_of({name: None if data is None else _sha256(data) for name, data in found.items()},
                       raw_digest, completed)


def mismatch_of(shas: dict[str, str | None], raw_digest: bytes | None, completed: bool) -> str | None:
    """`mismatch`, from each covered file's sha256 as computed by the reader (None: absent)."""
    if raw_digest is None:
        if not completed:
            return None
        return (f"its output carries no {DIGEST_FILE} (the digest a job writes over its outputs when it "
                "finishes), so its numbers cannot be shown to be the job's: its outputs changed after it "
                "finished, or a bakeoff before this check wrote them; re-run the job (--force)")
    try:
        body = json.loads(raw_digest)
        files = body["files"] if isinstance(body, dict) and isinstance(body.get("files"), dict) else None
    except (ValueError, RecursionError):
        files = None
    if files is None:
        return f"its outputs changed after it finished ({DIGEST_FILE} is not the digest the job wrote)"
    for name in COVERED:
        expected, data = files.get(name), shas.get(name)
        if expected is None and data is None:
            continue
        if expected is None or data is None or data != expected:
            what = "is missing" if data is None else ("was added" if expected is None else "does not match")
            return (f"its outputs changed after it finished ({name} {what} against the digest the job recorded "
                    "when it finished); its numbers are not used")
    return None
