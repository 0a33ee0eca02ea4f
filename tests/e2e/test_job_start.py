"""Jobs whose worker a leg's warm interpreter forks (bakeoff_runtime.training.warm_server, started by the
engine's pipelines/local/warm.py, asked by launch.py): each gets its own environment, thread
count, directory and code; a stop, a deadline, a kill and an exit code reach the engine as a
cold worker's do; and a bake-off trains the same curves as with every worker started cold."""
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from jobtree import JobLayout

from bakeoff.pipelines.local.jobs import JobProcess
from bakeoff.pipelines.local.substitutions import host_environment
from bakeoff.pipelines.local.warm import WarmPool
from bakeoff_runtime.contract import THREAD_ENV
from conftest import ENTRYPOINTS, bakeoff, processes_using, tiny_spec, write_spec

pytestmark = pytest.mark.slow

FORKED = "forked from the leg's warm interpreter"
# Run by launch.py as the job's script: `probe.py OUT MODE`.
PROBE = '''
import json, os, sys, time
from pathlib import Path
warm = "torch" in sys.modules  # launch.py imports no torch: only the warm interpreter had it
import numpy
import torch
import torch._inductor.config
import bakeoff_runtime
if os.environ.get("BAKEOFF_BACKEND") == "neuron":  # what the neuron backend imports
    import torch_xla, torch_xla.core.xla_model, torch_xla.debug.metrics
out, mode = Path(sys.argv[1]), sys.argv[2]
out.write_text(json.dumps({
    "warm": warm, "job_key": os.environ.get("BAKEOFF_JOB_KEY"), "threads": torch.get_num_threads(),
    "compile_threads": torch._inductor.config.compile_threads,
    "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "cwd": os.getcwd(), "argv": sys.argv,
    "runtime_from": bakeoff_runtime.__file__, "path0": sys.path[0], "numpy_draw": float(numpy.random.rand()),
    "stdout_unbuffered": sys.stdout.write_through, "environ": dict(os.environ)}))
print("probe says hello", flush=True)
print("probe on stderr", file=sys.stderr, flush=True)
if mode == "exit3":
    sys.exit(3)
if mode == "raise":
    raise ValueError("the probe raised")
if mode == "kill":
    os.kill(os.getpid(), 9)
if mode == "sleep":
    while True:
        time.sleep(0.1)
'''


def start_leg(root: Path, **settings):
    """A leg's environment and its warm interpreter, as the engine starts it: here without thread
    settings, which each job then brings (OMP_NUM_THREADS, as `--jobs` sets it)."""
    env = {k: v for k, v in host_environment().items() if k not in THREAD_ENV}
    env.update(PYTHONUNBUFFERED="1", **settings)
    pool = WarmPool(sys.executable, root / "logs")
    address = pool.environment(settings["BAKEOFF_BACKEND"], env)
    assert address, "eligible"
    return pool, (root, env, address)


@pytest.fixture(scope="module")
def leg(tmp_path_factory):
    pool, leg = start_leg(tmp_path_factory.mktemp("warm"), BAKEOFF_BACKEND="cpu")
    yield leg
    pool.close()


@pytest.fixture(scope="module")
def xla_leg(tmp_path_factory):
    pool, leg = start_leg(tmp_path_factory.mktemp("warm-xla"), BAKEOFF_BACKEND="neuron", PJRT_DEVICE="CPU")
    yield leg
    pool.close()


def job(root: Path, name: str):
    """A job's tree, its code as the bundle unpacks it (entrypoints plus the probe)."""
    layout = JobLayout(root / name)
    layout.lay_out({"leg": "cpu-leg", "seed": 0}, {}, "ml.m5.large")
    shutil.rmtree(layout.code)
    shutil.copytree(ENTRYPOINTS, layout.code, ignore=shutil.ignore_patterns("__pycache__"))
    (layout.code / "probe.py").write_text(PROBE)
    return layout


