"""The orchestration side's window onto the container code's torch-free modules.

`entrypoints/bakeoff_runtime` is shipped as package data (it runs inside training
containers), not as an installed package. Its torch-free modules (the contract,
the statistics) are the single source of what both sides agree on, so the
orchestration side imports them from there instead of keeping a copy. The reverse
never happens: nothing under entrypoints/ imports `pipelines` or `estimators`.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

from .bundle import entrypoints_dir

PACKAGE = "bakeoff_runtime"


def runtime_module(name: str) -> ModuleType:
    """`bakeoff_runtime.<name>`, loaded from the entrypoints this installation ships."""
    if PACKAGE not in sys.modules:
        root = entrypoints_dir() / PACKAGE
        spec = importlib.util.spec_from_file_location(PACKAGE, root / "__init__.py",
                                                      submodule_search_locations=[str(root)])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {root}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[PACKAGE]
            raise
    return importlib.import_module(f"{PACKAGE}.{name}")
