"""The terminal summary puts what to keep in mind beside the verdict: an emulated run, too few seeds, a
smoke test's length of training."""
import copy

from rich.console import Console

from bakeoff.pipelines.cli.summary import FEW_SEEDS, FEW_STEPS, cautions, render_summary, small_run


def _with(evaluation, *, emulated=False, seeds=None, steps=None):
    ev = copy.deepcopy(evaluation)
    ev.setdefault("speed", {})["emulated"] = emulated
    for figures in ev["legs"].values():
        if seeds is not None:
            figures["completed"] = seeds
        for run in figures["runs"]:
            if steps is not None:
                run["steps_completed"] = steps
    return ev


def test_a_full_run_on_the_hardware_carries_no_caution(evaluation):
    assert cautions(_with(evaluation, seeds=FEW_SEEDS, steps=FEW_STEPS)) == []


def test_emulation_few_seeds_and_few_steps_each_say_so_after_the_verdict(evaluation):
    ev = _with(evaluation, emulated=True, seeds=2, steps=20)
    said = cautions(ev)
    assert len(said) == 3
    assert said[0].startswith("the legs ran emulated on this machine")
    assert said[1].startswith("2 completed seeds on the fewest leg") and "bakeoff plan --from RUN_DIR" in said[1]
    assert said[2].startswith("each job trained at most 20 steps")
    console = Console(record=True, width=300)
    render_summary(ev, console)
    lines = console.export_text().splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict: "))
    assert [line.strip() for line in lines[verdict + 1:verdict + 4]] == [f"caution {s}" for s in said]


def _verdict_line(ev) -> str:
    console = Console(record=True, width=300)
    render_summary(ev, console)
    return next(line for line in console.export_text().splitlines() if line.startswith("verdict: "))


def test_a_small_run_says_so_on_the_verdicts_own_line(evaluation):
    assert _verdict_line(_with(evaluation, seeds=FEW_SEEDS, steps=FEW_STEPS)) == "verdict: pass"
    assert small_run(_with(evaluation, emulated=True, seeds=FEW_SEEDS, steps=FEW_STEPS)) == []  # emulation: below
    assert _verdict_line(_with(evaluation, seeds=2, steps=20)) == \
        "verdict: pass caution: from a run too small to trust (2 seeds, 20 steps); see below"


def _parity(ev) -> dict:
    return next(c for c in ev["checks"] if c["name"].startswith("parity:"))


def test_an_interval_wider_than_the_margins_band_is_a_run_too_small(evaluation):
    ev = _with(evaluation, seeds=FEW_SEEDS, steps=FEW_STEPS)
    check = _parity(ev)
    leg = check["name"][len("parity:"):].split("~")[0]
    margin = check["margin"]
    check["ci"] = [-0.9 * margin, 0.9 * margin]  # wider than the margin, inside its band: a usual pass
    assert small_run(ev) == [] and cautions(ev) == []
    check["ci"] = [-1.2 * margin, 1.1 * margin]  # cannot fit in -margin..+margin whatever the difference
    assert small_run(ev) == [f"{leg}'s CI wider than the margin"]
    said = cautions(ev)
    assert len(said) == 1 and said[0].startswith(f"the parity interval of {leg} spans {2.3 * margin:.4g}, wider "
                                                 f"than the whole margin band (+/-{margin:.4g})")
    assert _verdict_line(ev).endswith(f"caution: from a run too small to trust ({leg}'s CI wider than the margin); "
                                      "see below")
    check["ci"] = [None, 1.0]  # an interval not computed: nothing said of it
    assert small_run(ev) == []
