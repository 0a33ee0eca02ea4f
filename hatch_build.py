"""The wheel's build hook: the code bundle, in the wheel only.

A built wheel ships entrypoints/ whole as data, at `pipelines/_bundle/entrypoints`: it runs inside
training containers and must not be importable as a top-level package (PyPI's `entrypoints` owns
that name). An editable install does not copy it: a `pipelines` folder in site-packages is found
on sys.path before the editable import hook is asked, and would shadow the checkout's package
(`No module named 'pipelines.cli'`). There, the checkout's entrypoints/ is the bundle
(pipelines.plan.bundle.entrypoints_dir), and every package, bakeoff_cdk included, is the checkout's.
"""
from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class BundleHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "standard":
            build_data["force_include"]["entrypoints"] = "pipelines/_bundle/entrypoints"
