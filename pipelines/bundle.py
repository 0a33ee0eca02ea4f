"""The code bundle every job runs: the entrypoints (or the user's source dir plus
the runtime helper), packed reproducibly so unchanged code has an unchanged hash.
"""
from __future__ import annotations

import fnmatch
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import SpecError

_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".pytest_cache", ".mypy_cache",
              ".ruff_cache", ".aws", ".ssh", ".gnupg", ".terraform"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
# Never packed, wherever they are: the bundle is uploaded to S3 and read by every job.
SECRET_PATTERNS = (".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*", "id_ecdsa*",
                   ".netrc", ".npmrc", ".pypirc", "credentials", "credentials.*", "*.kdbx", ".htpasswd")
LAUNCHER = "launch.py"
BUILTIN_SCRIPT = "train.py"
EVALUATE_SCRIPT = "evaluate.py"
REPORT_SCRIPT = "render_report.py"
COLLECTIVE_SCRIPT = "collective_check.py"  # the collective check step's script (legs[].collective_check)


@lru_cache(maxsize=1)
def entrypoints_dir() -> Path:
    """Where the container code lives: beside the packages in a checkout, or as
    package data (`pipelines/_bundle/entrypoints`) in an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_bundle" / "entrypoints", here.parent / "entrypoints"):
        if (candidate / LAUNCHER).exists():
            return candidate
    raise FileNotFoundError("bakeoff's entrypoints are missing from this installation")


def is_secret(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in SECRET_PATTERNS)


def _files_under(root: Path, prefix: str = "", skipped: list[str] | None = None,
                 contain: Path | None = None) -> dict[str, Path]:
    """Files to pack under `root`: caches, VCS folders and secrets left out (named in `skipped`);
    with `contain`, a symlink resolving outside it is refused."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or path.suffix in _SKIP_SUFFIXES or not path.is_file():
            continue
        if is_secret(path.name):
            if skipped is not None:
                skipped.append(rel.as_posix())
            continue
        if contain is not None and not path.resolve().is_relative_to(contain):
            raise SpecError(f"{rel.as_posix()} in the source dir links to {path.resolve()}, outside "
                            f"{contain}; copy the file in or set entrypoint.allow_outside_spec_dir",
                            field="entrypoint.source_dir")
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

    @classmethod
    def from_tar_gz(cls, data: bytes, script: str) -> Bundle:
        """A bundle as it was uploaded (sourcedir.tar.gz): deciding a run again needs the
        code it ran, not whatever the source directory holds now."""
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            files = tuple((m.name, tar.extractfile(m).read()) for m in tar.getmembers()  # type: ignore[union-attr]
                          if m.isfile())
        return cls(files, script)

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


def build_bundle(source_dir: Path | None = None, script: str | None = None, *, contain: Path | None = None,
                 max_bytes: int | None = None) -> Bundle:
    """The built-in bundle, or a user's `source_dir` with the runtime helper beside it.
    `contain`: the directory the source dir (and every file it links to) must stay in."""
    ep = entrypoints_dir()
    runtime = _files_under(ep / "bakeoff_runtime", "bakeoff_runtime/")
    shipped = {**runtime, LAUNCHER: ep / LAUNCHER, EVALUATE_SCRIPT: ep / EVALUATE_SCRIPT,
               REPORT_SCRIPT: ep / REPORT_SCRIPT, COLLECTIVE_SCRIPT: ep / COLLECTIVE_SCRIPT}
    if source_dir is None:
        files = {**_files_under(ep), **shipped}
        script = script or BUILTIN_SCRIPT
    else:
        if not source_dir.is_dir():
            raise SpecError(f"source_dir {source_dir} is not a directory", field="entrypoint.source_dir")
        skipped: list[str] = []
        user = _files_under(source_dir, skipped=skipped, contain=contain)
        if script not in user:
            raise SpecError(f"script {script!r} not found in {source_dir}", field="entrypoint.script")
        clash = sorted(set(user) & set(shipped))
        if clash:
            raise SpecError(f"{source_dir} has files that bakeoff ships itself ({', '.join(clash)}); rename them",
                            field="entrypoint.source_dir")
        files = {**user, **shipped}
        if max_bytes is not None:
            total = sum(path.stat().st_size for path in user.values())
            if total > max_bytes:
                biggest = sorted(user.items(), key=lambda kv: -kv[1].stat().st_size)[:3]
                raise SpecError(f"source_dir holds {total / 1e6:,.1f} MB, more than entrypoint.max_bundle_mb "
                                f"({max_bytes / 1e6:,.0f} MB): the biggest are "
                                + ", ".join(f"{n} ({p.stat().st_size / 1e6:,.1f} MB)" for n, p in biggest)
                                + "; put data in a data channel", field="entrypoint.source_dir")
    return Bundle(tuple((name, files[name].read_bytes()) for name in sorted(files)), script)


