"""Text that came from a job (a failure reason, a check's why, a path) shown on a terminal as data.

rich reads `[...]` as markup: a reason such as `no checkpoint found in [/opt/ml/checkpoints]` is a
closing tag to it (MarkupError: the bake-off stopped at that job, and at it again on every re-run),
and `[green]verdict: pass[/green]` would paint a fake verdict. Escape sequences and other control
characters could move the cursor or retitle the terminal. `data()` makes such text inert: control
characters go (tab and newline stay), and what is left is escaped for rich.
"""
from __future__ import annotations

import re

# CSI/OSC/other ESC sequences first (so their parameters go with them), then any C0/C1 control
# character but tab and newline, and DEL.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: object) -> str:
    """The text without terminal escapes and control characters."""
    return _CONTROLS.sub("", _ESCAPES.sub("", str(text)))


def data(text: object) -> str:
    """The text as rich shows it literally: no markup read in it, no escapes passed through."""
    from rich.markup import escape

    return escape(plain(text))
