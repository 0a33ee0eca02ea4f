"""The names of a leg x seed: its pipeline step, its job (directory, MLflow run), and the channel
through which a leg's training jobs receive its Collective step's result. Both sides derive them here."""
from __future__ import annotations

import re

# The input channel through which a leg's training jobs receive its Collective step's result
# (that step's model.tar.gz, holding collective.json): a failed check stops only that leg.
COLLECTIVE_CHANNEL = "collective"
COLLECTIVE_RESULT = "collective.json"


def training_step_name(leg: str, seed: int) -> str:
    """The pipeline step of a leg x seed."""
    return f"Train-{leg}-s{seed}"


def job_name(leg: str, seed: int) -> str:
    """A job's directory (locally and under the pipeline's S3 prefix) and its MLflow run name."""
    return f"{leg}-s{seed}"


_JOB_NAME = re.compile(r"(?P<leg>.+)-s(?P<seed>\d+)")


def parse_job_name(name: str) -> tuple[str, int] | None:
    """(leg, seed) of a job's name (job_name), or None for any other name."""
    m = _JOB_NAME.fullmatch(name)
    return (m["leg"], int(m["seed"])) if m else None


def parse_training_step_name(name: str) -> tuple[str, int] | None:
    """(leg, seed) of a training step's name (training_step_name), or None for any other step."""
    return parse_job_name(name[len("Train-"):]) if name.startswith("Train-") else None
