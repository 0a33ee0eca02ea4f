"""The import graph of `bakeoff.pipelines` and `bakeoff.estimators`, read from the source (the folders
pipelines/ and estimators/): no circles, and data flows one way through the layers docs/architecture.md draws.

Every import statement counts, at module level or inside a function (a function-level import is how a
circle hides: it only closes when that function runs). Relative imports are resolved. Two kinds of
statement are not edges: imports under `if TYPE_CHECKING:` (never executed; annotations only) and the
implicit import of a package's `__init__` when one of its submodules is imported (every submodule has
that one; `from pkg import submodule` is an edge to the submodule, `from pkg import name` one to `pkg`).
Torch-free and fast: nothing is imported, only parsed.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT

# Folder -> the name it installs under (pyproject.toml, tool.hatch.build.targets.wheel.sources).
PACKAGES = {"pipelines": "bakeoff.pipelines", "estimators": "bakeoff.estimators"}

# The layers, lowest first (docs/architecture.md, "Who may import what"). A module may import modules of
# its own layer or a lower one, never a higher one. Subpackages are placed whole by their prefix; a new
# top-level module of `bakeoff.pipelines` has to be placed here (the test says so).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Leaves everything may use: errors, parameter names, hashing, names, text hygiene, boto3 failures as one
    # line, the stats extra's install line.
    ("base", ("bakeoff.pipelines.errors", "bakeoff.pipelines.params", "bakeoff.pipelines.hashing",
              "bakeoff.pipelines.names", "bakeoff.pipelines.terminal_text", "bakeoff.pipelines.aws_session",
              "bakeoff.pipelines.extras", "bakeoff.estimators")),
    # The spec: its models, where it comes from, what it derives.
    ("spec", ("bakeoff.pipelines.spec",)),
    # What the spec becomes before anything runs: the plan and its inputs.
    ("plan", ("bakeoff.pipelines.plan",)),
    # Advice before spending: seeds, rounds, cost, prices, regions (reads the spec; the plan does not need it).
    ("advice", ("bakeoff.pipelines.advice",)),
    # The two engines (the compiler lives in bakeoff.pipelines.sagemaker; the local engine runs its definition),
    # and the step kinds' compile side (pipelines/steps/: the compiler assembles them; the local engine's own
    # kinds, pipelines/local/kinds/, run them and find a step's kind with them).
    ("engine", ("bakeoff.pipelines.local", "bakeoff.pipelines.sagemaker", "bakeoff.pipelines.steps")),
    # The Python API, and the views it shares with the CLI.
    ("api", ("bakeoff.pipelines.api",)),
    # The command line (and the package root, whose exports are the API's).
    ("cli", ("bakeoff.pipelines.cli", "bakeoff.pipelines")),
    # The docs site's reference pages, written from the parser, the spec's models and the API (nothing imports it
    # but the docs build).
    ("reference", ("bakeoff.pipelines.reference",)),
)
# Between the two engines, only these: the local engine interprets the definition the compiler writes, and a
# look's record of its jobs is shared by both (pipelines/local/looks.py: backend-neutral, kept where it is).
ENGINE_CROSSING = {("bakeoff.pipelines.local", "bakeoff.pipelines.sagemaker"): {
                       "bakeoff.pipelines.sagemaker.compiler", "bakeoff.pipelines.sagemaker.expressions"},
                   ("bakeoff.pipelines.sagemaker", "bakeoff.pipelines.local"): {"bakeoff.pipelines.local.looks"},
                   # A step kind writes its request with the definition's expressions, never through the compiler,
                   # which assembles the kinds (pipelines/steps/*: compile_step; the compiler imports them).
                   ("bakeoff.pipelines.steps", "bakeoff.pipelines.sagemaker"): {
                       "bakeoff.pipelines.sagemaker.expressions"},
                   # How this machine runs a kind is the local engine's (pipelines/local/kinds/), which imports
                   # the kinds' compile side: never the other way.
                   ("bakeoff.pipelines.steps", "bakeoff.pipelines.local"): set()}
# What the compile side may know of the local engine even where nothing runs (annotations under
# TYPE_CHECKING): the engine imports the compile side, so naming the engine's types back is a circle in the
# design if not in the code. Only the backend-neutral record of a look, as ENGINE_CROSSING says.
COMPILE_SIDE_SEES_OF_THE_LOCAL_ENGINE = {"bakeoff.pipelines.steps": set(),
                                         "bakeoff.pipelines.sagemaker": {"bakeoff.pipelines.local.looks"}}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (path, is a package's __init__)."""
    out = {}
    for folder, installed in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [installed, *path.relative_to(ROOT / folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def _imported(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules) -> Iterator[str]:
    """The modules of the two packages one import statement loads (relative imports resolved)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                   for alias in node.names]
    for target in targets:
        while target and target not in modules:  # `import a.b.c` / `from a.b import func` -> the module
            target = target.rpartition(".")[0]
        if target:
            yield target


def import_graph(type_checking: bool = False) -> dict[str, dict[str, int]]:
    """Module -> {imported module: line of the first import of it}; with `type_checking`, the imports under
    `if TYPE_CHECKING:` too."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = set() if type_checking else _type_checking_only(tree)
        edges = graph.setdefault(name, {})
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                for target in _imported(name, is_package, node, modules):
                    if target != name:
                        edges.setdefault(target, node.lineno)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    edges = [f"{a} -> {b} ({a.removeprefix('bakeoff.').replace('.', '/')}.py:{line})" for a in component
             for b, line in sorted(graph[a].items()) if b in component]
    return f"import circle among {', '.join(component)}:\n    " + "\n    ".join(edges)


def _layer(module: str) -> tuple[int, str, str] | None:
    """(rank, layer, the prefix that placed it) of a module: the longest matching prefix wins."""
    best = None
    for rank, (layer, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != "bakeoff.pipelines"  # the root is itself only
            if (module == prefix or inside) and (best is None or len(prefix) > len(best[2])):
                best = (rank, layer, prefix)
    return best


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    """Parsed when a test here runs, not when the module is collected (every worker collects it)."""
    return import_graph()


def test_the_graph_is_read_whole(graph):
    # The graph sees the imports that closed the circles this test was written against, function-level ones
    # included: a graph that missed them would pass for the wrong reason.
    assert graph["bakeoff.pipelines.spec.model"].get("bakeoff.pipelines.spec.derived"), \
        "the validator calls derived.check_derived"
    assert graph["bakeoff.pipelines.api.local"].get("bakeoff.pipelines.local.until_decided"), \
        "a function-level import"
    assert graph["bakeoff.pipelines.local.executor"].get("bakeoff.pipelines.local.looks"), "`from . import looks`"
    assert "bakeoff.pipelines.local.executor" in graph["bakeoff.pipelines.local"], "a package __init__'s own imports"
    assert "bakeoff.pipelines.spec.model" not in graph["bakeoff.pipelines.spec.derived"], "under TYPE_CHECKING only"


def test_no_import_circles(graph):
    found = circles(graph)
    assert not found, "\n".join(_describe(c, graph) for c in found)


def test_every_module_has_a_layer(graph):
    unplaced = sorted(m for m in graph if _layer(m) is None)
    assert unplaced == [], f"place {unplaced} in a layer of LAYERS here and in docs/architecture.md"


def test_imports_flow_down_the_layers(graph):
    upward = []
    for module, edges in graph.items():
        here = _layer(module)
        for target, line in edges.items():
            there = _layer(target)
            if here and there and there[0] > here[0]:
                upward.append(f"{module} ({here[1]}) imports {target} ({there[1]}) at line {line}")
    assert upward == [], "\n".join(upward)


def engine_crossings(graph: dict[str, dict[str, int]]) -> list[str]:
    crossing = []
    for module, edges in graph.items():
        for (source, other), allowed in ENGINE_CROSSING.items():
            if module.startswith(source + "."):
                crossing += [f"{module} imports {t}" for t in edges
                             if (t == other or t.startswith(other + ".")) and t not in allowed]
    return crossing


def test_the_engines_cross_only_where_documented(graph):
    crossing = engine_crossings(graph)
    assert crossing == [], "\n".join(crossing)


def compile_side_imports_of_the_local_engine(graph: dict[str, dict[str, int]]) -> list[str]:
    found = []
    for module, edges in graph.items():
        for side, allowed in COMPILE_SIDE_SEES_OF_THE_LOCAL_ENGINE.items():
            if module == side or module.startswith(side + "."):
                found += [f"{module} imports {t} at line {line}" for t, line in sorted(edges.items())
                          if (t == "bakeoff.pipelines.local" or t.startswith("bakeoff.pipelines.local."))
                          and t not in allowed]
    return found


def test_the_compile_side_never_imports_the_local_engine():
    """Not at module level, not inside a function, not for annotations: pipelines/steps and the compiler
    are what the local engine is built on (pipelines/local/kinds/ holds how this machine runs a kind)."""
    assert compile_side_imports_of_the_local_engine(import_graph(type_checking=True)) == []


def test_a_step_kind_or_the_compiler_importing_the_local_engine_is_caught(graph):
    planted = {**graph,
               "bakeoff.pipelines.steps.gate": {**graph["bakeoff.pipelines.steps.gate"],
                                                "bakeoff.pipelines.local.definition": 7},
               "bakeoff.pipelines.sagemaker.compiler": {**graph["bakeoff.pipelines.sagemaker.compiler"],
                                                        "bakeoff.pipelines.local.run_state": 9}}
    assert sorted(compile_side_imports_of_the_local_engine(planted)) == [
        "bakeoff.pipelines.sagemaker.compiler imports bakeoff.pipelines.local.run_state at line 9",
        "bakeoff.pipelines.steps.gate imports bakeoff.pipelines.local.definition at line 7"]
    assert sorted(engine_crossings(planted)) == [
        "bakeoff.pipelines.sagemaker.compiler imports bakeoff.pipelines.local.run_state",
        "bakeoff.pipelines.steps.gate imports bakeoff.pipelines.local.definition"]


def test_estimators_import_nothing_of_pipelines(graph):
    def of(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    assert {m: sorted(t for t in e if of(t, "bakeoff.pipelines"))
            for m, e in graph.items() if of(m, "bakeoff.estimators") and
            any(of(t, "bakeoff.pipelines") for t in e)} == {}


def test_the_process_that_forks_the_jobs_imports_no_numpy():
    # numpy and scipy start threads (OpenBLAS); a fork of a threaded process that runs Python before exec
    # (the jobs' parent-death preexec_fn) can deadlock in the child, which a `kill -9`'d run then left
    # behind (tests/e2e/test_kill9_leftovers.py). The local engine's process keeps them out.
    import subprocess
    import sys

    code = ("import sys, bakeoff.pipelines.local.executor, bakeoff.pipelines.local.questions, "
            "bakeoff.pipelines.local.until_decided, bakeoff.pipelines.local.kinds, bakeoff.pipelines.steps.evaluate; "
            "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
