"""Script mode's contract: how an unchanged training script is started, in one place.

Torch-free, so both sides use it: the orchestration side writes `ScriptSettings` into the code
bundle (`bakeoff_script.json`) and the launcher reads it back inside the container.

A script written for SageMaker's framework containers expects what AWS's training toolkit
gives it. bakeoff replaces the container's entrypoint, so the toolkit never runs; the launcher
does what it does instead, the same way (aws/sagemaker-training-toolkit at 33839372, 2025-09-19):

* hyperparameters as command-line arguments, keys sorted, `--key value` (`-k value` for a
  one-letter key), values JSON-decoded then `str()`-ed, a mapping as `k=v,k2=v2`
  (`mapping.to_cmd_args`); `--key=value` where the spec asks for it (nanoGPT-style scripts);
* `SM_*` variables: `SM_` + the upper-cased key, strings as they are, everything else compact
  sorted JSON (`mapping.to_env_vars`): SM_HPS, SM_HP_<KEY>, SM_CHANNELS, SM_CHANNEL_<NAME>,
  SM_MODEL_DIR, SM_OUTPUT_DATA_DIR, SM_NUM_GPUS (`nvidia-smi --list-gpus`), SM_NUM_NEURONS
  (`neuron-ls -j`, the sum of `nc_count`), SM_HOSTS, SM_CURRENT_HOST, SM_TRAINING_ENV, SM_USER_ARGS
  and the others `Environment.to_env_vars` writes (`environment.py`);
* hyperparameters whose names start with `sagemaker_` are the platform's and never reach the
  script (`params.SAGEMAKER_PREFIX`); bakeoff's own carry the prefix `bakeoff_` for the same reason;
* a `requirements.txt` beside the script is installed with `python -m pip install -r
  requirements.txt` in the code directory before the script starts (`modules.install_requirements`).
"""
from __future__ import annotations

import json
import multiprocessing
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SETTINGS_FILE = "bakeoff_script.json"
PROBE_FILE = "bakeoff-probe.json"  # what the worker measured, written under the job's output dir
RESERVED_PREFIXES = ("sagemaker_", "bakeoff_")
LEG_HP = "bakeoff_leg"
SEED_HP = "bakeoff_seed"


@dataclass(frozen=True)
class MetricRegex:
    """A SageMaker MetricDefinition: the first group of `regex` over the job's output is `name`'s value."""

    name: str
    regex: str


