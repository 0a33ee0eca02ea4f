"""The code bundle every job runs: the entrypoints (or the user's source dir plus
the runtime helper), packed reproducibly so unchanged code has an unchanged hash.
"""
from __future__ import annotations

import fnmatch
import gzip
import hashlib
import io
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from bakeoff.pipelines.errors import SpecError, words
from bakeoff.pipelines.params import OUT_DIR
from bakeoff.pipelines.plan.secret_scan import HEAD_BYTES, describe, scan_head

_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".pytest_cache", ".mypy_cache",
              ".ruff_cache", ".aws", ".ssh", ".gnupg", ".terraform"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
# Never packed, wherever they are: the bundle is uploaded to S3 and read by every job. By name: `.netrc*`
# (.netrc.bak too), kubeconfig files, MySQL's .my.cnf, PostgreSQL's .pgpass, rclone's config, Kaggle's API key,
# Docker's legacy .dockercfg, git's, npm's and pip's (.pypirc) credential stores.
SECRET_PATTERNS = (".env", ".env.*", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*",
                   "id_ecdsa*", ".netrc*", "_netrc", ".npmrc", ".pypirc", "credentials", "credentials.*", "*.kdbx",
                   ".htpasswd", ".git-credentials", ".pgpass", ".vault-token", ".s3cfg", ".boto", ".databrickscfg",
                   "*_history", ".history", "*.tfstate", "*.tfstate.*", "application_default_credentials.json",
                   "kubeconfig", "kubeconfig.*", "*.kubeconfig", ".my.cnf", "rclone.conf", "kaggle.json", ".dockercfg")
# Secrets known by where they sit rather than by name (a folder's `config` or `token` is not one elsewhere):
# GitHub CLI's hosts.yml, the Azure CLI's token caches, Maven's settings.xml (server passwords), Podman/Buildah's
# containers/auth.json, the AWS CLI's files.
SECRET_PATHS = ("*.docker/config.json", "*.kube/config", "*.huggingface/token", "*.cache/huggingface/token",
                "*wandb/settings", "*.config/gcloud/*", "*.config/gh/hosts.yml", "*.azure/*token*", "*.m2/settings.xml",
                "*.kaggle/kaggle.json", "*containers/auth.json", "*.aws/credentials", "*.aws/config",
                "*.config/rclone/rclone.conf")
_SECRET_NAME_RE = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS))
_SECRET_PATH_RE = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATHS))
# Packed, but named like something that should not be: said once, with how to leave it out.
# (`*token` and `*token.*`, not `*token*`: a tokenizer's files are not secrets.)
SENSITIVE_LOOKING = ("*secret*", "*token", "*token.*", "*passw*", "*apikey*", "*api_key*", "*access_key*")
_SENSITIVE_RE = re.compile("|".join(fnmatch.translate(p) for p in SENSITIVE_LOOKING))
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
    """A credential file by its name, or by where it sits (`rel`, the path under the folder packed), or a
    Google service-account key by what it holds (`path` given). Content in general: secrets_in."""
    if _SECRET_NAME_RE.match(name):
        return True
    if rel is not None and _SECRET_PATH_RE.match(rel):
        return True
    return path is not None and _is_service_account_key(path)


def secrets_in(path: Path) -> str:
    """What secrets the head of the file at `path` holds (bakeoff.pipelines.plan.secret_scan), said without them;
    "" when none, or when it is binary or cannot be read."""
    try:
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return ""
    found = scan_head(head)
    return describe(found) if found else ""


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


# Ignore files are the user's, and matched against every path packed: bounded, so that a huge one is refused in
# one line instead of keeping `validate` busy for minutes (50,000 patterns tried one by one on 5,000 files did).
# Patterns are looked up by their literal start or end (the longer), so many of them cost little; those with
# neither (`*x*`), and any set sharing one literal, are tried one by one, and only so many of those are taken.
MAX_IGNORE_PATTERNS = 100_000  # in each ignore file
MAX_SCANNED_PATTERNS = 1_000  # in each: with no literal start or end, or sharing one with as many others
_GLOB_SPECIAL = re.compile(r"[*?\[]")


