"""What a program driving bakeoff reads: one JSON error object on stdout for every failure under --json,
the exit codes each command can return (one table, in every epilog), and messages that name a parameter
as its reader passed it (`bucket=` to Python, `--bucket` on the command line)."""
from __future__ import annotations

import argparse
import json

import pytest
from moto_aws import ROLE

from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
ENTRY_KEYS = {"message", "file", "line", "field"}


def _commands():
    from bakeoff.pipelines.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _error(cli, *args, code: int, env=None) -> dict:
    """The command's stdout under --json: exactly one error object, whose exit code is the process's."""
    proc = cli(*args, "--json", env=env)
    assert proc.returncode == code, proc.stderr[-2000:]
    body = json.loads(proc.stdout)  # one object, nothing else on stdout
    assert body["exit_code"] == code and body["errors"], body
    assert all(set(entry) == ENTRY_KEYS for entry in body["errors"]), body
    assert proc.stderr.startswith(("bakeoff: error:", "usage:")), proc.stderr  # people still read stderr
    return body


def test_every_command_that_reports_has_json_and_every_json_command_is_known():
    with_json = {name for name, p in _commands().items() if any("--json" in a.option_strings for a in p._actions)}
    # Each prints its API verb's result; `data` and `synth --cdk-out` print a manifest that no verb returns.
    assert with_json == {"run", "preflight", "validate", "plan", "data", "instances", "images", "prices", "synth",
                         "deploy", "start", "retry", "status", "wait", "stop", "report", "project"}


