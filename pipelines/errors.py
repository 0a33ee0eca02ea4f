"""Errors meant for people and for the code that calls bakeoff: one line each, and a class to branch on.

The hierarchy, and the CLI's exit code each maps to (`EXIT_CODES` below is the one table of codes:
`--help`, each command's epilog and the reference docs are made from it):

- `BakeoffError` (4): the base; `except BakeoffError` catches everything bakeoff raises on purpose.
  - `SpecError` (2): bad input: the spec, a flag, a file, a parameter.
  - `AwsError` (4): an AWS call failed; `code` is the service's error code, the message one line.
  - `RunError` (4): neither bad input nor a verdict stopped it (a job runner, the evaluation step, the
    machine); `TimedOut` and `Cancelled` are the two ways `wait` gives up.
  - `ParityError`: a verdict that is not a pass, carrying the evaluation:
    `ParityFailed` (1) and `ParityInconclusive` (3).

A message that names a parameter names it as its reader passed it: `bucket=` to a Python caller,
`--bucket` on the command line. Such a message is built with `words(...)` from text and `Param`s;
`str(error)` is the Python wording and `error.for_cli()` the command line's.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


# --- exit codes -------------------------------------------------------------------------------------
class ExitCode(NamedTuple):
    """One exit code of the `bakeoff` command line."""

    code: int
    name: str
    meaning: str
    commands: tuple[str, ...]  # the commands that can return it
    per_command: tuple[tuple[str, str], ...] = ()  # (command, what it means there) where it reads more precisely


COMMANDS = ("run", "preflight", "validate", "plan", "schema", "data", "instances", "images", "prices", "ui", "synth",
            "deploy", "start", "retry", "status", "wait", "stop", "report", "project", "init", "completion")
_VERDICT_COMMANDS = ("run", "report", "start")
EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM, as a shell reports them
EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(EXIT_PASS, "ok", "done: parity holds (pass) where there is a verdict", COMMANDS,
             (("run", "parity holds (pass)"), ("report", "parity holds (pass)"),
              ("start", "started; with --wait, succeeded; with --until-decided, pass"),
              ("preflight", "no blocker"), ("wait", "the execution succeeded"),
              ("status", "the execution has not failed"), ("retry", "started; with --wait, succeeded"),
              ("ui", "served until stopped (Ctrl-C or SIGTERM is how it ends)"))),
    ExitCode(EXIT_FAIL, "fail", "a no: parity fails, the execution did not succeed, or a preflight blocker",
             ("run", "report", "start", "retry", "wait", "status", "preflight"),
             (("run", "parity fails (fail)"), ("report", "parity fails (fail)"),
              ("start", "with --wait, the execution did not succeed; with --until-decided, fail"),
              ("retry", "with --wait, the execution did not succeed"),
              ("wait", "the execution did not succeed"), ("status", "the execution failed"),
              ("preflight", "a blocker on a leg"))),
    ExitCode(EXIT_BAD_INPUT, "bad_input", "bad input: the spec, a flag, a file, a run directory or an ARN "
             "(every error is shown, with its file, line and field)", COMMANDS),
    ExitCode(EXIT_INCONCLUSIVE, "inconclusive", "inconclusive: the verdict says what would decide it",
             _VERDICT_COMMANDS, (("start", "with --until-decided, inconclusive at --max-seeds"),)),
    ExitCode(EXIT_COULD_NOT_RUN, "could_not_run", "could not run: an AWS call, a job runner, the evaluation step "
             "or the machine", COMMANDS),
    ExitCode(EXIT_INTERRUPTED, "interrupted", "interrupted (Ctrl-C, SIGINT): what finished is kept; `run` stops "
             "its jobs first and a re-run into the same directory resumes", tuple(c for c in COMMANDS if c != "ui")),
    ExitCode(EXIT_TERMINATED, "terminated", "stopped by SIGTERM after stopping its jobs; a re-run into the same "
             "directory resumes", ("run",)),
)
VERDICT_EXIT = {"pass": EXIT_PASS, "fail": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE}


def exit_codes_help(command: str | None = None) -> str:
    """The exit codes one command can return (all of them without one), one clause each, for its epilog."""
    rows = [(row.code, dict(row.per_command).get(command, row.meaning) if command else row.meaning)
            for row in EXIT_CODES if command is None or command in row.commands]
    return "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in rows)


# --- parameters named in messages -------------------------------------------------------------------
class Param(NamedTuple):
    """A parameter as each caller spells it: the Python API's keyword argument and the command line's flag."""

    keyword: str
    flag: str
    listed: bool = False  # the keyword takes a list (`overrides=[...]`), the flag repeats
    switch: bool = False  # a flag without a value: `write=True` in Python

    def named(self, cli: bool) -> str:
        if cli:
            return self.flag
        return f"{self.keyword}=True" if self.switch else f"{self.keyword}="

    def given(self, value: object) -> Given:
        """The parameter with the value it was given: `--from runs/x` or `from_run='runs/x'`."""
        return Given(self, str(value))


class Given:
    """A parameter and the value it was given, in a message."""

    __slots__ = ("param", "value")

    def __init__(self, param: Param, value: str):
        self.param, self.value = param, value

    def named(self, cli: bool) -> str:
        if cli:
            return f"{self.param.flag} {self.value}"
        return f"{self.param.keyword}=[{self.value!r}]" if self.param.listed else f"{self.param.keyword}={self.value!r}"


class Either:
    """Text each reader says differently (a whole command line against a Python call)."""

    __slots__ = ("api", "cli_text")

    def __init__(self, api: str, cli: str):
        self.api, self.cli_text = api, cli

    def named(self, cli: bool) -> str:
        return self.cli_text if cli else self.api


class Words(str):
    """Message text that names parameters: as a str, the Python API's wording; `.cli()`, the command line's."""

    parts: tuple[str | Param | Given | Either, ...]

    def __new__(cls, *parts: str | Param | Given | Either) -> Words:
        parts = tuple(q for p in parts for q in (p.parts if isinstance(p, Words) else (p,)))
        made = super().__new__(cls, _render(parts, cli=False))
        made.parts = parts
        return made

    def cli(self) -> str:
        return _render(self.parts, cli=True)

    def __add__(self, other: str) -> Words:
        return Words(*self.parts, other)

    # `"text " + words(...)`: a right operand whose type subclasses the left's and implements the reflected
    # method is asked first (Python reference, datamodel, the note under object.__radd__); str has no __radd__.
    def __radd__(self, other: str) -> Words:
        return Words(other, *self.parts)


def _render(parts: tuple[str | Param | Given | Either, ...], cli: bool) -> str:
    return "".join(p if isinstance(p, str) else p.named(cli) for p in parts)


def words(*parts: str | Param | Given | Either) -> Words:
    """A message naming parameters: `words(Param("bucket", "--bucket"), " is not a bucket name")`."""
    return Words(*parts)


def for_reader(text: object, cli: bool) -> str:
    """`text` in its reader's terms: the command line's for `cli`, else the Python API's."""
    return text.cli() if cli and isinstance(text, Words) else str(text)


