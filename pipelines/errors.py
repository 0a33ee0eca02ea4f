"""Errors meant for people: one line, where, what, and what to do."""
from __future__ import annotations


class BakeoffError(Exception):
    """An error with a one-line message for the user; the CLI exits with `exit_code`."""

    exit_code = 1


class SpecError(BakeoffError):
    """Bad input: the spec, a flag or a file. Exit code 2."""

    exit_code = 2

    def __init__(self, message: str, file: str | None = None, line: int | None = None, field: str | None = None):
        self.message, self.file, self.line, self.field = message, file, line, field
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        super().__init__(f"{where}{field + ': ' if field else ''}{message}")


class AwsError(BakeoffError):
    """An AWS call failed; the message says what to do."""

    exit_code = 1
