import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENTRYPOINTS = ROOT / "entrypoints"
# `python -m pytest` in the checkout puts the checkout first on sys.path, where the folders pipelines/ and
# estimators/ would import under names bakeoff does not install (a second copy of every module beside the
# installed bakeoff.pipelines'). Tests import what a user imports.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != ROOT]
sys.path.insert(0, str(ENTRYPOINTS))  # the in-container runtime, as the container sees it
# The helper modules at tests/ root that assert: their failures explained as a test's own would be.
pytest.register_assert_rewrite("cdk_stacks", "mlflow_runs", "moto_aws")

# Small enough to train in seconds on 2 cores, big enough to have a learning curve.
TINY = {
    "model": {"d_model": 32, "n_layers": 1, "n_heads": 2},
    "training": {"global_batch_size": 16, "sequence_length": 32, "max_steps": 30, "eval_interval": 0,
                 "eval_batches": 2, "log_interval": 5, "optimizer": {"warmup_steps": 3}},
}


def tiny_spec(**over):
    spec = {
        "name": "tiny",
        **json.loads(json.dumps(TINY)),
        "legs": [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "backend": "neuron", "precision": "fp32"},
                 {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "backend": "cuda", "precision": "fp32"}],
        "seeds": 2,
        "parity": {"metric": "val_loss", "margin": 0.2, "baseline": "p4d"},
    }
    spec.update(over)
    return spec


# The built-in Hugging Face causal LM on the tiny model: tiny_spec(**HF_TINY) (tests/*/test_hf*.py).
HF_TINY = {"entrypoint": {"builtin": "hf-causal-lm"}, "hyperparameters": {"model_type": "llama"}}


def write_spec(path: Path, data: dict) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def bakeoff(*args, cwd=None, env=None, timeout=600):
    """Run the real CLI in a subprocess, as a user would."""
    exe = Path(sys.executable).with_name("bakeoff")
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=full_env,
                          timeout=timeout)


@pytest.fixture
def cli(monkeypatch, capsys):
    """`bakeoff(*args, cwd=, env=)` run in this process: the console script's own entry point
    (`bakeoff.pipelines.cli.main:main`: the real parser, argparse's exit 2, display, error lines, exit codes),
    returning what `bakeoff` returns (returncode, stdout, stderr), without a Python start-up per command.
    For tests of what a command prints and exits with; a test about the process itself (its start-up
    imports, hash seed, signals) runs `bakeoff`."""
    def run(*args, cwd=None, env=None, timeout=None):
        from bakeoff.pipelines.cli.main import main

        argv = [str(a) for a in args]
        capsys.readouterr()  # what came before is not this command's
        with monkeypatch.context() as m:
            for key, value in (env or {}).items():
                m.setenv(key, value)
            if cwd is not None:
                m.chdir(cwd)
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse; what the interpreter would make of it
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
                if not isinstance(exc.code, int | None):
                    print(exc.code, file=sys.stderr)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["bakeoff", *argv], code, out, err)

    return run


def processes_using(path: Path) -> list[str]:
    """Command lines of live processes whose command line or environment mentions `path` (a run directory):
    what a stopped run must not leave behind."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd or str(path) in environ:
            found.append(f"{proc.name}: {cmd[:200]}")
    return found


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    from bakeoff.pipelines.plan.corpus import prepare_corpus

    out = tmp_path_factory.mktemp("corpus")
    prepare_corpus(out)
    return out


# --- AWS clients ---------------------------------------------------------------------------------------------
# Runs made before any test's own fixture (session- and module-scoped shared runs) record their attempts
# in the session's temp dir, never under the user's ~/.local/state (pipelines/local/questions.py).
os.environ["BAKEOFF_STATE_DIR"] = tempfile.mkdtemp(prefix="bakeoff-state-session-")


@pytest.fixture(autouse=True)
def _own_question_records(monkeypatch, tmp_path_factory):
    """Each test its own record of attempts (pipelines/local/questions.py): a question one test decided is
    not another test's earlier attempt, and nothing is written under the user's ~/.local/state."""
    monkeypatch.setenv("BAKEOFF_STATE_DIR", str(tmp_path_factory.mktemp("bakeoff-state")))


@pytest.fixture(scope="session", autouse=True)
def _one_botocore_loader():
    """Every botocore session made in this process reads the service models through one Loader, which keeps
    what it parsed: the same files, read once, where each new session (the API makes one per call when it is
    given none) would parse sagemaker's megabytes of JSON again (about a second). Nothing else changes."""
    import functools

    import botocore.session

    real = botocore.session.create_loader
    botocore.session.create_loader = functools.lru_cache(maxsize=None)(real)
    yield
    botocore.session.create_loader = real


