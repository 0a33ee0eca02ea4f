import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENTRYPOINTS = ROOT / "entrypoints"
sys.path.insert(0, str(ENTRYPOINTS))  # the in-container runtime, as the container sees it

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
    from pipelines.plan.corpus import prepare_corpus

    out = tmp_path_factory.mktemp("corpus")
    prepare_corpus(out)
    return out


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """One real bake-off through the local executor: xla:cpu leg + cpu leg, 2 seeds, MLflow on."""
    root = tmp_path_factory.mktemp("tiny_run")
    spec_path = write_spec(root / "tiny.yaml", tiny_spec())
    out = root / "out"
    proc = bakeoff("run", spec_path, "--out", out)
    return {"spec": spec_path, "out": out, "proc": proc}
