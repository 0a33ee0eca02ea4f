"""A job's failure reason with rich markup in it, in a real bake-off: it neither stops `bakeoff run` /
`bakeoff report` nor fakes their output."""

from hostile_text import HOSTILE


def test_a_failure_message_with_markup_neither_stops_the_bakeoff_nor_fakes_output(tmp_path):
    from planted_runs import _spec

    from conftest import bakeoff

    spec = _spec(tmp_path, plant="raise=m5/0", hyperparameters={"plant": "raise=m5/0", "message": HOSTILE})
    run = bakeoff("run", spec, "--out", tmp_path / "out")
    assert "Traceback" not in run.stderr and "MarkupError" not in run.stderr, run.stderr[-3000:]
    assert run.returncode in (1, 3), run.stderr[-3000:]  # a verdict (fail or inconclusive), not a crash
    assert HOSTILE in run.stderr  # the job's reason, word for word
    assert "[4/4]" in run.stderr  # every job after the failed one ran
    report = bakeoff("report", tmp_path / "out")
    assert "Traceback" not in report.stderr and report.returncode in (1, 3), report.stderr[-3000:]
