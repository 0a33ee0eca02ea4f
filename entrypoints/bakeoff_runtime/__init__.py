"""bakeoff's in-container runtime: the contract, backends, telemetry and the helper
a training script uses to become one leg of a bake-off.

Self-contained on purpose: it runs inside AWS's Neuron and GPU training images
with only torch (+ torch-xla / torch-neuronx), numpy/scipy and, optionally, mlflow.
"""
from bakeoff_runtime.contract import TrainingEnv

__all__ = ["Runtime", "Diverged", "TrainingEnv"]


def __getattr__(name):
    # Keep `import bakeoff_runtime` free of torch until a runtime is asked for.
    if name in ("Runtime", "Diverged"):
        from bakeoff_runtime.training import runtime

        return getattr(runtime, name)
    raise AttributeError(name)
