"""An MLflow plugin that misbehaves outside its own setting, kept out of bakeoff's job logs.

sagemaker-mlflow (installed with the SageMaker Python SDK 3, so with bakeoff's `sdk` extra or a platform team's
own SageMaker tooling) registers a request header provider that says it is in context for every tracking URI
and raises when the URI is not a SageMaker ARN; MLflow catches that and logs "Encountered unexpected error during
resolving request headers: list index out of range" as a WARNING on every request (mlflow/tracking/
request_header/registry.py; aws/sagemaker-mlflow issue 15, open): hundreds of lines in a local job's log, which
MLflow then shows as the child run's job.log. Where the tracking URI is not a SageMaker ARN the provider has
nothing to add, so that one message is dropped; with an ARN it is kept, since there its failure is real."""
from __future__ import annotations

import logging

HEADER_LOGGER = "mlflow.tracking.request_header.registry"
HEADER_WARNING = "Encountered unexpected error during resolving request headers"


class _DropHeaderWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(HEADER_WARNING)


def quiet_header_provider(tracking_uri: str | None) -> None:
    """Drop the header providers' warning in this process, unless `tracking_uri` is a SageMaker ARN (idempotent;
    imports nothing: the filter sits on the logger MLflow will log through)."""
    if (tracking_uri or "").startswith("arn:"):
        return
    logger = logging.getLogger(HEADER_LOGGER)
    if not any(isinstance(f, _DropHeaderWarning) for f in logger.filters):
        logger.addFilter(_DropHeaderWarning())