def test_a_spec_with_several_errors_gives_every_one_with_its_place(cli, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nlegs: 3\nseeds: -1\n")
    for command in ("validate", "plan", "synth", "run"):
        args = (command, spec, "--out", tmp_path / "out") if command == "run" else (command, spec)
        body = _error(cli, *args, code=2)
        assert body["error"] == "SpecError"
        assert [(e["file"], e["line"], e["field"]) for e in body["errors"]] == [(str(spec), 2, "legs"),
                                                                                (str(spec), 3, "seeds")], command
    assert not (tmp_path / "out").exists()


def test_a_missing_run_directory_is_bad_input_as_json(cli, tmp_path):
    missing = tmp_path / "no-such-run"
    for args in (("report", missing), ("project", missing), ("plan", QUICKSTART, "--from", missing),
                 ("validate", QUICKSTART, "--from", missing)):
        body = _error(cli, *args, code=2)
        assert str(missing) in body["message"] and body["error"] == "SpecError", args
    assert _error(cli, "plan", QUICKSTART, "--from", missing, code=2)["message"] == \
        f"--from {missing}: no such run directory"  # the command line's flag, not the API's from_run=


def test_a_refused_command_line_is_bad_input_as_json(cli):
    body = _error(cli, "report", code=2)  # argparse: the target is missing
    assert "the following arguments are required: target" in body["message"]
    assert _error(cli, "validate", QUICKSTART, "--max-seeds", "3", code=2)["errors"][0]["message"] \
        .startswith("unrecognized arguments")


def test_an_aws_refusal_is_json_with_the_service_code(aws, cli):
    from bakeoff.pipelines import AwsError, api

    body = _error(cli, "deploy", QUICKSTART, "--role", ROLE, "--bucket", "bakeoff-no-such-bucket", code=4,
                  env=dict(aws))
    assert body["error"] == "AwsError" and body["code"] == "NoSuchBucket"
    assert body["operation"] == "reach bucket bakeoff-no-such-bucket"
    assert body["message"].endswith("or pass --bucket with one that does")
    with pytest.raises(AwsError) as raised:
        api.deploy(QUICKSTART, role_arn=ROLE, bucket="bakeoff-no-such-bucket")
    assert str(raised.value).endswith("or pass bucket= with one that does") and raised.value.code == "NoSuchBucket"


@pytest.mark.parametrize(("call", "python", "command_line"), [
    (lambda api, tmp: api.synth(QUICKSTART, bucket="Not_A_Bucket"),
     "bucket: 'Not_A_Bucket' is not an S3 bucket name", "--bucket: 'Not_A_Bucket' is not an S3 bucket name"),
    (lambda api, tmp: api.load_spec(QUICKSTART, ["seeds"]),
     "overrides=['seeds']: expected KEY=VALUE, e.g. overrides=['training.max_steps=50']",
     "--set seeds: expected KEY=VALUE, e.g. --set training.max_steps=50"),
    (lambda api, tmp: api.plan(QUICKSTART, from_run=tmp / "gone"),
     "from_run='{tmp}/gone': no such run directory", "--from {tmp}/gone: no such run directory"),
    (lambda api, tmp: api.run_local(QUICKSTART, tmp / "out", jobs=0),
     "jobs: 0: give a whole number of training jobs to run at once, 1 or more",
     "--jobs: 0: give a whole number of training jobs to run at once, 1 or more"),
    (lambda api, tmp: api.deploy(QUICKSTART, role_arn=""),
     "role_arn= is required: the SageMaker execution role ARN the jobs run as",
     "--role is required: the SageMaker execution role ARN the jobs run as"),
])
def test_api_errors_name_keyword_arguments_and_the_cli_its_flags(call, python, command_line, tmp_path):
    from bakeoff.pipelines import SpecError, api

    with pytest.raises(SpecError) as raised:
        call(api, tmp_path)
    assert str(raised.value) == python.format(tmp=tmp_path)
    assert raised.value.for_cli() == command_line.format(tmp=tmp_path)


def test_the_same_error_through_the_cli_names_the_flag(cli, tmp_path):
    proc = cli("synth", QUICKSTART, "--bucket", "Not_A_Bucket")
    assert proc.returncode == 2 and proc.stderr == "bakeoff: error: --bucket: 'Not_A_Bucket' is not an S3 bucket name\n"
    proc = cli("run", QUICKSTART, "--out", tmp_path / "out", "--jobs", "0")
    assert proc.returncode == 2 and proc.stderr.startswith("bakeoff: error: --jobs: 0: give a whole number")


def test_one_table_of_exit_codes_and_each_command_lists_its_own():
    from bakeoff.pipelines.errors import COMMANDS, EXIT_CODES, exit_codes_help

    assert set(COMMANDS) == set(_commands())
    codes = {row.code: row for row in EXIT_CODES}
    assert sorted(codes) == [0, 1, 2, 3, 4, 130, 143] and len(codes) == len(EXIT_CODES)  # one row per code
    assert set(codes[130].commands) == set(COMMANDS) - {"ui"}  # Ctrl-C ends a command with 130; `ui` it stops, 0
    for name, parser in _commands().items():
        listed = exit_codes_help(name)
        assert parser.epilog.endswith(listed), name
        for row in EXIT_CODES:
            assert (f" {row.code} " in f" {listed.removeprefix('exit codes:')}") == (name in row.commands), \
                (name, row.code)
    assert "3 inconclusive" in exit_codes_help("report") and " 3 " not in exit_codes_help("validate")
    assert "1 a blocker on a leg" in exit_codes_help("preflight")


def test_a_signal_is_json_with_its_exit_code():
    import signal

    from bakeoff.pipelines.errors import Interrupted, error_json

    assert error_json(KeyboardInterrupt())["exit_code"] == 130
    body = error_json(Interrupted(signal.SIGTERM))
    assert body["exit_code"] == 143 and body["message"] == "stopped by SIGTERM" and body["error"] == "Interrupted"


def test_plan_and_report_return_exported_typed_results(tmp_path):
    import typing

    from bakeoff import pipelines
    from bakeoff.pipelines import api

    assert pipelines.BudgetPlan is api.BudgetPlan and isinstance(api.plan(QUICKSTART), api.BudgetPlan)
    assert pipelines.Evaluation is api.Evaluation
    hints = typing.get_type_hints(api.Report, include_extras=False)
    assert hints["evaluation"] == dict[str, typing.Any]  # at run time a TypedDict is a dict; mypy reads Evaluation
    assert api.Report.model_fields["evaluation"].description.endswith("(bakeoff_runtime.contract.documents."
                                                                        "Evaluation)")
    with pytest.raises(ValueError, match="schema 'someone.else/1'"):
        api.Report(verdict="pass", exit_code=0, source="x", evaluation_path="x", report_path=None,
                   evaluation={"schema": "someone.else/1", "verdict": "pass"})


def test_words_keep_both_renderings_through_concatenation_and_re_raising():
    from bakeoff.pipelines.errors import SpecError, words
    from bakeoff.pipelines.params import FORCE, FRESH_START_REASON, OUT_DIR, OVERRIDES

    text = "start over with `" + words(FRESH_START_REASON) + "` or re-run with " + words(FORCE) + " into a new " \
        + words(OUT_DIR)
    assert str(text) == "start over with `fresh_start='REASON'` or re-run with force=True into a new out_dir="
    assert text.cli() == "start over with `--fresh-start REASON` or re-run with --force into a new --out"
    first = SpecError(words("expected KEY=VALUE"), file=words(OVERRIDES.given("seeds")), field=OVERRIDES)
    again = SpecError(first.message, file=first.file, line=first.line, field=first.field)  # as the loader re-raises
    assert str(again) == "overrides=['seeds']: overrides: expected KEY=VALUE" and again.field == "overrides"
    assert again.for_cli() == "--set seeds: --set: expected KEY=VALUE"
