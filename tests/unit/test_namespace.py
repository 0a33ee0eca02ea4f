"""bakeoff installs one import name, `bakeoff`: the Python API at its root, `bakeoff.pipelines` and
`bakeoff.estimators` under it, and no generic top-level `bakeoff.pipelines` or `bakeoff.estimators` to collide with
another
distribution's (pyproject.toml, tool.hatch.build.targets.wheel; the editable install: hatch_build.py)."""
from __future__ import annotations

import ast
import subprocess
import sys

from conftest import ROOT

INIT = ROOT / "src" / "bakeoff" / "__init__.py"


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the imports under `if TYPE_CHECKING:` in bakeoff/__init__.py."""
    found = {}
    for node in ast.parse(INIT.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.unparse(stmt)
                found.update({alias.name: stmt.module for alias in stmt.names})
    return found


def test_what_type_checkers_see_is_the_export_table():
    import bakeoff.pipelines as api

    seen = _type_checking_imports()
    # Every exported name, each from the module it is loaded from at run time (the table's relative name).
    assert seen == {name: f"bakeoff.pipelines{module}" for name, module in api._EXPORTS.items()}


def test_the_root_reexports_the_api_objects_themselves():
    import bakeoff
    import bakeoff.pipelines as api
    from bakeoff import BakeoffSpec, SpecError, load_spec, plan, run_local

    assert load_spec is api.load_spec and run_local is api.run_local and plan is api.plan
    assert BakeoffSpec is api.BakeoffSpec and SpecError is api.SpecError
    assert bakeoff.__all__ == api.__all__ and bakeoff.__version__ == api.__version__
    assert set(api._EXPORTS) <= set(dir(bakeoff))
    try:
        bakeoff.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "'bakeoff' has no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    # A fresh interpreter outside the checkout: the installed names only (the checkout is not on sys.path).
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_importing_bakeoff_loads_nothing_heavy(tmp_path):
    heavy = ("torch", "mlflow", "sagemaker", "boto3", "pydantic", "rich", "numpy", "scipy", "yaml")
    proc = _python("import sys, bakeoff; "
                   f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_installed_names_are_the_checkouts_folders_and_the_generic_ones_are_not_installed(tmp_path):
    proc = _python("import importlib.util as u, bakeoff.pipelines, bakeoff.estimators, bakeoff_runtime; "
                   "print(bakeoff.pipelines.__file__); print(bakeoff.estimators.__file__); "
                   "print([n for n in ('pipelines', 'estimators', 'entrypoints', 'src') if u.find_spec(n)])",
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    pipelines, estimators, generic = proc.stdout.splitlines()
    # The editable install (make setup): an edit in the checkout is what runs.
    assert pipelines == str(ROOT / "pipelines" / "__init__.py")
    assert estimators == str(ROOT / "estimators" / "__init__.py")
    assert generic == "[]"


def test_a_test_process_does_not_see_the_checkout_as_packages():
    # `python -m pytest` in the checkout would put it on sys.path (tests/conftest.py takes it off).
    import importlib.util

    assert [name for name in ("pipelines", "estimators") if importlib.util.find_spec(name)] == []
