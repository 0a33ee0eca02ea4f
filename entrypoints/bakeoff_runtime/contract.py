"""The SageMaker training container contract, read the way the container driver lays it out.

Everything has a default under /opt/ml so the same code runs in a real training
container; the local executor points the SM_* variables into a per-job tree instead.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

OPT_ML = Path("/opt/ml")


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
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> "TrainingEnv":
        env = os.environ if environ is None else environ
        input_dir = Path(env.get("SM_INPUT_DIR", OPT_ML / "input"))
        config_dir = Path(env.get("SM_INPUT_CONFIG_DIR", input_dir / "config"))
        output_dir = Path(env.get("SM_OUTPUT_DIR", OPT_ML / "output"))

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
        host_map = json.loads(env.get("BAKEOFF_HOST_MAP", "{}") or "{}")
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
            model_dir=Path(env.get("SM_MODEL_DIR", OPT_ML / "model")),
            output_dir=output_dir,
            output_data_dir=Path(env.get("SM_OUTPUT_DATA_DIR", output_dir / "data")),
            input_dir=input_dir,
            input_config_dir=config_dir,
            checkpoint_dir=Path(env.get("BAKEOFF_CHECKPOINT_DIR", OPT_ML / "checkpoints")),
            channels=channels,
            hyperparameters=hps,
            hosts=list(hosts),
            current_host=current,
            instance_type=env.get("SM_CURRENT_INSTANCE_TYPE", resource.get("current_instance_type")),
            num_gpus=int(env.get("SM_NUM_GPUS", 0) or 0),
            num_neurons=int(env.get("SM_NUM_NEURONS", 0) or 0),
            master_addr=master,
            # 7777: the port the SageMaker SDK's drivers and the training toolkit meet on.
            master_port=int(env.get("SM_MASTER_PORT") or env.get("BAKEOFF_MASTER_PORT") or env.get("MASTER_PORT")
                            or 7777),
            network_interface=resource.get("network_interface_name"),
        )

    def write_failure(self, reason: str) -> None:
        """SageMaker shows the first 1 KiB of this file as the job's FailureReason."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.failure_file.write_text(reason[:1024] + ("\n" if not reason.endswith("\n") else ""))
