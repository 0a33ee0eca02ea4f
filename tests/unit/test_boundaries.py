"""The layout's rules, enforced: data flows one way and start-up stays light.

* Nothing under entrypoints/ (container code) imports the orchestration side.
* `bakeoff_runtime` (source: entrypoints/bakeoff_runtime) is an installed package; the
  orchestration side imports it like any other, but only its torch-free modules (TORCH_FREE).
  entrypoints/ itself is not on sys.path: its scripts (launch.py, train.py, ...) are not modules.
* Nothing on the orchestration side imports torch, the SageMaker SDK or MLflow at module
  level: `bakeoff --help` pays for none of them.
"""
import ast
import subprocess
import sys

from conftest import ROOT

HEAVY = ("torch", "torch_xla", "torch_neuronx", "sagemaker", "mlflow", "aws_cdk")
TORCH = ("torch", "torch_xla", "torch_neuronx")
# The bakeoff_runtime modules the orchestration side may import: importing one loads no torch and no
# MLflow (checked below, in a fresh interpreter). "" is the package itself (its __init__).
TORCH_FREE = (
    # the contract: environment, names, the step-line format, schema ids, the typed documents that cross
    # the seam (evaluation config, job summary, job record, evaluation); job outputs and their digest
    "", "contract", "script_contract", "documents", "inert_text", "job_outputs", "output_digest",
    # process and package helpers both sides use
    "parent_death", "package_install", "mlflow_install", "mlflow_net",
    # what each backend is (spec, estimators, compiler and container read it)
    "backend_table",
    # the verdict: the statistics and the evaluation that decides (numpy/scipy, no torch)
    "stats", "parity_tests", "group_sequential", "multiplicity", "evaluation", "validity", "scaling", "porting",
    "report_format",
)


def _imports(path, top_level_only=False):
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _runtime_modules_imported(path):
    """The bakeoff_runtime modules a file imports, anywhere in it ("" for the package itself)."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "bakeoff_runtime":
                    yield alias.name.partition(".")[2]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "bakeoff_runtime":
                # `from bakeoff_runtime import x`: x is a submodule (or a name of the package's own)
                for alias in node.names:
                    module = alias.name
                    yield module if (ROOT / "entrypoints" / "bakeoff_runtime" / f"{module}.py").exists() else ""
            elif node.module.split(".")[0] == "bakeoff_runtime":
                yield node.module.partition(".")[2]


def test_container_code_never_imports_the_orchestration_side():
    offenders = [(p.relative_to(ROOT).as_posix(), name) for p in (ROOT / "entrypoints").rglob("*.py")
                 for name in _imports(p) if name.split(".")[0] in ("pipelines", "estimators", "bakeoff_cdk")]
    assert offenders == []


def test_the_orchestration_side_imports_only_torch_free_container_modules():
    used = {}
    for path in list((ROOT / "pipelines").rglob("*.py")) + list((ROOT / "estimators").rglob("*.py")):
        assert "runtime_module" not in path.read_text(), f"{path}: import bakeoff_runtime's modules directly"
        for module in _runtime_modules_imported(path):
            used.setdefault(module, path.relative_to(ROOT).as_posix())
    assert used, "the orchestration side reads the contract from bakeoff_runtime"
    outside = {module: where for module, where in used.items() if module not in TORCH_FREE}
    assert outside == {}, "the orchestration side imports bakeoff_runtime modules not known to be torch-free"


def test_the_torch_free_container_modules_load_no_torch(tmp_path):
    for module in TORCH_FREE:
        assert module == "" or (ROOT / "entrypoints" / "bakeoff_runtime" / f"{module}.py").exists(), module
    names = ["bakeoff_runtime" + (f".{m}" if m else "") for m in TORCH_FREE]
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            f"    importlib.import_module(name)\n"
            f"    heavy = sorted({{m for m in sys.modules if m.split('.')[0] in {TORCH + ('mlflow',)!r}}})\n"
            "    print(name, heavy)\n"
            "    assert not heavy, name\n")
    # A fresh interpreter outside the checkout: the installed bakeoff_runtime, as the CLI gets it.
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bakeoff_runtime_is_installed_but_entrypoints_is_not_on_the_path(tmp_path):
    code = ("import importlib.util, bakeoff_runtime; print(bakeoff_runtime.__file__); "
            "print([n for n in ('launch', 'train', 'evaluate', 'render_report') if importlib.util.find_spec(n)])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    where, scripts = proc.stdout.splitlines()
    assert where == str(ROOT / "entrypoints" / "bakeoff_runtime" / "__init__.py")  # the editable install (make setup)
    assert scripts == "[]"


def test_no_heavy_module_at_the_top_of_the_orchestration_side():
    for path in list((ROOT / "pipelines").rglob("*.py")) + list((ROOT / "estimators").rglob("*.py")):
        heavy = [n for n in _imports(path, top_level_only=True) if n.split(".")[0] in HEAVY]
        assert heavy == [], f"{path.relative_to(ROOT)} imports {heavy} at start-up"


def test_bakeoff_help_loads_nothing_heavy():
    heavy = HEAVY + ("numpy", "scipy", "boto3", "pydantic", "rich")
    code = ("import sys; from pipelines.cli.main import build_parser; build_parser(); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
