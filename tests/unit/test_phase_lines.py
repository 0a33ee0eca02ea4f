"""The `[bakeoff] phase=NAME` line: what a job prints and what the host reads, from the one contract."""
import pytest

from bakeoff_runtime.contract import PHASES, STEP_PREFIX, metric_definitions, parse_phase_line, phase_line


def test_every_phase_round_trips():
    assert PHASES == ("starting", "compiling", "training", "evaluating")
    for phase in PHASES:
        line = phase_line(phase)
        assert line.startswith(STEP_PREFIX) and parse_phase_line(line + "\n") == phase


@pytest.mark.parametrize("line", ["[bakeoff] step=3 train_loss=1.0", "[bakeoff] phase=napping",
                                  "phase=compiling", "[bakeoff] phase=compiling extra", "print('phase=training')"])
def test_other_lines_are_no_phase(line):
    assert parse_phase_line(line) is None


def test_a_phase_that_is_none_is_refused_where_it_is_printed():
    with pytest.raises(ValueError):
        phase_line("napping")  # type: ignore[arg-type]


def test_no_sagemaker_metric_definition_reads_a_phase_line():
    import re

    for definition in metric_definitions({"acc": "acc"}):
        for phase in PHASES:
            assert not re.search(definition["Regex"], phase_line(phase)), definition
