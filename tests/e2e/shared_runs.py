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

(Not a tests/e2e/conftest.py: without packages, pytest imports every conftest.py as the module
`conftest`, and a second one would take the place of tests/conftest.py in `from conftest import ...`.)
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from filelock import FileLock

from conftest import bakeoff, tiny_spec, write_spec


def _worker(request) -> str:
    """pytest-xdist's worker id ("gw0", ...), or "master" in a run without workers (`-p no:xdist` too, where
    xdist's own `worker_id` fixture does not exist)."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")


def _shared_dir(tmp_path_factory, worker_id: str):
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is a folder of the invocation's own (pytest-N/popen-gwK): its parent
    # is shared by this invocation's workers and no other invocation.
    return (base if worker_id == "master" else base.parent) / "tiny_run_shared"


def _the_run(tmp_path_factory, worker_id) -> dict:
    shared = _shared_dir(tmp_path_factory, worker_id)
    with FileLock(f"{shared}.lock"):
        if not (shared / "proc.json").exists():  # the first here (or after a runner that died mid-run)
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            spec_path = write_spec(shared / "tiny.yaml", tiny_spec())
            proc = bakeoff("run", spec_path, "--out", shared / "out")
            (shared / "proc.json").write_text(json.dumps({"args": proc.args, "returncode": proc.returncode,
                                                          "stdout": proc.stdout, "stderr": proc.stderr}))
    recorded = json.loads((shared / "proc.json").read_text())
    proc = subprocess.CompletedProcess(recorded["args"], recorded["returncode"], recorded["stdout"],
                                       recorded["stderr"])
    return {"spec": shared / "tiny.yaml", "out": shared / "out", "proc": proc}


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
