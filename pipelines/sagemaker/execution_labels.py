"""What an execution is called in SageMaker's console and `ListPipelineExecutions`: its display name and
description (StartPipelineExecution's PipelineExecutionDisplayName, 1-82 characters matching
`[a-zA-Z0-9](-*[a-zA-Z0-9]){0,81}`, and PipelineExecutionDescription, at most 3,072; botocore's SageMaker
model, whose parameter validation checks lengths but not the pattern: checked here so that a bad name is one
line before anything is started)."""
from __future__ import annotations

import re

from bakeoff.pipelines.errors import SpecError

DISPLAY_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,81}")
DESCRIPTION_MAX = 3072


def check_display_name(name: str | None, field: str = "--display-name") -> str | None:
    if name is not None and not DISPLAY_NAME.fullmatch(name):
        raise SpecError(f"display name {name!r}: SageMaker takes 1-82 letters, digits and single or repeated "
                        "dashes between them (no spaces, no leading or trailing dash), e.g. round-2-seeds-0-9",
                        field=field)
    return name


def check_description(text: str | None, field: str = "--description") -> str | None:
    if text is not None and len(text) > DESCRIPTION_MAX:
        raise SpecError(f"description: {len(text)} characters, SageMaker takes at most {DESCRIPTION_MAX}",
                        field=field)
    return text


def _span(seeds: list[int]) -> str:
    """0-9, or 0-4-7-9 when not contiguous (only characters the display name allows)."""
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return "-".join(str(s) for s in seeds)


def round_label(round_number: int, seeds: list[int], retry: int = 0) -> tuple[str, str]:
    """The display name and description of an `--until-decided` round, e.g. round-2-seeds-0-9."""
    name = f"round-{round_number}-seeds-{_span(seeds)}"
    if len(name) > 82:
        name = f"round-{round_number}-seeds-{seeds[0]}-to-{seeds[-1]}"
    description = (f"bakeoff --until-decided, round {round_number}: seeds {', '.join(map(str, seeds))} per leg; "
                   "the seeds of earlier rounds are served by the step cache")
    return check_display_name(name) or name, description
