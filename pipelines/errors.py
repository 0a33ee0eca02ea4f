"""Errors meant for people: one line, where, what, and what to do."""
from __future__ import annotations

# The CLI's exit codes: one meaning each, the same in README, `--help` and the pipeline gate.
EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3, 4
VERDICT_EXIT = {"pass": EXIT_PASS, "fail": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE}


class BakeoffError(Exception):
    """An error with a one-line message for the user; the CLI exits with `exit_code`
    (4: the bake-off could not run; subclasses say otherwise)."""

    exit_code = EXIT_COULD_NOT_RUN


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
    """An AWS call failed; the message says what to do. Exit code 4."""


class RunError(BakeoffError):
    """Something neither bad input nor a verdict stopped the bake-off (a job runner, the
    evaluation step, the machine). Exit code 4."""


class Interrupted(KeyboardInterrupt):
    """`bakeoff run` was stopped by a signal (SIGINT or SIGTERM) after stopping its job;
    the CLI exits 128 + the signal's number, as a shell does."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
