"""On PYTHONPATH, stands for an AWS training image without mlflow (its PyTorch 2.9 images ship none): mlflow and
sagemaker_mlflow are importable only from the directory the job installs the client into (BAKEOFF_MLFLOW_TARGET),
never from this test environment's own site-packages."""
import os
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import PathFinder

HIDDEN = ("mlflow", "sagemaker_mlflow")


class _OnlyTheInstalledClient(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in HIDDEN:
            return None
        installed = os.environ.get("BAKEOFF_MLFLOW_TARGET", "/nonexistent")
        spec = PathFinder.find_spec(name, path if path is not None else [installed])
        if spec is None or not str(spec.origin or "").startswith(os.path.abspath(installed)):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: the image has no mlflow)", name=name)
        return spec


sys.meta_path.insert(0, _OnlyTheInstalledClient())
