"""The terminal summary puts what to keep in mind beside the verdict: an emulated run, too few seeds, a
smoke test's length of training."""
import copy

from rich.console import Console

from pipelines.cli.summary import FEW_SEEDS, FEW_STEPS, cautions, render_summary


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
