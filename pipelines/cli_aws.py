"""SageMaker commands of the CLI (synth, deploy, start, status, wait, report)."""
from __future__ import annotations


def register(sub) -> None:
    """Added by the SageMaker compiler (part 2)."""
