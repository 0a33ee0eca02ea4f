"""Text bakeoff did not write (a job's failure reason, a leg or check name from a spec) reaches the
terminal as it is: rich reads neither markup (`[red]`) nor emoji codes (`:a:`, `:thumbs_up:`) in it.

The consoles under test print with rich's defaults (emoji codes on), as a console handed to
Progress or render_summary may: data() alone keeps the text literal there."""
import io
import re

import pytest
from rich.console import Console
from rich.emoji import Emoji
from rich.text import Text

from pipelines.terminal_text import data, plain

PICTURES = [str(Emoji(name)) for name in ("a", "thumbs_up", "smile", "red_circle")]
REASON = "stability:a: [red]x[/red] :thumbs_up: :smile-emoji: :red_circle:"
LITERAL = [
    REASON, "stability:a:", ":a:", "::a::", ":thumbs_up:", "x:[b]:a:", "a:b:c", "[link=https://e.x]click[/link]",
    "C:\\temp\\", "trailing\\\\", "\\[not a tag", "\\[red]", "[/]", "[bold]", "é 日本 🎉 :smile:", "", ":",
]


def _no_pictures(text: str) -> None:
    assert not any(p in text for p in PICTURES), text


@pytest.mark.parametrize("text", LITERAL)
def test_data_is_shown_as_written_wherever_rich_reads_markup(text):
    assert Text.from_markup(data(text)).plain == text
    # with bakeoff's own markup and a colon of the line right after it (`{name}: ...`)
    line = Text.from_markup(f"[bold]job[/bold] {data(text)}: [red]{data(text)}[/red]").plain
    assert line == f"job {text}: {text}"


def test_data_still_takes_out_escapes():
    assert Text.from_markup(data("ok\x1b[2J\x1b]0;pwned\x07 :a:")).plain == plain("ok\x1b[2J\x1b]0;pwned\x07 :a:")
    assert plain("ok\x1b]0;pwned\x07 :a:") == "ok :a:"


def test_a_finished_job_prints_its_reason_and_name_literally():
    from pipelines.local.progress import Progress

    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=False, width=400, soft_wrap=True))  # emoji on
    progress.start(1)
    progress.begin(1, "stability:a", 10)
    progress.finish(1, "stability:a", "failed", 1.0, {}, REASON)
    progress.note(f"evaluation: {REASON}")
    progress.stop()
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/1] stability:a: running"
    assert lines[1] == f"[1/1] stability:a: failed, 1s, reason: {REASON}"
    assert lines[2] == f"bakeoff evaluation: {REASON}"
    _no_pictures(out.getvalue())


def test_the_live_bar_shows_a_job_name_literally():
    from pipelines.local.progress import Progress

    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=True, color_system=None, width=400))
    progress.start(1)
    progress.begin(1, "stability:a: :thumbs_up: [red]x[/red]", 10)  # the bar's description is read as markup
    progress.stop()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "[1/1] stability:a: :thumbs_up: [red]x[/red]" in text
    _no_pictures(text)


def test_bakeoffs_terminal_consoles_read_no_emoji_codes(monkeypatch, capsys):
    """The consoles bakeoff builds print what they are given without emoji codes, on a terminal too:
    bakeoff writes none of its own, so any in a line came from a job or a spec."""
    from pipelines.cli import output
    from pipelines.local.progress import Progress

    Progress().console.print("progress :thumbs_up:")
    monkeypatch.setattr(output, "is_terminal", lambda stream=None: True)
    output.console().print("out :a:", highlight=False)
    output.console(stderr=True).print("err :smile:", highlight=False)
    captured = capsys.readouterr()
    assert "out :a:" in captured.out and "progress :thumbs_up:" in captured.err and "err :smile:" in captured.err
    _no_pictures(captured.out + captured.err)


def test_the_summary_shows_check_names_and_reasons_literally(evaluation):
    import json

    from pipelines.cli.summary import render_summary

    ev = json.loads(json.dumps(evaluation))
    ev["checks"].append({"name": "stability:a", "status": "failed", "why": f":thumbs_up: {REASON}"})
    out = io.StringIO()
    render_summary(ev, Console(file=out, width=400, color_system=None))  # emoji on
    assert f"stability:a: :thumbs_up: {REASON}" in out.getvalue()
    _no_pictures(out.getvalue())
