"""The wheel's build hook: the code bundle in a built wheel, the import names in an editable one.

A built wheel ships entrypoints/ whole as data, at `bakeoff/pipelines/_bundle/entrypoints`: it runs inside
training containers and must not be importable as a top-level package (PyPI's `entrypoints` owns that
name). An editable install does not copy it: there the checkout's entrypoints/ is the bundle
(bakeoff.pipelines.plan.bundle.entrypoints_dir).

An editable install exposes the names the wheel installs, no others: `bakeoff` (src/bakeoff, on sys.path by
`dev-mode-dirs`), `bakeoff.pipelines` and `bakeoff.estimators` (the checkout's pipelines/ and estimators/),
`bakeoff_runtime` and `bakeoff_cdk`. hatchling cannot make the two nested ones: its editable wheel maps
top-level names only (the `editables` package's import hook refuses a dotted name), and it refuses a
`sources` rewrite that adds a prefix (hatchling/builders/wheel.py, build_editable_detection: "Dev mode
installations are unsupported when any path rewrite in the `sources` option changes a prefix rather than
removes it", pfmoore/editables#20). So the editable wheel carries a small meta-path finder of its own, the
same kind of mapping setuptools' editable wheels install: a dotted name -> the checkout's folder; the
modules under it are then found through the package's __path__ as usual.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

FINDER_MODULE = "_bakeoff_editable_finder"
# Installed name -> folder in the checkout. `bakeoff` itself is a plain folder on sys.path (dev-mode-dirs).
EDITABLE_PACKAGES = {
    "bakeoff.pipelines": "pipelines",
    "bakeoff.estimators": "estimators",
    "bakeoff_runtime": "entrypoints/bakeoff_runtime",
    "bakeoff_cdk": "cdk/bakeoff_cdk",
}

_FINDER = '''\
"""bakeoff's editable install: its packages' import names -> the checkout's folders (hatch_build.py)."""
import importlib.abc
import importlib.util
import os
import sys

PACKAGES = {packages!r}


class BakeoffEditableFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        folder = PACKAGES.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(fullname, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])


if not any(isinstance(f, BakeoffEditableFinder) for f in sys.meta_path):
    sys.meta_path.append(BakeoffEditableFinder())
'''


class BundleHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "standard":
            build_data["force_include"]["entrypoints"] = "bakeoff/pipelines/_bundle/entrypoints"
        elif version == "editable":
            self._generated = tempfile.TemporaryDirectory()
            folders = {name: os.path.join(self.root, *rel.split("/")) for name, rel in EDITABLE_PACKAGES.items()}
            files = {f"{FINDER_MODULE}.py": _FINDER.format(packages=folders),
                     # A .pth line starting with `import` is executed at start-up: the site module's
                     # documentation (docs.python.org/3/library/site.html), which keeps such lines to
                     # loading import hooks.
                     "_bakeoff_editable.pth": f"import {FINDER_MODULE}\n"}
            for name, text in files.items():
                path = os.path.join(self._generated.name, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                build_data["force_include_editable"][path] = name

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        generated = getattr(self, "_generated", None)
        if generated is not None:
            generated.cleanup()
