"""Text that came from a job (a failure reason, a check's why, a path) shown on a terminal as data.

rich reads `[...]` as markup: a reason such as `no checkpoint found in [/opt/ml/checkpoints]` is a
closing tag to it (MarkupError: the bake-off stopped at that job, and at it again on every re-run),
and `[green]verdict: pass[/green]` would paint a fake verdict. It also reads `:name:` as an emoji
code: a leg named `stability:a:` or a reason quoting `:thumbs_up:` would show a picture, not the
text. Escape sequences, control and bidi characters could move the cursor, retitle the terminal or
reorder a line. `data()` makes such text inert (bakeoff_runtime.contract.inert_text, the one sanitiser,
also used for MLflow tags) and escapes what is left for rich; `plain()` is for lines printed without rich.
"""
from __future__ import annotations

import re

from bakeoff_runtime.contract import inert_text

# An empty span of the null style: rich shows nothing for it, and neither markup nor an emoji code runs
# across it (rich reads `:name:` as an emoji within one stretch of text between tags, and a tag cannot
# hold a `[`).
_BREAK = "[none][/none]"
_AFTER_COLON = re.compile(r"(?<=:)")


def plain(text: object) -> str:
    """The text without terminal escapes, control or bidi characters, bounded in length."""
    return str(inert_text.inert(text))


# What rich reads as a tag (rich.markup.RE_TAGS), and a `[` with the backslashes before it.
_TAG = re.compile(r"\[[a-z#/@][^[]*?]")
_BRACKET = re.compile(r"(\\*)\[")


def _escaped(stretch: str) -> str:
    """`stretch` as rich markup that shows it as it is. rich.markup.escape() escapes what reads as a
    tag, but rich also drops the backslash of a `\\[` that is not one, and shows a lone backslash at
    the end doubled when no tag follows it; here every backslash shows."""
    body = stretch.rstrip("\\")
    run = len(stretch) - len(body)  # closed by an empty span: rich shows 2n backslashes before a tag as n

    def bracket(m: re.Match[str]) -> str:
        before = len(m.group(1))
        if _TAG.match(body, m.end() - 1):  # a tag to rich: each backslash doubled, and one escaping it
            return "\\" * (2 * before + 1) + "["
        return "\\" * (before + 1 if before else 0) + "["  # rich reads the last `\\[` as `[`

    return _BRACKET.sub(bracket, body) + ("\\" * 2 * run + _BREAK if run else "")


def data(text: object) -> str:
    """The text as rich shows it literally: no markup or emoji code read in it, no escapes passed
    through. For a string rich reads as markup (its default): console.print, a Table's title or
    cell, a progress bar's description.

    Every colon ends a stretch of its own, so no stretch holds two colons, the `:name:` of an emoji
    code; one opens the text too, so a colon of the line around it cannot start a code either."""
    stretches = _AFTER_COLON.split(plain(text))  # each but the last ends with its colon
    if len(stretches) == 1:
        return _escaped(stretches[0])
    return _BREAK + _BREAK.join(map(_escaped, stretches))
