"""`bakeoff COMMAND --json` prints exactly what the Python API returns; `--quiet`; plain output when piped;
help text on every option."""
from __future__ import annotations

import json
from pathlib import Path

from moto_aws import API_BUCKET as BUCKET
from moto_aws import ROLE, recorded_execution, session_with

from conftest import ROOT, bakeoff

QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def _json(cli, *args, env=None, code=0):
    proc = cli(*args, "--json", env=env)
    assert proc.returncode == code, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_offline_commands_print_the_api_result(tmp_path, monkeypatch, cli):
    from bakeoff.pipelines import api

    monkeypatch.setenv("BAKEOFF_CACHE_DIR", str(tmp_path))  # no Price List cache: bundled prices only
    env = {"BAKEOFF_CACHE_DIR": str(tmp_path)}
    assert _json(cli, "validate", QUICKSTART, "--set", "seeds=3") == \
        api.validate(QUICKSTART, overrides=["seeds=3"]).model_dump(mode="json")
    assert _json(cli, "instances") == api.instances().model_dump(mode="json")
    assert _json(cli, "images", "--region", "eu-west-1") == api.images("eu-west-1").model_dump(mode="json")
    assert _json(cli, "prices", "--region", "us-west-2", env=env) == api.prices("us-west-2").model_dump(mode="json")
    assert _json(cli, "plan", QUICKSTART, "--max-seeds", "12") == \
        api.plan(QUICKSTART, max_seeds=12).model_dump(mode="json")
    synthesized = api.synth(QUICKSTART, bucket=BUCKET)
    assert _json(cli, "synth", QUICKSTART, "--bucket", BUCKET) == synthesized.model_dump(mode="json")


def _run_dir(tmp_path, verdict_values=([2.40, 2.41, 2.40], [2.41, 2.40, 2.41])):
    """A run directory holding a current verdict (decided by the evaluation step's own code)."""
    from evaluation_inputs import CONFIG, _jobs

    from bakeoff.pipelines.local.verdict_inputs import input_fingerprint
    from bakeoff_runtime.verdict.evaluation import evaluate

    run = tmp_path / "run"
    (run / "evaluation").mkdir(parents=True)
    ev = evaluate(CONFIG, _jobs(tmp_path / "jobs", *verdict_values))
    (run / "evaluation" / "evaluation.json").write_text(json.dumps(ev))
    (run / "evaluation" / "inputs.json").write_text(json.dumps({"fingerprint": input_fingerprint(run)}))
    return run


def test_report_json_is_the_api_report(tmp_path, cli):
    from bakeoff import Report, report

    run = _run_dir(tmp_path)
    printed = _json(cli, "report", run)
    result = report(run)
    rendered = Path(printed.pop("report_path"))
    assert result.report_path and printed == result.model_dump(mode="json", exclude={"report_path"})
    assert Report.model_validate({**printed, "report_path": str(rendered)}).evaluation == result.evaluation
    assert printed["verdict"] == printed["evaluation"]["verdict"] == "pass" and printed["evaluation"]["legs"]
    # The run directory holds no report and is not written: one is rendered in a private folder.
    assert rendered.name == "report.html" and rendered.exists() and not rendered.is_relative_to(run)
    assert not (run / "evaluation" / "report.html").exists()


def test_project_json_is_the_api_projection(tmp_path, cli):
    from bakeoff import project

    run = _run_dir(tmp_path)
    printed = _json(cli, "project", run, "--steps", "1000", "--out", tmp_path / "cli")
    result = project(run, {"production": {"steps": 1000}}, out_dir=tmp_path / "api").model_dump(mode="json")
    for paths in (printed, result):
        assert paths.pop("evaluation_path") and paths.pop("report_path") is not None
    assert printed == result and printed["source"] == str(run)