class _GlobIndex:
    """Globs (fnmatch's, case-sensitive as on POSIX) by the literal each must start or end with: `last(s)`
    is the highest rule number of a glob that matches `s`, found by a few dictionary lookups and the few
    globs that share its literal. `most`: the most globs one string can be tried against one by one."""

    def __init__(self) -> None:
        self.exact: dict[str, int] = {}
        # literal length -> literal -> [(rule number, glob)]: `size` characters of a string find its globs
        self.starts: dict[int, dict[str, list[tuple[int, str]]]] = {}
        self.ends: dict[int, dict[str, list[tuple[int, str]]]] = {}
        self.rest: list[tuple[int, str]] = []  # no literal start or end (`*x*`)
        self._rest_any: Callable | None = None
        self._compiled: dict[str, Callable] = {}  # a glob is compiled when a string first reaches it
        self.most = 0

    def add(self, glob: str, number: int) -> None:
        first = _GLOB_SPECIAL.search(glob)
        if first is None:
            self.exact[glob] = number
            return
        head = glob[:first.start()]
        tail = re.split(r"[*?\]\[]", glob)[-1]  # after the last wildcard or bracket: literal
        if head or tail:
            table, key = (self.starts, head) if len(head) >= len(tail) else (self.ends, tail)
            bucket = table.setdefault(len(key), {}).setdefault(key, [])
        else:
            bucket = self.rest
            self._rest_any = None
        bucket.append((number, glob))
        self.most = max(self.most, len(bucket))

    def _match(self, glob: str, s: str) -> bool:
        match = self._compiled.get(glob)
        if match is None:
            match = self._compiled[glob] = re.compile(fnmatch.translate(glob)).match
        return match(s) is not None

    def last(self, s: str) -> int:
        best = self.exact.get(s, -1)
        for size, table in self.starts.items():
            for number, glob in table.get(s[:size], ()) if size <= len(s) else ():
                if number > best and self._match(glob, s):
                    best = number
        for size, table in self.ends.items():
            for number, glob in table.get(s[-size:], ()) if size <= len(s) else ():
                if number > best and self._match(glob, s):
                    best = number
        if self.rest:
            if self._rest_any is None:  # one regex says whether any of them matches; then which did last
                self._rest_any = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for _, g in self.rest)).match
            if self._rest_any(s):
                for number, glob in reversed(self.rest):
                    if number <= best:
                        break
                    if self._match(glob, s):
                        best = number
                        break
        return best


class IgnoreRules:
    """The subset of .gitignore both ignore files are read with: comments, `!` negation, a leading
    `/` anchoring to the source dir, a trailing `/` for folders, `*`, `?`, `[...]` and `**`. The last
    pattern that matches a path (or a folder it sits in) decides."""

    def __init__(self, lines: list[str], source: str = "an ignore file"):
        self.rules: list[tuple[bool, bool, bool, str]] = []  # (negated, anchored, folders only, pattern)
        # (anchored, folders only) -> its patterns: a path's name is looked up in the unanchored, its path in the rest
        self._index = {(a, f): _GlobIndex() for a in (False, True) for f in (False, True)}
        self._folders: dict[str, int] = {}  # folder -> the last rule matching it (kept: each of its files asks)
        self._read(lines, source)

    def _read(self, lines: list[str], source: str) -> None:
        counted = len(self.rules)
        for raw in lines:
            line = raw.rstrip("\n").rstrip()
            if not line or line.startswith("#"):
                continue
            if len(self.rules) - counted >= MAX_IGNORE_PATTERNS:
                raise SpecError(f"{source} has more than {MAX_IGNORE_PATTERNS:,} patterns, the most bakeoff reads "
                                "from an ignore file: name folders rather than files, or use fewer, wider globs",
                                field="entrypoint.source_dir")
            negated = line.startswith("!")
            line = line[1:] if negated else line
            folders = line.endswith("/")
            line = line.rstrip("/")
            anchored = line.startswith("/") or "/" in line
            pattern = line.lstrip("/")
            number = len(self.rules)
            self.rules.append((negated, anchored, folders, pattern))
            index = self._index[(anchored, folders)]
            index.add(pattern, number)
            if anchored and "**/" in pattern:
                index.add(pattern.replace("**/", ""), number)  # `a/**/b` also matches a/b
            if index.most > MAX_SCANNED_PATTERNS:
                raise SpecError(f"{source} has more than {MAX_SCANNED_PATTERNS:,} patterns that must each be tried on "
                                f"every file (no literal start or end of their own, or the same one, such as "
                                f"`{pattern}`), the most bakeoff takes from an ignore file: name folders rather than "
                                "files, or use fewer, wider globs", field="entrypoint.source_dir")

    @classmethod
    def of(cls, root: Path) -> IgnoreRules:
        rules = cls([])
        for name in IGNORE_FILES:
            try:
                lines = (root / name).read_text().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            rules._read(lines, str(root / name))
        return rules

    def _last(self, candidate: str, is_folder: bool) -> int:
        """The last rule matching `candidate` itself: by its name (unanchored) or by its path (anchored)."""
        name = candidate.rsplit("/", 1)[-1]
        best = max(self._index[(False, False)].last(name), self._index[(True, False)].last(candidate))
        if is_folder:
            best = max(best, self._index[(False, True)].last(name), self._index[(True, True)].last(candidate))
        return best

    def ignored(self, rel: str) -> bool:
        if not self.rules:
            return False
        parts = rel.split("/")
        best = self._last(rel, False)  # a path is matched as itself and through each folder it sits in
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            known = self._folders.get(folder)
            if known is None:
                known = self._folders[folder] = self._last(folder, True)
            best = max(best, known)
        return best >= 0 and not self.rules[best][0]


