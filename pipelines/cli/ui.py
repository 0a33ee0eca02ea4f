"""`bakeoff ui RUN_DIR`: the MLflow UI of a local run, started in seconds, with links to the comparison,
served to its owner only.

`mlflow ui` with its defaults is slow and noisy on a small machine: a CLI process that spawns
uvicorn with 4 workers, a job-execution runner (huey consumers) and a StarletteDeprecationWarning
per worker (mlflow/server/__init__.py `_run_server` in mlflow 3.17.2: `workers or 4`, and
MLFLOW_SERVER_ENABLE_JOB_EXECUTION defaults to true in mlflow/environment_variables.py). A local
bake-off needs none of that, so bakeoff starts MLflow through its public interface, the `mlflow server`
command, with one worker (`--workers 1`), its documented switches (job execution, the AI gateway and
telemetry off by their environment variables) and bakeoff's guard as the server's app: `--app-name
bakeoff-ui`, an app plugin that bakeoff registers in the `mlflow.app` entry-point group (pyproject.toml;
MLflow's plugin docs, https://mlflow.org/docs/latest/ml/plugins/, the interface MLflow's own basic-auth app
uses; `_find_app` and `_is_factory` in mlflow/server/__init__.py: a function is run as uvicorn's
`--factory`). The guard's factory wraps the same `mlflow.server.fastapi_app:app` that `mlflow server`
runs without an app name, configured by the command line's options, so nothing of MLflow's internals is
set by bakeoff. (--app-name is marked experimental in MLflow's CLI help; mlflow/mlflow#10370 asks to
stabilise it.) The server is checked to see the run's store before the links are printed.

The links printed come from the store itself (read with sqlite3, no mlflow import): the compare
view of the per-leg summary runs (legs side by side), of every seed's run, and the experiment.

The server answers its owner only (pipelines/cli/ui_guard.py, in front of MLflow's app): a per-launch
token in the printed links, the Host names it was started for (MLflow's own check is given the same
list, MLFLOW_SERVER_ALLOWED_HOSTS), reads only unless `--allow-writes`, and the artifacts of runs whose
artifact location lies inside the run directory. There is no unguarded fallback: a server that cannot be
guarded is not started. Its log goes to a private temporary folder, not into the run directory.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from bakeoff.pipelines.errors import RunError, SpecError

STORE = Path("mlflow") / "mlflow.db"
LEGS_VIEW_ID = "bakeoff-legs"  # the saved view the evaluation writes (bakeoff_runtime.tracking.parent_run)
QUIET_ENV = {
    # No job-execution runner: it exists for MLflow's GenAI jobs, which a bake-off never starts.
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    "MLFLOW_ENABLE_AI_GATEWAY": "false",
    # A run directory's UI tells nobody it was opened (mlflow/telemetry/utils.py: MLFLOW_DISABLE_TELEMETRY).
    "MLFLOW_DISABLE_TELEMETRY": "true",
    # starlette.middleware.wsgi's deprecation, raised once per worker by MLflow's own import.
    "PYTHONWARNINGS": "ignore:starlette.middleware.wsgi is deprecated,ignore::DeprecationWarning",
}


@dataclass(frozen=True)
class Views:
    """What a run directory's MLflow store holds for its latest bake-off."""

    experiment_id: str
    parent_run_id: str | None = None
    summary_run_ids: list[str] = field(default_factory=list)
    seed_run_ids: list[str] = field(default_factory=list)
    legs_view: bool = False


def store_path(run_dir: str | Path) -> Path:
    db = Path(run_dir) / STORE
    if not db.exists():
        raise SpecError(f"no MLflow store at {db}; run `bakeoff run SPEC --out {run_dir}` first")
    return db.resolve()


