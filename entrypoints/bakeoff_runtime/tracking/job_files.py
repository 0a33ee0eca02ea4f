"""The files a job left, on the job's MLflow run: what an MLflow user opens first on a run page.

The job's run carries summary.json from the job itself (the Runtime logs it when it ends); its metrics.jsonl
(every record, the curves included) and its log come from the job's published output, which the Evaluate step
reads anyway: the job's output.tar.gz (the local executor puts the job's log there as `job.log`, beside
job.json; on SageMaker the log is CloudWatch's and the run says where). A job killed before it logged anything
still gets them here. Files the run already has are not logged again, so a re-evaluation adds nothing twice.
"""
from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path

# base name in the output -> where it goes in the run's artifacts
JOB_FILES = {"summary.json": "", "metrics.jsonl": "job", "job.log": "job"}


def _members(job_dir: Path, into: Path) -> dict[str, Path]:
    """The job's files named in JOB_FILES, copied into `into` (from its directory, else its archives)."""
    found: dict[str, Path] = {}
    for name in JOB_FILES:
        loose = sorted(p for p in job_dir.rglob(name) if p.is_file() and not p.is_symlink())
        if loose:
            found[name] = loose[0]
    for archive in sorted(job_dir.rglob("*.tar.gz")):
        try:
            with tarfile.open(archive) as tar:
                for member in tar:
                    base = member.name.rsplit("/", 1)[-1]
                    # Regular members only: a link member would be followed inside the archive.
                    if member.isfile() and base in JOB_FILES and base not in found:
                        source = tar.extractfile(member)
                        if source is None:
                            continue
                        target = into / base
                        with source, open(target, "wb") as out:
                            shutil.copyfileobj(source, out)
                        found[base] = target
        except (OSError, tarfile.TarError):
            continue
    return found


def attach_job_files(client, run_id: str, job_dir: Path | None) -> list[str]:
    """Log the job's summary.json, metrics.jsonl and log to its run (those it lacks); the paths logged."""
    if job_dir is None or not job_dir.is_dir():
        return []
    have = {f.path for f in client.list_artifacts(run_id)} | {f.path for f in client.list_artifacts(run_id, "job")}
    logged = []
    with tempfile.TemporaryDirectory(prefix="bakeoff-job-files-") as tmp:
        for name, path in _members(job_dir, Path(tmp)).items():
            where = JOB_FILES[name]
            artifact = f"{where}/{name}" if where else name
            if artifact in have:
                continue
            client.log_artifact(run_id, str(path), where or None)
            logged.append(artifact)
    return logged
