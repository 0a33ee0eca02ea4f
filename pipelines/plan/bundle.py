"""The code bundle every job runs: the entrypoints (or the user's source dir plus
the runtime helper), packed reproducibly so unchanged code has an unchanged hash.
"""
from __future__ import annotations

import fnmatch
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from pipelines.errors import SpecError

_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".pytest_cache", ".mypy_cache",
              ".ruff_cache", ".aws", ".ssh", ".gnupg", ".terraform"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
# Never packed, wherever they are: the bundle is uploaded to S3 and read by every job.
SECRET_PATTERNS = (".env", ".env.*", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*",
                   "id_ecdsa*", ".netrc", ".npmrc", ".pypirc", "credentials", "credentials.*", "*.kdbx", ".htpasswd",
                   ".git-credentials", ".pgpass", ".vault-token", ".s3cfg", ".boto", ".databrickscfg",
                   "*_history", ".history", "*.tfstate", "*.tfstate.*", "application_default_credentials.json")
# Secrets known by where they sit rather than by name (a folder's `config` or `token` is not one elsewhere).
SECRET_PATHS = ("*.docker/config.json", "*.kube/config", "*.huggingface/token", "*.cache/huggingface/token",
                "*wandb/settings", "*.config/gcloud/*")
# Packed, but named like something that should not be: said once, with how to leave it out.
# (`*token` and `*token.*`, not `*token*`: a tokenizer's files are not secrets.)
SENSITIVE_LOOKING = ("*secret*", "*token", "*token.*", "*passw*", "*apikey*", "*api_key*", "*access_key*")
IGNORE_FILES = (".gitignore", ".bakeoffignore")
RUN_DIR_MARKER = ".bakeoff.lock"  # every run directory has one (pipelines/local/lock.py)
LAUNCHER = "launch.py"
BUILTIN_SCRIPT = "train.py"
EVALUATE_SCRIPT = "evaluate.py"
REPORT_SCRIPT = "render_report.py"
COLLECTIVE_SCRIPT = "collective_check.py"  # the collective check step's script (legs[].collective_check)
SHIPPED_FILES = frozenset((LAUNCHER, EVALUATE_SCRIPT, REPORT_SCRIPT, COLLECTIVE_SCRIPT))  # beside a user's source_dir


@lru_cache(maxsize=1)
def entrypoints_dir() -> Path:
    """Where the container code lives: beside the packages in a checkout, or as
    package data (`pipelines/_bundle/entrypoints`) in an installed wheel."""
    package = Path(__file__).resolve().parent.parent  # pipelines/, this module being pipelines/plan/bundle.py
    for candidate in (package / "_bundle" / "entrypoints", package.parent / "entrypoints"):
        if (candidate / LAUNCHER).exists():
            return candidate
    raise FileNotFoundError("bakeoff's entrypoints are missing from this installation")


def is_secret(name: str, rel: str | None = None, path: Path | None = None) -> bool:
    if any(fnmatch.fnmatch(name, pattern) for pattern in SECRET_PATTERNS):
        return True
    if rel is not None and any(fnmatch.fnmatch(rel, pattern) for pattern in SECRET_PATHS):
        return True
    return path is not None and _is_service_account_key(path)


def _is_service_account_key(path: Path) -> bool:
    """A Google Cloud service-account key, whatever its file is called (they are JSON with the key inside)."""
    if path.suffix != ".json":
        return False
    try:
        if path.stat().st_size > 64_000:
            return False
        head = path.read_bytes()
    except OSError:
        return False
    return b'"private_key"' in head and b'"service_account"' in head


class IgnoreRules:
    """The subset of .gitignore both ignore files are read with: comments, `!` negation, a leading
    `/` anchoring to the source dir, a trailing `/` for folders, `*`, `?`, `[...]` and `**`."""

    def __init__(self, lines: list[str]):
        self.rules: list[tuple[bool, bool, bool, str]] = []  # (negated, anchored, folders only, pattern)
        for raw in lines:
            line = raw.rstrip("\n").rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            folders = line.endswith("/")
            line = line.rstrip("/")
            anchored = line.startswith("/") or "/" in line
            self.rules.append((negated, anchored, folders, line.lstrip("/")))

    @classmethod
    def of(cls, root: Path) -> IgnoreRules:
        lines: list[str] = []
        for name in IGNORE_FILES:
            try:
                lines += (root / name).read_text().splitlines()
            except (OSError, UnicodeDecodeError):
                pass
        return cls(lines)

    def ignored(self, rel: str) -> bool:
        parts = rel.split("/")
        verdict = False
        for negated, anchored, folders, pattern in self.rules:
            # A path is matched as itself (files) and through each folder it sits in.
            candidates = [("/".join(parts[:i]), i < len(parts)) for i in range(1, len(parts) + 1)]
            for candidate, is_folder in candidates:
                if folders and not is_folder:
                    continue
                name = candidate.rsplit("/", 1)[-1]
                hit = fnmatch.fnmatch(candidate, pattern) or fnmatch.fnmatch(candidate, pattern.replace("**/", "")) \
                    if anchored else fnmatch.fnmatch(name, pattern)
                if hit:
                    verdict = not negated
                    break
        return verdict


