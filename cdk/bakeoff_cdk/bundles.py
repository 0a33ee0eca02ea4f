"""The bundle a Python app's construct deploys: what `bakeoff synth SPEC --region REGION --cdk-out DIR` writes
(pipelines/sagemaker/cdk/bundle.py, the same function), kept in the app's own output directory under a name of
its content. Re-synthesizing an unchanged spec finds its bundle there; two stacks of one spec share one; nothing
goes to a shared temporary directory, where another user could have put a folder of that name first."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from bakeoff.pipelines.sagemaker.cdk.bundle import write_bundle
from bakeoff.pipelines.spec.model import BakeoffSpec


def digest(folder: Path) -> str:
    """sha256 of every file's path and bytes under `folder`."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def staged_bundle(spec: BakeoffSpec, region: str, mlflow_server: bool, outdir: str) -> Path:
    """Compile `spec` for `region` into `<outdir>/bakeoff.bundles/<content hash>`; returns that folder."""
    root = Path(outdir) / "bakeoff.bundles"
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".writing-", dir=root))
    try:
        write_bundle(spec, work / "bundle", region=region, mlflow_server=mlflow_server)
        final = root / digest(work / "bundle")[:32]
        if not final.is_dir():
            try:
                os.rename(work / "bundle", final)
            except OSError:  # written meanwhile by a synth beside this one: the same bytes, by its name
                pass
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)
