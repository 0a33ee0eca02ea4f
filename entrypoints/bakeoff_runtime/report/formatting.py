"""How the report writes numbers: one money format, round axis ticks, sizes.

Money has one rule everywhere (tables, sentences, bar labels): dollars and cents ("$1.67",
"$0.77", "$1,234.50"); an amount under one cent, which tiny local runs produce, keeps three
significant figures ("$0.0042") rather than reading as "$0.00". Axis ticks are round numbers
(1, 2, 2.5 or 5 times a power of ten) and are written with exactly the decimals of their step.

Text in report.md goes through md(): much of it comes from jobs (failure reasons, check reasons,
leg names, environments), and it is shown as data, never read as HTML or as markdown structure.
Before either report is written, every string of the evaluation goes through inert_strings(): no
terminal escape, control or bidi character a job wrote reaches report.md or report.html.
"""
from __future__ import annotations

import math
import re
import sys
from typing import TypeVar

from bakeoff_runtime.contract.inert_text import inert

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


def _decimals(step: float) -> int | None:
    """The fewest decimals (at most 12) that write `step` exactly (0.25 -> 2, 5 -> 0), or None when
    none do (a step finer than 1e-12, or one not finite). A step under 1e-6 is compared relative to
    its size: the absolute tolerance of 1e-9 would write 2.5e-13 with no decimals, as 0, and every
    tick rounded to that many decimals would be the same number."""
    if not math.isfinite(step) or step == 0:
        return None if step else 0
    tol = 1e-9 * max(1.0, abs(step)) if abs(step) >= 1e-6 else 1e-3 * abs(step)
    return next((d for d in range(13) if abs(round(step, d) - step) <= tol), None)


# Fixed-point labels stop where they would be unreadable or hundreds of digits long: a step finer
# than 12 decimals, a value or step of 1e15 or more. Beyond, ticks are written in scientific form.
_FIXED_MAX = 1e15


def _fixed(v: float, step: float) -> int | None:
    """The decimals to write tick `v` of an axis stepping by `step` with; None: scientific form."""
    if not (math.isfinite(v) and math.isfinite(step)) or abs(v) >= _FIXED_MAX or abs(step) >= _FIXED_MAX:
        return None
    return _decimals(abs(step)) if step else 0


def _scientific(v: float, step: float) -> str:
    """`v` in scientific form, with the significant figures that ticks `step` apart need to differ."""
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    step = abs(step)
    if not math.isfinite(step) or step == 0:
        return f"{v:.4g}"
    figures = next((n for n in range(1, 18) if math.isclose(float(f"{step:.{n - 1}e}"), step, rel_tol=1e-9)), 17)
    places = math.floor(math.log10(abs(v))) - math.floor(math.log10(step))
    return f"{v:.{min(16, max(0, figures - 1 + places))}e}"


def tick_label(v: float, step: float) -> str:
    """A tick written with the decimals of the axis step, so every label on an axis agrees."""
    if abs(v) < abs(step) * 1e-6 < math.inf:
        v = 0.0  # no "-0.00"
    d = _fixed(v, step)
    if d is None:
        return _scientific(v, step)
    return f"{v:,.{d if step > 0 else 0}f}"


def money_tick(v: float, step: float) -> str:
    """A money axis tick: at least cents, more only when the step is finer than a cent."""
    if abs(v) < abs(step) * 1e-6 < math.inf:
        v = 0.0
    d = _fixed(v, step)
    if d is None:
        return ("-" if v < 0 else "") + "$" + _scientific(abs(v), step)
    return ("-" if v < 0 else "") + f"${abs(v):,.{max(2, d) if step > 0 else 2}f}"


# The most ticks asked of an axis. Every tick computation below is bounded by arithmetic, never by
# a loop that waits for a float to reach a bound: a parity metric near 1e-11 once had the step's
# decimals taken as 0, every tick rounded to 0.0, and the loop appending until memory ran out.
MAX_TICKS = 20
# Decimal exponents of a step the round-number arithmetic handles (floats hold 10**-323 to 10**308).
_STEP_EXPONENTS = range(-300, 301)


