"""A run directory is data: bakeoff writes only inside it, and never through a link in it.

A run directory can come from anyone (a colleague's tarball, a CI artifact, a shared folder). A
symbolic link planted in it would make bakeoff write, truncate or delete outside it: `.bakeoff.lock`
pointing at any file, `jobs/JOB/opt/ml` pointing at a folder whose `model/` and `output/` a new
attempt clears, `evaluation/` pointing at a folder its report overwrites. So before a command
touches a run directory it is walked once (`check`), without following links, and any link is
refused with one line, but the data-channel links bakeoff itself lays in a job's
`opt/ml/input/data/` (read by the job, never written through: a new attempt unlinks them). The
directory given on the command line may itself be a link (the user's own choice); what is under it
may not. Files bakeoff replaces are written beside and renamed over (a rename replaces a link, it
does not follow it), and the lock is opened with O_NOFOLLOW.
"""
from __future__ import annotations

import os
from pathlib import Path

from bakeoff.pipelines.errors import SpecError, words
from bakeoff.pipelines.params import OUT_DIR

# Where bakeoff lays links of its own: a job's data channels (pipelines/local/jobs.lay_out), on each host.
_CHANNEL_PARTS = ("opt", "ml", "input", "data")


class LinkInRunDir(SpecError):
    """A link inside a run directory: refused, since writing through it would write outside it."""


def _is_channel_link(rel: tuple[str, ...]) -> bool:
    """jobs/JOB/opt/ml/input/data/NAME[/FILE], or jobs/JOB/hosts/HOST/opt/ml/input/data/NAME[/FILE]."""
    if not rel or rel[0] != "jobs":
        return False
    for start in range(1, len(rel)):
        if rel[start:start + len(_CHANNEL_PARTS)] == _CHANNEL_PARTS:
            return len(rel) - (start + len(_CHANNEL_PARTS)) in (1, 2)
    return False


def check(run_dir: Path) -> None:
    """Refuse a run directory holding a link anywhere but a job's data channels (one line naming it)."""
    root = Path(run_dir)
    if not root.exists():
        return
    base = root.resolve()
    for top, dirs, files in os.walk(base, followlinks=False):
        here = Path(top)
        for name in [*dirs, *files]:
            path = here / name
            if not path.is_symlink():
                continue
            rel = path.relative_to(base).parts
            if _is_channel_link(rel):
                continue
            raise LinkInRunDir(f"{Path(run_dir) / Path(*rel)} is a symbolic link (to {os.readlink(path)}): bakeoff "
                               "writes only inside a run directory, never through a link in it; remove the link, "
                               "or give another " + words(OUT_DIR), file=str(root))


def inside(run_dir: Path, path: Path) -> Path:
    """`path`, checked to lie in `run_dir` with no link on the way (each component that exists): for a
    directory bakeoff is about to clear or write into, between the walk of `check` and its use."""
    base = Path(run_dir).resolve()
    target = Path(path)
    rel = target.relative_to(run_dir) if not target.is_absolute() or target.is_relative_to(run_dir) else None
    if rel is None:
        try:
            rel = target.resolve().relative_to(base)
        except ValueError:
            raise LinkInRunDir(f"{path} is outside the run directory {run_dir}", file=str(run_dir)) from None
    current = base
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            raise LinkInRunDir(f"{current} is a symbolic link (to {os.readlink(current)}): bakeoff writes only "
                               "inside a run directory, never through a link in it; remove the link, or give "
                               "another " + words(OUT_DIR), file=str(run_dir))
        if not current.exists():
            break
    return base / rel


def open_no_follow(path: Path, flags: int, mode: int = 0o644) -> int:
    """os.open with O_NOFOLLOW: a link at `path` is refused in one line, not followed."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP:
            raise LinkInRunDir(f"{path} is a symbolic link (to {os.readlink(path)}): bakeoff never writes through "
                               "a link in a run directory; remove it, or give another " + words(OUT_DIR),
                               file=str(path.parent)) from None
        raise
