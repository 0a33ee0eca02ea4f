"""The wheel's build hook: what an editable install copies into site-packages.

An editable install maps `pipelines`, `estimators` and `bakeoff_runtime` to this checkout
(`dev-mode-exact`, pyproject.toml). The wheel's force-include would also copy the bundle into
site-packages as `pipelines/_bundle/entrypoints`: a `pipelines` folder there is found on sys.path
before the import hook is asked, and shadows the checkout's package (`No module named
'pipelines.cli'`). The checkout's entrypoints/ is the bundle in an editable install
(pipelines.plan.bundle.entrypoints_dir), so only the CDK library is copied.
"""
from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class EditableBundleHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            build_data["force_include_editable"] = {"cdk/bakeoff_cdk": "bakeoff_cdk"}
