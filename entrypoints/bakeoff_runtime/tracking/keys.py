"""Keys and values as MLflow accepts them, so one odd name never costs the rest of a run's record.

MLflow refuses a whole `log_batch` over one param or metric name with a character outside
`[/\\w.\\- :]`, a name over 250 characters, a path-like name that is not normalised (`a//b`, `../x`,
`/x`), a param value over 6,000 characters or a tag value over 8,000 (mlflow/utils/validation.py:
validate_param_and_metric_name, path_not_unique, MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH,
MAX_TAG_VAL_LENGTH). bakeoff sink refused batches by disabling itself, so a hyperparameter called
`lr(peak)` emptied a job's MLflow run. Here an offending key is renamed (and a value cut), each once,
with one line naming it; the rest is logged as it is.
"""
from __future__ import annotations

import posixpath
import re
import sys
from typing import Any

from bakeoff_runtime.contract.inert_text import inert

MAX_KEY = 250
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
_BAD = re.compile(r"[^/\w.\- :]")


def clean_key(name: object) -> str:
    key = _BAD.sub("_", str(name))
    key = re.sub(r"/{2,}", "/", key).strip("/")
    parts = ["__" if p in ("..", ".") else p for p in key.split("/")]
    key = "/".join(parts)[:MAX_KEY].rstrip("/") or "_"
    return key if posixpath.normpath(key) == key else re.sub(r"[./]", "_", key)


class Cleaner:
    """Cleans keys and values for one run (or one evaluation), saying each change once."""

    def __init__(self, where: str):
        self.where = where
        self.said: set[str] = set()

    def _say(self, what: str) -> None:
        if what not in self.said:
            self.said.add(what)
            print(f"[bakeoff] MLflow ({self.where}): {what}", file=sys.stderr, flush=True)

    def _keys(self, kind: str, items: dict, limit: int | None) -> dict[str, Any]:
        """The items under MLflow-clean keys, their values as given (strings cut to `limit`)."""
        out: dict[str, Any] = {}
        for name, value in items.items():
            key = clean_key(name)
            if key in out:
                self._say(f"{kind} {str(name)[:80]!r} dropped: it would be logged as {key!r}, which another "
                          f"{kind} already is")
                continue
            if key != name:
                self._say(f"{kind} {str(name)[:80]!r} logged as {key!r} (MLflow names may hold letters, digits, "
                          "_ - . : space and /, up to 250 characters)")
            if limit is not None and isinstance(value, str) and len(value) > limit:
                self._say(f"{kind} {key!r}: value cut to {limit:,} characters (MLflow's limit)")
                value = value[:limit]
            out[key] = value
        return out

    def params(self, params: dict) -> dict[str, str]:
        return {k: str(v) for k, v in self._keys("param", {k: str(v) for k, v in params.items()},
                                                  MAX_PARAM_VALUE).items()}

    def metrics(self, metrics: dict[str, float]) -> dict[str, float]:
        return self._keys("metric", metrics, None)

    def tags(self, tags: dict) -> dict[str, str]:
        # Tags are shown in the UI and read by scripts and terminals (`mlflow runs describe`):
        # a job's text in them is made inert, within MLflow's bound.
        return {k: inert(v, None) for k, v in self._keys("tag", {k: str(v) for k, v in tags.items()},
                                                          MAX_TAG_VALUE).items()}
