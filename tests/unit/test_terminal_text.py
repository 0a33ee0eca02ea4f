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

from bakeoff.pipelines.terminal_text import data, plain

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
    from bakeoff.pipelines.local.progress import Progress

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
    from bakeoff.pipelines.local.progress import Progress

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
    from bakeoff.pipelines.cli import output
    from bakeoff.pipelines.local.progress import Progress

    Progress().console.print("progress :thumbs_up:")
    monkeypatch.setattr(output, "is_terminal", lambda stream=None: True)
    output.console().print("out :a:", highlight=False)
    output.console(stderr=True).print("err :smile:", highlight=False)
    captured = capsys.readouterr()
    assert "out :a:" in captured.out and "progress :thumbs_up:" in captured.err and "err :smile:" in captured.err
    _no_pictures(captured.out + captured.err)


def test_the_summary_shows_check_names_and_reasons_literally(evaluation):
    import json

    from bakeoff.pipelines.cli.summary import render_summary

    ev = json.loads(json.dumps(evaluation))
    ev["checks"].append({"name": "stability:a", "status": "failed", "why": f":thumbs_up: {REASON}"})
    out = io.StringIO()
    render_summary(ev, Console(file=out, width=400, color_system=None))  # emoji on
    assert f"stability:a: :thumbs_up: {REASON}" in out.getvalue()
    _no_pictures(out.getvalue())


def test_a_check_named_stability_a_and_a_reason_with_markup_and_an_emoji_code_print_as_written(evaluation):
    """`stability:a` then `: a was stopped` once printed `stability🅰 a was stopped`: on a terminal, with
    rich's emoji codes on, the name, the reason's tags and its `:a:` all show as they are."""
    import json

    from bakeoff.pipelines.cli.summary import render_summary

    ev = json.loads(json.dumps(evaluation))
    why = "a was stopped: [bold]not bold[/bold] :a: at :a:"
    ev["checks"].append({"name": "stability:a", "status": "failed", "why": why})
    out = io.StringIO()
    render_summary(ev, Console(file=out, width=400, force_terminal=True, color_system="truecolor"))
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert f"FAIL stability:a: {why}" in shown
    _no_pictures(shown)


def test_a_phase_and_the_substitution_gist_on_a_bar_are_shown_literally():
    from bakeoff.pipelines.local.progress import Progress

    out = io.StringIO()
    progress = Progress(Console(file=out, width=300, force_terminal=True))  # emoji codes on, as a caller's may be
    progress.start(1, 1, {"stability:a:": 1})
    progress.begin(1, "stability:a:-s0", 10)
    progress.phase(1, "compiling")
    progress.note("local: stability:a: on local xla:cpu [bold]x[/bold] (-v: every substitution)")
    described = progress._bar.tasks[0].description
    assert Text.from_markup(described).plain == "[1/1] stability:a:-s0 compiling"
    progress.stop()
    assert "local: stability:a: on local xla:cpu [bold]x[/bold] (-v: every substitution)" in out.getvalue()
    _no_pictures(out.getvalue())
