"""What a job's MLflow run says it is, one meaning per name.

`backend` is the leg's declared backend (the spec's: `neuron`, `cuda`) on every run of the leg, its seeds and
its summary alike, so that MLflow's compare view and a `params.backend = 'cuda'` search find the whole leg.
Where the job really ran is a param of its own, `ran_on`: the backend adapter that ran and the machine it ran
on (`cpu on local cpu` for a GPU leg a local run emulates on this machine's CPU, `cuda on ml.p4d.24xlarge` on
SageMaker). summary.json keeps the adapter that ran under `backend`: the verdict's checks read it there.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def ran_on(adapter: object, emulated_on: object, instance_type: object) -> str | None:
    where = emulated_on or instance_type
    if not adapter:
        return None
    return f"{adapter} on {where}" if where else str(adapter)


def mlflow_identity(info: Mapping[str, Any], declared_backend: str | None) -> dict[str, Any]:
    """`info` (a job's record of itself, whose `backend` is the adapter that ran) as its MLflow run shows it."""
    return {**info, "backend": declared_backend or info.get("backend"),
            "ran_on": ran_on(info.get("backend"), info.get("emulated_on"), info.get("instance_type"))}
