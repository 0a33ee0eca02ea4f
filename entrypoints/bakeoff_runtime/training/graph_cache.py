"""Compile caches that survive between jobs.

The orchestrator gives each job a cache location (BAKEOFF_COMPILE_CACHE) keyed by
everything that invalidates compiled graphs. Here, inside the job:

- trn (torch-neuronx): Neuron reads and writes NEURON_COMPILE_CACHE_URL itself;
  on PyTorch/XLA's CPU device (local emulation) the XLA persistent cache is pointed
  at the same key. On CPU it can prove key stability, not load executables
  (upstream: pytorch/xla issue 9094): reported as such, never as a speed-up;
- cuda/cpu with torch.compile: the inductor cache directory is restored from the
  location before the first step and saved back after training.

An s3:// location is synced as one tar.gz (boto3 ships in SageMaker's images); a
local path is used in place.
"""
from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ARCHIVE = "inductor-cache.tar.gz"


def _s3_parts(uri: str) -> tuple[str, str]:
    bucket, _, key = uri[len("s3://"):].partition("/")
    return bucket, key.rstrip("/")


def local_dir(location: str, scratch: Path) -> tuple[Path, bool]:
    """Where the cache lives during the job, and whether it must be synced back."""
    if location.startswith("s3://"):
        return scratch, True
    return Path(location), False


def restore(location: str, target: Path) -> dict[str, Any]:
    """Fetch an s3:// cache into `target`. Returns what happened (for the summary)."""
    target.mkdir(parents=True, exist_ok=True)
    if not location.startswith("s3://"):
        files = sum(1 for p in target.rglob("*") if p.is_file())
        return {"restored": files > 0, "files": files, "location": location}
    try:
        import boto3

        bucket, key = _s3_parts(location)
        body = boto3.client("s3").get_object(Bucket=bucket, Key=f"{key}/{ARCHIVE}")["Body"].read()
    except Exception as exc:  # first run for this key, or no access: train cold
        return {"restored": False, "files": 0, "location": location, "note": f"{type(exc).__name__}"}
    refused = _unpack(body, target)
    if refused:  # another job, or anyone who may write the bucket, put it there: train cold
        return {"restored": False, "files": 0, "location": location, "note": f"cache archive refused: {refused}"}
    files = sum(1 for p in target.rglob("*") if p.is_file())
    return {"restored": True, "files": files, "location": location, "bytes": len(body)}


def _unpack(body: bytes, target: Path) -> str | None:
    """Unpack a cache archive into `target`, or say why it was refused (then nothing is written).

    Only regular files and folders under `target`: a member with an absolute path or `..`, a
    link, a device or a FIFO refuses the whole archive. tarfile's "data" filter (Python 3.12+,
    which the images run: estimators/images.py) would refuse the same on extraction; checking first
    means a refused archive leaves nothing half-written."""
    try:
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
            members = tar.getmembers()
            for m in members:
                if m.issym() or m.islnk():
                    return f"member {m.name!r} is a link"
                if not (m.isfile() or m.isdir()):
                    return f"member {m.name!r} is a device or FIFO"
                if m.name.startswith(("/", "\\")) or ".." in Path(m.name).parts:
                    return f"member {m.name!r} points outside the cache"
            tar.extractall(target, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def save(source: Path, location: str) -> dict[str, Any]:
    if not location.startswith("s3://"):
        return {"saved": True, "location": location}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(source)))
    try:
        import boto3

        bucket, key = _s3_parts(location)
        boto3.client("s3").put_object(Bucket=bucket, Key=f"{key}/{ARCHIVE}", Body=raw.getvalue())
        return {"saved": True, "location": location, "bytes": raw.tell()}
    except Exception as exc:
        return {"saved": False, "location": location, "note": f"{type(exc).__name__}: {exc}"}


def _isa_fingerprint() -> str:
    import hashlib
    import platform
    import shutil
    import subprocess

    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    except OSError:
        flags = platform.processor()
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or ""
    try:
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=10).stdout if cxx else ""
    except (OSError, subprocess.SubprocessError):
        version = ""
    return hashlib.sha256(f"{platform.machine()}|{flags}|{version}".encode()).hexdigest()[:16]


