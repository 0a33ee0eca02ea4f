"""The layout's rules, enforced: data flows one way and start-up stays light.

* Nothing under entrypoints/ (container code) imports the orchestration side.
* The orchestration side reaches container code only through runtime_modules(), and only
  modules that import no torch (the contract, the statistics).
* Nothing on the orchestration side imports torch, the SageMaker SDK or MLflow at module
  level: `bakeoff --help` pays for none of them.
"""
import ast
import subprocess
import sys

from conftest import ROOT

HEAVY = ("torch", "torch_xla", "torch_neuronx", "sagemaker", "mlflow", "aws_cdk")


def _imports(path, top_level_only=False):
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_container_code_never_imports_the_orchestration_side():
    offenders = [(p.relative_to(ROOT).as_posix(), name) for p in (ROOT / "entrypoints").rglob("*.py")
                 for name in _imports(p) if name.split(".")[0] in ("pipelines", "estimators", "bakeoff_cdk")]
    assert offenders == []


def test_the_orchestration_side_imports_only_torch_free_container_modules():
    used = set()
    for path in list((ROOT / "pipelines").rglob("*.py")) + list((ROOT / "estimators").rglob("*.py")):
        text = path.read_text()
        for name in _imports(path):
            assert not name.startswith("bakeoff_runtime"), f"{path}: import {name} (use runtime_module())"
        used |= {m.split('"')[1] for m in text.split("runtime_module(")[1:] if m.startswith('"')}
    assert used, "runtime_module() is how the orchestration side reads the contract"
    for module in sorted(used):
        source = ROOT / "entrypoints" / "bakeoff_runtime" / f"{module}.py"
        heavy = [n for n in _imports(source) if n.split(".")[0] in ("torch", "torch_xla", "torch_neuronx")]
        assert heavy == [], f"bakeoff_runtime.{module} imports {heavy}; the orchestration side imports it"


def test_no_heavy_module_at_the_top_of_the_orchestration_side():
    for path in list((ROOT / "pipelines").rglob("*.py")) + list((ROOT / "estimators").rglob("*.py")):
        heavy = [n for n in _imports(path, top_level_only=True) if n.split(".")[0] in HEAVY]
        assert heavy == [], f"{path.relative_to(ROOT)} imports {heavy} at start-up"


def test_bakeoff_help_loads_nothing_heavy():
    heavy = HEAVY + ("numpy", "scipy", "boto3", "pydantic", "rich")
    code = ("import sys; from pipelines.cli import build_parser; build_parser(); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