@dataclass(frozen=True)
class ScriptSettings:
    """What the launcher needs to run a script as it is. Written once by the orchestration side."""

    argument_style: str = "space"  # "space": --key value; "equals": --key=value
    metrics: tuple[MetricRegex, ...] = ()
    loss_metric: str = "train_loss"
    parity_metric: str = "val_loss"
    seed_argument: str | None = None  # the hyperparameter that carries the seed, when the script takes one
    seed_environment: str | None = None  # or the variable
    unit: str = "samples"
    units_per_step: float | None = None
    hf_trainer_state: bool = False
    # The verdict may take its metric from what the script logs to MLflow itself (METRIC_SOURCE_RULES).
    metrics_from_mlflow: bool = False
    warmup_steps: int = 5
    sync_interval: int = 10
    # One process per device under torchrun (SageMaker's torch_distributed), or one process per
    # instance (SageMaker with no distribution): aws/sagemaker-pytorch-training-toolkit training.py.
    distributed: bool = False
    schema: str = "bakeoff.script/1"

    def to_json(self) -> str:
        body = asdict(self)
        body["metrics"] = [asdict(m) for m in self.metrics]
        return json.dumps(body, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ScriptSettings:
        body = json.loads(text)
        body["metrics"] = tuple(MetricRegex(**m) for m in body.get("metrics", ()))
        return cls(**body)

    @classmethod
    def beside(cls, script: Path) -> ScriptSettings | None:
        """The settings shipped in the bundle next to `script`, or None (a Runtime-mode script)."""
        path = Path(script).parent / SETTINGS_FILE
        return cls.from_json(path.read_text()) if path.exists() else None


@dataclass(frozen=True)
class MetricSourceRule:
    """One metric source of script mode as both sides see it before any job runs: whether the settings turn
    it on and whether it can then give a metric by that name. The launcher's reader of the same `name`
    (bakeoff_runtime.training.metric_sources) reads the job; this half lives in the contract because the
    orchestration side, which asks it in `validate` and `bakeoff run`, never imports the training group."""

    name: str  # its reader's name in bakeoff_runtime.training.metric_sources.SOURCES
    what: str  # what it reads, in the words of a message
    switch: str  # the spec field that turns it on
    hint: str  # how a spec makes it give {metric} ({declared}: the regexes' names), for the refusal
    enabled: Callable[[ScriptSettings], bool]
    gives: Callable[[ScriptSettings, str], bool]  # when enabled: whether `metric` can come from it
    needs_mlflow: bool = False  # it reads the job's MLflow run, which a spec or a run can turn off

    def can_give(self, settings: ScriptSettings, metric: str, *, mlflow_enabled: bool) -> bool:
        return (self.enabled(settings) and (mlflow_enabled or not self.needs_mlflow)
                and self.gives(settings, metric))


# In precedence order, the launcher's (tests/unit/test_metric_sources.py holds its SOURCES to these): the
# regexes first, a trainer_state.json over them, the script's own MLflow logging only where neither gave
# a metric. A Trainer's file and MLflow can give any name the script writes, which only the job knows.
METRIC_SOURCE_RULES: tuple[MetricSourceRule, ...] = (
    MetricSourceRule("log_regexes", "the script's output", "entrypoint.script_mode.metrics",
                     "declare {metric!r} in entrypoint.script_mode.metrics with a regex{declared}",
                     enabled=lambda s: bool(s.metrics),
                     gives=lambda s, metric: any(m.name == metric for m in s.metrics)),
    MetricSourceRule("trainer_state", "a Hugging Face Trainer's trainer_state.json", "script_mode.hf_trainer_state",
                     "set script_mode.hf_trainer_state: true for a Hugging Face Trainer",
                     enabled=lambda s: s.hf_trainer_state, gives=lambda s, metric: True),
    MetricSourceRule("mlflow", "the script's own MLflow logging", "script_mode.metrics_from_mlflow",
                     "set script_mode.metrics_from_mlflow: true for a script that logs it to MLflow",
                     enabled=lambda s: s.metrics_from_mlflow, gives=lambda s, metric: True, needs_mlflow=True),
)


def sources_giving(settings: ScriptSettings, metric: str, *, mlflow_enabled: bool) -> tuple[MetricSourceRule, ...]:
    """The enabled sources that can give `metric`; none means no job of these settings would report it."""
    return tuple(rule for rule in METRIC_SOURCE_RULES
                 if rule.can_give(settings, metric, mlflow_enabled=mlflow_enabled))


def script_hyperparameters(hps: Mapping[str, Any]) -> dict[str, Any]:
    """The hyperparameters the script sees: the platform's and bakeoff's own left out."""
    return {k: v for k, v in hps.items() if not k.startswith(RESERVED_PREFIXES)}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def command_line(hps: Mapping[str, Any], style: str = "space") -> list[str]:
    """The toolkit's `mapping.to_cmd_args` (or its `--key=value` form) over decoded hyperparameters."""
    out: list[str] = []
    for key in sorted(hps):
        value = hps[key]
        text = ",".join(f"{k}={v}" for k, v in sorted(value.items())) if isinstance(value, Mapping) else _text(value)
        name = (f"--{key}" if len(key) > 1 else f"-{key}") if key else ""
        out += [f"{name}={text}"] if style == "equals" else [name, text]
    return out


def _env_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def count_gpus() -> int:
    """As the toolkit counts them: lines of `nvidia-smi --list-gpus` that start with "GPU "."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def count_neuron_cores() -> int:
    """As the toolkit counts them: the `nc_count` of every device `neuron-ls -j` lists."""
    if not shutil.which("neuron-ls"):
        return 0
    try:
        out = subprocess.run(["neuron-ls", "-j"], capture_output=True, text=True, timeout=60).stdout
        return sum(int(d.get("nc_count", 0)) for d in json.loads(out))
    except (OSError, subprocess.SubprocessError, ValueError, TypeError, AttributeError):
        return 0


def sagemaker_environment(env, hps: Mapping[str, Any], *, entry_point: str, code_dir: Path, num_gpus: int,
                          num_neurons: int, user_args: list[str]) -> dict[str, str]:
    """The SM_* variables the toolkit's `Environment.to_env_vars` writes, from `env` (a
    contract.TrainingEnv) and the script's decoded hyperparameters."""
    resource = _read(env.input_config_dir / "resourceconfig.json")
    input_data = _read(env.input_config_dir / "inputdataconfig.json")
    channels = {name: str(path) for name, path in sorted(env.channels.items())}
    values: dict[str, Any] = {
        "hosts": env.hosts, "network_interface_name": env.network_interface or "eth0", "hps": dict(hps),
        "user_entry_point": entry_point, "framework_params": {}, "resource_config": resource,
        "input_data_config": input_data, "output_data_dir": str(env.output_data_dir),
        "channels": sorted(channels), "current_host": env.current_host,
        "current_instance_type": env.instance_type or resource.get("current_instance_type", "local"),
        "current_instance_group": resource.get("current_group_name", "homogeneousCluster"),
        "module_name": Path(entry_point).stem, "log_level": 20, "framework_module": None,
        "input_dir": str(env.input_dir), "input_config_dir": str(env.input_config_dir),
        "output_dir": str(env.output_dir), "num_cpus": multiprocessing.cpu_count(), "num_gpus": num_gpus,
        "num_neurons": num_neurons, "model_dir": str(env.model_dir), "module_dir": str(code_dir),
        "user_args": user_args, "output_intermediate_dir": str(env.output_dir / "intermediate"),
        "host_count": env.host_count, "current_host_rank": env.host_rank,
        "master_addr": env.master_addr, "master_port": env.master_port,
    }
    values["training_env"] = {k: v for k, v in values.items() if k not in ("training_env",)}
    for name, path in channels.items():
        values[f"channel_{name}"] = path
    for key, value in hps.items():
        values[f"hp_{key}"] = value
    return {f"SM_{k.upper()}": _env_value(v) for k, v in values.items()}


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def requirements_command(code_dir: Path) -> list[str] | None:
    """`pip install -r requirements.txt` as the toolkit runs it; from the bundle's `wheels/`
    folder, without an index, when the bundle brings one (a job without network)."""
    import sys

    if not (code_dir / "requirements.txt").exists():
        return None
    cmd = [sys.executable, "-m", "pip", "install", "-r", "requirements.txt"]
    if (code_dir / "wheels").is_dir():
        cmd += ["--no-index", "--find-links", "wheels"]
    return cmd


def seed_environment(settings: ScriptSettings, seed: int | None) -> dict[str, str]:
    if settings.seed_environment and seed is not None:
        return {settings.seed_environment: str(seed)}
    return {}
