"""A compiled request run as SageMaker would run it, as far as one machine can: the /opt/ml tree
SageMaker lays out from the request (config files, channels downloaded), and an environment that
holds the request's `Environment` and nothing else of bakeoff's: no SM_* variable, because
SageMaker sets none in a container whose entrypoint is overridden.

What differs from a real container, and nothing more (EMULATED):
* /opt/ml is a directory of the test's (BAKEOFF_OPT_ML, as the local engine moves it);
* s3:// URIs are a directory store (the request's values that name S3 point into it);
* `python3` is this Python, a trn leg runs on PyTorch/XLA's CPU device (PJRT_DEVICE=CPU), and
  `neuron_parallel_compile` (Neuron images only) runs its command unchanged.
"""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from bakeoff.pipelines.local.store import LocalS3

EMULATED = ("BAKEOFF_OPT_ML", "PJRT_DEVICE", "BAKEOFF_LOCAL_S3_ROOT")
_KEPT_FROM_HOST = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def put_assets(compiled, store: LocalS3) -> None:
    for asset in compiled.assets:
        store.put(compiled.bucket, asset.key, asset.body)


def _environment(request_env: dict[str, str], store: LocalS3, opt_ml: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: os.environ[k] for k in _KEPT_FROM_HOST if k in os.environ}
    shim = opt_ml.parent / "bin"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "neuron_parallel_compile").write_text('#!/bin/sh\nexec "$@"\n')
    (shim / "neuron_parallel_compile").chmod(0o755)
    env["PATH"] = f"{shim}:{env.get('PATH', '/usr/bin:/bin')}"
    for key, value in request_env.items():
        env[key] = str(store.path(value)) if isinstance(value, str) and value.startswith("s3://") else value
    env["BAKEOFF_OPT_ML"] = str(opt_ml)
    # A rendezvous port of its own: SageMaker gives each job its instances, this machine is shared by
    # tests running side by side (pytest -n), and torchrun's default port would be bound twice.
    env["BAKEOFF_MASTER_PORT"] = str(free_port())
    env.update(extra)
    assert not [k for k in env if k.startswith("SM_")]
    return env


def _command(parts: list[str], opt_ml: Path) -> list[str]:
    return [str(p).replace("/opt/ml", str(opt_ml)).replace("python3 ", f"{sys.executable} ") for p in parts]


def run_training(request: dict[str, Any], job: str, root: Path, store: LocalS3, extra_env: dict[str, str] | None = None,
                 timeout: int = 900) -> tuple[subprocess.CompletedProcess, Path]:
    """CreateTrainingJob's container, host algo-1: its /opt/ml laid out, its command run; then its
    model dir and output/data uploaded as SageMaker does (model.tar.gz, output.tar.gz)."""
    opt_ml = root / "opt" / "ml"
    config = opt_ml / "input" / "config"
    config.mkdir(parents=True)
    (opt_ml / "model").mkdir()
    (opt_ml / "output" / "data").mkdir(parents=True)
    (config / "hyperparameters.json").write_text(json.dumps(request["HyperParameters"]))
    resources = request["ResourceConfig"]
    hosts = [f"algo-{i + 1}" for i in range(resources["InstanceCount"])]
    (config / "resourceconfig.json").write_text(json.dumps({
        "current_host": hosts[0], "hosts": hosts, "current_instance_type": resources["InstanceType"],
        "current_group_name": "homogeneousCluster", "network_interface_name": "eth0"}))
    channels = request.get("InputDataConfig", [])
    (config / "inputdataconfig.json").write_text(json.dumps({
        c["ChannelName"]: {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated",
                           "RecordWrapperType": "None"} for c in channels}))
    for channel in channels:
        store.copy_prefix(channel["DataSource"]["S3DataSource"]["S3Uri"], opt_ml / "input" / "data" /
                          channel["ChannelName"])
    env = _environment(request.get("Environment", {}), store, opt_ml, extra_env or {})
    spec = request["AlgorithmSpecification"]
    command = _command([*spec["ContainerEntrypoint"], *spec.get("ContainerArguments", [])], opt_ml)
    proc = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=timeout)
    base = request["OutputDataConfig"]["S3OutputPath"].rstrip("/") + f"/{job}/output"
    _tar_to(store, f"{base}/model.tar.gz", opt_ml / "model")
    _tar_to(store, f"{base}/output.tar.gz", opt_ml / "output" / "data")
    return proc, opt_ml


def model_uri(request: dict[str, Any], job: str) -> str:
    return request["OutputDataConfig"]["S3OutputPath"].rstrip("/") + f"/{job}/output/model.tar.gz"


def _tar_to(store: LocalS3, uri: str, directory: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for item in sorted(directory.rglob("*")):
            if item.is_file():
                tar.add(item, arcname=item.relative_to(directory).as_posix())
    target = store.path(uri)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(buf.getvalue())


def run_processing(request: dict[str, Any], root: Path, store: LocalS3,
                   timeout: int = 600) -> tuple[subprocess.CompletedProcess, Path]:
    """CreateProcessingJob's container: inputs downloaded to their LocalPath, the command run."""
    opt_ml = root / "opt" / "ml"
    for item in request.get("ProcessingInputs", []):
        s3 = item["S3Input"]
        store.copy_prefix(s3["S3Uri"], Path(s3["LocalPath"].replace("/opt/ml", str(opt_ml))))
    outputs = request.get("ProcessingOutputConfig", {}).get("Outputs", [])
    for out in outputs:
        Path(out["S3Output"]["LocalPath"].replace("/opt/ml", str(opt_ml))).mkdir(parents=True, exist_ok=True)
    # The Evaluate step reads the jobs' outputs with boto3; here they are in the directory store.
    env = _environment(request.get("Environment", {}), store, opt_ml, {"BAKEOFF_LOCAL_S3_ROOT": str(store.root)})
    app = request["AppSpecification"]
    command = _command(app["ContainerEntrypoint"], opt_ml) + [
        str(a).replace("/opt/ml", str(opt_ml)).replace("/tmp/bakeoff-jobs", str(root / "jobs"))
        for a in app.get("ContainerArguments", [])]
    proc = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=timeout)
    return proc, opt_ml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
