"""Text a job controls (a failure reason, a metric name, its output), made inert wherever it is
shown: the terminal (pipelines/terminal_text.py), MLflow tags, the report.

An escape sequence could clear the screen, retitle the terminal or hide what follows; a C1
control byte is read as one by some terminals; a bidi override can make a line read other than
it is (CVE-2021-42574's "Trojan Source"). All of them go; tab and newline stay. A bound on length
keeps one runaway message from burying everything after it.
"""
from __future__ import annotations

import re

MAX_CHARS = 2000  # one failure reason, whole; a traceback's worth is cut with a count of what was cut

# CSI/OSC/other ESC sequences first (so their parameters go with them), then any C0/C1 control
# character but tab and newline, DEL, and the bidi embeddings, overrides and isolates.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def inert(text: object, limit: int | None = MAX_CHARS) -> str:
    """`text` without terminal escapes, control characters or bidi controls, at most `limit`
    characters (plus a note of how many were cut)."""
    out = _CONTROLS.sub("", _ESCAPES.sub("", str(text)))
    if limit is not None and len(out) > limit:
        out = f"{out[:limit]}... ({len(out) - limit:,} more characters)"
    return out