def inside(base_dir: Path, relative: str, allow_outside: bool, field: str) -> Path:
    """`relative` resolved against the spec's folder, refused when it leaves that tree
    (symlinks followed) unless the spec allows it."""
    base = base_dir.resolve()
    path = (base_dir / relative).resolve()
    if not allow_outside and not path.is_relative_to(base):
        raise SpecError(f"{relative!r} resolves to {path}, outside the spec's folder {base}: it would be packed and "
                        "uploaded; move it under the spec's folder, or set entrypoint.allow_outside_spec_dir: true "
                        "(a monorepo)", field=field)
    return path


def with_script_settings(bundle: Bundle, spec) -> Bundle:
    """Script mode: the launcher's settings beside the script (bakeoff_runtime.script_contract),
    part of the bundle and so of its hash and of every job's cache key."""
    from .runtime_modules import runtime_module

    contract = runtime_module("script_contract")
    name = (Path(bundle.script).parent / contract.SETTINGS_FILE).as_posix()
    if any(n == name for n, _ in bundle.files):
        raise SpecError(f"{spec.entrypoint.source_dir} has a {name} of its own: bakeoff writes that file in script "
                        "mode; rename it", field="entrypoint.source_dir")
    folder = Path(bundle.script).parent
    names = {n for n, _ in bundle.files}
    needs = (folder / "requirements.txt").as_posix() in names and spec.entrypoint.script_mode.install_requirements
    has_wheels = any(n.startswith((folder / "wheels").as_posix() + "/") for n in names)
    if needs and spec.security.network_isolation and not has_wheels:
        raise SpecError("the jobs run with network isolation, so pip cannot reach an index to install "
                        "requirements.txt: put the wheels beside it (`pip download -r requirements.txt -d wheels "
                        "--only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.12`), or set "
                        "entrypoint.script_mode.install_requirements: false if the image has them",
                        field="entrypoint.script_mode.install_requirements")
    body = spec.entrypoint.script_mode.settings(spec.parity.metric).to_json().encode()
    return Bundle(tuple(sorted((*bundle.files, (name, body)))), bundle.script)


def bundle_for(spec, base_dir: Path) -> Bundle:
    if spec.entrypoint.builtin:
        from .builtins import builtin_script

        return build_bundle(script=builtin_script(spec.entrypoint.builtin))
    ep = spec.entrypoint
    try:
        source = inside(base_dir, ep.source_dir, ep.allow_outside_spec_dir, "entrypoint.source_dir")
        contain = None if ep.allow_outside_spec_dir else source
        bundle = build_bundle(source, ep.script, contain=contain, max_bytes=int(ep.max_bundle_mb * 1e6))
        if ep.mode == "script":
            bundle = with_script_settings(bundle, spec)
        return bundle
    except SpecError as exc:
        from .loader import locate

        where = ("script_mode",) if "script_mode" in (exc.field or "") else \
            ("source_dir",) if "source_dir" in (exc.field or "") else ("script",)
        file, line = locate(spec, ("entrypoint", *where))
        raise SpecError(exc.message, file=file, line=line, field=exc.field) from None