class _FieldName(str):
    """A field that is a parameter: its keyword as a str, and the Param (an error re-raised with
    `field=exc.field` keeps naming the flag on the command line)."""

    param: Param

    def __new__(cls, param: Param) -> _FieldName:
        made = super().__new__(cls, param.keyword)
        made.param = param
        return made


def field_name(field: str | Param | None, cli: bool) -> str | None:
    if isinstance(field, Param):
        return field.flag if cli else field.keyword
    return field


class BakeoffError(Exception):
    """An error with a one-line message for the user; the CLI exits with `exit_code`
    (4: the bake-off could not run; subclasses say otherwise)."""

    exit_code = EXIT_COULD_NOT_RUN

    def for_cli(self) -> str:
        """The message as the command line shows it (its flags, where the Python API names keywords)."""
        return self._line(cli=True)

    def _line(self, cli: bool) -> str:
        return for_reader(self.args[0] if self.args else "", cli)

    def entries(self, cli: bool) -> list[dict[str, Any]]:
        """Every error this stands for, each with its place (file, line, field) where it has one."""
        return [{"message": self._line(cli), "file": None, "line": None, "field": None}]


class SpecError(BakeoffError):
    """Bad input: the spec, a flag or a file. Exit code 2. `file`, `line` and `field` say where."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 field: str | Param | None = None, *, also: tuple[SpecError, ...] = ()):
        # message and file may be Words (they name a parameter); field may be the Param itself
        self.message, self.file, self.line = message, file, line
        self.param = field if isinstance(field, Param) else getattr(field, "param", None)
        # a str that remembers its Param
        self.field: str | None = _FieldName(self.param) if self.param else field if isinstance(field, str) else None
        self.also = also  # the input's other errors, each with its own place: all are shown, one line each
        super().__init__(self._line(cli=False))

    def _line(self, cli: bool) -> str:
        where = ""
        if self.file:
            file = for_reader(self.file, cli)
            where = f"{file}:{self.line}: " if self.line else f"{file}: "
        field = field_name(self.param, cli) if self.param else self.field
        return f"{where}{field + ': ' if field else ''}{for_reader(self.message, cli)}"

    @property
    def errors(self) -> list[SpecError]:
        """This error and the input's others, in the order they are shown."""
        return [self, *self.also]

    def entries(self, cli: bool) -> list[dict[str, Any]]:
        return [{"message": for_reader(e.message, cli), "file": for_reader(e.file, cli) if e.file else None,
                 "line": e.line, "field": field_name(e.param, cli) if e.param else e.field} for e in self.errors]


