"""The local run's progress: step counts never pass the total, an ETA, plain lines off a terminal."""
import io

from rich.console import Console

from pipelines.local.progress import Progress


def _plain() -> tuple[Progress, io.StringIO]:
    out = io.StringIO()
    return Progress(Console(file=out, force_terminal=False, soft_wrap=True, width=80)), out


def test_not_a_terminal_gives_plain_whole_lines():
    progress, out = _plain()
    progress.start(2)
    progress.begin(1, "trn1-s0", 200)
    progress.advance(50)
    progress.finish(1, "trn1-s0", "completed", 30.0,
                    {"metrics": {"val_loss": 1.5}, "throughput": {"tokens_per_sec": 1000.0}}, None)
    progress.stop()
    text = out.getvalue()
    assert "\x1b[" not in text  # no escape codes, no live bar
    lines = text.splitlines()
    assert lines[0] == "[1/2] trn1-s0: running"
    # One line however long, with the bake-off's ETA from the jobs done so far.
    assert lines[1].startswith("[1/2] trn1-s0: completed, 30s, val_loss=1.5000, 1,000 tokens/s")
    assert lines[1].endswith("(bake-off: about 30s left)")


def test_eta_is_the_mean_job_time_times_the_jobs_left():
    progress, _ = _plain()
    progress.start(5)
    assert progress.eta_s(0) is None  # nothing has run: no guess
    progress.finish(1, "a-s0", "completed", 10.0, {}, None)
    progress.skipped(2, "b-s0")  # costs nothing and does not pull the mean down
    progress.finish(3, "a-s1", "completed", 30.0, {}, None)
    assert progress.eta_s(3) == 2 * 20.0
    assert progress.eta_s(5) is None  # the last job: nothing left


def test_step_counts_never_pass_the_total():
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=True, width=120))
    progress.start(1)
    progress.begin(1, "trn1-s0", 200)
    progress.advance(150)
    progress.advance(201)  # the final validation line carries step 200, one past the last step index
    task = progress._bar.tasks[0]
    assert task.completed == 200 and task.total == 200
    rendered = progress._bar.make_tasks_table([task])
    capture = Console(file=io.StringIO(), width=120)
    with capture.capture() as cap:
        capture.print(rendered)
    assert "200/200" in cap.get() and "201" not in cap.get()
    assert "eta" in cap.get()
    progress.stop()
