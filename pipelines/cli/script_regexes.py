"""`bakeoff init --template script`: metric regexes written from the lines the script itself prints.

The script's print calls are read (pipelines/plan/script_scan.py: an f-string, "...".format(...) or
"..." % (...), each value a `{}`). A line that names a loss becomes a metric: a validation loss
(`val`, `valid`, `validation`, `eval`, `test` before it) is `val_loss`, any other `train_loss`. Each
regex is the literal text just before the value, anchored by the text its line starts with, and is
kept only if it matches its own line rendered with a number and no other line the script prints (a
train-loss regex that also matched "valid loss" lines would read validation values as training ones).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER = r"([-+0-9.eE]+|nan|inf)"
# A validation loss is named so in the text just before its value ("val loss", "valid loss", "eval_loss",
# "Test set: Average loss"); `_` separates words here, as scripts write them.
_VALIDATION = re.compile(r"(^|[^a-z])(val|valid|validation|eval|test|dev)([^a-z]|$)", re.I)


@dataclass(frozen=True)
class Found:
    name: str  # train_loss | val_loss
    regex: str
    line: int
    example: str  # the printed line it was written from, with a number in each value


def _render(template: str, value: str = "1.25") -> str:
    return template.replace("{}", value)


def _candidates(template: str) -> list[tuple[str, str]]:
    """(metric name, regex) for each value of `template` that follows the word `loss`."""
    parts = template.split("{}")
    out = []
    for i in range(len(parts) - 1):
        before = parts[i]
        words = re.search(r"loss\W{0,3}$", before, re.I)
        if not words:
            continue
        name = "val_loss" if _VALIDATION.search(before[: words.start()]) else "train_loss"
        # The literal just before the value, from the last separator on, with whitespace as the printed line
        # may widen it (padding): "valid loss" of "s | valid loss {}".
        tail = re.split(r"[|,;\t]", before)[-1].strip()
        tail = re.escape(tail).replace(r"\ ", r"\s+") if tail else ""
        head = parts[0].strip()
        anchor = re.escape(head[:24]).replace(r"\ ", r"\s+") if head and i > 0 else ""
        regex = (anchor + ".*?" if anchor else "") + (tail + r"\s*" if tail else "") + NUMBER
        out.append((name, regex))
    return out


def metric_regexes(prints: list[tuple[str, int]]) -> list[Found]:
    """At most one regex per metric name, each matching its own printed line and no other."""
    rendered = [(t, line, _render(t)) for t, line in prints]
    chosen: dict[str, Found] = {}
    for template, line, example in rendered:
        for name, regex in _candidates(template):
            if name in chosen:
                continue
            pattern = re.compile(regex)
            own = pattern.search(example)
            others = [o for t, _, o in rendered if t != template and pattern.search(o)]
            if own and own.group(1) == "1.25" and not others:
                chosen[name] = Found(name, regex, line, example)
    return [chosen[n] for n in ("train_loss", "val_loss") if n in chosen]
