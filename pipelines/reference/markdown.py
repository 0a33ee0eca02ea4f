"""The few Markdown pieces the reference pages share."""
from __future__ import annotations

import re
from collections.abc import Sequence

GENERATED = ("<!-- Generated at build time by pipelines/reference from the code; edit the code, not this "
             "page. -->\n\n")


def cell(text: object) -> str:
    """Text for one table cell: one line, pipes escaped."""
    return re.sub(r"\s+", " ", str(text)).replace("|", "\\|").strip()


def code(text: object) -> str:
    """Inline code that holds backticks too (a default such as "`x`")."""
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def slug(text: str) -> str:
    """An explicit heading id (attr_list), so links do not hang on the toc's slug rules."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
