"""The exit codes: one meaning each, as `bakeoff --help` states them, with the errors that exit so."""
from __future__ import annotations

from bakeoff.pipelines.reference.markdown import GENERATED, cell, code, table


def exit_codes() -> list[tuple[int, str, str]]:
    """(code, meaning, the commands that return it) in order, from `bakeoff.pipelines.errors.EXIT_CODES`, the one table
    of codes the CLI's --help and each command's epilog are made from. A command where the code means something
    more precise says so beside its name."""
    from bakeoff.pipelines.errors import COMMANDS, EXIT_CODES

    def commands(row) -> str:
        precise = dict(row.per_command)
        left_out = [c for c in COMMANDS if c not in row.commands]
        named = [f"`{c}` ({precise[c]})" for c in row.commands if c in precise]
        if len(left_out) <= 2:  # nearly every command: name the exceptions, not the list
            scope = "every command" + (f" but {', '.join(f'`{c}`' for c in left_out)}" if left_out else "")
            return "; ".join([scope, *named])
        return "; ".join(f"`{c}` ({precise[c]})" if c in precise else f"`{c}`" for c in row.commands)

    return [(row.code, row.meaning, commands(row)) for row in EXIT_CODES]


def raised_as() -> dict[int, list[str]]:
    """Each exit code's error classes in `bakeoff.pipelines.errors` (what the Python API raises instead)."""
    from bakeoff.pipelines import errors

    found: dict[int, list[str]] = {}
    for name, value in sorted(vars(errors).items()):
        if isinstance(value, type) and issubclass(value, errors.BakeoffError):
            found.setdefault(value.exit_code, []).append(name)
    return found


def _linked(name: str) -> str:
    from bakeoff import pipelines

    # An exported class has its entry on the Python API page (mkdocstrings' id is its dotted path).
    return f"[{code(name)}](python-api.md#bakeoff.pipelines.errors.{name})" if name in pipelines.__all__ else code(name)


def page() -> str:
    errors = raised_as()
    rows = [(code(number), cell(meaning), cell(where), ", ".join(_linked(name) for name in errors.get(number, [])))
            for number, meaning, where in exit_codes()]
    return (GENERATED + "# Exit codes\n\n"
            "Every `bakeoff` command exits with one of these; each code has one meaning. A command's `--json` "
            "output carries the same code (`exit_code`). The Python API raises the error classes instead "
            "(`exit_code` is an attribute of each).\n\n"
            + table(("Code", "Meaning", "Commands", "Python API error"), rows))