def _files_under(root: Path, prefix: str = "", skipped: list[str] | None = None,
                 contain: Path | None = None, exclude: tuple[Path, ...] = ()) -> dict[str, Path]:
    """Files to pack under `root`: caches, VCS folders, secrets and what the ignore files name left
    out (named in `skipped`); `exclude`: folders never packed (a run directory inside the source
    dir); with `contain`, a symlink resolving outside it is refused."""
    out: dict[str, Path] = {}
    rules = IgnoreRules.of(root) if skipped is not None else IgnoreRules([])
    excluded = [e.resolve() for e in exclude]
    if skipped is not None:
        # A bake-off's own run directory (`--out` inside the source dir): packing it would put each run
        # into the next one's bundle, which then never matches a finished job again.
        for marker in sorted(root.rglob(RUN_DIR_MARKER)):
            excluded.append(marker.parent.resolve())
            skipped.append(f"{marker.parent.relative_to(root).as_posix()}/ (a bakeoff run directory)")
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or path.suffix in _SKIP_SUFFIXES or not path.is_file():
            continue
        if excluded and any(path.resolve().is_relative_to(e) for e in excluded):
            continue  # named once above, not file by file
        if is_secret(path.name, rel.as_posix(), path) or rules.ignored(rel.as_posix()):
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
    # What the user's source dir had that was not packed, and what was packed though named like a
    # secret: said once (`validate`, `run`), never part of the bundle's identity.
    left_out: tuple[str, ...] = field(default=(), compare=False)
    looks_sensitive: tuple[str, ...] = field(default=(), compare=False)

    def notes(self) -> list[str]:
        out = []
        if self.left_out:
            out.append(f"source_dir: left out of the code bundle: {_listed(self.left_out)} (credentials, run "
                       "directories and what .gitignore/.bakeoffignore name are never packed)")
        if self.looks_sensitive:
            out.append(f"source_dir: packed, and named like a secret: {_listed(self.looks_sensitive)}; the bundle "
                       "goes to S3 and to every job: if it should not, name it in a .bakeoffignore")
        return out

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
        sensitive = tuple(n for n in sorted(user) if any(fnmatch.fnmatch(Path(n).name.lower(), p)
                                                          for p in SENSITIVE_LOOKING))
        return Bundle(tuple((name, files[name].read_bytes()) for name in sorted(files)), script,
                      left_out=tuple(skipped), looks_sensitive=sensitive)
    return Bundle(tuple((name, files[name].read_bytes()) for name in sorted(files)), script)


def _listed(names: tuple[str, ...], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


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
    """Script mode: the launcher's settings beside the script (bakeoff_runtime.contract.script_mode),
    part of the bundle and so of its hash and of every job's cache key; the script's process model
    as the spec says, or as its source shows (script_scan.py)."""
    from bakeoff_runtime.contract import script_mode as contract

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
    from pipelines.plan.script_scan import process_model, scan

    distributed, _ = process_model(spec, scan(bundle.files, bundle.script, SHIPPED_FILES))
    body = spec.entrypoint.script_mode.settings(spec.parity.metric, distributed).to_json().encode()
    return replace(bundle, files=tuple(sorted((*bundle.files, (name, body)))))


def bundle_for(spec, base_dir: Path) -> Bundle:
    if spec.entrypoint.builtin:
        from pipelines.plan.builtins import builtin_script

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
        from pipelines.spec.loader import locate

        where = ("script_mode",) if "script_mode" in (exc.field or "") else \
            ("source_dir",) if "source_dir" in (exc.field or "") else ("script",)
        file, line = locate(spec, ("entrypoint", *where))
        raise SpecError(exc.message, file=file, line=line, field=exc.field) from None
