"""Text a job controls (its failure reason) is shown as data: rich markup in it neither crashes
`bakeoff run` / `bakeoff report` nor paints output, and terminal escapes do not pass through."""
import pytest

from pipelines.terminal_text import data, plain

HOSTILE = "no checkpoint found in [/opt/ml/checkpoints] [green]verdict: pass[/green]"


def test_markup_and_escapes_in_job_text_are_inert():
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    console.print(f"reason: {data(HOSTILE)}")  # unescaped, rich raises MarkupError on the closing tag
    assert HOSTILE in console.export_text()
    assert plain("ok\x1b[2J\x1b]0;pwned\x07 done\ttab\x9b") == "ok done\ttab"


@pytest.mark.slow
def test_a_failure_message_with_markup_neither_stops_the_bakeoff_nor_fakes_output(tmp_path):
    from test_faults import _spec

    from conftest import bakeoff

    spec = _spec(tmp_path, plant="raise=m5/0", hyperparameters={"plant": "raise=m5/0", "message": HOSTILE})
    run = bakeoff("run", spec, "--out", tmp_path / "out")
    assert "Traceback" not in run.stderr and "MarkupError" not in run.stderr, run.stderr[-3000:]
    assert run.returncode in (1, 3), run.stderr[-3000:]  # a verdict (fail or inconclusive), not a crash
    assert HOSTILE in run.stderr  # the job's reason, word for word
    assert "[4/4]" in run.stderr  # every job after the failed one ran
    report = bakeoff("report", tmp_path / "out")
    assert "Traceback" not in report.stderr and report.returncode in (1, 3), report.stderr[-3000:]
