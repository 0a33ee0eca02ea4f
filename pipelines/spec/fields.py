"""The field types every model of the spec shares: names and URIs as regexes, the backend and
precision literals, numbers that refuse true/false, bounds with their sources, the cross-field error
that knows its field, and the strict base model. A leaf below pipelines.spec.legs and pipelines.spec.model
(import these names from here or from pipelines.spec.model, which re-exports them)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from bakeoff_runtime.contract.backend_table import BACKENDS

NAME_RE = re.compile(r"^[A-Za-z0-9](-*[A-Za-z0-9])*$")
S3_URI_RE = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?P<key>/[^\s]*)?$")
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
IMAGE_RE = re.compile(
    r"^(?P<registry>[a-z0-9.\-]+(:[0-9]+)?/)?(?P<repo>[a-z0-9._\-/]+)(:(?P<tag>[A-Za-z0-9._\-]{1,128}))?"
    r"(@sha256:[a-f0-9]{64})?$")
SCRIPT_RE = re.compile(r"[A-Za-z0-9._/-]+")
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/[\w+=,.@\-/]{1,512}$")

if TYPE_CHECKING:
    Backend = str
else:
    # The table's rows, in its order: the JSON Schema's enum and the validator follow a new row.
    Backend = Literal[tuple(BACKENDS)]
Precision = Literal["fp32", "bf16"]


# Name parts that mark a secret (split on "_": TOKENIZERS_PARALLELISM is not HF_TOKEN), and AWS's
# own variables (credentials belong to the execution role, not the spec).
SECRET_NAME_PARTS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS",
                               "APIKEY", "PRIVATE"})
SECRET_NAME_PAIRS = (("API", "KEY"), ("ACCESS", "KEY"), ("SECRET", "KEY"), ("AUTH", "KEY"))


def looks_like_secret(name: str) -> bool:
    parts = name.upper().split("_")
    return (name.upper().startswith("AWS_") or bool(SECRET_NAME_PARTS & set(parts))
            or any(pair == tuple(parts[i:i + 2]) for pair in SECRET_NAME_PAIRS for i in range(len(parts) - 1)))


class SpecFieldError(ValueError):
    """A cross-field check that knows which field is to blame (relative to the model)."""

    def __init__(self, field: str | tuple, message: str):
        super().__init__(message)
        self.field = (field,) if isinstance(field, str) else tuple(field)


def _no_bool(value: Any) -> Any:
    # YAML's `true` is Python's 1: `seeds: true` would quietly mean one seed.
    if isinstance(value, bool):
        raise ValueError("a number is expected, not true/false")
    return value


Int = Annotated[int, BeforeValidator(_no_bool)]
MAX_SEEDS = 100  # per leg, as a count or as a list
Float = Annotated[float, BeforeValidator(_no_bool)]

# Bounds with their source. SageMaker's own (botocore's sagemaker service model and its docs):
MAX_RUNTIME_S = 2_419_200  # StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days"
DEFAULT_RUNTIME_QUOTA_S = 432_000  # AWS's default quota "Longest run time for a training job" (5 days)
# bakeoff's own, so that a typo (1e30 steps) is caught before it is a bill:
MAX_STEPS = 100_000_000
MAX_GLOBAL_BATCH = 1_048_576


class _Model(BaseModel):
    # NaN and infinities are never a setting (`margin: .inf` would pass every comparison).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=False,
                              allow_inf_nan=False)
