"""Without the `stats` extra (numpy, scipy: `sys.modules` holding None for them is how Python reads a module
that cannot be imported), what needs the statistics says the extra's install line with exit 2 and nothing
else; what does not (validating a spec offline, re-costing an execution's evaluation by billed time) runs."""
import json
import subprocess
import sys

import pytest
from evaluation_inputs import CONFIG, _jobs

from bakeoff.pipelines.extras import STATS_INSTALL
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
ROLE = "arn:aws:iam::123456789012:role/bakeoff-test"


def _line(what: str) -> str:
    return (f"bakeoff: error: {what} needs numpy and scipy, which are not installed here: {STATS_INSTALL} "
            "(or uv sync --extra stats)")


# The CLI in a Python where numpy and scipy cannot be imported.
BLOCKED_CLI = """
import sys
for name in ("numpy", "scipy"):
    sys.modules[name] = None
from bakeoff.pipelines.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def without_stats(monkeypatch):
    for name in ("numpy", "scipy"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("args,what", [
    (["plan", QUICKSTART], "bakeoff plan"),
    (["plan", QUICKSTART, "--from", ROOT], "bakeoff plan"),
    (["validate", QUICKSTART, "--from", ROOT], "bakeoff validate --from"),
    (["project", ROOT], "bakeoff project"),
    (["start", QUICKSTART, "--until-decided", "--role", ROLE], "bakeoff start --until-decided"),
])
def test_what_needs_the_statistics_says_the_install_line(cli, without_stats, args, what):
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [_line(what)]


def test_from_python_the_line_names_the_function_not_the_command(without_stats):
    import bakeoff
    from bakeoff.pipelines.errors import SpecError

    with pytest.raises(SpecError) as raised:
        bakeoff.plan(QUICKSTART)
    assert str(raised.value) == _line("plan()").removeprefix("bakeoff: error: ")
    with pytest.raises(SpecError) as raised:
        bakeoff.validate(QUICKSTART, previous_run=ROOT)
    assert str(raised.value).startswith("validate(previous_run=...) needs numpy and scipy")


def test_a_path_without_its_own_check_says_the_same_line(tmp_path):
    """The local rounds (`run --until-decided`) import the design's statistics before any job: the CLI turns the
    missing module into the same line, not a traceback, and no job starts. In a new Python: in this one the
    statistics' modules may be imported already."""
    proc = subprocess.run([sys.executable, "-c", BLOCKED_CLI, "run", str(QUICKSTART), "--until-decided", "--out",
                           str(tmp_path / "run"), "--no-mlflow"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.splitlines() == [_line("bakeoff run")]
    assert not (tmp_path / "run" / "jobs").exists()


def test_validating_a_spec_needs_no_statistics(cli, without_stats):
    proc = cli("validate", QUICKSTART)
    assert proc.returncode == 0, proc.stderr
    assert "ok: quickstart" in proc.stdout


RECOST = """
import json, sys
for name in ("numpy", "scipy"):
    sys.modules[name] = None
from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.billable import apply_billable_time
evaluation, billed = json.load(open(sys.argv[1]))
try:
    print(json.dumps(apply_billable_time(evaluation, {(leg, seed): s for leg, seed, s in billed})))
except SpecError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def _recost_without_stats(tmp_path, evaluation, billed):
    data = tmp_path / "input.json"
    data.write_text(json.dumps([evaluation, [[leg, seed, s] for (leg, seed), s in billed.items()]]))
    proc = subprocess.run([sys.executable, "-c", RECOST, str(data)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_an_execution_is_recosted_without_the_statistics_as_with_them(tmp_path):
    """`bakeoff report ARN` (and the Step Functions handler's report) on the core: the same figures."""
    from bakeoff.pipelines.sagemaker.billable import apply_billable_time
    from bakeoff_runtime.verdict.evaluation import evaluate

    evaluation = json.loads(json.dumps(evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.41, 2.40], [2.41, 2.40, 2.41]))))
    billed = {(leg, seed): 600.0 + 7 * seed for leg in ("trn", "gpu") for seed in range(3)}
    with_stats = json.loads(json.dumps(apply_billable_time(evaluation, billed)))
    assert with_stats["legs"]["trn"]["runs"][1]["billable_s"] == 607.0
    assert _recost_without_stats(tmp_path, evaluation, billed) == with_stats


def test_an_evaluation_with_a_projection_needs_the_statistics_to_be_recosted(tmp_path):
    from bakeoff_runtime.verdict.evaluation import evaluate
    from bakeoff_runtime.verdict.projection import default_decision, project

    evaluation = json.loads(json.dumps(evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.41, 2.40], [2.41, 2.40, 2.41]))))
    evaluation["projection"] = json.loads(json.dumps(project(evaluation, default_decision())))
    out = _recost_without_stats(tmp_path, evaluation, {("trn", 0): 600.0})
    assert out == {"error": "re-costing an evaluation that carries a projection (the spec's decision:) needs numpy "
                            f"and scipy, which are not installed here: {STATS_INSTALL} (or uv sync --extra stats)"}