def test_quiet_prints_nothing_and_the_exit_code_carries_the_verdict(tmp_path, cli):
    for args in (("validate", QUICKSTART), ("instances",), ("report", _run_dir(tmp_path))):
        proc = cli(*args, "--quiet")
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", args
    failed = cli("report", _run_dir(tmp_path / "f", ([2.90, 2.91, 2.90], [2.40, 2.41, 2.40])), "-q")
    assert failed.returncode == 1 and failed.stdout == ""
    bad = cli("validate", tmp_path / "missing.yaml", "--quiet")
    assert bad.returncode == 2 and bad.stderr.startswith("bakeoff: error:")  # errors still show


def test_piped_output_is_plain_and_never_wrapped(tmp_path):
    from bakeoff import report

    run = _run_dir(tmp_path)
    proc = bakeoff("report", run, env={"COLUMNS": "40", "TERM": "xterm-256color"})
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout  # no colour codes into a pipe or a file
    lines = proc.stdout.splitlines()
    for check in report(run).evaluation["checks"]:
        assert any(check["why"] in line for line in lines), check["why"]  # each sentence whole on one line
    assert any(line.startswith("verdict: pass") for line in lines)


def test_aws_commands_print_the_api_result(aws, tmp_path, cli):
    from bakeoff.pipelines import api

    env = dict(aws)
    deployed = _json(cli, "deploy", QUICKSTART, "--role", ROLE, "--bucket", BUCKET, env=env)
    again = api.deploy(QUICKSTART, role_arn=ROLE, bucket=BUCKET)
    assert deployed == {**again.model_dump(mode="json"), "action": deployed["action"],
                        "uploaded": deployed["uploaded"], "already_present": deployed["already_present"]}
    assert again.action == "updated" and sorted(again.already_present) == sorted(deployed["uploaded"]
                                                                                + deployed["already_present"])
    started = _json(cli, "start", "bakeoff-quickstart", "--param", "MaxSteps=10", env=env)
    handle = api.Execution.model_validate(started)
    assert handle.parameters == {"MaxSteps": "10"} and handle.pipeline_name == "bakeoff-quickstart"
    assert _json(cli, "wait", handle.arn, "--poll", "0.1", env=env) == \
        api.wait(handle, poll_s=0.1).model_dump(mode="json")


def test_status_and_stop_json_in_process(aws, monkeypatch, capsys):
    """moto lacks ListPipelineExecutionSteps and StopPipelineExecution: the CLI runs in this process with
    recorded answers given through the session the API uses."""
    import bakeoff.pipelines.api.aws as aws_api
    from bakeoff.pipelines import api
    from bakeoff.pipelines.cli.main import main

    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
    session = session_with({"ListPipelineExecutionSteps": recorded_execution("pass"),
                            "DescribePipelineExecution": {"PipelineExecutionStatus": "Stopping"},
                            "StopPipelineExecution": {"PipelineExecutionArn": arn}})
    real = aws_api.ops_for
    monkeypatch.setattr(aws_api, "ops_for", lambda s, region=None, profile=None, arn=None: real(session, region,
                                                                                               None, arn))
    for command, verb in (("status", api.status), ("stop", api.stop)):
        capsys.readouterr()
        assert main([command, arn, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == verb(arn).model_dump(mode="json")


def test_every_option_has_help_text():
    import argparse

    from bakeoff.pipelines.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in sub.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_bad_input_shows_every_error_with_its_place_and_json_says_so_on_stdout(cli, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nlegs: 3\nseeds: -1\n")
    proc = cli("validate", spec)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"bakeoff: error: {spec}:2: legs: Input should be a valid list",
                     f"bakeoff: error: {spec}:3: seeds: seeds must be between 1 and 100, got -1"], lines
    body = _json(cli, "validate", spec, code=2)
    assert body["error"] == "SpecError" and body["exit_code"] == 2
    assert [(e["line"], e["field"]) for e in body["errors"]] == [(2, "legs"), (3, "seeds")]


def test_an_unknown_region_is_bad_input(cli):
    proc = cli("images", "--region", "xx-foo-1")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("bakeoff: error: region: no training images are known in 'xx-foo-1'")
    assert _json(cli, "images", "--region", "xx-foo-1", code=2)["errors"][0]["field"] == "region"
