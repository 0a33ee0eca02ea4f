"""What a local verdict was decided from, and whether it still describes its run directory's jobs."""
from __future__ import annotations

import json
from pathlib import Path

from bakeoff.pipelines.hashing import digest, file_sha256


def input_fingerprint(run_dir: Path) -> str:
    """What a verdict was decided from: every job's record and every published job output."""
    run_dir = Path(run_dir)
    files = sorted([*run_dir.glob("jobs/*/job.json"), *run_dir.glob("s3/**/output/output.tar.gz")])
    # Each file's sha256 read in chunks (an output archive holds a job's whole metrics.jsonl); its first 16
    # characters are what digest(bytes) gave, so fingerprints recorded before still match.
    return digest([(p.relative_to(run_dir).as_posix(), file_sha256(p)[:16]) for p in files])


def stale_evaluation(run_dir: Path) -> str | None:
    """Why the verdict in `run_dir` no longer describes its jobs, or None when it does."""
    evaluation = Path(run_dir) / "evaluation" / "evaluation.json"
    if not evaluation.exists():
        return "it has no verdict (the last evaluation did not finish)"
    try:
        recorded = json.loads((evaluation.parent / "inputs.json").read_text())["fingerprint"]
    except (FileNotFoundError, ValueError, KeyError):
        return "its verdict does not record what it was decided from"
    if recorded != input_fingerprint(run_dir):
        return "its jobs changed after the verdict was written"
    return None
