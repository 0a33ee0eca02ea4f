"""Install, at a job's start, a package its script imports and its image lacks.

The compiled pipeline names the packages (BAKEOFF_INSTALL_PACKAGES, comma-separated) when the
script imports one that AWS's default images do not all ship (transformers: the Neuron image
has it, the PyTorch GPU and CPU images do not). A package already importable is left alone, so
the Neuron leg keeps the image's own. Otherwise `pip install -r <package>-requirements.txt`
(bakeoff's pin, beside this module) runs into the image's environment, as SageMaker's training
toolkit installs a requirements.txt (aws/sagemaker-training-toolkit `modules.install_requirements`):
what the image already has and satisfies stays. From the code bundle's `wheels/` directory with
`--no-index` when there is one (network isolation, private subnets), else from the index.
"""
from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

from bakeoff_runtime import contract

HERE = Path(__file__).resolve().parent
INSTALL_TIMEOUT_S = 600


def requirements_file(package: str) -> Path:
    return HERE / f"{package}-requirements.txt"


def ensure_packages(code_dir: Path, environ) -> str | None:
    """Install what the job needs and lacks; the reason it could not (the job must not train
    without it), or None."""
    for package in [p for p in contract.JobEnvironment.from_environ(environ).install_packages.split(",") if p]:
        if importlib.util.find_spec(package) is not None:
            continue
        wheels = Path(code_dir) / "wheels"
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
               "--timeout", "20", "--retries", "2", "-r", str(requirements_file(package))]
        source = "the package index"
        if wheels.is_dir():
            cmd += ["--no-index", "--find-links", str(wheels)]
            source = f"the code bundle's wheels ({wheels})"
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            detail = (proc.stderr.strip().splitlines() or [""])[-1]
            ok = proc.returncode == 0
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        importlib.invalidate_caches()
        if not ok or importlib.util.find_spec(package) is None:
            return (f"the script imports {package}, which this image lacks, and installing it from {source} "
                    f"failed ({detail[:300]}); give the leg an `image:` that has it, or put its wheels in the "
                    "code bundle's wheels/ directory")
        print(f"[bakeoff] installed {package} from {source} (the image lacked it)", file=sys.stderr, flush=True)
    return None
