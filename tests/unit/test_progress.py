"""The local run's progress: step counts never pass the total, an ETA, plain lines off a terminal."""
import io

from rich.console import Console

from bakeoff.pipelines.local.progress import Progress


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


def test_the_time_left_is_each_legs_jobs_at_that_legs_own_pace():
    progress, _ = _plain()
    progress.start(6, 1, {"trn1": 3, "p4d": 3})
    progress.finish(1, "trn1-s0", "completed", 90.0, {}, None)  # an XLA leg: slow
    progress.finish(2, "p4d-s0", "completed", 10.0, {}, None)
    progress.finish(3, "trn1-s1", "completed", 90.0, {}, None)
    # One trn1 job at 90 s and two p4d jobs at 10 s: 110 s (one mean over all, 3 x 63 s, would say 190 s).
    assert progress.eta_s(3) == 90.0 + 2 * 10.0
    progress.skipped(4, "p4d-s1")  # reused: nothing left to run for it
    assert progress.eta_s(4) == 90.0 + 10.0
    side_by_side, _ = _plain()
    side_by_side.start(4, 2, {"trn1": 2, "p4d": 2})
    side_by_side.finish(1, "trn1-s0", "completed", 90.0, {}, None)
    assert side_by_side.eta_s(1) == (90.0 + 2 * 90.0) / 2  # p4d has no time yet: the mean of all; two at once


def test_a_bar_says_it_is_starting_until_its_first_step_or_its_job_says_otherwise():
    from bakeoff.pipelines.local.progress import STARTING

    progress = Progress(Console(file=io.StringIO(), force_terminal=True, width=160))
    progress.start(1, 1, {"trn1": 1})
    progress.begin(1, "trn1-s0", 20)
    task = progress._bar.tasks[0]
    assert STARTING in task.description
    progress.advance(0)
    assert STARTING in progress._bar.tasks[0].description  # still no step
    progress.advance(1)
    assert STARTING not in progress._bar.tasks[0].description and "trn1-s0" in progress._bar.tasks[0].description
    progress.stop()


def test_a_bar_shows_the_phase_its_job_reports():
    progress = Progress(Console(file=io.StringIO(), force_terminal=True, width=160))
    progress.start(2, 2, {"trn1": 1, "p4d": 1})
    progress.begin(1, "trn1-s0", 20)
    progress.begin(2, "p4d-s0", 20)

    def shown(i: int) -> str:
        return progress._bar.tasks[i].description

    progress.phase(1, "compiling")
    assert shown(0).endswith("[dim]compiling[/dim]") and shown(1).endswith("[dim]starting[/dim]")
    progress.advance(0, 1)
    assert "compiling" in shown(0)  # no step yet: still compiling
    progress.advance(1, 1)  # a step is in, whether or not the job said "training" (a brought script may not)
    assert shown(0).endswith("[dim]training[/dim]")
    progress.phase(1, "evaluating")
    assert shown(0).endswith("[dim]evaluating[/dim]")
    progress.phase(7, "compiling")  # a job this display never began: nothing to show, nothing raised
    progress.stop()


def test_off_a_terminal_a_compiling_job_says_so_in_one_line():
    progress, out = _plain()
    progress.start(1)
    progress.begin(1, "trn1-s0", 20)
    progress.phase(1, "compiling")
    progress.phase(1, "compiling")  # the same phase again: nothing more
    progress.phase(1, "training")
    assert out.getvalue().splitlines()[1:] == ["[1/1] trn1-s0: compiling its graphs before the first step"]


def test_details_are_shown_with_verbose_only():
    quiet, verbose = io.StringIO(), io.StringIO()
    Progress(Console(file=quiet, force_terminal=False, width=80)).detail("local: leg trn1: ...")
    Progress(Console(file=verbose, force_terminal=False, width=80), verbose=True).detail("local: leg trn1: ...")
    assert quiet.getvalue() == "" and verbose.getvalue() == "bakeoff local: leg trn1: ...\n"


def test_a_legs_first_job_leaves_its_pace_once_a_later_one_has_ended():
    progress, _ = _plain()
    progress.start(4, 1, {"trn1": 4})
    progress.finish(1, "trn1-s0", "completed", 300.0, {}, None)  # imports, a cold start
    assert progress.eta_s(1) == 3 * 300.0  # nothing else to go by
    progress.finish(2, "trn1-s1", "completed", 100.0, {}, None)  # from the leg's warm interpreter
    assert progress.eta_s(2) == 2 * 100.0


def test_a_slow_legs_running_job_keeps_the_time_left_honest(monkeypatch):
    from bakeoff.pipelines.local import progress as module

    clock = [1000.0]
    monkeypatch.setattr(module.time, "time", lambda: clock[0])
    progress, _ = _plain()
    progress.start(4, 2, {"trn1": 2, "p4d": 2})
    progress.begin(1, "trn1-s0", 20)
    progress.begin(2, "p4d-s0", 20)
    clock[0] += 10.0
    progress.finish(2, "p4d-s0", "completed", 10.0, {}, None)  # the fast leg ends first
    progress.begin(3, "p4d-s1", 20)
    clock[0] += 50.0  # trn1-s0 has run 60 s, p4d-s1 50 s
    # trn1: its running job has taken 60 s already (the mean of all, 10 s, would say 10 s for each):
    # 0 s left of it, 60 s for trn1-s1; p4d-s1 has passed p4d's mean, 0 s left. Two at once: 30 s.
    assert progress.eta_s(1) == 60.0 / 2
