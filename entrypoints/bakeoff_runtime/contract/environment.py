"""What a job is given: its environment and the training container's layout.

* `TrainingEnv`: the SageMaker training container contract (/opt/ml, resourceconfig.json),
  read the way SageMaker lays it out. Every path derives from /opt/ml, because a container
  whose entrypoint bakeoff overrides has no SM_* variable (the training toolkit that sets
  them never runs); SM_* variables are honoured only where an image sets them. The local
  executor moves the one root (BAKEOFF_OPT_ML, as a mount would) and sets no SM_* variable,
  so a local run cannot lean on what SageMaker would not give.
* `JobEnvironment`: the BAKEOFF_* variables of a job's configuration, each named once, as one
  frozen value; the module constants below it (`*_ENV`) name the rest (process-level plumbing,
  knobs). Nowhere else spells a BAKEOFF_* name (tests/unit/test_env_names.py).

Torch-free on purpose: the orchestration side imports this module (never the reverse).
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

OPT_ML = Path("/opt/ml")


# --- the BAKEOFF_* environment ----------------------------------------------------------------
def _env_field(name: str, default: Any = None, *, doc: str):
    return field(default=default, metadata={"env": name, "doc": doc})


@dataclass(frozen=True)
class JobEnvironment:
    """Every BAKEOFF_* variable of a job's configuration, with its one name. `to_environ()` writes the
    ones that are set; `from_environ()` reads them back (unset ones keep their default)."""

    name: str = _env_field("BAKEOFF_NAME", "", doc="bake-off name")
    leg: str = _env_field("BAKEOFF_LEG", "", doc="leg name")
    backend: str = _env_field("BAKEOFF_BACKEND", "", doc="backend adapter: neuron, torchneuron, cuda, cpu")
    precision: str = _env_field("BAKEOFF_PRECISION", "", doc="fp32 or bf16")
    instance_type: str = _env_field("BAKEOFF_INSTANCE_TYPE", "", doc="the instance the leg stands for")
    nproc_per_node: int | None = _env_field("BAKEOFF_NPROC_PER_NODE", doc="processes per host (devices)")
    torch_compile: bool = _env_field("BAKEOFF_TORCH_COMPILE", False, doc="torch.compile the model")
    compile_cache: str = _env_field("BAKEOFF_COMPILE_CACHE", "", doc="compile-cache location (s3:// or a path)")
    continue_on_failure: bool = _env_field("BAKEOFF_CONTINUE_ON_FAILURE", False,
                                           doc="exit 0 after a script failure (recorded) so Evaluate runs")
    mlflow_install: bool = _env_field("BAKEOFF_MLFLOW_INSTALL", False, doc="install the MLflow client at start")
    install_requirements: bool = _env_field("BAKEOFF_INSTALL_REQUIREMENTS", False,
                                            doc="script mode: pip install the script's requirements.txt first")
    install_packages: str = _env_field("BAKEOFF_INSTALL_PACKAGES", "",
                                       doc="packages to install at start when the image lacks them (comma-separated)")
    mlflow_experiment: str = _env_field("BAKEOFF_MLFLOW_EXPERIMENT", "", doc="MLflow experiment")
    mlflow_artifact_location: str = _env_field("BAKEOFF_MLFLOW_ARTIFACT_LOCATION", "",
                                               doc="artifact location of a new experiment")
    preflight: bool = _env_field("BAKEOFF_PREFLIGHT", False, doc="run with the preflight probes on")
    preflight_fail_on_blocker: bool = _env_field("BAKEOFF_PREFLIGHT_FAIL_ON_BLOCKER", False,
                                                 doc="fail the job when preflight finds a blocker")
    precompile: bool = _env_field("BAKEOFF_PRECOMPILE", False, doc="neuron_parallel_compile's run: not a result")
    # Set by the local platform (substitutions), never in a compiled request:
    emulated_on: str = _env_field("BAKEOFF_EMULATED_ON", "", doc="where a local run really ran")
    leg_backend: str = _env_field("BAKEOFF_LEG_BACKEND", "",
                                  doc="the leg's declared backend, when a local run emulates it with another")
    spec_hash: str = _env_field("BAKEOFF_SPEC_HASH", "", doc="the spec's hash (a tag on SageMaker)")
    job_key: str = _env_field("BAKEOFF_JOB_KEY", "", doc="the local job cache key")
    host_map: str = _env_field("BAKEOFF_HOST_MAP", "", doc="JSON: host name -> address, for local hosts")
    master_port: int | None = _env_field("BAKEOFF_MASTER_PORT", doc="rendezvous port (default 7777)")
    checkpoint_dir: str = _env_field("BAKEOFF_CHECKPOINT_DIR", "", doc="checkpoint dir (default /opt/ml/checkpoints)")
    opt_ml: str = _env_field("BAKEOFF_OPT_ML", "", doc="where /opt/ml is: the local platform's per-job tree")
    # Set by the compiler in a Collective step's request only (pipelines/steps/collective.py):
    network_gbps: str = _env_field("BAKEOFF_NETWORK_GBPS", "",
                                   doc="the instance's published network bandwidth, Gbps (collective_check.py)")

    def to_environ(self) -> dict[str, str]:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value in (None, "", False):
                continue
            out[f.metadata["env"]] = "1" if value is True else str(value)
        return out

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> JobEnvironment:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f.metadata["env"])
            if raw is None or raw == "":
                continue
            if f.type in ("bool", bool):
                values[f.name] = raw == "1"
            elif "int" in str(f.type):
                values[f.name] = int(raw)
            else:
                values[f.name] = raw
        return cls(**values)

    @classmethod
    def variable(cls, field_name: str) -> str:
        return next(f.metadata["env"] for f in fields(cls) if f.name == field_name)


ENV = {f.name: f.metadata["env"] for f in fields(JobEnvironment)}

# Every variable's name starts so. Set by: (the names here). Read by: the local engine, which keeps
# this shell's out of a job (pipelines/local/substitutions.host_environment), and the porting report,
# which shows their values (bakeoff_runtime/verdict/porting.py).
ENV_PREFIX = "BAKEOFF_"
# Every MLflow setting's name starts so (mlflow_experiment, mlflow_install, ...). Read by the
# compile-cache key (estimators/compile_cache.py), which leaves them out: they change no graph.
MLFLOW_ENV_PREFIX = "BAKEOFF_MLFLOW"

# Process-level plumbing: variables one side sets for itself or for the process it starts, not
# part of what a job is given. "set by -> read by" on each.
# launch.py (for the worker it starts) -> launch.py in the worker: this process runs the script.
WORKER_ENV = "BAKEOFF_WORKER"
# launch.py (setdefault, at start) -> train.py, hf_causal_lm.py, script_probe, script_launch: when
# the container process started (time.time()).
PROCESS_START_ENV = "BAKEOFF_PROCESS_START"
# The local platform (pipelines/local/substitutions.py) -> evaluate.py: where s3:// URIs live on
# this machine.
LOCAL_S3_ROOT_ENV = "BAKEOFF_LOCAL_S3_ROOT"
# The local platform (substitutions.processing) -> evaluate.py: a JSON file standing for
# ListPipelineExecutionSteps of this execution.
LOCAL_STEPS_ENV = "BAKEOFF_LOCAL_STEPS"
# launch.py (tracking.sink.Client.start) -> the worker's MLflow sink: the MLflow client process's pid
# and pipes ("launcher_pid,client_pid,fd,fd"); warm_server rewrites its first part in a forked worker.
MLFLOW_CLIENT_ENV = "BAKEOFF_MLFLOW_CLIENT"
# tracking.install.ensure_mlflow -> use_installed_mlflow in the worker processes: where it installed
# the MLflow client.
MLFLOW_PATH_ENV = "BAKEOFF_MLFLOW_PATH"
# tracking.install.ensure_mlflow -> the job (and tests): what the install did, as JSON.
MLFLOW_INSTALL_RESULT_ENV = "BAKEOFF_MLFLOW_INSTALL_RESULT"
# launch.py (tracking.install.start_install) -> every MLflow client process of the job (tracking.sink.serve):
# the file the install running beside the training writes its result to, once, when it ends.
MLFLOW_INSTALL_MARKER_ENV = "BAKEOFF_MLFLOW_INSTALL_MARKER"
# A knob (tests, a developer) -> mlflow_install.ensure_mlflow: where to install the client
# (default /tmp/bakeoff-mlflow).
MLFLOW_TARGET_ENV = "BAKEOFF_MLFLOW_TARGET"
# A knob -> tracking.sink.Client.close: seconds to flush what is queued at the end (default 30).
MLFLOW_FLUSH_TIMEOUT_ENV = "BAKEOFF_MLFLOW_FLUSH_TIMEOUT"
# The local engine (pipelines/local/warm.py) -> launch.py (bakeoff_runtime.training.warm_worker): the socket
# of the leg's warm interpreter. Nothing sets it on SageMaker.
WARM_WORKER_ENV = "BAKEOFF_WARM_WORKER"
# bakeoff_runtime.training.warm_server (in a worker it forked) -> the Runtime's summary: how it started.
WARM_FORKED_ENV = "BAKEOFF_WARM_FORKED"
# The user's shell -> the local engine (pipelines/local/warm.py): 0 starts no warm interpreter.
WARM_START_ENV = "BAKEOFF_WARM_START"
# The local engine (pipelines/local/slots.py, jobs side by side) -> the job, through the warm interpreter
# (bakeoff_runtime.training.warm_server, which applies them in the child it forks): the job's share of the
# cores, for torch's intra-op pool and torch.compile's kernel compiler. Inductor reads the last when its
# config is imported, and otherwise takes one compile thread per core it sees; above 1 it starts a pool of
# compile worker processes, each importing torch (torch/_inductor/config.py `decide_compile_threads`,
# async_compile.py `use_process_pool`, torch 2.9.0).
INDUCTOR_THREADS_ENV = "TORCHINDUCTOR_COMPILE_THREADS"
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", INDUCTOR_THREADS_ENV)
# The local collective check (pipelines/steps/collective.run_local) and tests -> collective_check.py:
# the process-group backend, instead of the backend table's.
COLLECTIVE_BACKEND_ENV = "BAKEOFF_COLLECTIVE_BACKEND"
# A knob -> collective_check.py: bytes per rank in the timed all-reduce (default 16 MiB).
COLLECTIVE_BYTES_ENV = "BAKEOFF_COLLECTIVE_BYTES"
# Tests -> collective_check.py: rank k contributes a wrong value (a planted fault).
COLLECTIVE_FAULT_RANK_ENV = "BAKEOFF_COLLECTIVE_FAULT_RANK"
# The user's shell -> the bakeoff CLI (pipelines/cli/main.py): show the traceback of an error.
DEBUG_ENV = "BAKEOFF_DEBUG"
# The user's shell -> pipelines/advice/price_list.py: the Price List cache's directory
# (default ~/.cache/bakeoff).
CACHE_DIR_ENV = "BAKEOFF_CACHE_DIR"
# The user's shell (and the tests) -> pipelines/local/questions.py: where the attempts at each question are
# recorded (default $XDG_STATE_HOME/bakeoff, else ~/.local/state/bakeoff).
STATE_DIR_ENV = "BAKEOFF_STATE_DIR"
# script_run.ScriptRun (launcher) -> tracking/script_writes.py in the script's processes: the file where each
# metric the script logs through MLflow's Python client is recorded, so that values in the job's run that its
# script did not log (another job wrote them) are told apart and left out.
MLFLOW_WRITES_ENV = "BAKEOFF_MLFLOW_WRITES"
# `bakeoff ui` (pipelines/cli/ui.py) -> the server it starts (pipelines/cli/ui_guard.py): the guard's
# settings as JSON (the per-launch token, the run directory, the hosts it answers to, whether writes are
# allowed). An environment variable: readable by the same user only (/proc/PID/environ), never on a
# command line other users can list.
UI_GUARD_ENV = "BAKEOFF_UI_GUARD"


def _decode_hyperparameter(value: Any) -> Any:
    # CreateTrainingJob carries hyperparameters as strings; the SDKs JSON-encode
    # them, so decode where possible and keep the raw string otherwise.
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, TypeError):
        return value


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def opt_ml_root(environ: Mapping[str, str] | None = None) -> Path:
    """/opt/ml, or the tree the local platform stands in for it."""
    return Path(JobEnvironment.from_environ(environ).opt_ml or OPT_ML)


@dataclass
class TrainingEnv:
    """Where a training job finds its inputs and puts its outputs."""

    model_dir: Path
    output_dir: Path
    output_data_dir: Path
    input_dir: Path
    input_config_dir: Path
    checkpoint_dir: Path
    channels: dict[str, Path] = field(default_factory=dict)
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=lambda: ["algo-1"])
    current_host: str = "algo-1"
    instance_type: str | None = None
    num_gpus: int = 0
    num_neurons: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    network_interface: str | None = None

    @property
    def failure_file(self) -> Path:
        return self.output_dir / "failure"

    @property
    def host_count(self) -> int:
        return len(self.hosts)

    @property
    def host_rank(self) -> int:
        return self.hosts.index(self.current_host) if self.current_host in self.hosts else 0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> TrainingEnv:
        env = os.environ if environ is None else environ
        ours = JobEnvironment.from_environ(env)  # bakeoff's own variables, typed; SM_* are SageMaker's
        root = Path(ours.opt_ml or OPT_ML)
        input_dir = Path(env.get("SM_INPUT_DIR", root / "input"))
        config_dir = Path(env.get("SM_INPUT_CONFIG_DIR", input_dir / "config"))
        output_dir = Path(env.get("SM_OUTPUT_DIR", root / "output"))

        if "SM_HPS" in env:
            raw_hps = json.loads(env["SM_HPS"])
        else:
            raw_hps = _read_json(config_dir / "hyperparameters.json") or {}
        hps = {k: _decode_hyperparameter(v) for k, v in raw_hps.items()}

        resource = _read_json(config_dir / "resourceconfig.json") or {}
        hosts = json.loads(env["SM_HOSTS"]) if "SM_HOSTS" in env else resource.get("hosts", ["algo-1"])
        # Sorted, as SageMaker writes them and as its SDK's drivers rank them: every host
        # computes the same order, and the first is where they meet.
        hosts = sorted(hosts)
        current = env.get("SM_CURRENT_HOST", resource.get("current_host", hosts[0]))
        master = env.get("SM_MASTER_ADDR") or env.get("MASTER_ADDR") or (hosts[0] if len(hosts) > 1 else "127.0.0.1")
        # Locally the hosts algo-1..N are processes on this machine: BAKEOFF_HOST_MAP maps
        # their names to addresses (one of the local executor's printed substitutions).
        host_map = json.loads(ours.host_map or "{}")
        master = host_map.get(master, master)

        channels: dict[str, Path] = {}
        data_dir = input_dir / "data"
        declared = _read_json(config_dir / "inputdataconfig.json") or {}
        names = set(declared)
        if "SM_CHANNELS" in env:
            names.update(json.loads(env["SM_CHANNELS"]))
        names.update(k[len("SM_CHANNEL_"):].lower() for k in env if k.startswith("SM_CHANNEL_"))
        for name in sorted(names):
            channels[name] = Path(env.get(f"SM_CHANNEL_{name.upper()}", data_dir / name))

        return cls(
            model_dir=Path(env.get("SM_MODEL_DIR", root / "model")),
            output_dir=output_dir,
            output_data_dir=Path(env.get("SM_OUTPUT_DATA_DIR", output_dir / "data")),
            input_dir=input_dir,
            input_config_dir=config_dir,
            checkpoint_dir=Path(ours.checkpoint_dir or root / "checkpoints"),
            channels=channels,
            hyperparameters=hps,
            hosts=list(hosts),
            current_host=current,
            instance_type=env.get("SM_CURRENT_INSTANCE_TYPE", resource.get("current_instance_type")),
            num_gpus=int(env.get("SM_NUM_GPUS", 0) or 0),
            num_neurons=int(env.get("SM_NUM_NEURONS", 0) or 0),
            master_addr=master,
            # 7777: the port the SageMaker SDK's drivers and the training toolkit meet on.
            master_port=int(env.get("SM_MASTER_PORT") or ours.master_port or env.get("MASTER_PORT") or 7777),
            network_interface=resource.get("network_interface_name"),
        )

    def write_failure(self, reason: str) -> None:
        """SageMaker shows the first 1 KiB of this file as the job's FailureReason."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.failure_file.write_text(reason[:1024] + ("\n" if not reason.endswith("\n") else ""))
