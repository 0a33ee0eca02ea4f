"""Every BAKEOFF_* environment variable is named in one place: bakeoff_runtime/contract/environment.py.

The code that sets a variable and the code that reads it use the contract's name (a JobEnvironment
field through `contract.ENV`, or one of its `*_ENV` constants), so a name cannot drift on one side
only. Tests may spell the names: they check the real environment.
"""
import ast
import functools

from bakeoff_runtime import contract
from conftest import ROOT

CONTRACT = ROOT / "entrypoints" / "bakeoff_runtime" / "contract" / "environment.py"
CHECKED = ("entrypoints", "pipelines", "estimators", "benchmarks")
PREFIX = "BAKEOFF_"


def _spelled(tree: ast.AST):
    """(line, text) of every string constant that starts with BAKEOFF_ (an f-string's literal parts
    included: f"BAKEOFF_{x}" builds a name) and of every keyword argument so named (dict(BAKEOFF_X=...))."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(PREFIX):
            yield node.lineno, node.value
        elif isinstance(node, ast.keyword) and node.arg is not None and node.arg.startswith(PREFIX):
            yield node.value.lineno, node.arg


@functools.cache
def _sources() -> tuple:
    """(path, parsed module) of every checked file but the contract that spells BAKEOFF_ at all (a file whose
    text lacks it can hold no such literal, f-string part or keyword), parsed once for both checks."""
    texts = ((path, path.read_text()) for top in CHECKED for path in sorted((ROOT / top).rglob("*.py"))
             if path != CONTRACT)
    return tuple((path, ast.parse(text, filename=str(path))) for path, text in texts if PREFIX in text)


def test_no_bakeoff_name_is_spelled_outside_the_contract():
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}" for path, tree in _sources()
             for line, text in _spelled(tree)]
    assert not found, ("BAKEOFF_* names spelled outside entrypoints/bakeoff_runtime/contract/environment.py (name them "
                       "there and use contract.ENV[...] or its *_ENV constants):\n" + "\n".join(found))


def _quoted(tree: ast.AST):
    """(line, text) of every string, docstrings and other bare string statements aside, that names a
    BAKEOFF_* variable past its start: a message such as f"... ({ENV['opt_ml']}; ...)" takes the name
    from the contract too, so what it tells the user is the variable's real name."""
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                and PREFIX in node.value[1:]):
            yield node.lineno, node.value


def test_no_message_quotes_a_bakeoff_name_of_its_own():
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}" for path, tree in _sources()
             for line, text in _quoted(tree)]
    assert not found, "BAKEOFF_* names quoted in strings outside the contract:\n" + "\n".join(found)


def test_the_check_sees_a_literal_an_fstring_prefix_and_a_keyword():
    tree = ast.parse('import os\nos.environ.get("BAKEOFF_X")\nf"BAKEOFF_{x}"\ndict(BAKEOFF_Y="1")\n'
                     '"the BAKEOFF_X variable"\n')
    assert [text for _, text in _spelled(tree)] == ["BAKEOFF_X", "BAKEOFF_", "BAKEOFF_Y"]
    message = ast.parse('"""Mentions BAKEOFF_X."""\nprint(f"set BAKEOFF_X={x}")\n')
    assert [text for _, text in _quoted(message)] == ["set BAKEOFF_X="]


def _declared() -> dict[str, str]:
    """The contract's names: JobEnvironment's variables (by field) and its module constants."""
    names = {f"ENV[{field!r}]": name for field, name in contract.ENV.items()}
    names.update({attr: value for attr, value in vars(contract).items()
                  if attr.isupper() and isinstance(value, str) and value.startswith(PREFIX)})
    return names


def test_every_name_the_contract_declares_is_unique():
    declared = _declared()
    by_name: dict[str, list[str]] = {}
    for where, name in declared.items():
        by_name.setdefault(name, []).append(where)
    assert {name: wheres for name, wheres in by_name.items() if len(wheres) > 1} == {}
    assert all(name.startswith(contract.ENV_PREFIX) for name in declared.values())
    # Each spelled once in contract.py itself too: nothing there builds one name from another.
    literals = [text for _, text in _spelled(ast.parse(CONTRACT.read_text()))]
    assert sorted(literals) == sorted(set(literals))
    assert set(literals) == set(declared.values())


def test_the_mlflow_settings_share_the_prefix_the_compile_cache_key_leaves_out():
    mlflow = [name for field, name in contract.ENV.items() if field.startswith("mlflow_")]
    assert mlflow and all(name.startswith(contract.MLFLOW_ENV_PREFIX) for name in mlflow)
    others = [name for field, name in contract.ENV.items() if not field.startswith("mlflow_")]
    assert not any(name.startswith(contract.MLFLOW_ENV_PREFIX) for name in others)