def _ends(lo: float, hi: float) -> list[float]:
    """The ticks of a range too narrow, too fine or too wide for round numbers: its two ends."""
    big = sys.float_info.max
    lo, hi = max(-big, min(lo, hi)), min(big, max(lo, hi))
    if lo == hi:  # two distinct ends, so the axis has a direction and a step
        lo, hi = (lo, math.nextafter(hi, math.inf)) if hi < big else (math.nextafter(lo, -math.inf), hi)
    return [lo + 0.0, hi + 0.0]


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False,
               multiples: tuple[float, ...] = (1, 2, 2.5, 5, 10)) -> list[float]:
    """Round tick values covering [lo, hi]: the step is 1, 2, 2.5 or 5 times a power of ten
    (`integer`: whole steps only, for step counts; `multiples`: e.g. (1, 2, 5, 10) for money,
    so every tick is a whole number of cents).

    Any finite lo and hi give at least 2 and at most min(count, MAX_TICKS) + 3 distinct ticks, in
    order; where round numbers cannot be had (a range below float precision, a subnormal one, one
    wider than the largest float) the ticks are the range's two ends. NaN or infinity: no ticks."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    count = min(count, MAX_TICKS)
    lo, hi = min(lo, hi), max(lo, hi)
    if hi == lo:
        pad = (abs(lo) or 1.0) * 0.1
        lo, hi = (lo - pad, hi + pad) if not integer else (lo - 1, hi + 1)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):  # the pad overflowed or was lost in rounding
        return _ends(lo, hi)
    raw = (hi - lo) / max(1, count - 1)
    exponent = math.floor(math.log10(raw)) if math.isfinite(raw) and raw > 0 else None
    if exponent is None or exponent not in _STEP_EXPONENTS:  # a span wider than the largest float, or subnormal
        return _ends(lo, hi)
    power = 10 ** exponent
    steps = [(m, m * power) for m in multiples]
    if integer:
        steps = [(m, s) for m, s in steps if s >= 1 and abs(s - round(s)) < 1e-9] or [(1.0, 1.0)]
    multiple, step = next(((m, s) for m, s in steps if s >= raw * (1 - 1e-9)), steps[-1])
    d = _decimals(step)  # None: a step finer than 12 decimals, too fine for round() to tidy its multiples
    first = math.floor(lo / step + 1e-9)
    ticks: list[float] = []
    # The step is at least (hi - lo) / (count - 1), so count + 1 ticks reach hi; two more are slack.
    for k in range(first, first + max(count, 2) + 3):
        # k * step tidied to the step's decimals; finer, (k * multiple) / 10**-exponent: the float
        # nearest the decimal tick (1.1e-11, not 1.0999999999999999e-11)
        v = round(k * step, d + 1) + 0.0 if d is not None else k * multiple / 10 ** -exponent + 0.0
        if not ticks or v > ticks[-1]:  # a step at the edge of float precision can repeat a value
            ticks.append(v)
        if v >= hi - step * 1e-9:
            break
    else:
        return _ends(lo, hi)
    return ticks if len(ticks) > 1 else _ends(lo, hi)


# The decimal exponents of a float's powers of ten (10.0 ** -324 is 0, 10.0 ** 309 overflows).
_MIN_DECADE, _MAX_DECADE = -323, 308


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis over [lo, hi] (both > 0): 1, 2, 5 per decade when the range spans
    at most three decades, powers of ten beyond that (every few decades past 15, so never more
    than 16); the ends enclose the data. A bound not positive or not finite: no ticks."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo > 0 and hi > 0):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    a = max(_MIN_DECADE, min(_MAX_DECADE - 1, math.floor(math.log10(lo))))
    b = max(a + 1, min(_MAX_DECADE, math.ceil(math.log10(hi))))
    stride = 1 if b - a <= 15 else math.ceil((b - a) / 15)
    mults = (1, 2, 5) if b - a <= 3 else (1,)
    decades = sorted({min(k, _MAX_DECADE) for k in range(a, b + stride, stride)})  # the last at b or above
    ticks = [round(m * 10.0 ** k, max(0, -k) + 1) for k in decades for m in mults]
    ticks = [t for t in ticks if 0 < t <= 10.0 ** decades[-1]]
    below = [t for t in ticks if t <= lo * (1 + 1e-9)]
    above = [t for t in ticks if t >= hi * (1 - 1e-9)]
    start, end = max(below, default=ticks[0]), min(above, default=ticks[-1])
    out = [t for t in ticks if start <= t <= end]
    if len(out) < 2:  # data at the edge of the float range: the two ticks nearest it
        i = min(ticks.index(start), len(ticks) - 2)
        out = ticks[i:i + 2]
    return out


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
T = TypeVar("T")
# Deeper than any evaluation nests; what lies below is only ever shown through str() of its container,
# whose repr escapes every control character.
_MAX_DEPTH = 64


def inert_strings(value: T, _depth: int = 0) -> T:
    """A copy of `value` (an evaluation: dicts, lists, strings, numbers) whose every string, keys
    included, is inert: terminal escape sequences (ESC, CSI, OSC), C0 and C1 control characters and
    bidi controls removed (bakeoff_runtime.contract.inert_text, the one sanitiser); tab and newline
    kept, every other line break made a newline. Other text (accents, CJK, emoji) is untouched.
    The one place job text enters the report: render_markdown() and render_html() start with it."""
    if isinstance(value, str):
        return inert(_LINE_BREAKS.sub("\n", value), None)  # type: ignore[return-value]
    if _depth > _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        out: dict = {}
        for k, v in value.items():
            key = inert_strings(k, _depth + 1)
            while key in out:  # names that differed only in control characters stay apart
                key += "\ufffd"
            out[key] = inert_strings(v, _depth + 1)
        return out  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        items = [inert_strings(v, _depth + 1) for v in value]
        return items if isinstance(value, list) else tuple(items)  # type: ignore[return-value]
    return value


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
