"""Create a local MLflow store the way a bake-off wants it, before any job opens it.

MLflow creates a "Default" experiment in every new database, with its artifact root under
whatever directory the first client happened to run in (for a local bake-off, the first
job's code directory). The local executor runs this once per run directory instead: the
bake-off's experiment gets its artifact location under the run directory, and the empty
Default experiment goes to MLflow's trash.

It ends with the executor that started it, even when that is `kill -9`'d (importing MLflow
and migrating a new database take seconds it would otherwise outlive the run by), and a new
SQLite database appears whole or not at all: it is made under a temporary name and linked into
place when done, so a store cut short is never taken for a made one (the executor makes the
store only when mlflow.db is missing).

    python -m bakeoff_runtime.tracking.file_store TRACKING_URI EXPERIMENT ARTIFACT_LOCATION
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1  # linux/prctl.h
SQLITE = "sqlite:///"


def prepare_store(tracking_uri: str, experiment: str, artifact_location: str) -> str:
    """The experiment's id in the store at `tracking_uri`, made (with the experiment) if it is not there."""
    target = Path(tracking_uri[len(SQLITE):]) if tracking_uri.startswith(SQLITE) else None
    if target is None or target.exists():
        return _prepare(tracking_uri, experiment, artifact_location)
    _sweep(target)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        exp_id = _prepare(f"{SQLITE}{partial}", experiment, artifact_location)
        try:
            os.link(partial, target)  # whole, and never over a store someone made meanwhile
        except FileExistsError:
            return _prepare(tracking_uri, experiment, artifact_location)
        except OSError:  # a file system without hard links
            if target.exists():
                return _prepare(tracking_uri, experiment, artifact_location)
            os.replace(partial, target)
        return exp_id
    finally:
        for leftover in (partial, partial.with_name(partial.name + "-journal")):
            leftover.unlink(missing_ok=True)


def _prepare(tracking_uri: str, experiment: str, artifact_location: str) -> str:
    from bakeoff_runtime.tracking.install import use_installed_mlflow
    from bakeoff_runtime.tracking.plugins import quiet_header_provider

    use_installed_mlflow()
    quiet_header_provider(tracking_uri)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    exp_id = found.experiment_id if found else client.create_experiment(experiment,
                                                                        artifact_location=artifact_location)
    from bakeoff_runtime.tracking.parent_run import mark_training_experiment

    mark_training_experiment(client, exp_id)  # the UI opens on the runs, not on a GenAI overview
    default = client.get_experiment("0") if exp_id != "0" else None
    if default is not None and default.lifecycle_stage == "active" and \
            not client.search_runs(["0"], max_results=1):
        client.delete_experiment("0")
    return str(exp_id)


def _sweep(target: Path) -> None:
    """Partial stores of a creator that was killed itself (its pid in the name, no longer running)."""
    for path in target.parent.glob(f".{target.name}.*.partial*"):
        pid = path.name[len(target.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def die_with_parent() -> None:
    """End (SIGTERM, made SystemExit below, so the partial store goes) when the process that started this
    one ends, however it ends.

    prctl(PR_SET_PDEATHSIG) sends the signal "upon subsequent termination of the parent thread": the
    thread that started this process, not the whole process (PR_SET_PDEATHSIG(2const), CAVEATS:
    https://man.archlinux.org/man/core/man-pages/PR_SET_PDEATHSIG.2const.en). The executor starts this
    with subprocess.run, whose thread waits for it and so cannot end first: here it is the executor's
    end. If the parent died before the signal was armed, no signal comes: the parent is looked at again
    after arming, and one that died before this module's first line (the interpreter's start-up, a
    fraction of a second) shows as a parent outside this process's group (`_orphaned`). Nothing is set
    off Linux."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent or _orphaned():
        raise SystemExit(128 + signal.SIGTERM)


def _orphaned() -> bool:
    """Whether the process that started this one is gone: started inside its process group (subprocess
    without a session of its own), this process now has a parent outside that group (init, a subreaper).
    Started as a group of its own (by hand, from a shell), there is no telling: False."""
    if os.getpgrp() == os.getpid():
        return False
    try:
        return os.getpgid(os.getppid()) != os.getpgrp()
    except ProcessLookupError:
        return True


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    die_with_parent()  # first: importing MLflow and migrating the database take seconds
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    print(prepare_store(*sys.argv[1:]))