def find_views(db: Path) -> Views | None:
    """The latest bake-off in the store: its parent, its legs' summary runs (in the order of the
    parent's `legs` param) and its seeds' runs (by name). None when the store has no runs."""
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        def tag_of(run: str, key: str) -> str | None:
            row = con.execute("SELECT value FROM tags WHERE run_uuid=? AND key=?", (run, key)).fetchone()
            return row[0] if row else None

        parent = con.execute(
            "SELECT r.run_uuid, r.experiment_id FROM runs r JOIN tags t ON t.run_uuid=r.run_uuid "
            "WHERE t.key='bakeoff.role' AND t.value='parent' AND r.lifecycle_stage='active' "
            "ORDER BY r.start_time DESC LIMIT 1").fetchone()
        if parent is None:
            any_run = con.execute("SELECT experiment_id FROM runs WHERE lifecycle_stage='active' "
                                  "ORDER BY start_time DESC LIMIT 1").fetchone()
            return Views(str(any_run[0])) if any_run else None
        parent_id, exp_id = parent
        kids = con.execute(
            "SELECT r.run_uuid, r.name FROM runs r JOIN tags t ON t.run_uuid=r.run_uuid "
            "WHERE t.key='mlflow.parentRunId' AND t.value=? AND r.lifecycle_stage='active' ORDER BY r.name",
            (parent_id,)).fetchall()
        legs_row = con.execute("SELECT value FROM params WHERE run_uuid=? AND key='legs'", (parent_id,)).fetchone()
        order = legs_row[0].split(",") if legs_row else []
        summaries: list[str] = []
        seeds: list[str] = []
        for run_id, _name in kids:
            (summaries if tag_of(run_id, "bakeoff.role") == "summary" else seeds).append(run_id)
        summaries.sort(key=lambda r: order.index(leg) if (leg := tag_of(r, "bakeoff.leg")) in order else len(order))
        view = con.execute("SELECT 1 FROM experiment_tags WHERE experiment_id=? AND key=?",
                           (exp_id, f"mlflow.sharedViewState.{LEGS_VIEW_ID}")).fetchone()
        return Views(str(exp_id), parent_id, summaries, seeds, legs_view=view is not None)
    finally:
        con.close()


def compare_url(base: str, experiment_id: str, run_ids: list[str]) -> str:
    """MLflow's compare-runs route (Routes.getCompareRunPageRoute in the MLflow UI's routes.tsx)."""
    def enc(values: list[str]) -> str:
        return quote(json.dumps(values, separators=(",", ":")), safe="")

    return f"{base}/#/compare-runs?runs={enc(run_ids)}&experiments={enc([experiment_id])}&{TRAINING_VIEW}"


# MLflow 3's UI opens an experiment in its GenAI mode (traces, an assistant panel, no metric columns) unless
# told otherwise: since 3.x its sidebar's workflow switch decides the experiment's kind for every page, from
# the `workflowType` query parameter (`genai` or `machine_learning`), else the browser's remembered choice
# (local storage `mlflow.workflowType`), else `genai`; the `mlflow.experimentKind` experiment tag is read only
# when that switch is off (WorkflowTypeProvider and useExperimentKind in the UI bundled with mlflow 3.17.2,
# mlflow/server/js/build/static/js/main.*.js; the switch's flag returns true there). So every link says
# `workflowType=machine_learning`: the model-training view, whatever the browser last chose.
TRAINING_VIEW = "workflowType=machine_learning"


def urls(base: str, views: Views | None) -> dict[str, str]:
    if views is None:
        return {"experiments": f"{base}/#/experiments?{TRAINING_VIEW}"}
    runs_page = f"{base}/#/experiments/{views.experiment_id}/runs"
    found = {}
    if views.legs_view:  # the runs table and charts of the saved view (compareRunsMode: the page's chart tab)
        found["table"] = f"{runs_page}?{TRAINING_VIEW}&viewStateShareKey={LEGS_VIEW_ID}"
        found["charts"] = f"{runs_page}?{TRAINING_VIEW}&viewStateShareKey={LEGS_VIEW_ID}&compareRunsMode=CHART"
    if views.summary_run_ids:
        found["legs"] = compare_url(base, views.experiment_id, views.summary_run_ids)
    if views.seed_run_ids:
        found["seeds"] = compare_url(base, views.experiment_id, views.seed_run_ids)
    found["experiment"] = f"{runs_page}?{TRAINING_VIEW}"
    return found


