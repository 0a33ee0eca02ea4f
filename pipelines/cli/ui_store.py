"""The MLflow store `bakeoff ui` serves: a private copy of the run directory's, its artifact locations pointing
into the run directory wherever that now is.

MLflow records each run's artifact location as an absolute URI (the `artifact_uri` of the `runs` table, under
the experiment's `artifact_location`; mlflow/store/tracking/sqlalchemy_store.py create_run), so a run directory
that was moved or copied points at the old place: the UI lists no artifacts and report.html answers 404. The
locations bakeoff writes are `<run dir>/mlflow/artifacts/...` (the local executor's experiment,
tracking/file_store.py): they are resolved again here, at serve time, against the run directory being served.
A location outside that pattern is left as it is (and the guard, ui_guard.py, serves only what lies inside the
run directory).

Serving a copy also keeps the run directory as it was: the MLflow server opens its store for writing (its
start-up checks and migrates the schema, SQLite keeps a journal beside the database), and `bakeoff ui` writes
nothing into a run directory unless asked (`--allow-writes`, which serves the original, relocated in place).
The copy is made with SQLite's online backup from a read-only connection (sqlite3.Connection.backup: "a
consistent snapshot even while the database is being written").
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlparse

ARTIFACTS = ("mlflow", "artifacts")


def _file_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return unquote(parsed.path)
    if parsed.scheme == "" and uri.startswith("/"):
        return uri
    return None


def relocate(con: sqlite3.Connection, run_dir: Path) -> int:
    """Point every bakeoff artifact location of the store at `run_dir`'s artifacts; the rows changed."""
    root = (run_dir.resolve() / Path(*ARTIFACTS)).as_posix()
    changed = 0
    for exp_id, location in con.execute("SELECT experiment_id, artifact_location FROM experiments").fetchall():
        old = _file_path(str(location or ""))
        if old is None or tuple(Path(old).parts[-2:]) != ARTIFACTS or old.rstrip("/") == root:
            continue
        old = old.rstrip("/")
        con.execute("UPDATE experiments SET artifact_location=? WHERE experiment_id=?",
                    (Path(root).as_uri(), exp_id))
        for run_id, uri in con.execute("SELECT run_uuid, artifact_uri FROM runs WHERE experiment_id=?",
                                       (exp_id,)).fetchall():
            path = _file_path(str(uri or ""))
            if path is not None and (path == old or path.startswith(old + "/")):
                con.execute("UPDATE runs SET artifact_uri=? WHERE run_uuid=?",
                            (Path(root + path[len(old):]).as_uri(), run_id))
                changed += 1
        changed += 1
    con.commit()
    return changed


def serving_copy(db: Path, run_dir: Path, into: Path) -> Path:
    """A copy of `db` in the private folder `into`, relocated to `run_dir`."""
    target = into / "mlflow.db"
    source = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
            relocate(copy, run_dir)
        finally:
            copy.close()
    finally:
        source.close()
    return target
