"""Every public name of the Python API is documented and typed (the docs site renders them:
tests/e2e/test_docs_site.py)."""
from __future__ import annotations

import inspect


def _public():
    import bakeoff.pipelines.api as api
    from bakeoff import pipelines

    names = {name: getattr(api, name) for name in api.__all__}
    names.update({name: getattr(pipelines, name) for name in pipelines.__all__ if not name.startswith("__")})
    return names


def test_every_public_name_has_a_docstring():
    undocumented = [name for name, obj in _public().items() if not (inspect.getdoc(obj) or "").strip()
                    or (inspect.isclass(obj) and obj.__doc__ is None)]
    assert undocumented == []


def test_every_verb_is_fully_annotated():
    import bakeoff.pipelines.api as api

    missing = []
    for name in api.__all__:
        obj = getattr(api, name)
        if not inspect.isfunction(obj):
            continue
        sig = inspect.signature(obj)
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
        missing += [f"{name}({p.name})" for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert missing == []


def test_every_result_field_is_typed_and_every_method_documented():
    import bakeoff.pipelines.api as api

    for name in api.RESULTS:
        cls = getattr(api, name)
        for field, info in cls.model_fields.items():
            assert info.annotation is not None, f"{name}.{field}"
        for attr, member in vars(cls).items():
            if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                assert inspect.getdoc(member), f"{name}.{attr}"


def test_the_cli_verbs_all_exist_in_the_api():
    """Nothing the CLI can do that the API cannot: each command has its verb (or an exported function)."""
    import argparse

    import bakeoff.pipelines.api as api
    from bakeoff import pipelines
    from bakeoff.pipelines.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    # Commands whose verb has another name in Python, and those served by other modules.
    elsewhere = {"run": "run_local", "data": "prepare_corpus", "ui": None, "init": None, "completion": None}
    for command in sub.choices:
        verb = elsewhere.get(command, command)
        if verb is None:
            continue
        assert hasattr(api, verb) or verb in pipelines.__all__, command

