"""Make MLflow importable in a training or evaluation job whose image lacks it.

AWS's PyTorch 2.9 training images (Neuron, GPU and CPU) ship without `mlflow`, and a
SageMaker managed tracking server (an `arn:` tracking URI) also needs the
`sagemaker-mlflow` plugin. A job that logs to MLflow (the compiled pipeline sets
BAKEOFF_MLFLOW_INSTALL=1) installs the pinned client at start:

* from the code bundle's `wheels/` directory when there is one (jobs without internet
  access: network isolation, private subnets), with `--no-index`;
* else from the package index pip is configured with (PyPI, or PIP_INDEX_URL).

Into a directory of its own that is put at the end of the import path, so nothing the
image ships (torch, protobuf, numpy) is replaced under the training code. Every failure
is one clear line and the job trains regardless: MLflow is never a reason to stop.

A Runtime job installs beside its training, not before it (`start_install`): the training process
never imports mlflow (its MLflow client is a process of its own, tracking/sink.py), so only that
client process waits for the install (`wait_for_install`), while the records the training loop
sends it queue up. An install took about a minute in a compiled job (aws-first-run-review-4.md,
finding 7), which the job's first step no longer waits for. A script-mode script may import mlflow
itself, so its job still installs first (launch.py).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bakeoff_runtime.contract import (
    MLFLOW_INSTALL_MARKER_ENV,
    MLFLOW_INSTALL_RESULT_ENV,
    MLFLOW_PATH_ENV,
    MLFLOW_TARGET_ENV,
    JobEnvironment,
)

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "mlflow-requirements.txt"
REQUIREMENTS_SAGEMAKER = HERE / "mlflow-requirements-sagemaker.txt"
INSTALL_TIMEOUT_S = 300
RESULT_ENV = MLFLOW_INSTALL_RESULT_ENV


def _importable(*modules: str) -> bool:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            return False
    return True


def _say(message: str) -> None:
    print(f"[bakeoff] mlflow: {message}", file=sys.stderr, flush=True)


def _wanted(environ) -> bool:
    """Whether this job logs to MLflow through a client it installs (the compiled pipeline asks for the install;
    without a tracking URI there is nothing to log to)."""
    return JobEnvironment.from_environ(environ).mlflow_install and bool(environ.get("MLFLOW_TRACKING_URI"))


def ensure_mlflow(code_dir: Path, target: Path | None = None, environ=None) -> dict:
    """Install the MLflow client if this job needs it and lacks it. Returns what happened
    (also put into the environment as JSON for the job's summary)."""
    environ = os.environ if environ is None else environ
    if not _wanted(environ):
        return {"action": "not needed"}
    uri = environ["MLFLOW_TRACKING_URI"]
    needs = ["mlflow"] + (["sagemaker_mlflow"] if uri.startswith("arn:") else [])
    target = target or Path(environ.get(MLFLOW_TARGET_ENV, "/tmp/bakeoff-mlflow"))
    _add_to_path(target, environ)
    if _importable(*needs):
        return _result({"action": "already importable"}, environ)
    requirements = [REQUIREMENTS] + ([REQUIREMENTS_SAGEMAKER] if uri.startswith("arn:") else [])
    wheels = Path(code_dir) / "wheels"
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
           "--target", str(target), "--timeout", "20", "--retries", "1"]
    for req in requirements:
        cmd += ["-r", str(req)]
    source = "the package index"
    if wheels.is_dir():
        cmd += ["--no-index", "--find-links", str(wheels)]
        source = f"the code bundle's wheels ({wheels})"
    started = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        ok, detail = proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    seconds = round(time.time() - started, 1)
    importlib.invalidate_caches()
    if ok and _importable(*needs):
        _say(f"installed {' '.join(r.stem for r in requirements)} from {source} in {seconds}s")
        return _result({"action": "installed", "source": source, "seconds": seconds}, environ)
    _say(f"could not install the MLflow client from {source} ({detail[:300]}); training goes on without "
         "MLflow, and the Evaluate step back-fills this job's run from its metrics")
    return _result({"action": "failed", "source": source, "seconds": seconds, "error": detail[:300]}, environ)


PATH_ENV = MLFLOW_PATH_ENV


def _add_to_path(target: Path, environ) -> None:
    environ[PATH_ENV] = str(target)  # for the worker processes, which call use_installed_mlflow()
    use_installed_mlflow(environ)


def use_installed_mlflow(environ=None) -> None:
    """Put an installed client on the import path, at the end: the image's own packages
    win wherever both have one (PYTHONPATH would put it first)."""
    environ = os.environ if environ is None else environ
    target = environ.get(PATH_ENV)
    if target and target not in sys.path:
        sys.path.append(target)


def _result(result: dict, environ) -> dict:
    environ[RESULT_ENV] = json.dumps(result)
    return result


MARKER_ENV = MLFLOW_INSTALL_MARKER_ENV


def start_install(code_dir: Path, environ=None) -> subprocess.Popen | None:
    """Start `ensure_mlflow` in a process beside the training, for a job that logs to MLflow; its result
    goes to a marker file that every MLflow client process of the job waits for (`wait_for_install`).
    None when nothing is to be installed, or the process could not be started (then said, and the job's
    client processes find mlflow missing, as after a failed install)."""
    environ = os.environ if environ is None else environ
    if not _wanted(environ):
        return None
    target = Path(environ.get(MLFLOW_TARGET_ENV, "/tmp/bakeoff-mlflow"))
    marker = target.with_name(target.name + ".result.json")
    try:
        marker.unlink(missing_ok=True)  # a result of an earlier attempt on this instance is not this one's
    except OSError:
        pass
    environ[PATH_ENV] = str(target)
    environ[MARKER_ENV] = str(marker)
    root = str(HERE.parent.parent)
    code = (f"import sys; sys.path.insert(0, {root!r}); from bakeoff_runtime.tracking.install import main; "
            f"main({str(code_dir)!r}, {str(marker)!r})")
    try:
        return subprocess.Popen([sys.executable, "-c", code], env=dict(environ), stdin=subprocess.DEVNULL)
    except OSError as exc:
        _say(f"could not start the MLflow client's install ({exc}); training goes on without MLflow, and the "
             "Evaluate step back-fills this job's run from its metrics")
        _write_marker(marker, {"action": "failed", "error": str(exc)[:300]})
        return None


def main(code_dir: str, marker: str) -> None:
    """The install process: install, then say how it went in the marker file (written whole, once)."""
    environ = dict(os.environ)
    environ.pop(MARKER_ENV, None)
    result = ensure_mlflow(Path(code_dir), environ=environ)
    _write_marker(Path(marker), result)


def _write_marker(marker: Path, result: dict) -> None:
    partial = marker.with_name(marker.name + f".{os.getpid()}")
    try:
        partial.write_text(json.dumps(result))
        os.replace(partial, marker)
    except OSError:
        pass


def wait_for_install(environ=None, timeout_s: float = INSTALL_TIMEOUT_S + 30, poll_s: float = 0.2) -> dict | None:
    """In an MLflow client process: wait until the install started beside the training has ended, then put
    what it installed on the import path. None when no install was started for this job."""
    environ = os.environ if environ is None else environ
    marker = environ.get(MARKER_ENV)
    if not marker:
        return None
    deadline = time.monotonic() + timeout_s
    path = Path(marker)
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(poll_s)
    importlib.invalidate_caches()
    use_installed_mlflow(environ)
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {"action": "failed", "error": f"the install did not end within {timeout_s:g}s"}
