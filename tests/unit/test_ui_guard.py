"""`bakeoff ui`'s guard (pipelines/cli/ui_guard.py) in front of a stand-in for MLflow's app: the server
answers its owner only. Each attack has a benign twin that still gets through."""
import asyncio
import sqlite3

import pytest

from bakeoff.pipelines.cli.ui_guard import COOKIE, Guard

TOKEN = "s3cr3t-token"


class Inner:
    """MLflow's app as the guard sees it: whatever reaches it is served."""

    def __init__(self):
        self.seen = []

    async def __call__(self, scope, receive, send):
        self.seen.append((scope["method"], scope["path"]))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"served"})


def _store(tmp_path, locations):
    db = tmp_path / "run" / "mlflow" / "mlflow.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (run_uuid TEXT, artifact_uri TEXT)")
    con.executemany("INSERT INTO runs VALUES (?, ?)", locations.items())
    con.commit()
    con.close()
    return db


def _guard(tmp_path, locations=None, writes=False):
    db = _store(tmp_path, locations or {})
    inner = Inner()
    return Guard(inner, {"token": TOKEN, "root": str(db.parent.parent), "db": str(db), "writes": writes,
                         "hosts": ["127.0.0.1", "localhost"]}), inner


def _call(app, method="GET", path="/", query="", host="127.0.0.1:5000", cookie=None):
    headers = [(b"host", host.encode())]
    if cookie is not None:
        headers.append((b"cookie", f"{COOKIE}={cookie}".encode()))
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(), "headers": headers}
    asyncio.run(app(scope, receive, send))
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:]).decode()
    return start["status"], dict(start["headers"]), body


def test_without_the_launchs_token_nothing_is_served(tmp_path):
    guard, inner = _guard(tmp_path)
    status, _, body = _call(guard, path="/ajax-api/2.0/mlflow/experiments/search", method="POST")
    assert status == 403 and "per-launch token" in body and not inner.seen
    assert _call(guard, cookie="guessed")[0] == 403
    assert _call(guard, query="token=guessed")[0] == 403


def test_the_printed_link_sets_the_cookie_and_then_the_owner_is_served(tmp_path):
    guard, inner = _guard(tmp_path)
    status, headers, _ = _call(guard, query=f"token={TOKEN}&x=1")
    assert status == 303 and headers[b"location"] == b"/?x=1"  # the token leaves the address bar
    cookie = headers[b"set-cookie"].decode()
    assert cookie.startswith(f"{COOKIE}={TOKEN};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert _call(guard, path="/ajax-api/2.0/mlflow/runs/search", method="POST", cookie=TOKEN)[0] == 200
    assert inner.seen == [("POST", "/ajax-api/2.0/mlflow/runs/search")]


def test_a_host_it_was_not_started_for_is_refused(tmp_path):
    guard, inner = _guard(tmp_path)
    assert _call(guard, host="evil.example:5000", cookie=TOKEN)[0] == 403  # DNS rebinding
    assert _call(guard, host="localhost:5000", cookie=TOKEN)[0] == 200


@pytest.mark.parametrize("method, path", [
    ("POST", "/ajax-api/2.0/mlflow/runs/delete"), ("POST", "/ajax-api/2.0/mlflow/upload-artifact"),
    ("POST", "/api/2.0/mlflow/experiments/create"), ("DELETE", "/api/2.0/mlflow/runs/x"),
    ("PATCH", "/ajax-api/2.0/mlflow/experiments/update"),
])
def test_it_reads_only_unless_writes_were_asked_for(tmp_path, method, path):
    guard, inner = _guard(tmp_path)
    status, _, body = _call(guard, method=method, path=path, cookie=TOKEN)
    assert status == 403 and "--allow-writes" in body and not inner.seen
    allowed, _ = _guard(tmp_path / "w", writes=True)
    assert _call(allowed, method=method, path=path, cookie=TOKEN)[0] == 200


def test_the_reads_the_ui_makes_by_post_pass(tmp_path):
    guard, inner = _guard(tmp_path)
    for path in ("/graphql", "/ajax-api/2.0/mlflow/experiments/search", "/ajax-api/2.0/mlflow/runs/search",
                 "/ajax-api/2.0/mlflow/experiments/search-datasets"):
        assert _call(guard, method="POST", path=path, cookie=TOKEN)[0] == 200, path


def test_artifacts_are_served_only_from_inside_the_run_directory(tmp_path):
    private = tmp_path / "private"  # another user's 0700 folder, named by a handed-over mlflow.db
    private.mkdir(mode=0o700)
    inside = (tmp_path / "run" / "mlflow" / "artifacts" / "1" / "abc").as_uri()
    guard, inner = _guard(tmp_path, {"abc": inside, "evil": private.as_uri(), "rel": "/etc"})
    ok = _call(guard, path="/get-artifact", query="path=summary.json&run_uuid=abc", cookie=TOKEN)
    assert ok[0] == 200
    for run in ("evil", "rel"):
        status, _, body = _call(guard, path="/get-artifact", query=f"path=key&run_uuid={run}", cookie=TOKEN)
        assert status == 403 and "outside the run directory" in body
    listed = _call(guard, path="/ajax-api/2.0/mlflow/artifacts/list", query="run_id=evil", cookie=TOKEN)
    assert listed[0] == 403
    assert _call(guard, path="/get-artifact", query="path=x&run_uuid=nope", cookie=TOKEN)[0] == 403
    for path in ("/model-versions/get-artifact", "/ajax-api/2.0/mlflow/get-trace-artifact",
                 "/api/2.0/mlflow-artifacts/artifacts/x", "/ajax-api/2.0/mlflow/logged-models/m/artifacts/files"):
        assert _call(guard, path=path, cookie=TOKEN)[0] == 403, path
    assert [p for _, p in inner.seen] == ["/get-artifact"]


def test_a_link_inside_the_run_directory_pointing_out_is_not_inside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    link = tmp_path / "run" / "mlflow" / "artifacts"
    guard, _ = _guard(tmp_path, {"abc": (link / "1").as_uri()})
    link.symlink_to(outside, target_is_directory=True)  # the location's words say inside; where it is is not
    assert _call(guard, path="/get-artifact", query="path=x&run_uuid=abc", cookie=TOKEN)[0] == 403