# --- moto on 127.0.0.1 (helpers: moto_aws.py) ---------------------------------------------------------------
@pytest.fixture(scope="session")
def moto_server():
    """moto as a separate process, so that nothing it logs can be mistaken for output of the code under test."""
    import socket
    import time

    from moto_aws import _free_port

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):  # until it answers (start-up, not a timed assertion)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("moto server exited") from None
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture
def aws(moto_server, monkeypatch):
    """Environment pointing every boto3 client at the moto server, reset to a new account for this test (what
    earlier tests on this worker made is gone: a deploy reads every earlier execution of its pipeline, each a
    ListPipelineExecutionSteps that moto answers 500 and botocore retries), and a fresh bucket."""
    import urllib.request

    import boto3
    from moto_aws import API_BUCKET as BUCKET

    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=60).close()

    env = {"AWS_ENDPOINT_URL": moto_server, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    s3 = boto3.client("s3", region_name="us-east-1")
    if BUCKET not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=BUCKET)
    return env


@pytest.fixture(scope="module")
def moto_env():
    """moto in a thread of this process, one per test module; its environment, for `bakeoff` subprocesses."""
    from moto.server import ThreadedMotoServer
    from moto_aws import _free_port

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    yield env
    server.stop()


@pytest.fixture
def aws_env(moto_env, monkeypatch):
    for k, v in moto_env.items():
        monkeypatch.setenv(k, v)
    return moto_env


# --- a new local MLflow store (tests/unit/test_mlflow_*.py) -------------------------------------------------
@pytest.fixture(scope="session")
def _new_mlflow_db(tmp_path_factory):
    """A new MLflow sqlite store as its first client creates it (the tables and their migrations, the Default
    experiment): seconds of work, done once per session."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("mlflow-new") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


@pytest.fixture
def mlflow_db(_new_mlflow_db, tmp_path):
    """The tracking URI of tmp_path/mlflow.db, a new and empty MLflow store (a copy of the session's): what the
    first client to open `sqlite:///tmp_path/mlflow.db` would have found after creating it, as a local
    bake-off's jobs find the store the executor created before them."""
    import shutil

    db = tmp_path / "mlflow.db"
    shutil.copyfile(_new_mlflow_db, db)
    return f"sqlite:///{db}"


# --- the report's known evaluation (inputs: report_inputs.py) -----------------------------------------------
@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    from report_inputs import CONFIG, VALUES, _write_job

    from bakeoff_runtime.verdict.evaluation import evaluate
    from bakeoff_runtime.verdict.job_outputs import load_jobs

    root = tmp_path_factory.mktemp("jobs")
    for leg, values in VALUES.items():
        for seed, v in enumerate(values):
            _write_job(root, leg, seed, v)
    return evaluate(CONFIG, load_jobs(root))


# --- the layers --------------------------------------------------------------------------------------------
E2E = Path(__file__).resolve().parent / "e2e"


def _misplaced(nodeid: str) -> None:
    pytest.fail(f"{nodeid} is marked `slow` outside tests/e2e: move it to tests/e2e (which marks every test "
                "there `slow` itself) or drop the marker", pytrace=False)


def pytest_ignore_collect(collection_path, config):
    """`-m "not slow"` (`make test-fast`) selects nothing under tests/e2e, whose every test the hook below
    marks `slow`: the folder is not even imported then (its modules import torch, aws_cdk..., seconds of
    collection in each xdist worker for tests that would all be deselected)."""
    if (config.getoption("markexpr", "") or "").strip() == "not slow" and Path(collection_path).resolve() == E2E:
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects anything
def pytest_collection_modifyitems(config, items):
    """tests/unit and tests/engine are fast; tests/e2e is everything `slow` (real training jobs, PyTorch/XLA,
    MLflow servers, the CDK CLI). Every test under tests/e2e is marked `slow` here; a test elsewhere that
    carries the marker fails, under `make test` and `make test-fast` alike (its marker is taken off, so that
    `-m "not slow"` cannot leave it out), so that the folders and the marker cannot drift apart."""
    misplaced = []
    for item in items:
        if E2E in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("slow") is not None:
            misplaced.append(item)
    for item in misplaced:
        for node in item.listchain():
            node.own_markers[:] = [m for m in node.own_markers if m.name != "slow"]
        item.setup = functools.partial(_misplaced, item.nodeid)  # fails before any fixture runs


# What only tests/e2e may load into the test process: the container's training side (torch, Hugging Face)
# and MLflow. Each costs seconds to import in every xdist worker that meets it, which is what made
# `make test-fast` slow; a test of tests/unit or tests/engine that loads one fails and says so.
HEAVY_FOR_E2E = ("torch", "transformers", "mlflow")


_LOADED_BEFORE = pytest.StashKey[set]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_LOADED_BEFORE] = {name for name in HEAVY_FOR_E2E if name in sys.modules}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    if E2E not in Path(item.path).resolve().parents:
        before = item.stash.get(_LOADED_BEFORE, set())
        loaded = sorted(name for name in HEAVY_FOR_E2E if name in sys.modules and name not in before)
        if loaded:
            pytest.fail(f"{item.nodeid} imported {', '.join(loaded)} in the test process (its fixtures included): a "
                        "test that needs it belongs in tests/e2e (tests/unit and tests/engine stay free of torch, "
                        "Hugging Face and MLflow)", pytrace=False)
    return result


