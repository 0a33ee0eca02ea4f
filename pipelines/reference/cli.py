"""The CLI reference: every command of `bakeoff`, its usage, arguments and options, from the parser itself."""
from __future__ import annotations

import argparse
from collections.abc import Iterator

from bakeoff.pipelines.reference.markdown import GENERATED, cell, code, slug, table

USAGE_WIDTH = 80  # the usage lines' width (fits the page's code block), whatever terminal builds the docs


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("bakeoff",),
             help_text: str | None = None) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """(command words, its parser, its one-line help) for the program and every subcommand, depth first."""
    yield path, parser, help_text
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name), helps.get(name))


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """What a command takes, as a reader looks it up: the help flag and subcommand lists aside."""
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
            and a.help != argparse.SUPPRESS]


def name(action: argparse.Action) -> str:
    """How the reference names an argument: its flags (`-o, --output`), or a positional's metavar."""
    return ", ".join(action.option_strings) if action.option_strings else str(action.metavar or action.dest)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = parser.formatter_class(prog=parser.prog, width=USAGE_WIDTH)  # type: ignore[call-arg]
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:  # a flag
        return ""
    if action.metavar is not None:
        return code(action.metavar)
    if action.choices is not None:
        return " \\| ".join(code(c) for c in action.choices)
    return code(action.dest.upper()) if action.option_strings else ""


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, [], argparse.SUPPRESS) or action.required:
        return "required" if action.required and action.option_strings else ""
    return code(action.default)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = parser._get_formatter()
    return cell(formatter._expand_help(action)) if action.help else ""  # %(default)s and the like, as --help shows


def page(parser: argparse.ArgumentParser | None = None) -> str:
    if parser is None:
        from bakeoff.pipelines.cli.main import build_parser

        parser = build_parser()
    out = [GENERATED, "# CLI\n\n",
           "Every command of `bakeoff`, as `bakeoff COMMAND --help` shows it. Exit codes: "
           "[Exit codes](exit-codes.md).\n\n"]
    for path, sub, help_text in commands(parser):
        title = " ".join(path)
        out.append(f"{'#' * min(len(path) + 1, 4)} {title} {{ #{slug(title)} }}\n\n")
        description = sub.description if len(path) == 1 else (help_text or sub.description)
        if description:
            out.append(f"{description.strip()}\n\n")
        out.append(f"```text\n{_usage(sub)}\n```\n\n")
        rows = [(code(name(a)), _value(a), _default(a), _help(sub, a)) for a in arguments(sub)]
        if rows:
            out.append(table(("Argument", "Value", "Default", "What it does"), rows) + "\n")
    return "".join(out)
