"""A run directory copied elsewhere (and the copy moved again, so that no path it recorded exists) still serves
its report through `bakeoff ui`, and neither `bakeoff ui` nor `bakeoff report` writes into it."""
import json
import shutil
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

from shared_runs import shared_tiny_run  # noqa: F401  (the fixture `tiny_run`: one real run per invocation)

from bakeoff.pipelines.cli.ui_guard import COOKIE
from conftest import bakeoff


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.rglob("*"))
            if not p.is_symlink()}


def _get(url: str, token: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_a_copied_and_moved_run_directory_serves_its_report_from_where_it_is_now(tiny_run, tmp_path):
    from bakeoff.pipelines.cli.ui import launch, stop

    assert tiny_run["proc"].returncode in (0, 1, 3), tiny_run["proc"].stderr[-2000:]
    first = tmp_path / "copied"
    shutil.copytree(tiny_run["out"], first, symlinks=True)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    first.rename(moved)  # nothing is left where the copy was made, nor where the run ran in the copy's store
    ev = json.loads((moved / "evaluation" / "evaluation.json").read_text())
    parent = ev["mlflow"]["parent_run_id"]
    con = sqlite3.connect(moved / "mlflow" / "mlflow.db")
    recorded = con.execute("SELECT artifact_uri FROM runs WHERE run_uuid=?", (parent,)).fetchone()[0]
    con.close()
    assert str(tiny_run["out"].resolve()) in recorded and str(moved) not in recorded  # it points at the original
    before = _snapshot(moved)

    proc, links = launch(moved, _port())
    try:
        token = links["experiment"].split("token=", 1)[1].split("#", 1)[0]
        base = links["experiment"].split("/?token=", 1)[0]
        status, listing = _get(f"{base}/ajax-api/2.0/mlflow/artifacts/list?run_uuid={parent}", token)
        assert status == 200 and "report.html" in listing, (status, listing[:500])
        status, page = _get(f"{base}/get-artifact?path=report.html&run_uuid={parent}", token)
        assert status == 200 and "Bake-off tiny" in page, (status, page[:500])
        # A job's files come from the copy too.
        child = ev["legs"]["trn1"]["runs"][0]["mlflow_run_id"]
        status, log = _get(f"{base}/get-artifact?path=job/job.log&run_uuid={child}", token)
        assert status == 200 and "[bakeoff]" in log, (status, log[:500])
    finally:
        stop(proc)
    report = bakeoff("report", moved, "--json")
    assert report.returncode in (0, 1, 3), report.stderr[-2000:]
    assert json.loads(report.stdout)["report_path"] == str(moved / "evaluation" / "report.html")
    assert _snapshot(moved) == before, "bakeoff ui or bakeoff report wrote into the run directory"
