"""The docs site's reference leaves nothing out: every CLI command and option, every spec field, every name the
package exports, every exit code, the environment variables users set and evaluation.json's keys have an entry
in the page pipelines/reference writes for the build.

Each check walks the code by its own road (the parser's actions, the pydantic models' fields, the TypedDicts'
annotations at run time), not the generator's, and each is shown to fail on an entry the page lacks. The strict
build itself (links, anchors, mkdocstrings) is tests/e2e/test_docs_site.py; mkdocs is not needed here.
"""
from __future__ import annotations

import argparse
import importlib
import re
import typing

import pydantic
import yaml

from bakeoff.pipelines.reference import api, cli, environment, evaluation, exit_codes, pages, spec
from conftest import ROOT

HEADING = re.compile(r"^(#{2,4}) (.+?) \{ #[^}]+ \}$", re.M)


def _sections(page: str) -> dict[str, str]:
    """Each heading's text (its explicit id aside) and what follows it, to the next heading."""
    marks = list(HEADING.finditer(page))
    return {m.group(2): page[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(page)]
            for i, m in enumerate(marks)}


def _has_row(section: str, first_cell: str) -> bool:
    return re.search(rf"^\| `{re.escape(first_cell)}` \|", section, re.M) is not None


# --- the CLI --------------------------------------------------------------------------------------------
def _walk(parser: argparse.ArgumentParser, path: str = "bakeoff"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")


def missing_cli(parser: argparse.ArgumentParser, page: str) -> list[str]:
    sections = _sections(page)
    missing = []
    for path, sub in _walk(parser):
        if path not in sections:
            missing.append(path)
            continue
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            first = ", ".join(action.option_strings) if action.option_strings else (action.metavar or action.dest)
            if not _has_row(sections[path], str(first)):
                missing.append(f"{path} {first}")
    return missing


def test_every_cli_command_and_option_has_an_entry():
    from bakeoff.pipelines.cli.main import build_parser

    parser = build_parser()
    assert missing_cli(parser, cli.page(parser)) == []
    assert len(list(_walk(parser))) > 20  # every command, nested ones included, was walked


def test_the_cli_check_finds_a_command_or_option_the_page_lacks():
    from bakeoff.pipelines.cli.main import build_parser

    parser = build_parser()
    page = cli.page(parser)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.add_parser("frobnicate", help="new").add_argument("--zap")
    sub.choices["run"].add_argument("--zork", action="store_true")
    # A missing command is reported once, not with each of its options.
    assert missing_cli(parser, page) == ["bakeoff run --zork", "bakeoff frobnicate"]
    assert missing_cli(parser, cli.page(parser)) == []  # and the generator writes them once they exist


# --- the spec's fields ------------------------------------------------------------------------------------
def _models_in(annotation) -> list[type[pydantic.BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def missing_spec(root: type[pydantic.BaseModel], page: str) -> list[str]:
    sections = _sections(page)
    seen: dict[str, type[pydantic.BaseModel]] = {}
    queue = [root]
    while queue:
        model = queue.pop()
        if model.__name__ in seen:
            continue
        seen[model.__name__] = model
        for info in model.model_fields.values():
            queue += _models_in(info.annotation)
    missing = []
    for name, model in sorted(seen.items()):
        heading = spec.ROOT if model is root else name
        if heading not in sections:
            missing.append(name)
            continue
        missing += [f"{name}.{field}" for field, info in model.model_fields.items()
                    if not _has_row(sections[heading], info.alias or field)]
    return missing


def test_every_spec_field_has_an_entry():
    from bakeoff.pipelines.spec.model import BakeoffSpec

    page = spec.page()
    assert missing_spec(BakeoffSpec, page) == []
    assert page.count("\n## ") > 15  # the nested models each have their section


def test_the_spec_check_finds_a_field_the_page_lacks():
    from bakeoff.pipelines.spec.model import BakeoffSpec, Training

    page = spec.page()
    grown = pydantic.create_model("Training", __base__=Training, warmup_fraction=(float, 0.1))
    root = pydantic.create_model("BakeoffSpec", __base__=BakeoffSpec, training=(grown, grown()))
    assert missing_spec(root, page) == ["Training.warmup_fraction"]


# --- the Python API ---------------------------------------------------------------------------------------
def missing_api(names: list[str], page: str) -> list[str]:
    """Exported names without a `::: module.name` directive whose module holds that very object."""
    from bakeoff import pipelines

    directives = {name: module for module, name in re.findall(r"^::: ([\w.]+)\.(\w+)$", page, re.M)}
    return [name for name in names if name not in directives
            or getattr(importlib.import_module(directives[name]), name, None) is not getattr(pipelines, name, None)]


def test_every_exported_name_has_an_entry_that_documents_it():
    from bakeoff import pipelines

    names = [n for n in pipelines.__all__ if not n.startswith("__")]
    assert missing_api(names, api.page()) == []
    assert len(names) > 40


def test_the_api_check_finds_an_export_the_page_lacks():
    from bakeoff import pipelines

    names = [n for n in pipelines.__all__ if not n.startswith("__")]
    page = api.page([(n, m) for n, m in api.exported().items() if n != "wait"])
    assert missing_api(names + ["not_exported"], page) == ["wait", "not_exported"]


# --- exit codes, environment, evaluation.json -------------------------------------------------------------
def test_every_exit_code_and_error_class_has_an_entry():
    from bakeoff.pipelines import errors

    constants = {value for name, value in vars(errors).items() if name.startswith("EXIT_") and isinstance(value, int)}
    assert constants == {row.code for row in errors.EXIT_CODES}
    rows = dict(re.findall(r"^\| `(\d+)` \| ([^|]+) \|", exit_codes.page(), re.M))
    assert {int(code) for code in rows} == constants
    raised = {cls.exit_code for cls in vars(errors).values()
              if isinstance(cls, type) and issubclass(cls, errors.BakeoffError)}
    assert raised <= constants
    assert "ParityInconclusive" in exit_codes.page()


def test_every_bakeoff_variable_says_who_sets_it_and_the_users_ones_are_documented():
    from bakeoff_runtime import contract

    variables = environment.declared()
    unclear = [v.constant for v in variables if not (v.set_by and v.read_by and v.what)]
    assert unclear == [], "each *_ENV in the contract needs a comment 'set by -> read by: what it does'"
    users = {v.name for v in environment.user_facing(variables)}
    assert contract.DEBUG_ENV in users and contract.CACHE_DIR_ENV in users  # the CLI tells users to set these
    assert all(name.startswith("BAKEOFF_") for name in users)
    page = environment.page()
    assert [v for v in users if not _has_row(page, v)] == []
    internal = {v.name for v in variables} - users
    assert internal and not any(_has_row(page, v) for v in internal)  # the plumbing is not offered to users


def test_a_variable_without_its_comment_is_found():
    source = ("# The user's shell -> the CLI: show more.\nA_ENV = 'BAKEOFF_A'\n\nB_ENV = 'BAKEOFF_B'\n"
              "# Tests -> x.py\nC_ENV = 'BAKEOFF_C'\n")
    found = {v.name: v for v in environment.declared(source)}
    assert [v.name for v in environment.user_facing(list(found.values()))] == ["BAKEOFF_A"]
    assert [n for n, v in found.items() if not (v.set_by and v.read_by and v.what)] == ["BAKEOFF_B", "BAKEOFF_C"]


def test_every_evaluation_key_has_an_entry():
    from bakeoff_runtime.contract import decision, documents

    page = evaluation.page()
    sections = _sections(page)
    docs = evaluation.typed_dicts()
    reached = evaluation.reachable(docs)
    assert {"Evaluation", "LegFigures", "RunRow", "Check", "Projection"} <= set(reached)
    missing = []
    for name in reached:
        cls = getattr(documents, name, None) or getattr(decision, name)
        missing += [f"{name}.{key}" for key in cls.__annotations__  # the keys as Python merges them
                    if name not in sections or not _has_row(sections[name], key)]
    assert missing == []
    assert "bakeoff.evaluation/" in page


def test_the_evaluation_check_finds_a_key_the_page_lacks():
    sources = [path.read_text() for path in evaluation.contract_sources()]
    fewer = [sources[0].replace("    verdict: str                      # pass | fail | inconclusive\n", ""),
             sources[1]]
    assert fewer[0] != sources[0]
    sections = _sections(evaluation.page(evaluation.typed_dicts(fewer)))
    assert not _has_row(sections["Evaluation"], "verdict") and _has_row(sections["Evaluation"], "summary")


# --- the site's pages -------------------------------------------------------------------------------------
def _nav_files(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    items = node.values() if isinstance(node, dict) else node
    return [f for item in items for f in _nav_files(item)]


def test_the_nav_lists_every_page_and_every_listed_page_exists_or_is_generated():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = _nav_files(config["nav"])
    generated = set(pages())
    assert generated <= set(listed)
    assert [f for f in listed if f not in generated and not (ROOT / "docs" / f).is_file()] == []
    assert [f for f in generated if (ROOT / "docs" / f).exists()] == []  # written at build time, never committed
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - set(listed) == set()
