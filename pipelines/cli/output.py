"""How the CLI shows results: `--json` (the API result's own serialisation), `--quiet`, and plain
text when stdout is not a terminal (no colour, no live bar, lines never wrapped mid-sentence).

Imported at start-up: nothing heavy at module level."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def output_args(p, json_help: str | None = "print the result as JSON (what the Python API returns)") -> None:
    """`--json` (when the command has a result to print) and `-q/--quiet` on a subcommand."""
    if json_help:
        p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing but errors (and --json output); the exit code carries the result")


def is_terminal(stream=None) -> bool:
    stream = stream or sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def console(stderr: bool = False):
    """A rich Console for tables and verdict lines: colour on a terminal; piped or captured, plain
    text whose lines are never wrapped (a table takes the width it needs)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if is_terminal(stream):
        return Console(stderr=stderr, soft_wrap=True, emoji=False)
    return Console(file=stream, soft_wrap=True, width=1000, no_color=True, color_system=None, highlight=False,
                   emoji=False)


def stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def json_error(args_or_argv, exc: BaseException) -> None:
    """Under --json, the error on stdout as well (`bakeoff.pipelines.errors.error_json`), so a program reading it
    learns why there is no result. `args_or_argv`: the parsed arguments, or the command line argparse refused."""
    import argparse

    wants = (getattr(args_or_argv, "json", False) if isinstance(args_or_argv, argparse.Namespace)
             else "--json" in (args_or_argv if args_or_argv is not None else sys.argv[1:]))
    if wants:
        import json

        from bakeoff.pipelines.errors import error_json

        try:
            print(json.dumps(error_json(exc), indent=2, ensure_ascii=True), flush=True)
        except BrokenPipeError:
            pass


def emit(args, result: Any, text: Callable[[Any], None]) -> int:
    """Print `result`: its JSON with --json, nothing with --quiet, else `text(result)`."""
    if getattr(args, "json", False):
        sys.stdout.write(result.to_json() + "\n")
    elif not getattr(args, "quiet", False):
        text(result)
    return 0


class LocalDisplay:
    """Shows the façade's ProgressEvents of a local run with the terminal display
    (`bakeoff.pipelines.local.progress.Progress`): a live bar on a terminal, plain lines elsewhere, on stderr."""

    def __init__(self, verbose: bool = False) -> None:
        from bakeoff.pipelines.local.progress import Progress

        self.display = Progress(verbose=verbose)

    def opening(self, spec: object) -> None:
        """A line the moment the command starts, on a terminal: reading, compiling and planning a spec, and
        its jobs' imports, take seconds before the first bar, and a silent terminal reads as a hung one.
        Off a terminal (a log, a pipe) nothing: bad input stays its one line there."""
        if self.display.live:
            self.display.note(f"reading {spec}: the jobs start once it is compiled and planned")

    def __call__(self, event) -> None:
        method = getattr(self.display, event.kind, None)
        if callable(method) and event.args:
            method(*event.args)
        elif callable(method) and event.kind == "stop":
            method()
        elif event.message:
            self.display.note(event.message)
