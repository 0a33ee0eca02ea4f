"""Container entry: run a training script once per device.

SageMaker starts one process per instance. A leg with several devices per
instance (32 NeuronCores on trn1.32xlarge, 8 GPUs on p4d) or several instances
needs one process per device: this re-executes the script under torchrun with
the host list from the container contract. A single-device job runs in-process.

    python launch.py train.py [args...]
"""
from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bakeoff_runtime.contract import TrainingEnv  # noqa: E402


def devices_per_host(env: TrainingEnv) -> int:
    explicit = os.environ.get("BAKEOFF_NPROC_PER_NODE")
    if explicit:
        return int(explicit)
    backend = os.environ.get("BAKEOFF_BACKEND", "")
    if backend in ("neuron", "torchneuron") and env.num_neurons:
        return env.num_neurons
    if backend == "cuda" and env.num_gpus:
        return env.num_gpus
    return 1


def main(argv: list[str]) -> int:
    os.environ.setdefault("BAKEOFF_PROCESS_START", repr(time.time()))
    if not argv:
        print("usage: launch.py SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    script = Path(argv[0])
    if not script.is_absolute():
        script = Path.cwd() / script
    env = TrainingEnv.from_environ()
    if not script.exists():
        env.write_failure(f"training script {script} not found in the code bundle")
        print(f"[bakeoff] ERROR: training script {script} not found", file=sys.stderr)
        return 2
    nproc = devices_per_host(env)
    if "RANK" not in os.environ and (nproc > 1 or env.host_count > 1):
        cmd = [sys.executable, "-m", "torch.distributed.run",
               f"--nproc_per_node={nproc}", f"--nnodes={env.host_count}",
               f"--node_rank={env.host_rank}", f"--master_addr={env.master_addr}",
               f"--master_port={env.master_port}", str(Path(__file__).resolve()), str(script), *argv[1:]]
        print(f"[bakeoff] launching {nproc} process(es) per host on {env.host_count} host(s)", flush=True)
        os.execv(sys.executable, cmd)
    sys.path.insert(0, str(script.parent))
    sys.argv = [str(script), *argv[1:]]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:
        record_crash(env, exc)
        raise
    return 0


def record_crash(env: TrainingEnv, exc: BaseException) -> None:
    """A script that dies before (or outside) the runtime still leaves its reason."""
    import json
    import traceback

    if not env.failure_file.exists():
        env.write_failure(f"{type(exc).__name__}: {exc}\n\n" + "".join(traceback.format_exception(exc))[-3000:])
    summary = env.model_dir / "summary.json"
    if not summary.exists() and int(os.environ.get("RANK", 0)) == 0:
        env.model_dir.mkdir(parents=True, exist_ok=True)
        summary.write_text(json.dumps({
            "schema": "bakeoff.summary/1", "status": "failed", "reason": f"{type(exc).__name__}: {exc}",
            "leg": env.hyperparameters.get("leg"), "seed": env.hyperparameters.get("seed"),
            "backend": os.environ.get("BAKEOFF_BACKEND"), "job_key": os.environ.get("BAKEOFF_JOB_KEY"),
        }, indent=2))
        env.output_data_dir.mkdir(parents=True, exist_ok=True)
        (env.output_data_dir / "summary.json").write_text(summary.read_text())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
