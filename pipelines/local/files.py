"""Writing the files that carry a decision (the rule, job records, the verdict's inputs and
gate, the sequential record): whole or not at all, even across a crash or a power cut; and reading
back what a run recorded of itself."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json_atomically(path: Path, body: Any, **dump: Any) -> None:
    """`body` as JSON at `path`, or the file that was there before: never a torn one.

    A temporary file beside it, flushed to disk, renamed over it, and the folder flushed so
    the rename itself survives a power cut (rename is atomic on POSIX file systems)."""
    dump = {"indent": 2, **dump}
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)  # a crash's leftover (or a link planted there): unlinked, never followed
    try:
        # A new file of its own (O_EXCL, no link followed), renamed over the target: a rename replaces a
        # link planted at `path` rather than writing where it points (pipelines/local/run_dir.py).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(body, **dump) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return  # a file system without directory handles: the rename is as durable as it gets
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def recorded_local(run_dir: Path) -> dict[str, Any]:
    """What plan.json recorded of the run on this machine (its `local` section), or nothing."""
    try:
        local = json.loads((run_dir / "plan.json").read_text()).get("local")
    except (OSError, ValueError, AttributeError):
        return {}
    return local if isinstance(local, dict) else {}
