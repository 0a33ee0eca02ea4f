"""How the report writes numbers: one money format, round axis ticks, sizes.

Money has one rule everywhere (tables, sentences, bar labels): dollars and cents ("$1.67",
"$0.77", "$1,234.50"); an amount under one cent, which tiny local runs produce, keeps three
significant figures ("$0.0042") rather than reading as "$0.00". Axis ticks are round numbers
(1, 2, 2.5 or 5 times a power of ten) and are written with exactly the decimals of their step.

Text in report.md goes through md(): much of it comes from jobs (failure reasons, check reasons,
leg names, environments), and it is shown as data, never read as HTML or as markdown structure.
"""
from __future__ import annotations

import math
import re

MONEY_RULE = "money in dollars and cents; amounts under one cent to three significant figures"


def seed_span(seeds: list[int]) -> str:
    """Sorted seeds as a reader says them: "0-4" for a run of three or more, else "0, 2, 5"."""
    return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)) else \
        ", ".join(map(str, seeds))


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v))


def num(v, fmt="{:.4g}", none="-") -> str:
    return none if _missing(v) else fmt.format(v)


def usd(v) -> str:
    """The one money format (see MONEY_RULE)."""
    if _missing(v):
        return "-"
    sign, a = ("-", -v) if v < 0 else ("", v)
    return f"{sign}${a:,.2f}" if a >= 0.01 or a == 0 else f"{sign}${a:.3g}"


def decimals_for(step: float) -> int:
    """The fewest decimals that write `step` exactly (0.25 -> 2, 5 -> 0)."""
    for d in range(13):
        if abs(round(step, d) - step) <= 1e-9 * max(1.0, abs(step)):
            return d
    return 12


def tick_label(v: float, step: float) -> str:
    """A tick written with the decimals of the axis step, so every label on an axis agrees."""
    d = decimals_for(step) if step > 0 else 0
    if abs(v) < abs(step) * 1e-6:
        v = 0.0  # no "-0.00"
    return f"{v:,.{d}f}"


def money_tick(v: float, step: float) -> str:
    """A money axis tick: at least cents, more only when the step is finer than a cent."""
    d = max(2, decimals_for(step)) if step > 0 else 2
    if abs(v) < abs(step) * 1e-6:
        v = 0.0
    return ("-" if v < 0 else "") + f"${abs(v):,.{d}f}"


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False,
               multiples: tuple[float, ...] = (1, 2, 2.5, 5, 10)) -> list[float]:
    """Round tick values covering [lo, hi]: the step is 1, 2, 2.5 or 5 times a power of ten
    (`integer`: whole steps only, for step counts; `multiples`: e.g. (1, 2, 5, 10) for money,
    so every tick is a whole number of cents)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        pad = (abs(lo) or 1.0) * 0.1
        lo, hi = (lo - pad, hi + pad) if not integer else (lo - 1, hi + 1)
    raw = (hi - lo) / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    steps = [m * power for m in multiples]
    if integer:
        steps = [s for s in steps if s >= 1 and abs(s - round(s)) < 1e-9] or [1.0]
    step = next((s for s in steps if s >= raw * (1 - 1e-9)), steps[-1])
    d = decimals_for(step)
    first = math.floor(lo / step + 1e-9)
    ticks = []
    k = first
    while True:
        v = round(k * step, d + 1)
        ticks.append(v + 0.0)
        if v >= hi - step * 1e-9:
            break
        k += 1
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis over [lo, hi] (both > 0): 1, 2, 5 per decade when the range spans
    at most three decades, powers of ten beyond that; the ends enclose the data."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if b == a:
        b += 1
    mults = (1, 2, 5) if b - a <= 3 else (1,)
    ticks = [round(m * 10.0 ** k, max(0, -k) + 1) for k in range(a, b + 1) for m in mults]
    ticks = [t for t in ticks if t <= 10.0 ** b]
    below = [t for t in ticks if t <= lo * (1 + 1e-9)]
    above = [t for t in ticks if t >= hi * (1 - 1e-9)]
    start, end = max(below), min(above)
    return [t for t in ticks if start <= t <= end]


def log_label(v: float) -> str:
    return tick_label(v, v)


def size(v) -> str:
    if not v:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024:
            return f"{v:.0f} {unit}"
        v /= 1024
    return f"{v:.0f} PiB"


# --- text in report.md -------------------------------------------------------------------------
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x85\u2028\u2029]")
# The backslash first, so text ending in one cannot escape the pipe that closes its table cell.
_MD_INLINE = re.compile(r"([\\`*\[|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
# Text that would open a block were it to begin a line (or a list item): an ATX heading, a bullet or
# ordered list item, a setext underline or thematic break, a ~~~ fence (backticks, quotes and HTML are
# escaped anyway); group 1 is what goes before the backslash, group 2 the character it escapes.
_MD_BLOCK_START = re.compile(r"^(\s*|\s*\d{1,9})(#{1,6}(?=\s|$)|[-+](?=\s|$)|(?<=\d)[.)](?=\s|$)"
                             r"|[-_=](?=[-_=\s]*$)|~(?=~~))")
_BACKTICKS = re.compile(r"`+")


def md(value: object, *, code: bool = False, cell: bool = False) -> str:
    """`value` as inert text on one line of report.md: a sentence, a list item, a table cell.

    Much of what the report shows comes from jobs (failure reasons, check reasons, leg names,
    environments): HTML in it is escaped (&, <, >), a line break in it cannot start a block, and
    nothing in it makes a table cell, heading, quote, list, code span, emphasis, link or image.
    cell=True: the text is a table cell, where no block can open (pipes are escaped all the same);
    code=True: the text as one code span (e.g. a check's name), whatever backticks it holds."""
    text = _LINE_BREAKS.sub(" ", str(value))
    if code:  # nothing inside a code span is read as HTML or markdown; only its fence must be longer
        fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
        pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
        return f"{fence}{pad}{text}{pad}{fence}"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_INLINE.sub(r"\\\1", text)
    return text if cell else _MD_BLOCK_START.sub(r"\1\\\2", text, count=1)


def md_row(cells) -> str:
    """One row of a report.md table, each cell through md()."""
    return "| " + " | ".join(md(c, cell=True) for c in cells) + " |"


def md_block(text: str, info: str = "") -> list[str]:
    """`text` (many lines, e.g. a diff) as one fenced code block of report.md: the fence is longer
    than any run of backticks in it, so no line of the text can close the block early."""
    fence = "`" * max(3, max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    return [fence + info, text, fence]
