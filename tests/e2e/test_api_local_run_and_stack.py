"""The Python API against real work: `run_local` of a real bake-off prints nothing and reports its progress
as events, and `start` finds a pipeline deployed by a CloudFormation stack (moto's CloudFormation)."""
from __future__ import annotations

import json

import pytest
from moto_aws import API_BUCKET as BUCKET
from moto_aws import QUICKSTART, ROLE, session_with
from shared_runs import copied_tiny_run  # noqa: F401  (the fixture `tiny_run`: a copy of the one real run)


def test_run_local_prints_nothing_and_reports_progress_as_events(tiny_run, capfd):
    from bakeoff import RunSummary, run_local

    assert tiny_run["proc"].returncode in (0, 1, 3), tiny_run["proc"].stderr[-2000:]
    capfd.readouterr()
    events = []
    # Jobs whose inputs did not change are skipped; any code change since the fixture ran re-runs them.
    result = run_local(tiny_run["spec"], tiny_run["out"], progress=events.append)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert isinstance(result, RunSummary) and len(result.executed) + len(result.skipped) == 4
    assert [e.job for e in events if e.kind == "skipped"] == list(result.skipped)
    assert [e.job for e in events if e.kind == "finish"] == list(result.executed)
    assert any(e.kind == "note" and "evaluation" in e.message for e in events)
    assert result.exit_code == {"pass": 0, "fail": 1, "inconclusive": 3}[result.verdict]


# slow: moto's CloudFormation loads every resource model it emulates: about 20 s on 2 cores
def test_start_finds_a_cdk_deployed_pipeline_by_its_stack(aws, capfd):
    from bakeoff import SpecError, deploy, start, synth

    session = session_with()
    deployed = deploy(synth(QUICKSTART, bucket=BUCKET, role_arn=ROLE), role_arn=ROLE, session=session)
    cfn = session.client("cloudformation")
    template = {"Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
                "Outputs": {"BakeoffPipelineName5F3A9C1E": {"Value": deployed.pipeline_name},  # as CDK names it
                            "BakeoffPipelineArn0D2E4B6C": {"Value": deployed.pipeline_arn}}}
    cfn.create_stack(StackName="team-bakeoff", TemplateBody=json.dumps(template))
    execution = start(stack="team-bakeoff", session=session)
    assert execution.pipeline_name == deployed.pipeline_name
    assert "/execution/" in execution.arn
    cfn.create_stack(StackName="not-bakeoff", TemplateBody=json.dumps(
        {"Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}}))
    with pytest.raises(SpecError, match="no PipelineName output"):
        start(stack="not-bakeoff", session=session)
    with pytest.raises(SpecError, match="one of the two"):
        start(deployed, stack="team-bakeoff", session=session)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
