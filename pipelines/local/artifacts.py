"""What the local engine writes in place of SageMaker for the steps others read: a step's
model.tar.gz at the URI its `ModelArtifacts.S3ModelArtifacts` names, and the record of a job its
leg stopped before it ran (a failed collective check, a doomed leg)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bakeoff.pipelines.names import COLLECTIVE_STEP_PREFIX, PREFLIGHT_STEP
from bakeoff_runtime import contract
from bakeoff_runtime.contract import output_digest
from bakeoff_runtime.contract.documents import SUMMARY_SCHEMA


def artifact_uris(steps: dict[str, Any]) -> dict[str, str]:
    """Where the model.tar.gz of each step others read (Collective-<leg>, Preflight) lies in the
    local store: what Steps.<step>.ModelArtifacts.S3ModelArtifacts resolves to here (the
    training jobs' `collective` channel, the Evaluate step's `preflight` and `collective-<leg>`
    inputs)."""
    return {name: step["Arguments"]["OutputDataConfig"]["S3OutputPath"].rstrip("/") + "/local/output/model.tar.gz"
            for name, step in steps.items() if name.startswith(COLLECTIVE_STEP_PREFIX) or name == PREFLIGHT_STEP}


def publish(job_dir: Path, uri: str, store) -> None:
    """The check's model dir as SageMaker uploads it: model.tar.gz at the step's artifact URI."""
    import tarfile

    target = store.path(uri)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted((job_dir / "opt" / "ml" / "model").glob("*")):
            tar.add(path, arcname=path.name)
    tmp.replace(target)


def record_stopped(executor, job, key: str, reason: str, store, kind: str = "collective") -> str:
    """A job of a stopped leg, recorded as the platform would a job that failed at once."""
    from .jobs import Outcome

    job_dir = executor.out / "jobs" / job.name
    model = job_dir / "opt" / "ml" / "model"
    model.mkdir(parents=True, exist_ok=True)
    (job_dir / "job.json").unlink(missing_ok=True)
    summary = {"schema": SUMMARY_SCHEMA, "status": "failed", "reason": reason[:500],
               "failure_kind": kind, "leg": job.leg, "seed": job.seed,
               "backend": job.environment.get(contract.ENV["backend"]), "job_key": key}
    (model / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    data = job_dir / "opt" / "ml" / "output" / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for directory in (model, data):  # as a job does: the Evaluate step checks it
        output_digest.record(directory)
    executor.record_job(job, job_dir, key, 0.0, Outcome(1, 0.0), store)
    return str(json.loads((job_dir / "job.json").read_text())["training_job_name"])
