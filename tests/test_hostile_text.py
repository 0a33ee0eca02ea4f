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


MD_HOSTILE = "x | y <script>alert(1)</script>\n# fake heading\n- [pass](http://e) `tick` **bold** _em_ \\"


def test_job_text_in_report_md_stays_text(tmp_path):
    """report.md is read raw and rendered (GitHub, MLflow's artifact view): job text in it can neither
    open HTML, a heading, a list or a link, nor break a table row into more cells."""
    import copy
    import html

    from markdown_it import MarkdownIt
    from test_report import CONFIG, VALUES, _write_job

    from bakeoff_runtime.evaluation import evaluate
    from bakeoff_runtime.job_outputs import load_jobs
    from bakeoff_runtime.report import render_markdown
    from bakeoff_runtime.report_format import md, md_block, md_row

    for leg, values in VALUES.items():
        for seed, v in enumerate(values):
            _write_job(tmp_path, leg, seed, v)
    ev = copy.deepcopy(evaluate(CONFIG, load_jobs(tmp_path)))
    ev["checks"].append({"name": "hostile`name", "status": "fail", "why": MD_HOSTILE})
    page = MarkdownIt("commonmark").enable("table").render(render_markdown(ev))
    assert "<script" not in page and "<a " not in page and "<em>" not in page
    assert page.count("<h1>") == 1 and "fake heading" in page
    assert html.escape("<script>alert(1)</script>", quote=False) in page  # shown, word for word
    assert "<code>hostile`name</code>" in page

    row = MarkdownIt("commonmark").enable("table").render("\n".join([md_row(["a", MD_HOSTILE]), "|---|---|"]))
    assert row.count("<th>") == 2, row  # the pipe in the text did not make a third cell
    assert md("1. not a list") == "1\\. not a list" and md("---") == "\\---"
    fenced = md_block("```\nstill inside\n```", "diff")
    assert fenced[0] == "````diff" and fenced[-1] == "````"
