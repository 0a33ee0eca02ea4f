"""Where a leg's compiled graphs are kept between jobs, keyed by what invalidates them.

    s3://<bucket>/<prefix>/compile-cache/<backend>/<key>/

The key is a hash of everything that changes the compiled artefacts: the backend,
the image (which pins compiler and framework versions), the compiler flags, the
precision, the per-device shapes (micro-batch, sequence length, world size), and
the model/training configuration that shapes the graphs. Same inputs, same
location across executions and bake-offs; any change, a new location, so a cache
is never hit stale. Seeds, step counts and the bake-off's name are left out: they
change no graph.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from bakeoff_runtime import contract

# Hyperparameters that do not change any compiled graph.
GRAPH_NEUTRAL = {"seed", "leg", "max_steps", "eval_interval", "log_interval", "checkpoint_interval",
                 "divergence_factor", "warmup_steps", "lr", "min_lr_ratio", "schedule", "eval_batches",
                 "bakeoff_seed", "bakeoff_leg"}  # script mode's own (its script's `seed` argument is above)
# Environment that does not reach the compiler.
ENV_NEUTRAL_PREFIXES = (contract.ENV["name"], contract.ENV["leg"], contract.ENV["spec_hash"],
                        contract.MLFLOW_ENV_PREFIX, "MLFLOW_")


def cache_key_inputs(backend: str, image: str, precision: str, environment: dict[str, str],
                     hyperparameters: dict[str, Any], world_size: int) -> dict[str, Any]:
    return {
        "backend": backend,
        "image": image,
        "precision": precision,
        "compiler_flags": environment.get("NEURON_CC_FLAGS", ""),
        "environment": {k: v for k, v in sorted(environment.items())
                        if not k.startswith(ENV_NEUTRAL_PREFIXES) and k != "NEURON_COMPILE_CACHE_URL"},
        "graph": {k: v for k, v in sorted(hyperparameters.items()) if k not in GRAPH_NEUTRAL},
        "world_size": world_size,
    }


def cache_key(**inputs: Any) -> str:
    blob = json.dumps(cache_key_inputs(**inputs), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def cache_uri(bucket: str, prefix: str, backend: str, key: str) -> str:
    return f"s3://{bucket}/{prefix.strip('/')}/compile-cache/{backend}/{key}/"
