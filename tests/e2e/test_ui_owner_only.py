"""`bakeoff ui` on a shared machine: another local user (an unprivileged uid, over loopback) gets nothing
from it, and its owner gets nothing from outside the run directory, whatever a handed-over mlflow.db
says a run's artifacts are."""
import os
import sqlite3
import subprocess
import urllib.error
import urllib.request

import pytest
from shared_runs import copied_tiny_run  # noqa: F401  (the fixture `tiny_run`: a copy of the run of its own)

from bakeoff.pipelines.cli.ui_guard import COOKIE

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="playing another local user needs root (setpriv)")


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_run, tmp_path_factory):
    """The UI on a copy of the suite's run whose store was tampered with: one run's artifact location is a
    private 0700 folder holding a 0600 key."""
    from bakeoff.pipelines.cli.ui import launch, stop

    private = tmp_path_factory.mktemp("private")
    private.chmod(0o700)
    (private / "key").write_text("PRIVATE KEY MATERIAL\n")
    (private / "key").chmod(0o600)
    db = tiny_run["out"] / "mlflow" / "mlflow.db"
    con = sqlite3.connect(db)
    run_id = con.execute("SELECT run_uuid FROM runs ORDER BY start_time LIMIT 1").fetchone()[0]
    con.execute("UPDATE runs SET artifact_uri=? WHERE run_uuid=?", (private.as_uri(), run_id))
    con.commit()
    con.close()
    proc, links = launch(tiny_run["out"], _port())
    token = links["experiment"].split("token=", 1)[1].split("#", 1)[0]
    base = links["experiment"].split("/?token=", 1)[0]
    yield {"base": base, "token": token, "run_id": run_id, "private": private, "links": links}
    stop(proc)


def _get(url, token=None, method="GET"):
    request = urllib.request.Request(url, method=method, headers={"Cookie": f"{COOKIE}={token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_the_owner_with_the_printed_link_is_served_and_without_it_nobody_is(served):
    assert all(f"/?token={served['token']}" in url for url in served["links"].values())
    assert _get(f"{served['base']}/api/2.0/mlflow/experiments/search?max_results=5", served["token"])[0] == 200
    status, body = _get(f"{served['base']}/api/2.0/mlflow/experiments/search?max_results=5")
    assert status == 403 and "per-launch token" in body


def test_a_run_whose_artifacts_are_outside_the_run_directory_is_not_served_even_to_its_owner(served):
    url = f"{served['base']}/get-artifact?path=key&run_uuid={served['run_id']}"
    status, body = _get(url, served["token"])
    assert status == 403 and "outside the run directory" in body and "PRIVATE KEY" not in body


def test_writes_are_refused_even_with_the_token(served):
    status, body = _get(f"{served['base']}/ajax-api/2.0/mlflow/upload-artifact?run_uuid={served['run_id']}&path=x",
                        served["token"], method="POST")
    assert status == 403 and "--allow-writes" in body


@as_root
def test_another_local_user_gets_nothing(served):
    """An unprivileged uid on this machine, over loopback: the same requests that read the key and write a
    file as the UI's owner last round."""
    for path, method in ((f"/get-artifact?path=key&run_uuid={served['run_id']}", "GET"),
                         ("/api/2.0/mlflow/experiments/search?max_results=5", "GET"),
                         (f"/ajax-api/2.0/mlflow/upload-artifact?run_uuid={served['run_id']}&path=x", "POST")):
        done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "curl", "-s",
                               "-o", "-", "-w", "\n%{http_code}", "-X", method, f"{served['base']}{path}"],
                              capture_output=True, text=True, timeout=60)
        body, _, code = done.stdout.rpartition("\n")
        assert code == "403", (path, done.stdout, done.stderr)
        assert "PRIVATE KEY" not in body
        # A forged Host does not help either: it is the token that is missing.
        forged = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "curl",
                                 "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: localhost",
                                 f"{served['base']}{path}"], capture_output=True, text=True, timeout=60)
        assert forged.stdout == "403"
