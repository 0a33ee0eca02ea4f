"""Shell completion for `bakeoff`, by argcomplete (https://kislyuk.github.io/argcomplete/).

`bakeoff completion bash|zsh|fish` prints argcomplete's shellcode (`argcomplete.shellcode`, what its
`register-python-argcomplete` prints). That shellcode runs `bakeoff` itself with `_ARGCOMPLETE=1`
and the command line in `COMP_LINE`/`COMP_POINT`; `bakeoff.pipelines.cli.main.main` then hands the parser to
`autocomplete` here before parsing, and argcomplete answers from the parser (commands, options,
choices, file names) and exits. So completion is the parser, never a copy of it kept in step.

argcomplete is imported only on those two paths: the CLI's start-up stays as it was. The `# PYTHON_ARGCOMPLETE_OK`
marker at the top of pipelines/cli/main.py is what argcomplete's global completion
(`activate-global-python-argcomplete`) looks for before it runs an entry point to complete it."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

SHELLS = ("bash", "zsh", "fish")
# argcomplete's shellcode sets this in the environment of the `bakeoff` it runs to complete a line.
COMPLETING_ENV = "_ARGCOMPLETE"


def script(shell: str) -> str:
    """The completion script for `shell` (bash, zsh or fish): argcomplete's shellcode for `bakeoff`."""
    if shell not in SHELLS:
        raise ValueError(f"no completion for {shell!r}; choose one of {', '.join(SHELLS)}")
    import argcomplete

    return argcomplete.shellcode(["bakeoff"], shell=shell)


def complete_set(prefix: str, parsed_args: argparse.Namespace | None = None, **_: Any) -> dict[str, str]:
    """argcomplete's completer for `--set`: the spec's field paths, and a field's values where they are
    few (argcomplete calls a completer with prefix, action, parser and parsed_args)."""
    from bakeoff.pipelines.cli.spec_paths import candidates

    return candidates(prefix, getattr(parsed_args, "spec", None))


def _subparsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _subparsers(sub)


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """When a shell is completing (argcomplete's environment is set): print the completions of the
    line and exit; otherwise return at once, having imported nothing."""
    if COMPLETING_ENV not in os.environ:
        return
    for p in _subparsers(parser):
        for action in p._actions:
            if "--set" in action.option_strings:
                action.completer = complete_set  # argcomplete reads this attribute
    import argcomplete

    argcomplete.autocomplete(parser)


def cmd_completion(args) -> int:
    sys.stdout.write(script(args.shell))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `bakeoff completion` to the CLI's subcommands."""
    p = sub.add_parser("completion", help="print a shell completion script: bash (source it, or put it in "
                                          "/etc/bash_completion.d/), zsh (as _bakeoff on $fpath) or fish "
                                          "(~/.config/fish/completions/bakeoff.fish)")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    p.set_defaults(func=cmd_completion)
