"""A bare per-job `opt/ml` tree for tests that run launch.py directly (the local executor
lays jobs out from their compiled requests, pipelines/local/jobs.py)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from bakeoff.pipelines.plan.model import encode_hyperparameters


class JobLayout:
    def __init__(self, job_dir: Path):
        self.root = job_dir
        self.opt_ml = job_dir / "opt" / "ml"
        self.code = self.opt_ml / "code"
        self.config = self.opt_ml / "input" / "config"
        self.data = self.opt_ml / "input" / "data"
        self.model = self.opt_ml / "model"
        self.output = self.opt_ml / "output"
        self.checkpoints = self.opt_ml / "checkpoints"
        self.log = job_dir / "stdout.log"
        self.meta = job_dir / "job.json"

    def reset(self) -> None:
        """Fresh outputs for a (re-)run; checkpoints are kept like SageMaker's S3 checkpoints."""
        for d in (self.model, self.output, self.data, self.config):
            shutil.rmtree(d, ignore_errors=True)
        for f in (self.log, self.meta):
            f.unlink(missing_ok=True)

    def lay_out(self, hyperparameters: dict[str, Any], channels: dict[str, Path], instance_type: str,
                hosts: int = 1) -> None:
        for d in (self.code, self.config, self.data, self.model, self.output / "data", self.checkpoints):
            d.mkdir(parents=True, exist_ok=True)
        (self.config / "hyperparameters.json").write_text(json.dumps(encode_hyperparameters(hyperparameters),
                                                                     indent=2))
        host_names = [f"algo-{i + 1}" for i in range(hosts)]
        (self.config / "resourceconfig.json").write_text(json.dumps({
            "current_host": host_names[0], "hosts": host_names, "current_instance_type": instance_type,
            "current_group_name": "homogeneousCluster", "network_interface_name": "lo"}, indent=2))
        (self.config / "inputdataconfig.json").write_text(json.dumps({
            name: {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
            for name in sorted(channels)}, indent=2))
        for name, src in channels.items():
            link = self.data / name
            if link.is_symlink() or link.exists():
                link.unlink()
            os.symlink(src.resolve(), link, target_is_directory=True)

    def environment(self, channels: dict[str, Path], hyperparameters: dict[str, Any]) -> dict[str, str]:
        env = {
            "SM_MODEL_DIR": str(self.model),
            "SM_OUTPUT_DIR": str(self.output),
            "SM_OUTPUT_DATA_DIR": str(self.output / "data"),
            "SM_INPUT_DIR": str(self.opt_ml / "input"),
            "SM_INPUT_CONFIG_DIR": str(self.config),
            "SM_CHANNELS": json.dumps(sorted(channels)),
            "SM_HPS": json.dumps(hyperparameters, sort_keys=True),
            "SM_HOSTS": json.dumps(["algo-1"]),
            "SM_CURRENT_HOST": "algo-1",
            "BAKEOFF_CHECKPOINT_DIR": str(self.checkpoints),
        }
        for name in channels:
            env[f"SM_CHANNEL_{name.upper()}"] = str(self.data / name)
        return env


def seal(directory: Path) -> Path:
    """What a job does last over the outputs it wrote by hand here: its digest (the Evaluate step
    rejects a completed job's output without one). Returns the digest file."""
    from bakeoff_runtime.contract.output_digest import DIGEST_FILE, record

    record(directory)
    return directory / DIGEST_FILE


def trained_on(device: str, steps: int = 100, tensors: int = 3) -> dict[str, Any]:
    """What a job's summary.json records of where it trained (training/evidence.py), for a job on
    `device` ("xla", "cuda" or "cpu"): the backend check's evidence, as the Runtime writes it."""
    out: dict[str, Any] = {
        "model": {"parameters": 1000, "tensors": tensors, "shapes": {"10x100": 1}, "devices": {device: tensors},
                  "source": "optimizer parameters at the first optimizer step"},
        "evidence": {"optimizer_steps": steps, "training_forwards": steps, "processes": 1}}
    if device == "xla":
        out["evidence"]["xla"] = {"executions": steps + 2, "graphs_compiled": 2, "graphs_cached": 0,
                                  "tensors_created": 10 * steps}
    if device == "cuda":
        out["evidence"]["cuda"] = {"devices_used": 1, "visible_devices": 1, "peak_bytes": 2**30}
        out["peak_device_memory_bytes"] = 2**30
    return out