def allowed_hosts(host: str) -> list[str]:
    """The Host names the server answers to: the address it serves on, and this machine's own names and
    addresses when it serves them all (0.0.0.0, ::); loopback names for a loopback server."""
    names = {"localhost", "127.0.0.1", "[::1]", "::1"} if _loopback(host) or host in ("0.0.0.0", "::") else set()
    if host in ("0.0.0.0", "::"):
        names |= {socket.gethostname(), socket.getfqdn()}
        try:
            names |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
        except OSError:
            pass
    else:
        names.add(host)
    return sorted(n.lower() for n in names if n)


def _with_port(hosts: list[str], port: int) -> list[str]:
    """Each name as a Host header carries it: bare, and with the port (an IPv6 address in brackets)."""
    out = []
    for name in hosts:
        bare = f"[{name}]" if ":" in name and not name.startswith("[") else name
        out += [bare, f"{bare}:{port}"]
    return sorted(set(out))


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


APP_NAME = "bakeoff-ui"  # the `mlflow.app` entry point of pyproject.toml: bakeoff.pipelines.cli.ui_guard:build


def server_command(db: Path, port: int, host: str = "127.0.0.1", python: str = sys.executable, *,
                   token: str = "", run_dir: Path | None = None, writes: bool = False,
                   artifacts: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """`mlflow server` on the store `db`, one worker, with bakeoff's guard (ui_guard.py) as its app."""
    from bakeoff_runtime.contract.environment import UI_GUARD_ENV

    store = f"sqlite:///{db}"
    hosts = allowed_hosts(host)
    guard = {"token": token, "root": str(run_dir or db.parent.parent), "db": str(db), "hosts": hosts,
             "writes": writes}
    env = {**QUIET_ENV, UI_GUARD_ENV: json.dumps(guard)}
    return [python, "-m", "mlflow", "server", "--backend-store-uri", store, "--registry-store-uri", store,
            "--default-artifact-root", (artifacts or db.parent / "artifacts").as_uri(), "--no-serve-artifacts",
            "--host", host, "--port", str(port), "--workers", "1", "--app-name", APP_NAME,
            # MLflow's own Host check, agreeing with the guard's: it compares the whole Host header, port
            # included, to each name that has no `*` (mlflow/server/security_utils.py is_allowed_host_header)
            "--allowed-hosts", ",".join(_with_port(hosts, port)),
            "--uvicorn-opts", "--log-level warning --no-access-log"], env


def default_command(db: Path, port: int, host: str = "127.0.0.1",
                    python: str = sys.executable) -> tuple[list[str], dict[str, str]]:
    """`mlflow ui` with its defaults: what `bakeoff ui` used to run (the benchmark's baseline)."""
    return [python, "-m", "mlflow", "ui", "--backend-store-uri", f"sqlite:///{db}", "--host", host,
            "--port", str(port)], {}


def port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def answers(url: str, timeout: float = 2.0, token: str | None = None) -> int | None:
    """The HTTP status `url` answers with, or None when nothing answers (with the guard's cookie, if given)."""
    from bakeoff.pipelines.cli.ui_guard import COOKIE

    request = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None


def wait_until_up(base: str, proc: subprocess.Popen, timeout_s: float, token: str | None = None) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if answers(f"{base}/health", token=token) == 200:
            return True
        time.sleep(0.1)
    return False


def sees_store(base: str, views: Views | None, token: str | None = None) -> bool:
    """Whether the server reads this run's store (MLflow's internal variables were honoured)."""
    if views is None:
        return True
    return answers(f"{base}/api/2.0/mlflow/experiments/get?experiment_id={views.experiment_id}", token=token) == 200


def start(argv: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    log = open(log_path, "ab")  # noqa: SIM115  (the server's own log, for as long as it runs)
    try:
        from bakeoff_runtime.process import parent_death

        # The server goes with `bakeoff ui`, even when that is kill -9'd.
        return subprocess.Popen(parent_death.wrapped(argv), env={**os.environ, **env}, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        log.close()


def stop(proc: subprocess.Popen, grace_s: float = 10.0, keep_log: bool = False) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    private = getattr(proc, "bakeoff_private", None)
    if private is not None:  # the store's copy (and the log, unless it says why the server did not start)
        import shutil

        for path in Path(private).iterdir():
            if not (keep_log and path.name == "ui.log"):
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        if not keep_log:
            shutil.rmtree(private, ignore_errors=True)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def launch(run_dir: str | Path, port: int = 5000, host: str = "127.0.0.1", *, ready_timeout_s: float = 120.0,
           writes: bool = False) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start the UI server for `run_dir` and wait until it serves this run's store. Returns the
    server process (the caller stops it) and the links to print (each carrying the launch's token)."""
    import secrets
    import tempfile

    db = store_path(run_dir)
    if not port_free(host, port):
        raise SpecError(f"port {port} on {host} is in use; choose another with --port")
    import importlib.util

    if importlib.util.find_spec("mlflow") is None or importlib.util.find_spec("uvicorn") is None:
        raise RunError("MLflow is not installed in this environment (pip install mlflow)")
    views = find_views(db)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}"
    token = secrets.token_urlsafe(24)
    log_dir = Path(tempfile.mkdtemp(prefix="bakeoff-ui-"))  # 0700, this user's: the run directory is data
    log_path = log_dir / "ui.log"
    from bakeoff.pipelines.cli.ui_store import relocate, serving_copy

    if writes:  # asked to change runs: the run directory's own store, its artifact locations made current
        con = sqlite3.connect(db)
        try:
            relocate(con, Path(run_dir))
        finally:
            con.close()
        served = db
    else:  # a private copy: nothing is written into the run directory
        served = serving_copy(db, Path(run_dir), log_dir)
    argv, env = server_command(served, port, host, token=token, run_dir=Path(run_dir).resolve(), writes=writes,
                               artifacts=db.parent / "artifacts")
    proc = start(argv, env, log_path)
    proc.bakeoff_private = log_dir  # type: ignore[attr-defined]  # removed by stop()
    if wait_until_up(base, proc, ready_timeout_s, token) and sees_store(base, views, token):
        return proc, {k: _with_token(url, token) for k, url in urls(base, views).items()}
    stop(proc, keep_log=True)
    raise RunError(f"the MLflow UI did not start within {ready_timeout_s:.0f}s; its log ({log_path}) ends:\n"
                   f"{_tail(log_path)}")


def _with_token(url: str, token: str) -> str:
    """The link with the launch's token before its fragment (the UI's routes are `#/...`)."""
    page, _, fragment = url.partition("#")
    return f"{page.rstrip('/')}/?token={token}" + (f"#{fragment}" if fragment else "")


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def exposure_note(host: str, writes: bool = False) -> str | None:
    """What serving on `host` exposes, when it is more than this machine (None for loopback)."""
    if _loopback(host):
        return None
    what = "read every run of this directory and change or delete them" if writes else \
        "read every run of this directory"
    return (f"serving on {host}, beyond this machine: anyone who can reach it and has the printed link (its token) "
            f"can {what}; it answers to {', '.join(allowed_hosts(host))}; the default, 127.0.0.1, serves this "
            "machine only")


def serve(run_dir: str | Path, port: int = 5000, host: str = "127.0.0.1", *,
          out: Callable[[str], None] = print, ready_timeout_s: float = 120.0, writes: bool = False) -> int:
    """Serve the MLflow UI of a local run until Ctrl-C; print where to look first. Exit code 0."""
    from bakeoff.pipelines.local.run_dir import check

    check(Path(run_dir))  # a run directory is data: no link in it may lead the server outside it
    exposed = exposure_note(host, writes)
    if exposed:
        out(exposed)
    proc, links = launch(run_dir, port, host, ready_timeout_s=ready_timeout_s, writes=writes)
    labels = {"table": "Runs: leg, seed, parity metric, verdict",
              "charts": "Charts, one colour per leg", "legs": "Legs side by side", "seeds": "Every seed's run",
              "experiment": "All runs", "experiments": "MLflow UI"}
    for key, url in links.items():
        out(f"{labels[key]}: {url}")
    out("(the links carry this launch's token: the UI answers no one without it; Ctrl-C to stop)")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops the server too, not only bakeoff
    try:
        proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop(proc)
    return 0