# --- bakeoff as a user installs it (tests/e2e/test_install*.py) ----------------------------------------------
OFFLINE = ("network", "dns", "connect", "timed out", "failed to fetch")


def uv_or_skip() -> str:
    import shutil

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (make setup installs it)")
    return uv


@pytest.fixture(scope="session")
def bakeoff_wheel(tmp_path_factory) -> Path:
    """The wheel `uv build` makes of this checkout, as a release would."""
    uv = uv_or_skip()
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([uv, "build", "--wheel", "--out-dir", str(out), str(ROOT)], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 and any(word in proc.stderr.lower() for word in OFFLINE):
        pytest.skip(f"the package index cannot be reached to build: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("bakeoff-*.whl")
    return wheel


def fresh_venv(path: Path, *requirements: str) -> Path:
    """A new virtualenv at `path` with `requirements` installed by uv (its cache keeps a repeat quick); its
    bin/ folder. Skips where the package index cannot be reached."""
    uv = uv_or_skip()
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(path)], check=True, timeout=300)
    proc = subprocess.run([uv, "pip", "install", "--quiet", "--python", str(path / "bin" / "python"), *requirements],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and any(word in proc.stderr.lower() for word in OFFLINE):
        pytest.skip(f"the package index cannot be reached: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return path / "bin"


def installed_bakeoff(bin_dir: Path, cwd: Path, timeout: int):
    """The `bakeoff` command a fresh virtualenv installed (fresh_venv), run outside this checkout's environment
    from `cwd`; checks at once that it says its version and validates the quickstart, as a user's first try."""
    from importlib.metadata import version

    env = outside_env()

    def bakeoff(*args) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "bakeoff"), *map(str, args)], capture_output=True, text=True, env=env,
                              cwd=cwd, timeout=timeout)

    shown = bakeoff("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"bakeoff {version('bakeoff')}", shown
    checked = bakeoff("validate", ROOT / "examples" / "quickstart.yaml")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    return bakeoff


def outside_env() -> dict[str, str]:
    """This process's environment without what would point a venv's Python back at the checkout's."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
