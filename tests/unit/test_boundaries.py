"""The layout's rules, enforced: data flows one way and start-up stays light.

* Nothing under entrypoints/ (container code) imports the orchestration side.
* `bakeoff_runtime` (source: entrypoints/bakeoff_runtime) is an installed package in groups:
  contract, verdict, report, tracking, process and training. Only `training` imports torch (at
  any depth); importing any other module loads neither torch nor MLflow; the orchestration side
  imports any group but `training`. entrypoints/ itself is not on sys.path: its scripts (launch.py,
  train.py, ...) are not modules.
* Nothing on the orchestration side imports torch, the SageMaker SDK or MLflow at module
  level: `bakeoff --help` pays for none of them.
"""
import ast
import subprocess
import sys

from conftest import ROOT

HEAVY = ("torch", "torch_xla", "torch_neuronx", "sagemaker", "mlflow", "aws_cdk")
TORCH = ("torch", "torch_xla", "torch_neuronx")
RUNTIME = ROOT / "entrypoints" / "bakeoff_runtime"
GROUPS = ("contract", "verdict", "report", "tracking", "process", "training")
TORCH_GROUP = "training"  # the one group that may import torch; the host never imports it


def _module_name(path):
    parts = path.relative_to(RUNTIME.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_modules():
    return sorted(_module_name(p) for p in RUNTIME.rglob("*.py"))


def _imports(path, top_level_only=False):
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            if node.module.split(".")[0] == "bakeoff_runtime":
                # `from bakeoff_runtime.verdict import stats`: stats is a module of its own
                for alias in node.names:
                    yield f"{node.module}.{alias.name}"


def _group(module):
    """The group of a bakeoff_runtime module ("" for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_bakeoff_runtime_is_grouped():
    loose = [m for m in _runtime_modules() if _group(m) not in GROUPS and m != "bakeoff_runtime"]
    assert loose == [], "every bakeoff_runtime module belongs to a group: contract, verdict, report, tracking, " \
                        "process or training"
    assert {_group(m) for m in _runtime_modules()} - {""} == set(GROUPS)


def test_only_the_training_group_imports_torch():
    offenders = [(p.relative_to(ROOT).as_posix(), name) for p in RUNTIME.rglob("*.py")
                 if _group(_module_name(p)) != TORCH_GROUP
                 for name in _imports(p) if name.split(".")[0] in TORCH]
    assert offenders == []


def test_container_code_never_imports_the_orchestration_side():
    offenders = [(p.relative_to(ROOT).as_posix(), name) for p in (ROOT / "entrypoints").rglob("*.py")
                 for name in _imports(p) if name.split(".")[0] in ("bakeoff", "pipelines", "estimators", "bakeoff_cdk")]
    assert offenders == []


def test_the_orchestration_side_never_imports_the_training_group():
    used = {}
    for path in list((ROOT / "pipelines").rglob("*.py")) + list((ROOT / "estimators").rglob("*.py")):
        assert "runtime_module" not in path.read_text(), f"{path}: import bakeoff_runtime's modules directly"
        for name in _imports(path):
            if name.split(".")[0] == "bakeoff_runtime":
                used.setdefault(name, path.relative_to(ROOT).as_posix())
    assert any(_group(m) == "contract" for m in used), "the orchestration side reads the contract from bakeoff_runtime"
    training = {module: where for module, where in used.items() if _group(module) == TORCH_GROUP}
    assert training == {}, "the orchestration side imports bakeoff_runtime's training group (torch)"


def test_no_module_outside_the_training_group_loads_torch_or_mlflow(tmp_path):
    names = [m for m in _runtime_modules() if _group(m) != TORCH_GROUP]
    assert "bakeoff_runtime.contract.environment" in names and "bakeoff_runtime.verdict.evaluation" in names
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            f"    importlib.import_module(name)\n"
            f"    heavy = sorted({{m for m in sys.modules if m.split('.')[0] in {TORCH + ('mlflow',)!r}}})\n"
            "    print(name, heavy)\n"
            "    assert not heavy, name\n")
    # A fresh interpreter outside the checkout: the installed bakeoff_runtime, as the CLI gets it.
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("\n") == len(names)


def test_bakeoff_runtime_is_installed_but_entrypoints_is_not_on_the_path(tmp_path):
    code = ("import importlib.util, bakeoff_runtime; print(bakeoff_runtime.__file__); "
            "print([n for n in ('launch', 'train', 'evaluate', 'render_report', 'app') "
            "if importlib.util.find_spec(n)]); "
            "print(importlib.util.find_spec('bakeoff_cdk').origin)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    where, scripts, cdk = proc.stdout.splitlines()
    assert where == str(ROOT / "entrypoints" / "bakeoff_runtime" / "__init__.py")  # the editable install (make setup)
    assert scripts == "[]"  # neither entrypoints/ nor cdk/ (its app.py) is on the path
    # The CDK library is the checkout's too, not a copy made at install time that an edit leaves behind.
    assert cdk == str(ROOT / "cdk" / "bakeoff_cdk" / "__init__.py")


def test_no_heavy_module_at_the_top_of_the_orchestration_side():
    for path in list((ROOT / "pipelines").rglob("*.py")) + list((ROOT / "estimators").rglob("*.py")):
        heavy = [n for n in _imports(path, top_level_only=True) if n.split(".")[0] in HEAVY]
        assert heavy == [], f"{path.relative_to(ROOT)} imports {heavy} at start-up"


def test_bakeoff_help_loads_nothing_heavy():
    heavy = HEAVY + ("numpy", "scipy", "boto3", "pydantic", "rich")
    code = ("import sys; from bakeoff.pipelines.cli.main import build_parser; build_parser(); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
