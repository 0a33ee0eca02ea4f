"""How long a job or the evaluation may wait for an MLflow tracking server.

MLflow's HTTP client retries for minutes by default (MLFLOW_HTTP_REQUEST_MAX_RETRIES=7
with exponential backoff, MLFLOW_HTTP_REQUEST_TIMEOUT=120: "7 retries with backoff will
take ~ 4 minutes", mlflow/environment_variables.py in mlflow 3.17.2). Training and the verdict
never depend on MLflow, so bakeoff asks for short, bounded waits (unless the operator
set these variables) and checks that the server answers at all before the first call.
"""
from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

BOUNDED = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
           "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
CONNECT_TIMEOUT_S = 3.0


def bound_waits() -> None:
    for key, value in BOUNDED.items():
        os.environ.setdefault(key, value)


def unreachable(uri: str | None) -> str | None:
    """Why an http(s) tracking server cannot be reached (a TCP connect within a few
    seconds), or None when it can or the URI is not a network address (a file or
    database store, a SageMaker MLflow ARN resolved by its plugin)."""
    if not uri:
        return None
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"{parts.hostname}:{port} does not answer ({exc.__class__.__name__}: {exc})"
