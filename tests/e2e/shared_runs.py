"""One real tiny bake-off for the whole `pytest` invocation, not one per xdist worker.

`shared_tiny_run` is the fixture `tiny_run` (tests/conftest.py's, the same run: tiny_spec() through
`bakeoff run`, an xla:cpu leg and a cpu leg, 2 seeds, MLflow on), for the e2e modules that read it:

    from shared_runs import shared_tiny_run  # noqa: F401  (the fixture `tiny_run`)

Under `pytest -n 2` each worker used to run the bake-off itself (a session fixture runs once per
worker). Here the first module to need it runs it, in the directory the workers of this invocation
share, under a file lock (pytest-xdist's recipe for a session fixture shared by workers); whoever
comes later waits for it and reuses it: the run directory where it ran, as before (its jobs' records
name that directory: test_local_engine.py compares them with the compiled requests).

`copied_tiny_run` is the same fixture `tiny_run` for a module that runs `bakeoff run` / `run_local` on
the run again (test_api_local_run_and_stack.py, test_cli_json_run.py): a copy of the run directory of
its own, so that it rewrites only its copy's evaluation and MLflow store, never what a test on the
other worker is reading. A copy is the run for that: no job cache key names the run directory
(test_e2e_local.py's test_rerun_of_a_copy_skips_finished_jobs shows it on this very run).

`shared_device_check_run` (the fixture `device_check_run`) is the same arrangement for a second run:
benchmarks/device_check.py's bake-off, scaled down, with CUDA hidden (its torch.compile GPU leg trains on
the CPU, cold then warm from its inductor cache), for test_device_check_real_run.py and the inductor half
of test_compile_cache_warm_start.py: one cold torch.compile of the model per invocation, not one a module.

(Not a tests/e2e/conftest.py: without packages, pytest imports every conftest.py as the module
`conftest`, and a second one would take the place of tests/conftest.py in `from conftest import ...`.)
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from conftest import ROOT, bakeoff, tiny_spec, write_spec

sys.path.insert(0, str(ROOT / "benchmarks"))  # device_check


def _worker(request) -> str:
    """pytest-xdist's worker id ("gw0", ...), or "master" in a run without workers (`-p no:xdist` too, where
    xdist's own `worker_id` fixture does not exist)."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")


def _shared_dir(tmp_path_factory, worker_id: str, name: str = "tiny_run_shared"):
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is a folder of the invocation's own (pytest-N/popen-gwK): its parent
    # is shared by this invocation's workers and no other invocation.
    return (base if worker_id == "master" else base.parent) / name


def _run_once(shared: Path, spec: dict, *args: str, env: dict[str, str] | None = None) -> dict:
    """`bakeoff run` of `spec` in `shared` by the first worker to get here; the others wait and read it."""
    with FileLock(f"{shared}.lock"):
        if not (shared / "proc.json").exists():  # the first here (or after a runner that died mid-run)
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            spec_path = write_spec(shared / "spec.yaml", spec)
            proc = bakeoff("run", spec_path, "--out", shared / "out", *args, env=env)
            (shared / "proc.json").write_text(json.dumps({"args": proc.args, "returncode": proc.returncode,
                                                          "stdout": proc.stdout, "stderr": proc.stderr}))
    recorded = json.loads((shared / "proc.json").read_text())
    proc = subprocess.CompletedProcess(recorded["args"], recorded["returncode"], recorded["stdout"],
                                       recorded["stderr"])
    return {"spec": shared / "spec.yaml", "out": shared / "out", "proc": proc}


def _the_run(tmp_path_factory, worker_id) -> dict:
    # -v: the tests reading its terminal output check every substitution line (one gist line without it).
    return _run_once(_shared_dir(tmp_path_factory, worker_id), tiny_spec(), "-v")


@pytest.fixture(scope="session", name="tiny_run")
def shared_tiny_run(tmp_path_factory, request):
    """One real bake-off through the local executor: xla:cpu leg + cpu leg, 2 seeds, MLflow on. The run
    directory where it ran, for tests that only read it (its requests name that directory)."""
    return _the_run(tmp_path_factory, _worker(request))


@pytest.fixture(scope="session", name="tiny_run")
def copied_tiny_run(tmp_path_factory, request):
    """The same run, in a copy of its run directory (and spec) of this module's own: for the tests that run
    `bakeoff run` / `run_local` on it again, which write its evaluation and MLflow store."""
    worker_id = _worker(request)
    run = _the_run(tmp_path_factory, worker_id)
    mine = tmp_path_factory.mktemp("tiny_run")
    with FileLock(f"{_shared_dir(tmp_path_factory, worker_id)}.lock"):
        shutil.copytree(run["out"], mine / "out", symlinks=True)
        shutil.copy2(run["spec"], mine / "tiny.yaml")
    return {"spec": mine / "tiny.yaml", "out": mine / "out", "proc": run["proc"]}


# device_check.spec() scaled down: a small model keeps it short (the check reads the model from the run's
# spec.json), and two seeds are what its checks need: the cache check reads a cold first GPU job and a warm
# one after it.
DEVICE_CHECK_MODEL = {"d_model": 32, "n_layers": 1, "n_heads": 2}


@pytest.fixture(scope="session", name="device_check_run")
def shared_device_check_run(tmp_path_factory, request):
    """benchmarks/device_check.py's bake-off (20 steps, 2 seeds, the small model above) with CUDA hidden, so
    that its GPU leg falls back to the CPU even on a machine with a GPU; MLflow off."""
    import device_check

    spec = device_check.spec(20, DEVICE_CHECK_MODEL, 32, seeds=2)
    return _run_once(_shared_dir(tmp_path_factory, _worker(request), "device_check_run_shared"), spec,
                     "--no-mlflow", env={"CUDA_VISIBLE_DEVICES": ""})
