"""`bakeoff run` in a pseudo-terminal of a usual size, as a person sees it: a line before anything heavy,
one line of substitutions, a trn bar that says it is compiling before its first step, and the verdict's
own line carrying the caution of a run too small to trust.

The first line is shown to come first by order, not by a clock: the spec is a named pipe that the test
fills only once that line is on the terminal, so the command cannot have read, compiled or planned the
spec, or started a job (nor imported torch for one), before it spoke."""
import os
import re
import sys

from conftest import ROOT, tiny_spec

sys.path.insert(0, str(ROOT / "benchmarks"))
from pty_run import TerminalRun  # noqa: E402  (benchmarks/, shared with first_output.py)

COLUMNS = 100
LIMIT_S = 600  # a hung command's guard, never a timing assertion


def _spec_text() -> str:
    import yaml

    spec = tiny_spec()
    spec["training"]["max_steps"] = 20
    return yaml.safe_dump(spec, sort_keys=False)


def _fill(fifo, text: str, run: TerminalRun) -> None:
    """Write the spec into the pipe once the command has it open for reading (opening it to write without
    a reader would block)."""
    def reader_is_there(_text: str) -> bool:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody reads yet
            return False
        with os.fdopen(fd, "w") as pipe:
            pipe.write(text)
        return True

    assert run.read_until(reader_is_there, LIMIT_S), run.text()[-3000:]


def test_a_person_at_a_terminal_sees_progress_that_tells_the_truth(tmp_path):
    fifo, out = tmp_path / "tiny.yaml", tmp_path / "out"
    os.mkfifo(fifo)
    exe = os.path.join(os.path.dirname(sys.executable), "bakeoff")
    run = TerminalRun([exe, "run", str(fifo), "--out", str(out), "--no-mlflow"], columns=COLUMNS)
    try:
        assert run.read_until(lambda text: "\n" in text, LIMIT_S), run.text()
        # The command has said something, and the spec it needs for everything else is still unread.
        first = run.lines()[0]
        assert first == f"bakeoff reading {fifo}: the jobs start once it is compiled and planned", first
        assert not out.exists()
        _fill(fifo, _spec_text(), run)
        code = run.wait(LIMIT_S)
    finally:
        run.kill()
    lines = run.lines()
    assert code == 0, "\n".join(lines[-40:])

    # One line of substitutions, within the terminal's width; the rest is -v's (and substitutions.json's).
    said = [line for line in lines if line.startswith("bakeoff local:")]
    legs = [line for line in said if "every substitution" in line]
    assert legs == ["bakeoff local: trn1 on local xla:cpu, p4d on local cpu (-v: every substitution)"], said
    assert not [line for line in said if line.startswith("bakeoff local: leg ")], said
    assert all(len(line) <= COLUMNS for line in said), said

    # A trn bar said "compiling" at 0 steps (the job's own report, before its first step's graph ran),
    # and "training" came only after.
    bar = re.compile(r"^\[(\d)/4\] (trn1-s\d) +(starting|compiling|training|evaluating) .* (\d+)/20 steps")
    frames = [m.groups() for m in map(bar.match, lines) if m]
    compiling = [f for f in frames if f[2] == "compiling"]
    assert compiling and all(f[3] == "0" for f in compiling), frames
    job = compiling[0][1]
    phases = [f[2] for f in frames if f[1] == job]
    assert phases.index("compiling") < phases.index("training"), phases
    assert "starting" not in phases[phases.index("compiling"):], phases

    # The verdict's own line carries the caution: two seeds, twenty steps.
    verdict = next(line for line in lines if line.startswith("verdict: "))
    assert verdict == "verdict: pass caution: from a run too small to trust (2 seeds, 20 steps); see below", verdict
    assert len(verdict) <= COLUMNS
