"""The `stats` extra (numpy, scipy): the statistics `plan`, `validate --from`, `project`, `start --until-decided`
and the evaluation step share. The core leaves them out so that a program that only deploys, starts and polls
(a Lambda function: examples/orchestration/step_functions/) installs small; what needs them asks here first and,
where they are missing, stops with one line that says how to install them (exit 2)."""
from __future__ import annotations

import importlib.util

from bakeoff.pipelines.errors import Either, SpecError, Words, words

STATS_EXTRA = "stats"
STATS_INSTALL = f"pip install 'bakeoff[{STATS_EXTRA}]'"
STATS_MODULES = ("numpy", "scipy")


def missing_stats() -> tuple[str, ...]:
    """The stats extra's modules this Python cannot import (none: the extra is installed)."""
    return tuple(name for name in STATS_MODULES if importlib.util.find_spec(name) is None)


def stats_line(what: str | Either, missing: tuple[str, ...] = STATS_MODULES) -> Words:
    """The one line that says `what` (as a Python caller and the command line each name it) needs the stats extra
    and how to install it."""
    names = " and ".join(missing)
    return words(what, f" needs {names}, which {'is' if len(missing) == 1 else 'are'} not installed here: "
                       f"{STATS_INSTALL} (or uv sync --extra {STATS_EXTRA})")


def require_stats(what: str | Either) -> None:
    """Stop (SpecError, exit 2) when `what` needs the stats extra and it is missing; before any AWS call or file
    written, so nothing is half done."""
    missing = missing_stats()
    if missing:
        raise SpecError(stats_line(what, missing))
