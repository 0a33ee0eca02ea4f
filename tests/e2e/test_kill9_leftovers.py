"""`kill -9` of `bakeoff run` leaves nothing of the run behind: no process (jobs, the legs' warm
interpreters, the MLflow store's creator) and no bakeoff-warm-* socket directory in the temp dir.

Each run here gets a temp dir of its own (TMPDIR), so that what is found there is this run's. Every wait
is a bounded poll, never a fixed sleep."""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from planted_runs import _spec

from conftest import processes_using

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
WARM = "bakeoff-warm-"


def _wait_for(condition, timeout: float, what: str, every: float = 0.1, left=None):
    """`left`: what is still there, named in the failure (a process list, a directory's contents)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(every)
    pytest.fail(f"waited {timeout:.0f}s for {what}" + (f"; still there: {left()}" if left else ""))


def _what_is_left(out: Path, tmp: Path):
    return lambda: {"processes": _leftovers(out, tmp), "warm dirs": {str(d): sorted(os.listdir(d)) for d in
                                                                     _warm_dirs(tmp) if d.exists()}}


@pytest.fixture
def private_tmp():
    """A temp dir for the run (TMPDIR), short enough for the sockets in it (107 bytes a path)."""
    path = Path(tempfile.mkdtemp(prefix="bk9-", dir="/tmp"))
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _start(spec: Path, out: Path, tmp: Path, *extra: str) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("bakeoff")
    return subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), *extra], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env={**os.environ, "TMPDIR": str(tmp)})


def _leftovers(out: Path, tmp: Path) -> list[str]:
    """The run's processes: those naming its run directory or its temp dir (a warm interpreter's socket)."""
    return sorted(set(processes_using(out) + processes_using(tmp)))


def _warm_dirs(tmp: Path) -> list[Path]:
    return sorted(p for p in tmp.iterdir() if p.name.startswith(WARM))


def _kill(run: subprocess.Popen) -> None:
    run.kill()  # SIGKILL: no handler of bakeoff's runs
    run.wait(30)


def _jobs_running(out: Path, tmp: Path) -> bool:
    return bool(_warm_dirs(tmp)) and any("launch.py" in p for p in _leftovers(out, tmp))


@linux_only
def test_kill_9_while_jobs_run_leaves_no_process_and_no_warm_directory(tmp_path, private_tmp):
    spec = _spec(tmp_path, plant="slow", mlflow=True)  # 10 s a job: time to kill it in the middle
    out = tmp_path / "out"
    run = _start(spec, out, private_tmp, "--jobs", "2")
    try:
        _wait_for(lambda: _jobs_running(out, private_tmp), 300, "the jobs and their legs' warm interpreters")
        owner = {p.name.split("-")[2] for p in _warm_dirs(private_tmp)}
        assert owner == {str(run.pid)}, owner  # the directory names its run
        _kill(run)
        _wait_for(lambda: not _leftovers(out, private_tmp), 30, "the run's processes to end with it",
                  left=_what_is_left(out, private_tmp))
        # The interpreters take their sockets and the directory with them: gone without a next run.
        _wait_for(lambda: not _warm_dirs(private_tmp), 30, "the bakeoff-warm-* directory to go",
                  left=_what_is_left(out, private_tmp))
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert not _leftovers(out, private_tmp)


@linux_only
def test_a_warm_directory_whose_interpreters_were_killed_too_goes_at_the_next_run(tmp_path, private_tmp):
    spec = _spec(tmp_path, plant="slow")
    out = tmp_path / "out"
    run = _start(spec, out, private_tmp, "--no-mlflow", "--jobs", "2")
    try:
        _wait_for(lambda: _jobs_running(out, private_tmp), 300, "the jobs and their legs' warm interpreters")
        (stale,) = _warm_dirs(private_tmp)
        named = [p for p in _leftovers(out, private_tmp) if "warm_server.py " in p]
        interpreters = [int(p.split(":")[0]) for p in named]  # and any worker one has forked (the same command)
        prefixes = {p.split("--address-on-stdin ")[1].split()[0] for p in named}
        assert interpreters and all(stale.name.startswith(Path(x).name) for x in prefixes), named
        # Their sockets bound (each binds its own once the engine has told it where: one a started
        # interpreter, whose log the engine made first), then everything at once, the interpreters included
        # (their own sessions): nothing is left to tidy up after itself.
        def bound() -> bool:
            started = list(out.rglob("warm-*.log"))
            sockets = [s for s in stale.iterdir() if s.is_socket()]
            return bool(started) and len(sockets) == len(started)

        _wait_for(bound, 30, "the interpreters' sockets", left=lambda: sorted(os.listdir(stale)))
        for pid in interpreters:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # a worker that ended meanwhile
                pass
        _kill(run)
        _wait_for(lambda: not _leftovers(out, private_tmp), 30, "the run's processes to end",
                  left=_what_is_left(out, private_tmp))
        assert stale.exists() and any(stale.iterdir())  # its sockets, no longer answered
        past = time.time() - 3600  # made an hour ago (a directory younger than 10 s is never swept)
        os.utime(stale, (past, past))
        run = _start(spec, out, private_tmp, "--no-mlflow", "--jobs", "2")
        _wait_for(lambda: any(p != stale for p in _warm_dirs(private_tmp)), 300, "the next run's warm interpreters")
        assert not stale.exists(), "the next run left the dead run's bakeoff-warm-* directory"
        _kill(run)
        _wait_for(lambda: not _leftovers(out, private_tmp) and not _warm_dirs(private_tmp), 30,
                  "the second run's processes and directory to go", left=_what_is_left(out, private_tmp))
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)


@linux_only
def test_kill_9_while_the_mlflow_store_is_made_ends_its_creator_and_leaves_no_half_store(tmp_path, private_tmp):
    spec = _spec(tmp_path, mlflow=True)
    out = tmp_path / "out"
    run = _start(spec, out, private_tmp)
    try:
        _wait_for(lambda: any("tracking.file_store" in p for p in _leftovers(out, private_tmp)), 300,
                  "the MLflow store's creator to start")
        _kill(run)
        # It imports MLflow and migrates a database for seconds (4-10 s): it must not take them.
        _wait_for(lambda: not _leftovers(out, private_tmp), 5, "the store's creator to end with the run", every=0.05)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    store = out / "mlflow"
    assert not [p.name for p in store.glob(".mlflow.db.*")], "a partial store was left"
    if (store / "mlflow.db").exists():  # made whole before the kill: then it is a whole store
        with sqlite3.connect(store / "mlflow.db") as db:
            assert db.execute("SELECT name FROM experiments WHERE lifecycle_stage = 'active'").fetchall()


def test_the_sweep_takes_only_dead_runs_directories(private_tmp):
    import socket

    from bakeoff.pipelines.local.warm import sweep_stale

    gone = _dead_pid()
    live_pid = os.getppid()  # running, this user's

    def made(name: str, age_s: float = 3600, listening: bool = False) -> Path:
        path = private_tmp / name
        path.mkdir(mode=0o700)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path / "0.sock"))
        if listening:
            sock.listen(1)
            keep.append(sock)
        else:
            sock.close()  # the file stays; a connection to it is refused
        past = time.time() - age_s
        os.utime(path, (past, past))
        return path

    keep: list[socket.socket] = []
    dead = made(f"{WARM}{gone}-aaaa")
    alive = made(f"{WARM}{live_pid}-bbbb")
    answering = made(f"{WARM}{gone}-cccc", listening=True)  # a live run seen from another pid namespace
    fresh = made(f"{WARM}{gone}-dddd", age_s=0)  # being set up
    legacy = made(f"{WARM}eeee")  # named before the pid was: whose it is cannot be told
    try:
        assert sweep_stale(str(private_tmp)) == [str(dead)]
    finally:
        for sock in keep:
            sock.close()
    assert not dead.exists() and all(p.exists() for p in (alive, answering, fresh, legacy))


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_an_engine_killed_between_making_the_directory_and_naming_it_leaves_no_directory(private_tmp):
    """The window a kill -9 could once land in: the engine has made its bakeoff-warm-PID-* directory and
    not yet told the interpreter it started its address. That interpreter removes it when stdin ends;
    another run's directory (another pid) and a directory with a sibling's socket in it are left alone."""
    from bakeoff.pipelines.plan.bundle import entrypoints_dir

    server = entrypoints_dir() / "bakeoff_runtime" / "training" / "warm_server.py"
    prefix = str(private_tmp / f"{WARM}4242-")
    made = Path(tempfile.mkdtemp(prefix=f"{WARM}4242-", dir=private_tmp))
    busy = Path(tempfile.mkdtemp(prefix=f"{WARM}4242-", dir=private_tmp))
    (busy / "0.sock").touch()
    other = Path(tempfile.mkdtemp(prefix=f"{WARM}4343-", dir=private_tmp))
    proc = subprocess.Popen([sys.executable, str(server), "--address-on-stdin", prefix], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output, _ = proc.communicate(b"", timeout=60)  # stdin ends with no address: the engine is gone
    assert proc.returncode == 0, output
    assert not made.exists() and busy.exists() and other.exists()
    assert b"ready" not in output  # it never imported torch or listened
