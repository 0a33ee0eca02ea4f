"""The exit codes: one meaning each, as `bakeoff --help` states them, with the errors that exit so."""
from __future__ import annotations

import re

from pipelines.reference.markdown import GENERATED, cell, code, table


def exit_codes() -> list[tuple[int, str]]:
    """(code, meaning) in order, from the table the CLI prints in its --help (the one place they are
    worded)."""
    from pipelines.cli.main import EXIT_CODES_HELP

    listed = EXIT_CODES_HELP.split(":", 1)[1]
    return [(int(number), meaning.strip()) for number, meaning in re.findall(r"(\d+) ([^,]+(?:\([^)]*\))?)",
                                                                              listed)]


def raised_as() -> dict[int, list[str]]:
    """Each exit code's error classes in `pipelines.errors` (what the Python API raises instead)."""
    from pipelines import errors

    found: dict[int, list[str]] = {}
    for name, value in sorted(vars(errors).items()):
        if isinstance(value, type) and issubclass(value, errors.BakeoffError):
            found.setdefault(value.exit_code, []).append(name)
    return found


def _linked(name: str) -> str:
    import pipelines

    # An exported class has its entry on the Python API page (mkdocstrings' id is its dotted path).
    return f"[{code(name)}](python-api.md#pipelines.errors.{name})" if name in pipelines.__all__ else code(name)


def page() -> str:
    errors = raised_as()
    rows = [(code(number), cell(meaning), ", ".join(_linked(name) for name in errors.get(number, [])))
            for number, meaning in exit_codes()]
    return (GENERATED + "# Exit codes\n\n"
            "Every `bakeoff` command exits with one of these; each code has one meaning. A command's `--json` "
            "output carries the same code (`exit_code`). The Python API raises the error classes instead "
            "(`exit_code` is an attribute of each).\n\n"
            + table(("Code", "Meaning", "Python API error"), rows))