def error_json(exc: BaseException, *, cli: bool = True) -> dict[str, Any]:
    """An error as `--json` prints it on stdout: its class, exit code and message, and every error it
    stands for, each with its file, line and field (None where it has none); an AWS error adds the
    service's `code` and the `operation` attempted. Anything else that stopped the command (a bug, the
    machine, a signal) has the same shape, with its exit code."""
    if isinstance(exc, BakeoffError):
        line, code, entries = exc._line(cli), exc.exit_code, exc.entries(cli)
    elif isinstance(exc, KeyboardInterrupt):
        import signal

        signum = int(getattr(exc, "signum", signal.SIGINT))
        line, code = f"stopped by {signal.Signals(signum).name}", 128 + signum
        entries = [{"message": line, "file": None, "line": None, "field": None}]
    else:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        line, code = f"could not run: {type(exc).__name__}: {first}", EXIT_COULD_NOT_RUN
        entries = [{"message": line, "file": None, "line": None, "field": None}]
    body: dict[str, Any] = {"error": type(exc).__name__, "exit_code": code, "message": line, "errors": entries}
    if isinstance(exc, AwsError):
        body.update(code=exc.code, operation=exc.operation)
    return body


class AwsError(BakeoffError):
    """An AWS call failed; the message is one line that says what to do. Exit code 4.

    `code` is the service's error code (`AccessDeniedException`, `ResourceNotFound`, `NoSuchBucket`, ...,
    or a botocore condition such as `NoCredentials`), None when bakeoff itself found the problem;
    `operation` is what was being attempted ("start pipeline bakeoff-quickstart")."""

    def __init__(self, message: str, code: str | None = None, operation: str | None = None):
        self.message, self.code, self.operation = message, code, operation
        super().__init__(message)  # Words stay Words: `for_cli` renders them


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

    def __init__(self, evaluation: Mapping[str, Any], message: str | None = None):
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


def verdict_error(evaluation: Mapping[str, Any]) -> ParityError | None:
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
