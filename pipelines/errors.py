"""Errors meant for people and for the code that calls bakeoff: one line each, and a class to branch on.

The hierarchy, and the CLI's exit code each maps to (one meaning per code, the same in the docs,
`--help` and the pipeline gate):

- `BakeoffError` (4): the base; `except BakeoffError` catches everything bakeoff raises on purpose.
  - `SpecError` (2): bad input: the spec, a flag, a file, a parameter.
  - `AwsError` (4): an AWS call failed; `code` is the service's error code, the message one line.
  - `RunError` (4): neither bad input nor a verdict stopped it (a job runner, the evaluation step, the
    machine); `TimedOut` and `Cancelled` are the two ways `wait` gives up.
  - `ParityError`: a verdict that is not a pass, carrying the evaluation:
    `ParityFailed` (1) and `ParityInconclusive` (3).
"""
from __future__ import annotations

from typing import Any

# The CLI's exit codes: one meaning each.
EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3, 4
VERDICT_EXIT = {"pass": EXIT_PASS, "fail": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE}


class BakeoffError(Exception):
    """An error with a one-line message for the user; the CLI exits with `exit_code`
    (4: the bake-off could not run; subclasses say otherwise)."""

    exit_code = EXIT_COULD_NOT_RUN


class SpecError(BakeoffError):
    """Bad input: the spec, a flag or a file. Exit code 2. `file`, `line` and `field` say where."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, file: str | None = None, line: int | None = None, field: str | None = None,
                 *, also: tuple[SpecError, ...] = ()):
        self.message, self.file, self.line, self.field = message, file, line, field
        self.also = also  # the input's other errors, each with its own place: all are shown, one line each
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        super().__init__(f"{where}{field + ': ' if field else ''}{message}")

    @property
    def errors(self) -> list[SpecError]:
        """This error and the input's others, in the order they are shown."""
        return [self, *self.also]


def error_json(exc: BakeoffError) -> dict[str, Any]:
    """An error as `--json` prints it on stdout: its class, exit code and line, and for bad input each
    error's file, line and field."""
    body: dict[str, Any] = {"error": type(exc).__name__, "exit_code": exc.exit_code, "message": str(exc)}
    if isinstance(exc, SpecError):
        body["errors"] = [{"message": e.message, "file": e.file, "line": e.line, "field": e.field,
                           "line_text": str(e)} for e in exc.errors]
    elif isinstance(exc, AwsError):
        body.update(code=exc.code, operation=exc.operation)
    return body


class AwsError(BakeoffError):
    """An AWS call failed; the message is one line that says what to do. Exit code 4.

    `code` is the service's error code (`AccessDeniedException`, `ResourceNotFound`, `NoSuchBucket`, ...,
    or a botocore condition such as `NoCredentials`), None when bakeoff itself found the problem;
    `operation` is what was being attempted ("start pipeline bakeoff-quickstart")."""

    def __init__(self, message: str, code: str | None = None, operation: str | None = None):
        self.message, self.code, self.operation = message, code, operation
        super().__init__(message)


class RunError(BakeoffError):
    """Something neither bad input nor a verdict stopped the bake-off (a job runner, the
    evaluation step, the machine). Exit code 4."""


class TimedOut(RunError):
    """`wait` gave up after its timeout; the execution goes on. Exit code 4."""


class Cancelled(RunError):
    """`wait` was cancelled by its caller (the event was set, or the callback said so); the
    execution goes on (`stop` ends it). Exit code 4."""


class ParityError(BakeoffError):
    """A verdict other than a pass; `evaluation` is the whole evaluation (evaluation.json) it
    came from, `verdict` its verdict."""

    verdict = ""

    def __init__(self, evaluation: dict[str, Any], message: str | None = None):
        self.evaluation = evaluation
        summary = evaluation.get("summary") or evaluation.get("failed_checks") or ""
        super().__init__(message or f"verdict: {self.verdict}" + (f": {summary}" if summary else ""))


class ParityFailed(ParityError):
    """The legs do not agree within the parity margin. Exit code 1."""

    verdict = "fail"
    exit_code = EXIT_FAIL


class ParityInconclusive(ParityError):
    """The runs cannot decide parity either way (too few seeds, lost runs); the evaluation's
    recommendation says what would decide it. Exit code 3."""

    verdict = "inconclusive"
    exit_code = EXIT_INCONCLUSIVE


def verdict_error(evaluation: dict[str, Any]) -> ParityError | None:
    """The error a verdict stands for: None for a pass, ParityFailed, ParityInconclusive;
    an unknown verdict is inconclusive (it decides nothing)."""
    verdict = evaluation.get("verdict")
    if verdict == "pass":
        return None
    if verdict == "fail":
        return ParityFailed(evaluation)
    return ParityInconclusive(evaluation)


class Interrupted(KeyboardInterrupt):
    """`bakeoff run` was stopped by a signal (SIGINT or SIGTERM) after stopping its job;
    the CLI exits 128 + the signal's number, as a shell does."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
