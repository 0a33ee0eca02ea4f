"""Text a job controls (its failure reason) is shown as data: rich markup in it neither crashes
`bakeoff run` / `bakeoff report` nor paints output, and terminal escapes do not pass through."""
import re

from hostile_text import HOSTILE

from bakeoff.pipelines.terminal_text import data, plain


def test_markup_and_escapes_in_job_text_are_inert():
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    console.print(f"reason: {data(HOSTILE)}")  # unescaped, rich raises MarkupError on the closing tag
    assert HOSTILE in console.export_text()
    assert plain("ok\x1b[2J\x1b]0;pwned\x07 done\ttab\x9b") == "ok done\ttab"


MD_HOSTILE = "x | y <script>alert(1)</script>\n# fake heading\n- [pass](http://e) `tick` **bold** _em_ \\"


def test_job_text_in_report_md_stays_text(tmp_path):
    """report.md is read raw and rendered (GitHub, MLflow's artifact view): job text in it can neither
    open HTML, a heading, a list or a link, nor break a table row into more cells."""
    import copy
    import html

    from markdown_it import MarkdownIt
    from report_inputs import CONFIG, VALUES, _write_job

    from bakeoff_runtime.report.document import render_markdown
    from bakeoff_runtime.report.formatting import md, md_block, md_row
    from bakeoff_runtime.verdict.evaluation import evaluate
    from bakeoff_runtime.verdict.job_outputs import load_jobs

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


TERMINAL_HOSTILE = "boom\x1b[2J\x1b]0;pwned\x07 \u202eevil\u202c [red]x[/red]\x9b31m\x00" + "y" * 5000


def _no_control(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\x00" not in text
    assert "\u202e" not in text and "\u202c" not in text


def test_the_plain_and_the_live_renderer_show_hostile_job_text_inert_and_bounded():
    import io

    from rich.console import Console

    from bakeoff.pipelines.local.progress import Progress

    for terminal in (False, True):
        out = io.StringIO()
        progress = Progress(Console(file=out, force_terminal=terminal, color_system=None, width=400, soft_wrap=True))
        progress.start(1)
        progress.begin(1, "m5-s0", 10)
        progress.finish(1, "m5-s0", "failed", 1.0, {}, TERMINAL_HOSTILE)
        progress.note(f"evaluation: {TERMINAL_HOSTILE}")
        progress.stop()
        text = out.getvalue()
        if terminal:  # the live bar's own cursor moves are rich's; only the job's text is checked
            text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
        _no_control(text)
        assert "boom" in text and "evil" in text and "[red]x[/red]" in text  # shown, word for word
        assert "more characters)" in text and "y" * 5000 not in text  # bounded


def test_json_output_and_mlflow_tags_carry_job_text_escaped(capsys):
    import json

    from bakeoff.pipelines.api.results import ProgressEvent

    line = ProgressEvent(kind="note", message=TERMINAL_HOSTILE).to_json()
    _no_control(line)
    assert json.loads(line)["message"] == TERMINAL_HOSTILE  # escaped, not lost: a reader gets it back

    from bakeoff_runtime.tracking.keys import MAX_TAG_VALUE, Cleaner

    tags = Cleaner("test").tags({"bakeoff.reason": TERMINAL_HOSTILE * 3})
    _no_control(tags["bakeoff.reason"])
    assert tags["bakeoff.reason"].startswith("boom ") and len(tags["bakeoff.reason"]) <= MAX_TAG_VALUE


def test_an_error_quoting_outside_text_reaches_the_terminal_inert(tmp_path, capsys):
    """Errors quote paths and job output; a run directory's name is as hostile as a reason."""
    import bakeoff.pipelines.cli.main as cli

    run_dir = tmp_path / "run\x1b]0;pwned\x07\u202e"
    run_dir.mkdir()
    code = cli.main(["report", str(run_dir)])
    err = capsys.readouterr().err
    _no_control(err)
    # The OSC sequence went whole, its title with it.
    assert code == 2 and err.startswith("bakeoff: error: no evaluation at ") and "/run/evaluation/" in err, err
