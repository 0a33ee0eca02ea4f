"""Text that came from a job (a failure reason, a check's why, a path) shown on a terminal as data.

rich reads `[...]` as markup: a reason such as `no checkpoint found in [/opt/ml/checkpoints]` is a
closing tag to it (MarkupError: the bake-off stopped at that job, and at it again on every re-run),
and `[green]verdict: pass[/green]` would paint a fake verdict. Escape sequences, control and bidi
characters could move the cursor, retitle the terminal or reorder a line. `data()` makes such text
inert (bakeoff_runtime.contract.inert_text, the one sanitiser, also used for MLflow tags) and escapes what
is left for rich; `plain()` is for lines printed without rich.
"""
from __future__ import annotations

from bakeoff_runtime.contract import inert_text


def plain(text: object) -> str:
    """The text without terminal escapes, control or bidi characters, bounded in length."""
    return str(inert_text.inert(text))


def data(text: object) -> str:
    """The text as rich shows it literally: no markup read in it, no escapes passed through."""
    from rich.markup import escape

    return escape(plain(text))
