"""The Python API (bakeoff.pipelines.api) against a moto server over HTTP: quiet, typed, sessions, errors.

moto runs as a separate process so that nothing it logs can be mistaken for output of the API. moto
accepts any pipeline definition, "succeeds" executions at once and does not implement
ListPipelineExecutionSteps or StopPipelineExecution: those answers are recorded responses given through
the caller's boto3 session (a botocore `before-call` hook), the way an orchestration test would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import boto3
import pytest
from moto_aws import API_BUCKET as BUCKET
from moto_aws import QUICKSTART, ROLE, recorded_execution, session_with

from conftest import ROOT


# --- acceptance: a bake-off driven from Python, nothing printed ------------------------------------------
def test_a_bakeoff_driven_from_python_prints_nothing(aws, tmp_path, capfd):
    from bakeoff import Deployment, Execution, ExecutionStatus, Report, deploy, load_spec, report, start, synth, wait

    spec = load_spec(QUICKSTART)
    synthesized = synth(spec, bucket=BUCKET, role_arn=ROLE)
    assert synthesized.pipeline_name == "bakeoff-quickstart" and len(synthesized.assets) == 4
    assert synth(spec, bucket=BUCKET, role_arn=ROLE).definition_json() == synthesized.definition_json()

    session = session_with({"ListPipelineExecutionSteps": recorded_execution("pass")})
    events = []
    deployment = deploy(synthesized, role_arn=ROLE, session=session, progress=events.append)
    assert isinstance(deployment, Deployment)
    assert deployment.pipeline_arn == "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart"
    described = session.client("sagemaker").describe_pipeline(PipelineName="bakeoff-quickstart")
    assert json.loads(described["PipelineDefinition"]) == synthesized.definition
    assert {e.kind for e in events} <= {"upload"} and len(events) == len(deployment.uploaded)

    execution = start(deployment, {"MaxSteps": 10}, session=session)
    assert isinstance(execution, Execution) and execution.region == "us-east-1"
    assert execution.arn.startswith("arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/")
    assert execution.parameters == {"MaxSteps": "10"}
    final = wait(execution, poll_s=0.1, timeout_s=60, session=session)
    assert isinstance(final, ExecutionStatus) and final.succeeded and final.status == "Succeeded"

    result = report(execution, out_dir=tmp_path / "report", session=session)
    assert isinstance(result, Report) and result.verdict == "pass" and result.exit_code == 0
    assert result.report_path and (tmp_path / "report" / "report.html").exists()
    assert json.loads((tmp_path / "report" / "evaluation.json").read_text())["verdict"] == "pass"
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_results_are_frozen_and_round_trip_through_json(aws, tmp_path):
    from pydantic import ValidationError

    from bakeoff import Execution, Report, report, validate

    checked = validate(QUICKSTART)
    assert checked.jobs == 10 and [leg.devices for leg in checked.legs] == [32, 8]
    with pytest.raises(ValidationError):
        checked.jobs = 3  # type: ignore[misc]
    assert type(checked).model_validate(json.loads(checked.to_json())) == checked

    session = session_with({"ListPipelineExecutionSteps": recorded_execution("fail", "exec1")})
    handle = Execution(arn="arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1",
                       pipeline_name="bakeoff-quickstart", region="us-east-1")
    result = report(handle, out_dir=tmp_path, render=False, session=session)
    assert result.verdict == "fail" and result.exit_code == 1 and result.report_path is None
    again = Report.model_validate(json.loads(result.to_json()))
    assert again == result and again.evaluation["verdict"] == "fail"


def test_a_verdict_raises_an_error_carrying_the_evaluation(aws, tmp_path):
    from bakeoff import ParityFailed, ParityInconclusive, report
    from bakeoff.pipelines.errors import EXIT_FAIL, EXIT_INCONCLUSIVE

    execution = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
    for verdict, error, code in (("fail", ParityFailed, EXIT_FAIL), ("inconclusive", ParityInconclusive,
                                                                     EXIT_INCONCLUSIVE)):
        session = session_with({"ListPipelineExecutionSteps": recorded_execution(verdict)})
        result = report(execution, out_dir=tmp_path / verdict, render=False, session=session)
        with pytest.raises(error) as info:
            result.raise_for_verdict()
        assert info.value.exit_code == code and info.value.evaluation["verdict"] == verdict
        assert "legs" in info.value.evaluation
    session = session_with({"ListPipelineExecutionSteps": recorded_execution("pass")})
    passed = report(execution, out_dir=tmp_path / "pass", render=False, session=session)
    assert passed.raise_for_verdict() is passed


def test_aws_errors_carry_the_service_code(aws):
    from bakeoff import AwsError, SpecError, start

    with pytest.raises(AwsError) as info:
        start("bakeoff-no-such-pipeline", session=session_with())
    assert info.value.exit_code == 4 and info.value.code in ("ResourceNotFound", "ValidationException")
    assert "cannot start pipeline bakeoff-no-such-pipeline" in str(info.value) and "\n" not in str(info.value)

    def denied(params):
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}, "DescribePipeline")

    with pytest.raises(AwsError) as info:
        start("bakeoff-quickstart", session=session_with({"DescribePipeline": denied}))
    assert info.value.code == "AccessDeniedException" and info.value.operation == "start pipeline bakeoff-quickstart"
    with pytest.raises(SpecError):
        start("bakeoff-quickstart", {"NoSuchParameter": 1}, session=session_with({"DescribePipeline": {
            "PipelineDefinition": json.dumps({"Parameters": [{"Name": "MaxSteps"}]})}}))


def test_no_bare_exception_escapes(monkeypatch, tmp_path):
    import bakeoff.pipelines.api.local as local_api
    from bakeoff import RunError, SpecError, load_spec, validate

    with pytest.raises(SpecError) as info:
        load_spec(tmp_path / "missing.yaml")
    assert info.value.exit_code == 2
    with pytest.raises(SpecError):
        load_spec({"name": "x", "legs": []})

    def broken(*a, **kw):
        raise RuntimeError("the machine broke")

    monkeypatch.setattr(local_api, "_check_compiles", broken)
    with pytest.raises(RunError) as info:
        validate(QUICKSTART)
    assert isinstance(info.value.__cause__, RuntimeError) and "the machine broke" in str(info.value)


def test_wait_times_out_and_can_be_cancelled(aws):
    from bakeoff import Cancelled, RunError, TimedOut, wait

    executing = {"DescribePipelineExecution": {"PipelineExecutionStatus": "Executing"}}
    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/slow"
    with pytest.raises(TimedOut) as info:
        wait(arn, timeout_s=0, session=session_with(executing))
    assert isinstance(info.value, RunError) and info.value.exit_code == 4

    cancel = threading.Event()
    states = []

    def progress(event):
        states.append(event.status)
        cancel.set()  # as another thread would: the wait ends at its next look, not after poll_s

    with pytest.raises(Cancelled):
        wait(arn, poll_s=3600, timeout_s=7200, cancel=cancel, progress=progress, session=session_with(executing))
    assert states == ["Executing"]
    asked = []
    with pytest.raises(Cancelled):
        wait(arn, poll_s=0.01, cancel=lambda: asked.append(1) or len(asked) > 2, session=session_with(executing))
    assert len(asked) == 3


def test_stop_sends_an_idempotent_request(aws):
    from bakeoff import stop

    seen = []
    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec9"
    session = session_with({"StopPipelineExecution": lambda p: seen.append(p) or {"PipelineExecutionArn": arn},
                            "DescribePipelineExecution": {"PipelineExecutionStatus": "Stopping"}})
    state = stop(arn, session=session)
    stop(arn, session=session)
    assert state.status == "Stopping" and not state.finished
    assert seen[0]["PipelineExecutionArn"] == arn and seen[0]["ClientRequestToken"] == seen[1]["ClientRequestToken"]
    assert len(seen[0]["ClientRequestToken"]) >= 32  # the API's minimum length


def test_one_client_per_session_shared_by_threads(aws):
    from bakeoff import status
    from bakeoff.pipelines.api._support import ops_for

    recorded = recorded_execution("pass")
    session = session_with({"ListPipelineExecutionSteps": recorded,
                            "DescribePipelineExecution": {"PipelineExecutionStatus": "Succeeded"}})
    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
    results, errors = [], []

    def worker():
        try:
            results.append(status(arn, session=session))
        except Exception as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 8 and len({r.to_json() for r in results}) == 1
    assert results[0].steps[0].name == "Train-trn1-s0" and results[0].steps[-1].name == "Evaluate"
    assert ops_for(session, "us-east-1") is ops_for(session, "us-east-1")
    assert ops_for(session, "eu-west-1").sm.meta.region_name == "eu-west-1"


def test_an_execution_handle_carries_its_region(aws):
    from bakeoff import Execution
    from bakeoff.pipelines.api.aws import _ops_of

    session = boto3.session.Session(region_name="us-east-1")
    handle = Execution(arn="arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p/execution/e", pipeline_name="p",
                       region="eu-west-1")
    assert _ops_of(handle, None, session, None)[1].sm.meta.region_name == "eu-west-1"
    assert _ops_of(handle.arn, None, session, None)[1].sm.meta.region_name == "eu-west-1"
    assert _ops_of(handle, "us-west-2", session, None)[1].sm.meta.region_name == "us-west-2"


def test_importing_the_package_root_stays_light():
    code = ("import sys, bakeoff.pipelines; bakeoff.pipelines.__version__; "
            "print(','.join(m for m in ('torch', 'boto3', 'pydantic', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.strip()
    assert out == ""


def test_verbs_keep_their_names_over_submodules():
    import bakeoff.pipelines.plan  # the subpackage pipelines/plan/, named like the verb
    import bakeoff.pipelines.plan.model  # noqa: F401
    from bakeoff import pipelines
    from bakeoff.pipelines.api import plan, preflight, report
    from bakeoff.pipelines.cli.summary import render_summary

    assert pipelines.report is report and pipelines.plan is plan
    assert pipelines.preflight is preflight
    assert callable(render_summary)
    from bakeoff.pipelines.advice import price_list

    # The Price List module; the verb is bakeoff.pipelines.api.prices.
    assert price_list.__name__ == "bakeoff.pipelines.advice.price_list"


def test_errors_map_one_to_one_to_exit_codes(monkeypatch, capsys):
    from bakeoff import AwsError, BakeoffError, ParityFailed, ParityInconclusive, RunError, SpecError
    from bakeoff.pipelines.cli.main import main
    from bakeoff.pipelines.errors import VERDICT_EXIT, verdict_error

    codes = {SpecError: 2, ParityFailed: 1, ParityInconclusive: 3, AwsError: 4, RunError: 4}
    assert {cls: cls.exit_code for cls in codes} == codes
    assert all(issubclass(cls, BakeoffError) for cls in codes)
    for verdict, code in VERDICT_EXIT.items():
        error = verdict_error({"verdict": verdict})
        assert (error.exit_code if error else 0) == code
    import bakeoff.pipelines.api.local as local_api

    for error in (SpecError("bad"), AwsError("denied", code="AccessDenied"), RunError("broke"),
                  ParityFailed({"verdict": "fail", "summary": "legs differ"})):
        monkeypatch.setattr(local_api, "as_spec", lambda *a, _e=error, **kw: (_ for _ in ()).throw(_e))
        assert main(["validate", str(QUICKSTART)]) == error.exit_code
        assert capsys.readouterr().err.count("\n") == 1  # one line
