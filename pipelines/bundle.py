"""The code bundle every job runs: the entrypoints (or the user's source dir plus
the runtime helper), packed reproducibly so unchanged code has an unchanged hash.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import SpecError

_SKIP_DIRS = {"__pycache__", ".git", ".venv", "node_modules", ".pytest_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
LAUNCHER = "launch.py"
BUILTIN_SCRIPT = "train.py"
EVALUATE_SCRIPT = "evaluate.py"
REPORT_SCRIPT = "render_report.py"


@lru_cache(maxsize=1)
def entrypoints_dir() -> Path:
    """Where the container code lives: beside the packages in a checkout, or as
    package data (`pipelines/_bundle/entrypoints`) in an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_bundle" / "entrypoints", here.parent / "entrypoints"):
        if (candidate / LAUNCHER).exists():
            return candidate
    raise FileNotFoundError("bakeoff's entrypoints are missing from this installation")


def _files_under(root: Path, prefix: str = "") -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or path.suffix in _SKIP_SUFFIXES or not path.is_file():
            continue
        out[f"{prefix}{rel.as_posix()}"] = path
    return out


@dataclass(frozen=True)
class Bundle:
    files: tuple[tuple[str, bytes], ...]
    script: str

    @property
    def sha256(self) -> str:
        h = hashlib.sha256()
        for name, data in self.files:
            h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()

    def tar_gz(self) -> bytes:
        """Sorted entries, fixed mtime/owner/mode, no gzip timestamp: byte-identical every time."""
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in self.files:
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data))
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as gz:
            gz.write(raw.getvalue())
        return out.getvalue()

    def write_to(self, directory: Path) -> None:
        for name, data in self.files:
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_bytes() != data:
                target.write_bytes(data)


def build_bundle(source_dir: Path | None = None, script: str | None = None) -> Bundle:
    """The built-in bundle, or a user's `source_dir` with the runtime helper beside it."""
    ep = entrypoints_dir()
    runtime = _files_under(ep / "bakeoff_runtime", "bakeoff_runtime/")
    shipped = {**runtime, LAUNCHER: ep / LAUNCHER, EVALUATE_SCRIPT: ep / EVALUATE_SCRIPT,
               REPORT_SCRIPT: ep / REPORT_SCRIPT}
    if source_dir is None:
        files = {**_files_under(ep), **shipped}
        script = BUILTIN_SCRIPT
    else:
        if not source_dir.is_dir():
            raise SpecError(f"source_dir {source_dir} is not a directory", field="entrypoint.source_dir")
        user = _files_under(source_dir)
        if script not in user:
            raise SpecError(f"script {script!r} not found in {source_dir}", field="entrypoint.script")
        clash = sorted(set(user) & set(shipped))
        if clash:
            raise SpecError(f"{source_dir} has files that bakeoff ships itself ({', '.join(clash)}); rename them",
                            field="entrypoint.source_dir")
        files = {**user, **shipped}
    return Bundle(tuple((name, files[name].read_bytes()) for name in sorted(files)), script)


def bundle_for(spec, base_dir: Path) -> Bundle:
    if spec.entrypoint.builtin:
        return build_bundle()
    return build_bundle((base_dir / spec.entrypoint.source_dir).resolve(), spec.entrypoint.script)