def isa_marker(cache_dir: Path) -> Path:
    return cache_dir / f"bakeoff-vec-isa-probe-{_isa_fingerprint()}.json"


def remember_vec_isa_probe(cache_dir: Path) -> bool:
    """Replay inductor's CPU vector-ISA probe from the cache on identical hardware.

    Inductor decides which SIMD ISA to generate by compiling and *loading in a fresh
    Python subprocess* a probe per ISA, in every new process: most of a warm start
    on CPU. Its verdicts depend only on the CPU flags and the compiler, so they are
    stored beside the inductor cache under that fingerprint and replayed; inductor's
    own configuration is untouched, so graph-cache keys are the same either way.
    Returns whether verdicts were replayed (False on the first run, or if the torch
    release has no such probe).
    """
    import hashlib
    import json

    try:
        from torch._inductor import cpu_vec_isa
    except ImportError:
        return False
    original = getattr(cpu_vec_isa.VecISA, "check_build", None)
    if original is None or getattr(original, "_bakeoff", False):
        return False
    marker = isa_marker(cache_dir)
    try:
        known: dict[str, bool] = json.loads(marker.read_text()) if marker.exists() else {}
    except ValueError:
        known = {}
    replayed = bool(known)

    def check_build(self, code: str) -> bool:
        key = hashlib.sha256(f"{type(self).__name__}|{self._arch_flags}|{code}".encode()).hexdigest()[:20]
        if key not in known:
            known[key] = bool(original(self, code))
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(json.dumps(known, sort_keys=True))
        return known[key]

    # A patch of torch's class and a mark on it (read above): what setattr is for; the type checker
    # rightly refuses both as plain assignments.
    setattr(check_build, "_bakeoff", True)  # noqa: B010
    setattr(cpu_vec_isa.VecISA, "check_build", check_build)  # noqa: B010
    return replayed


def inductor_counters() -> dict[str, int]:
    try:
        from torch._dynamo.utils import counters
    except Exception:
        return {}
    inductor: Mapping[str, int] = counters.get("inductor", {})
    aot: Mapping[str, int] = counters.get("aot_autograd", {})
    return {"hits": int(inductor.get("fxgraph_cache_hit", 0)), "misses": int(inductor.get("fxgraph_cache_miss", 0)),
            "autograd_cache_hits": int(aot.get("autograd_cache_hit", 0)),
            "autograd_cache_misses": int(aot.get("autograd_cache_miss", 0))}


def xla_persistent_cache(location: str | None) -> dict[str, Any] | None:
    """Point PyTorch/XLA's persistent cache at the job's key (before any compile)."""
    if not location or location.startswith("s3://"):
        return None  # on Trainium the Neuron compiler's own cache (NEURON_COMPILE_CACHE_URL) is used
    import torch_xla.runtime as xr

    Path(location).mkdir(parents=True, exist_ok=True)
    before = sorted(p.name for p in Path(location).iterdir())
    try:
        xr.initialize_cache(location, readonly=False)
    except Exception as exc:  # already initialised in this process
        return {"location": location, "error": f"{type(exc).__name__}: {exc}"}
    return {"location": location, "entries_before": len(before), "names_before": before}


def xla_cache_outcome(state: dict[str, Any] | None) -> dict[str, Any] | None:
    if not state or "error" in state:
        return state
    import torch_xla.debug.metrics as met

    location = Path(state["location"])
    after = sorted(p.name for p in location.iterdir())
    names_before = set(state.pop("names_before"))
    def counter(name):
        return int(met.counter_value(name) or 0)
    return {
        **state,
        "entries_after": len(after),
        "new_entries": len(set(after) - names_before),
        "reused_keys": len(set(after) & names_before),
        "hits": counter("PersistentCacheHit"),
        "misses": counter("PersistentCacheMiss"),
        "deserialize_failures": counter("PersistentCacheDeserializeFailure"),
        "note": ("PyTorch/XLA on CPU writes stable cache keys but cannot load them back (pytorch/xla 9094): "
                 "this shows key stability, not a warm start") if os.environ.get("PJRT_DEVICE") == "CPU" else None,
    }
