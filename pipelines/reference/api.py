"""The Python API reference: every name `bakeoff.pipelines` exports (its `__all__`), rendered by mkdocstrings from
the docstrings of the module that defines it, grouped by that module."""
from __future__ import annotations

import inspect
from collections.abc import Iterable

from bakeoff.pipelines.reference.markdown import GENERATED

# What each module's group is called on the page; a module not named here is titled by its path.
GROUPS = {
    "bakeoff.pipelines.api": "Verbs",
    "bakeoff.pipelines.api:types": "What the verbs return",
    "bakeoff.pipelines.spec.model": "The spec's models",
    "bakeoff.pipelines.spec.loader": "Reading a spec",
    "bakeoff.pipelines.errors": "Errors",
    "bakeoff.pipelines.local": "The local engine",
    "bakeoff.pipelines.plan.model": "The plan",
    "bakeoff.pipelines.plan.corpus": "The built-in corpus",
}


def exported() -> dict[str, str]:
    """Each exported name (`bakeoff.pipelines.__all__`, less `__version__`) and the module that defines it."""
    from bakeoff import pipelines

    # The export table names modules relative to the package (`.spec.model`): the reference names them in full.
    return {name: pipelines.__name__ + module if module.startswith(".") else module
            for name, module in pipelines._EXPORTS.items() if name in pipelines.__all__}


def _group(name: str, module: str) -> str:
    # bakeoff.pipelines.api holds the verbs and their results: two groups, functions first.
    if module == "bakeoff.pipelines.api":
        from bakeoff import pipelines

        return module + (":types" if inspect.isclass(getattr(pipelines, name)) else "")
    return module


def page(names: Iterable[tuple[str, str]] | None = None) -> str:
    from bakeoff import pipelines

    # The verbs in the order the package lists them (a bake-off's course: load, validate, plan, synth, run, ...),
    # everything else by name.
    course = {verb: i for i, verb in enumerate(pipelines._API_VERBS)}
    items = sorted(exported().items() if names is None else names,
                   key=lambda item: (_group(*item), course.get(item[0], len(course)), item[0]))
    out = [GENERATED, "# Python API\n\n",
           "Everything `bakeoff` exports (`from bakeoff import ...`; the same objects as `bakeoff.pipelines`), "
           "from the docstrings. Each verb does what the CLI command "
           "of its name does and returns a frozen pydantic model that serialises to the JSON "
           "`bakeoff COMMAND --json` prints; nothing prints. Errors are the classes under "
           "[Errors](#bakeoff-pipelines-errors), each with the CLI's [exit code](exit-codes.md).\n\n"
           "```python\nfrom bakeoff import load_spec, run_local\n"
           "result = run_local(load_spec(\"bakeoff.yaml\"), \"runs/demo\")\nprint(result.verdict)\n```\n\n"]
    group = None
    for name, where in items:
        if _group(name, where) != group:
            group = _group(name, where)
            anchor = group.replace(".", "-").replace(":", "-")
            out.append(f"## {GROUPS.get(group, where)} {{ #{anchor} }}\n\n`{where}`\n\n")
        out.append(f"::: {where}.{name}\n    options:\n      heading_level: 3\n\n")
    return "".join(out)