def run(leg, name: str, mode: str = "report", threads: str = "1", max_runtime_s: float = 120, during=None,
        warm: bool = True, **extra):
    root, env, address = leg
    layout = job(root, name)
    job_env = {**env, **(address if warm else {}), "BAKEOFF_OPT_ML": str(layout.opt_ml), "BAKEOFF_JOB_KEY": name,
               "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "TORCHINDUCTOR_COMPILE_THREADS": threads,
               **extra}
    out = layout.root / "probe.json"
    process = JobProcess()
    if during is not None:
        threading.Thread(target=during, args=(process, out), daemon=True).start()
    outcome = process.run([sys.executable, "launch.py", "probe.py", str(out), mode], job_env, layout.code,
                          layout.log, max_runtime_s)
    probe = json.loads(out.read_text()) if out.exists() else None
    summary = layout.model / "summary.json"
    return outcome, probe, layout.log.read_text(), json.loads(summary.read_text()) if summary.exists() else None


def wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split()[2] != "Z"


def gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.time() + timeout
    while alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_each_job_gets_its_own_environment_threads_directory_and_code(leg):
    first = run(leg, "one", threads="1")
    second = run(leg, "two", threads="2")
    for (outcome, probe, log, _), name, threads in ((first, "one", 1), (second, "two", 2)):
        assert outcome.exit_code == 0, log
        assert FORKED in log
        assert probe["warm"], "torch was imported before the script: the worker came from the warm interpreter"
        assert probe["job_key"] == name
        assert probe["threads"] == threads  # torch.set_num_threads from the job's OMP_NUM_THREADS
        # Inductor's compile threads from the job's setting, though the interpreter imported its config first.
        assert probe["compile_threads"] == threads
        code = leg[0] / name / "opt" / "ml" / "code"
        assert Path(probe["cwd"]) == code and Path(probe["path0"]) == code
        # The job's own bakeoff_runtime (its bundle), not the one the warm interpreter came from.
        assert Path(probe["runtime_from"]).is_relative_to(code)
        assert probe["argv"][0] == "probe.py" or Path(probe["argv"][0]).name == "probe.py"
        assert probe["pgid"] == probe["pid"], "a session of its own, as start_new_session"
        # Its output went through the launcher into the job's log, both streams.
        assert "probe says hello" in log and "probe on stderr" in log
    assert first[1]["ppid"] == second[1]["ppid"], "both forked by the one warm interpreter"
    # numpy's global generator is each job's own, as in a fresh interpreter, not the one both inherited.
    assert first[1]["numpy_draw"] != second[1]["numpy_draw"]
    assert first[1]["stdout_unbuffered"] and second[1]["stdout_unbuffered"]  # PYTHONUNBUFFERED=1, as cold


@pytest.mark.parametrize("which", ["leg", "xla_leg"])
def test_the_job_sees_the_environment_a_cold_worker_sees_after_its_imports(which, request):
    """torch_xla sets XLA_FLAGS, PJRT_DYNAMIC_PLUGINS, ... at import, read when its client is made:
    a forked worker has them as its own import would have set them, and nothing else differs."""
    leg = request.getfixturevalue(which)
    warm = run(leg, f"env-warm-{which}", threads="1")
    cold = run(leg, f"env-cold-{which}", threads="1", warm=False)
    assert FORKED in warm[2] and FORKED not in cold[2]
    per_job = {"BAKEOFF_JOB_KEY", "BAKEOFF_OPT_ML", "BAKEOFF_PROCESS_START", "BAKEOFF_WARM_WORKER",
               "BAKEOFF_WARM_FORKED"}
    warm_env, cold_env = ({k: v for k, v in r[1]["environ"].items() if k not in per_job} for r in (warm, cold))
    assert warm_env == cold_env
    if which == "xla_leg":
        assert "XLA_FLAGS" in cold_env and "XLA_FLAGS" not in leg[1]  # set by the import, not by the leg
    assert warm[1]["environ"]["BAKEOFF_WARM_FORKED"] == "1" and "BAKEOFF_WARM_FORKED" not in cold[1]["environ"]


def test_a_job_it_cannot_serve_exactly_starts_cold(leg):
    outcome, probe, log, _ = run(leg, "other-env", XLA_FLAGS="--xla_cpu_enable_fast_math=false")
    assert outcome.exit_code == 0, log
    assert "starting the worker cold" in log and "XLA_FLAGS" in log
    assert not probe["warm"]