def _files_under(root: Path, prefix: str = "", skipped: list[str] | None = None,
                 contain: Path | None = None, exclude: tuple[Path, ...] = (),
                 holding: list[tuple[str, str]] | None = None) -> dict[str, Path]:
    """Files to pack under `root`: caches, VCS folders, secrets and what the ignore files name left
    out (named in `skipped`); `exclude`: folders never packed (a run directory inside the source
    dir); with `contain`, a symlink resolving outside it is refused. A user's source dir (`skipped`
    given) is also read for secrets by content (secret_scan.py): such a file is left out like a
    credential file is, and said in `holding` with what it holds (never the secret itself)."""
    out: dict[str, Path] = {}
    rules = IgnoreRules.of(root) if skipped is not None else IgnoreRules([])
    excluded = [e.resolve() for e in exclude]
    if skipped is not None:
        # A bake-off's own run directory (`--out` inside the source dir): packing it would put each run
        # into the next one's bundle, which then never matches a finished job again.
        for marker in sorted(root.rglob(RUN_DIR_MARKER)):
            if marker.parent.resolve() == root.resolve():
                raise SpecError(words(f"{root} is a bakeoff run directory (it holds {RUN_DIR_MARKER}: ", OUT_DIR,
                                      " named the source dir itself), so every run's jobs would be packed into the "
                                      "next one's code: give ", OUT_DIR, " a folder of its own (e.g. runs/NAME beside "
                                      "the spec, or inside the source dir, which is left out), and delete "
                                      f"{marker} if no run uses it"), field="entrypoint.source_dir")
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
        if skipped is not None:
            held = secrets_in(path)
            if held:
                skipped.append(rel.as_posix())
                if holding is not None:
                    holding.append((rel.as_posix(), held))
                continue
        out[f"{prefix}{rel.as_posix()}"] = path
    return out


def _refuse_too_wide(source: Path) -> None:
    wide = too_wide(source)
    if wide:
        raise SpecError(f"source_dir {source.resolve()} is {wide}: all of it would be packed (dotfiles, keys, "
                        "caches) and uploaded to S3 for every job; point source_dir at the folder that holds the "
                        "training code", field="entrypoint.source_dir")


def too_wide(source: Path) -> str | None:
    """What is wrong with packing `source` whole: the file system's root, the user's home directory, or
    a folder holding it (dotfiles, keys, caches: everything the user has); None when it is a project's."""
    resolved = source.resolve()
    if resolved == Path(resolved.anchor):
        return "the root of the file system"
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError):  # no home directory known
        return None
    if resolved == home:
        return "your home directory"
    if home.is_relative_to(resolved):
        return f"a folder above your home directory ({home})"
    return None


