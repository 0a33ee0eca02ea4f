"""bakeoff: decide by measurement whether a model should train on AWS Trainium or NVIDIA GPUs.

Build a spec in Python the same way YAML does:

    from pipelines import BakeoffSpec, Leg, run_local
    spec = BakeoffSpec(name="demo", legs=[Leg(name="trn1", instance_type="ml.trn1.32xlarge"),
                                           Leg(name="p4d", instance_type="ml.p4d.24xlarge")])
    result = run_local(spec, "runs/demo")
    print(result.verdict)
"""
from __future__ import annotations


def _version() -> str:
    # One place for the version: pyproject.toml, read back from the installed metadata.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bakeoff")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


__version__ = _version()

_EXPORTS = {
    "BakeoffSpec": "pipelines.spec", "Leg": "pipelines.spec", "Entrypoint": "pipelines.spec",
    "ModelConfig": "pipelines.spec", "Training": "pipelines.spec", "Optimizer": "pipelines.spec",
    "Parity": "pipelines.spec", "Mlflow": "pipelines.spec", "Storage": "pipelines.spec", "Data": "pipelines.spec",
    "load_spec": "pipelines.loader", "spec_from_dict": "pipelines.loader",
    "SpecError": "pipelines.errors", "BakeoffError": "pipelines.errors",
    "LocalExecutor": "pipelines.local", "RunResult": "pipelines.local",
    "build_plan": "pipelines.plan", "prepare_corpus": "pipelines.data",
}

__all__ = sorted(_EXPORTS) + ["run_local", "__version__"]


def __getattr__(name):
    # Lazy: `bakeoff --help` must not pay for pydantic, boto3 or rich.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'pipelines' has no attribute {name!r}")


def run_local(spec, out_dir, force: bool = False, **kwargs):
    """Run a bake-off on this machine; returns a RunResult (verdict, evaluation, paths)."""
    from .local import LocalExecutor

    return LocalExecutor(spec, out_dir, force=force, **kwargs).run()