def test_exit_codes_crashes_and_signals_are_recorded_as_for_a_cold_worker(leg):
    outcome, _, log, summary = run(leg, "exit3", mode="exit3")
    assert FORKED in log and outcome.exit_code == 3
    assert summary["status"] == "failed" and "exited with code 3" in summary["reason"]
    outcome, _, log, summary = run(leg, "raise", mode="raise")
    assert FORKED in log and outcome.exit_code == 1
    assert "ValueError: the probe raised" in log and summary["reason"].startswith("ValueError: the probe raised")
    outcome, _, log, summary = run(leg, "kill", mode="kill")
    assert FORKED in log and outcome.exit_code == 128 + signal.SIGKILL
    assert summary["failure_kind"] == "killed" and "SIGKILL" in summary["reason"]


def test_a_cancelled_job_dies_and_says_it_was_stopped(leg):
    seen = {}

    def cancel(process, out):
        wait_for(out)
        seen.update(json.loads(out.read_text()))
        process.cancel()  # what `bakeoff run` does on Ctrl-C and to a doomed leg's job

    outcome, _, log, summary = run(leg, "cancelled", mode="sleep", during=cancel)
    assert FORKED in log
    assert outcome.exit_code == 128 + signal.SIGTERM  # SIGTERM reached the launcher, which passed it on
    assert summary["failure_kind"] == "interrupted" and "SIGTERM" in summary["reason"]
    assert gone(seen["pid"])


def test_the_max_runtime_stops_a_warm_worker(leg):
    outcome, probe, log, summary = run(leg, "deadline", mode="sleep", max_runtime_s=15)
    assert FORKED in log and outcome.timed_out
    assert summary["failure_kind"] == "interrupted"
    assert gone(probe["pid"])


def test_a_killed_launcher_takes_its_warm_worker_with_it(leg):
    seen = {}

    def kill_launcher(process, out):
        wait_for(out)
        seen.update(json.loads(out.read_text()))
        os.kill(process.proc.pid, signal.SIGKILL)  # the launcher alone, as a kill -9 would

    outcome, _, log, _ = run(leg, "orphan", mode="sleep", during=kill_launcher)
    assert FORKED in log and outcome.exit_code == -signal.SIGKILL
    assert gone(seen["pid"]), "the warm interpreter ended the worker whose launcher died"


def test_a_bake_off_trains_the_same_curves_warm_as_cold(tmp_path):
    """The tiny bake-off (a trn1 leg on PyTorch/XLA, a cpu leg), its workers all started cold
    (BAKEOFF_WARM_START=0) and forked warm: the same losses at every logged step, and the warm
    interpreters gone with the run."""
    # One seed: a leg's first job is forked too (WarmPool starts the interpreter for it and hands it its
    # address), and forking leaves the interpreter as it was, so a second seed's job would be forked from the
    # same state; one job per leg, both legs side by side, has the thread count two seeds' jobs had (--jobs 2).
    # A second job forked from one interpreter: test_each_job_gets_its_own_environment_threads_directory_and_code.
    # The verdict (inconclusive on one seed) is not what this compares.
    spec = write_spec(tmp_path / "spec.yaml", tiny_spec(seeds=1))
    curves = {}
    for mode, switch in (("cold", "0"), ("warm", "1")):
        out = tmp_path / mode
        proc = bakeoff("run", spec, "--out", out, "--jobs", "2", "--no-mlflow", env={"BAKEOFF_WARM_START": switch})
        logs = {d.name: (d / "stdout.log").read_text() for d in sorted((out / "jobs").iterdir())}
        assert sorted(logs) == ["p4d-s0", "trn1-s0"], proc.stdout[-2000:] + proc.stderr[-2000:]
        forked = sorted(name for name, log in logs.items() if FORKED in log)
        assert forked == (sorted(logs) if mode == "warm" else []), logs
        curves[mode] = {name: [(r["kind"], r["step"], r.get("train_loss"), r.get("val_loss"))
                               for r in map(json.loads, (out / "jobs" / name / "opt" / "ml" / "model" /
                                                         "metrics.jsonl").read_text().splitlines())]
                        for name in logs}
        assert processes_using(out) == []
    # Bit for bit: the same seeds, thread counts and graphs (PyTorch/XLA's too) whichever way the worker started.
    assert curves["warm"] == curves["cold"]
