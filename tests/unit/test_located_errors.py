"""Bad input is one line that says where (file, line, field) and what to do, and exit code 2; never a
traceback, never "could not run" (exit 4). Here: `--set` values and paths of every odd shape, a spec
or a previous run's record nested past what Python's parsers recurse through, `plan --from` and
`validate --from` on records of wrong types, and `bakeoff report` on a run that was interrupted."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SPEC = ROOT / "examples" / "quickstart.yaml"
DEEP = 100_000  # levels: far past the interpreter's recursion limit


def _one_located_line(proc, *where: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("bakeoff: error: "), proc.stderr[-2000:]
    assert "could not run" not in lines[0] and "Traceback" not in proc.stderr
    for part in where:
        assert part in lines[0], (part, lines[0])
    return lines[0]


# --- --set ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("override", "said"), [
    ("name.x=1", "name is a value ('quickstart'), not a group of fields"),
    ("legs.0.name.x=1", "legs[0].name is a value ('trn1')"),
    ("model.d_model.x.y=1", "model.d_model is a value (64)"),
    ("legs.9.precision=fp32", "there is no legs[9]"),
    ("legs.nosuch.precision=fp32", "there is no leg named 'nosuch'"),
    ("training.max_steps=[1, 2]", "training.max_steps"),
    ("na$me=1", "is not a field path"),
    ("=1", "is not a field path"),
    ("a..b=1", "is not a field path"),
    ("name\nx=1", "is not a field path"),
    ("name\x1b[31m=1", "is not a field path"),
    ("justakey", "expected KEY=VALUE"),
    ("hyperparameters.x=&a [*a]", "recursive alias"),
    ("hyperparameters.x=!!binary aGVsbG8=", "YAML tag '!!binary' is not allowed"),
    ("hyperparameters.x=!!python/object:os.system x", "is not allowed"),
    ("hyperparameters.x={? [1, 2]: 3}", "a key must be a plain name"),
    ("hyperparameters.x=[1, 2", "the value is not valid YAML"),
    ("hyperparameters.x=" + "[" * DEEP + "]" * DEEP, "nesting deeper than 32 levels"),
    ("hyperparameters.x=" + "{a: " * 500 + "1" + "}" * 500, "nesting deeper than 32 levels"),
    ("hyperparameters." + ".".join(["a"] * 5000) + "=1", "a field path of 5,001 parts"),
    ("hyperparameters.a.b=1", "hyperparameters.a"),  # a group the override made: blamed on it
    ("seeds=.nan", "must be a finite number"),
])
def test_an_odd_set_is_one_line_blamed_on_it(cli, override, said):
    line = _one_located_line(cli("validate", SPEC, "--set", override), "--set ", said)
    assert len(line) < 1000, line  # a huge argument is quoted in part


def test_an_alias_bomb_in_a_set_is_refused_before_it_expands(cli):
    bomb = "[&a [1,1,1,1,1,1,1,1,1], " + ", ".join(
        f"&{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + "]"
    _one_located_line(cli("validate", SPEC, "--set", f"hyperparameters.x={bomb}"), "expands to more than")


def test_a_set_through_a_list_or_an_empty_list_says_which_indices_there_are(cli):
    _one_located_line(cli("validate", SPEC, "--set", "seeds=[1, 2]", "--set", "seeds.a=1"),
                      "seeds is a list of 2; use an index 0-1")
    _one_located_line(cli("validate", SPEC, "--set", "seeds=[]", "--set", "seeds.0=1"),
                      "seeds is a list of 0; it is empty")
    _one_located_line(cli("validate", SPEC, "--set", "legs=[]", "--set", "legs.0.name=x"),
                      "there is no legs[0]; the spec has 0 leg(s)")


def test_overrides_leave_the_callers_mapping_as_it_was():
    import yaml

    from bakeoff.pipelines.spec.overrides import apply_overrides

    data = yaml.safe_load(SPEC.read_text())
    before = json.dumps(data, sort_keys=True)
    changed, _ = apply_overrides(data, ["legs.0.precision=fp32", "training.optimizer.lr=0.1", "model.x.y=1"])
    assert json.dumps(data, sort_keys=True) == before
    assert changed["legs"][0]["precision"] == "fp32" and changed["model"]["x"] == {"y": 1}


# --- a spec nested past the parsers' recursion ----------------------------------------------------
@pytest.mark.parametrize(("name", "text"), [
    ("list.yaml", "[" * DEEP + "]" * DEEP),
    ("map.yaml", "{a: " * DEEP + "1" + "}" * DEEP),
    ("spec.json", '{"a":' * DEEP + "1" + "}" * DEEP),
    ("field.yaml", SPEC.read_text() + "\nhyperparameters:\n  x: " + "[" * DEEP + "]" * DEEP + "\n"),
])
def test_a_spec_nested_past_recursion_is_one_line(cli, tmp_path, name, text):
    (tmp_path / name).write_text(text)
    _one_located_line(cli("validate", tmp_path / name), str(tmp_path / name), "nesting deeper than 32 levels")


# --- plan --from / validate --from: a previous run's record ---------------------------------------
def _record(tmp_path, body: str) -> Path:
    run = tmp_path / "run"
    (run / "evaluation").mkdir(parents=True)
    (run / "evaluation" / "evaluation.json").write_text(body)
    return run


RECORDS = [  # (evaluation.json, what the line names)
    ("[1, 2]", "not an evaluation (a JSON object was expected, found list)"),
    ('"text"', "found str"),
    ("", "not valid JSON"),
    ("[" * DEEP + "]" * DEEP, "nested too deeply"),
    ('{"legs": ' * DEEP + "1" + "}" * DEEP, "nested too deeply"),
    ('{"schema": "bakeoff.evaluation/99"}', "which this bakeoff does not read"),
    ('{"checks": "x"}', "checks: is text, not a list of checks"),
    ('{"checks": [1]}', "checks[0]: is a number, not a check"),
    ('{"checks": [{"test": "paired", "sd": "x", "n_pairs": 3, "name": "parity:a"}]}',
     "checks[0].sd: 'x' is not a standard deviation"),
    ('{"checks": [{"test": "paired", "sd": NaN, "n_pairs": 3, "name": "parity:a"}]}', "it holds NaN"),
    ('{"checks": [{"test": "paired", "sd": Infinity, "n_pairs": 3, "name": "parity:a"}]}', "it holds Infinity"),
    ('{"checks": [{"test": "paired", "sd": -1, "n_pairs": 3, "name": "parity:a"}]}', "checks[0].sd: -1 is not"),
    ('{"checks": [{"test": "paired", "sd": 1e308, "n_pairs": 3, "name": "parity:a"}]}', "checks[0].sd: 1e+308"),
    ('{"checks": [{"test": "paired", "sd": 0.1, "name": "parity:a"}]}', "has no n_pairs"),
    ('{"checks": [{"test": "paired", "sd": 0.1, "n_pairs": true, "name": "parity:a"}]}', "checks[0].n_pairs"),
    ('{"checks": [{"test": "welch", "se": "x", "name": "parity:a"}]}', "checks[0].se"),
    ('{"checks": [{"name": 5}]}', "checks[0].name: is a number, not text"),
    ('{"legs": "x"}', "legs: is text, not an object of legs"),
    ('{"legs": {"p4d": []}}', "legs.p4d: is a list, not a leg"),
    ('{"legs": {"p4d": {"runs": "abc"}}}', "legs.p4d.runs: is text, not a list of runs"),
    ('{"legs": {"p4d": {"runs": [3]}}}', "legs.p4d.runs[0]: is a number, not a run"),
    ('{"legs": {"p4d": {"runs": [{"billable_s": "abc"}]}}}', "legs.p4d.runs[0].billable_s: 'abc'"),
    ('{"legs": {"p4d": {"runs": [{"cost_usd": -5}]}}}', "legs.p4d.runs[0].cost_usd: -5"),
    ('{"legs": {"p4d": {"instance_count": 0}}}', "legs.p4d.instance_count: 0"),
    ('{"legs": {"p4d": {"metric": {"mean": "x"}}}}', "legs.p4d.metric.mean: 'x'"),
    ('{"legs": {"p4d": {"metric": 7}}}', "legs.p4d.metric: is a number, not an object"),
]


@pytest.mark.parametrize(("body", "said"), RECORDS)
@pytest.mark.parametrize("command", ["plan", "validate"])
def test_a_previous_run_record_of_wrong_shape_is_one_located_line(cli, tmp_path, command, body, said):
    run = _record(tmp_path, body)
    args = [command, SPEC, "--from", run] + (["--set", "parity.margin_type=relative"] if "mean" in said else [])
    _one_located_line(cli(*args), str(run / "evaluation" / "evaluation.json"), said)


def test_the_line_of_the_wrong_field_is_named(cli, tmp_path):
    body = json.dumps({"bakeoff": "quickstart", "legs": {"p4d": {"runs": [{"billable_s": 10}, {"billable_s": "ten"}]}}},
                      indent=2)
    run = _record(tmp_path, body)
    line = body.splitlines().index('          "billable_s": "ten"') + 1
    _one_located_line(cli("plan", SPEC, "--from", run),
                      f"{run / 'evaluation' / 'evaluation.json'}:{line}: legs.p4d.runs[1].billable_s")


def test_plan_from_the_evaluation_file_itself_or_a_folder_in_its_place(cli, tmp_path):
    run = _record(tmp_path, json.dumps({"bakeoff": "quickstart"}))
    assert cli("plan", SPEC, "--from", run / "evaluation" / "evaluation.json").returncode == 0
    other = tmp_path / "notes.json"
    other.write_text("{}")
    _one_located_line(cli("plan", SPEC, "--from", other), "not a run directory")
    (tmp_path / "odd" / "evaluation" / "evaluation.json").mkdir(parents=True)
    _one_located_line(cli("plan", SPEC, "--from", tmp_path / "odd"), "not a file")


def test_a_good_record_still_plans(cli, tmp_path):
    body = {"bakeoff": "quickstart",
            "checks": [{"name": "parity:trn1~p4d", "test": "paired", "sd": 0.02, "n_pairs": 5}],
            "legs": {"p4d": {"metric": {"mean": 2.5}, "instance_count": 1, "runs": [{"billable_s": 60.0,
                                                                                       "cost_usd": 0.5}]}}}
    run = _record(tmp_path, json.dumps(body))
    proc = cli("plan", SPEC, "--from", run, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sigma"] == 0.02


# --- bakeoff report DIR on an interrupted run -------------------------------------------------------
@pytest.fixture
def interrupted_run(tmp_path):
    """A run directory as a `bakeoff run` stopped after its first seed leaves it: the jobs of seed 1 never
    ran (no job directory, no output), and no evaluation was written."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    try:
        from fake_container import FakeContainer, Recipe, evaluate_here, verdict_spec
    finally:
        sys.path.remove(str(ROOT / "tests" / "engine"))
    from bakeoff.pipelines import api

    spec = verdict_spec(tmp_path, seeds=2, mlflow={"enabled": False})
    out = tmp_path / "out"
    assert api.run_local(spec, out, mlflow=False, container=FakeContainer(Recipe()),
                         processor=evaluate_here).exit_code == 0
    for job in [*out.glob("jobs/*-s1"), *out.glob("s3/**/jobs/*-s1")]:
        shutil.rmtree(job)
    shutil.rmtree(out / "evaluation")
    return out


def test_report_on_an_interrupted_run_renders_what_exists(cli, interrupted_run):
    proc = cli("report", interrupted_run, "--json", "--write")  # deciding it writes the verdict into it
    assert "could not run" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 3, proc.stderr[-2000:]  # the seeds that never ran decide nothing
    evaluation = json.loads(proc.stdout)["evaluation"]
    assert evaluation["verdict"] == "inconclusive"
    assert all(len(leg["runs"]) == 2 for leg in evaluation["legs"].values())
    assert "never ran here (g5-s1, m5-s1)" in proc.stderr, proc.stderr[-2000:]