@dataclass(frozen=True)
class Bundle:
    files: tuple[tuple[str, bytes], ...]
    script: str
    # What the user's source dir had that was not packed, and what was packed though named like a
    # secret: said once (`validate`, `run`), never part of the bundle's identity.
    left_out: tuple[str, ...] = field(default=(), compare=False)
    looks_sensitive: tuple[str, ...] = field(default=(), compare=False)
    # Of those left out, the files whose content holds a secret, each with what it holds: ("config.py",
    # "a GitHub token (ghp_…, line 3)"), never the secret itself.
    holds_secrets: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def notes(self) -> list[str]:
        out = []
        by_content = {name for name, _ in self.holds_secrets}
        others = tuple(n for n in self.left_out if n not in by_content)
        if others:
            out.append(f"source_dir: left out of the code bundle: {_listed(others)} (credentials, run "
                       "directories and what .gitignore/.bakeoffignore name are never packed)")
        if self.holds_secrets:
            out.append(f"source_dir: left out of the code bundle, as each holds a secret: "
                       f"{_listed(tuple(f'{n} ({held})' for n, held in self.holds_secrets), 3)}; the bundle goes "
                       "to S3 and to every job: have the code "
                       "read the secret at run time (AWS Secrets Manager, or the execution role for AWS)")
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
        _refuse_too_wide(source_dir)
        if not source_dir.is_dir():
            raise SpecError(f"source_dir {source_dir} is not a directory", field="entrypoint.source_dir")
        skipped: list[str] = []
        holding: list[tuple[str, str]] = []
        user = _files_under(source_dir, skipped=skipped, contain=contain, holding=holding)
        if script not in user:
            held = dict(holding).get(script or "")
            if held:
                raise SpecError(f"script {script!r} holds {held}, so it is never packed (the bundle goes to S3 and "
                                "to every job): have it read the secret at run time (AWS Secrets Manager, or the "
                                "execution role for AWS)", field="entrypoint.script")
            if script in skipped:
                raise SpecError(f"script {script!r} is left out of the bundle: it is named like a credential file, "
                                "or .gitignore/.bakeoffignore names it; rename it, or take it out of the ignore file",
                                field="entrypoint.script")
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
        sensitive = tuple(n for n in sorted(user) if _SENSITIVE_RE.match(n.rsplit("/", 1)[-1].lower()))
        return Bundle(tuple((name, files[name].read_bytes()) for name in sorted(files)), script,
                      left_out=tuple(skipped), looks_sensitive=sensitive,
                      holds_secrets=tuple(holding))
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
    from bakeoff.pipelines.plan.script_scan import process_model, scan

    distributed, _ = process_model(spec, scan(bundle.files, bundle.script, SHIPPED_FILES))
    body = spec.entrypoint.script_mode.settings(spec.parity.metric, distributed).to_json().encode()
    return replace(bundle, files=tuple(sorted((*bundle.files, (name, body)))))


def bundle_for(spec, base_dir: Path) -> Bundle:
    if spec.entrypoint.builtin:
        from bakeoff.pipelines.plan.builtins import builtin_script

        return build_bundle(script=builtin_script(spec.entrypoint.builtin))
    ep = spec.entrypoint
    try:
        _refuse_too_wide(base_dir / ep.source_dir)  # before `inside`, whose refusal of `/` says less
        source = inside(base_dir, ep.source_dir, ep.allow_outside_spec_dir, "entrypoint.source_dir")
        contain = None if ep.allow_outside_spec_dir else source
        bundle = build_bundle(source, ep.script, contain=contain, max_bytes=int(ep.max_bundle_mb * 1e6))
        if ep.mode == "script":
            bundle = with_script_settings(bundle, spec)
        return bundle
    except SpecError as exc:
        from bakeoff.pipelines.spec.loader import locate

        where = ("script_mode",) if "script_mode" in (exc.field or "") else \
            ("source_dir",) if "source_dir" in (exc.field or "") else ("script",)
        file, line = locate(spec, ("entrypoint", *where))
        raise SpecError(exc.message, file=file, line=line, field=exc.field) from None
