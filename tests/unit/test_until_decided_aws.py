"""`start_until_decided` / `bakeoff start SPEC --until-decided`: rounds on SageMaker, each an update of
the pipeline with more seeds whose finished steps the step cache can serve."""
import json

import boto3
import pytest

from bakeoff.pipelines.errors import SpecError
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
ROLE = "arn:aws:iam::123456789012:role/bakeoff"


class FakeOps:
    """SageMakerOps as the rounds use it: deploy, start, wait, fetch_evaluation; the verdicts are scripted."""

    region = "us-east-1"

    def __init__(self, verdicts):
        self.verdicts = list(verdicts)
        self.deployed = []

    def deploy(self, compiled, progress=lambda m: None, tags=None):
        self.deployed.append(compiled)
        return {"pipeline_arn": f"arn:aws:sagemaker:us-east-1:123456789012:pipeline/{compiled.name}",
                "action": "updated", "uploaded": [], "already_present": []}

    def start(self, name, parameters=None, **labels):
        self.labels = getattr(self, 'labels', []) + [labels]
        return f"arn:aws:sagemaker:us-east-1:123456789012:pipeline/{name}/execution/r{len(self.deployed)}"

    def wait(self, arn, **kwargs):
        return {"execution_arn": arn, "status": "Succeeded", "failure_reason": None}

    def fetch_evaluation(self, arn):
        verdict = self.verdicts.pop(0)
        evaluation = {"verdict": verdict, "legs": {}, "checks": []}
        if verdict == "inconclusive":
            evaluation["recommendation"] = {"seeds": 8, "why": "8 seeds per leg would decide it"}
        return evaluation, {}


@pytest.fixture
def fake_ops(monkeypatch):
    from bakeoff.pipelines.api import _support

    holder = {}

    def ops_for(session, region, profile, arn=None):
        return holder["ops"]

    monkeypatch.setattr(_support, "ops_for", ops_for)
    import bakeoff.pipelines.api.aws as aws

    monkeypatch.setattr(aws, "ops_for", ops_for)
    return holder


def _train_steps(definition):
    # Tags are not part of a training step's cache key (AWS: docs.aws.amazon.com/sagemaker/latest/dg/
    # pipelines-default-keys.html); they carry the spec hash, which moves with the seed list.
    return {s["Name"]: {k: v for k, v in s["Arguments"].items() if k != "Tags"}
            for s in definition["Steps"] if s["Name"].startswith("Train-")}


def test_rounds_grow_the_seeds_and_keep_finished_steps_as_they_were(fake_ops):
    from bakeoff import start_until_decided

    fake_ops["ops"] = ops = FakeOps(["inconclusive", "pass"])
    decision = start_until_decided(QUICKSTART, role_arn=ROLE, bucket="bakeoff-test-bucket", max_seeds=10)
    assert decision.verdict == "pass" and decision.exit_code == 0
    # The next round adds at least one first round (5 seeds), or what the evaluation recommends if more.
    assert [len(r.seeds) for r in decision.rounds] == [5, 10]
    assert [r.verdict for r in decision.rounds] == ["inconclusive", "pass"]
    assert decision.rounds[1].execution_arn.endswith("/execution/r2")
    first, second = (_train_steps(c.definition) for c in ops.deployed)
    assert len(first) == 2 * 5 and len(second) == 2 * 10
    # The step cache keys on a step's arguments: every finished seed's step is unchanged.
    assert all(second[name] == args for name, args in first.items())
    assert json.loads(decision.model_dump_json())["rounds"][0]["seeds"] == [0, 1, 2, 3, 4]


def test_the_cap_ends_inconclusive(fake_ops):
    from bakeoff import start_until_decided

    fake_ops["ops"] = FakeOps(["inconclusive", "inconclusive"])
    decision = start_until_decided(QUICKSTART, role_arn=ROLE, bucket="bakeoff-test-bucket", max_seeds=8)
    assert decision.verdict == "inconclusive" and decision.exit_code == 3
    assert [len(r.seeds) for r in decision.rounds] == [5, 8]
    assert decision.evaluation["recommendation"]["seeds"] == 8


def test_the_cli_needs_a_role_and_prints_the_result_as_json(fake_ops, capsys):
    from bakeoff.pipelines.cli.main import main

    assert main(["start", str(QUICKSTART), "--until-decided"]) == 2
    assert "--role" in capsys.readouterr().err
    fake_ops["ops"] = FakeOps(["fail"])
    code = main(["start", str(QUICKSTART), "--until-decided", "--role", ROLE, "--bucket", "bakeoff-test-bucket",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "fail" and len(out["rounds"]) == 1


def test_start_needs_a_pipeline_or_a_stack_and_until_decided_needs_the_spec(capsys):
    from bakeoff.pipelines.cli.main import main

    assert main(["start"]) == 2 and "one of the two" in capsys.readouterr().err
    assert main(["start", "--stack", "team-bakeoff", "--until-decided", "--role", ROLE]) == 2
    assert "not --stack" in capsys.readouterr().err


# --- the API's own round loop against moto over HTTP, with recorded answers where moto has none -------------
def _lost_then_found(recorded):
    """DescribePipelineExecution / ListPipelineExecutionSteps / RetryPipelineExecution as SageMaker answers
    an execution whose seed Train-trn1-s2 was lost to infrastructure until it is retried once."""
    calls: dict[str, list] = {"retry": [], "start": []}

    def describe(params):
        state = "Succeeded" if calls["retry"] else "Failed"
        return {"PipelineExecutionArn": params["PipelineExecutionArn"], "PipelineExecutionStatus": state,
                "LastModifiedTime": 1796000000 + len(calls["retry"])}

    def steps(params):
        listing = json.loads(json.dumps(recorded, default=str))
        if not calls["retry"]:
            lost = next(s for s in listing["PipelineExecutionSteps"] if s["StepName"] == "Train-trn1-s2")
            lost.update(StepStatus="Failed", FailureReason="ClientError: InsufficientInstanceCapacity")
        return listing

    def retry(params):
        calls["retry"].append(params)
        return {"PipelineExecutionArn": params["PipelineExecutionArn"]}

    return calls, {"DescribePipelineExecution": describe, "ListPipelineExecutionSteps": steps,
                   "RetryPipelineExecution": retry}


def test_until_decided_through_the_api_retries_a_round_lost_to_infrastructure(aws):
    """`start_until_decided`'s rounds are `ops_round`'s: a round whose training step failed is retried
    (RetryPipelineExecution, sent as botocore's model has it) and decided with that seed, and each round's
    execution is started with its display name and description."""
    from moto_aws import API_BUCKET, recorded_execution, session_with

    from bakeoff import start_until_decided

    calls, answers = _lost_then_found(recorded_execution("pass"))
    session = session_with(answers)
    session.events.register("before-call.sagemaker.StartPipelineExecution",
                            lambda params, **kw: calls["start"].append(json.loads(params["body"])))
    said = []
    decision = start_until_decided(QUICKSTART, role_arn=ROLE, bucket=API_BUCKET, session=session, poll_s=0.01,
                                   progress=said.append)
    assert decision.verdict == "pass" and [r.verdict for r in decision.rounds] == ["pass"]
    (retried,) = calls["retry"]
    assert retried["PipelineExecutionArn"] == decision.rounds[0].execution_arn
    assert 32 <= len(retried["ClientRequestToken"]) <= 128  # the model's bounds for an idempotency token
    (started,) = calls["start"]
    assert started["PipelineExecutionDisplayName"] == "round-1-seeds-0-4"
    assert "round 1" in started["PipelineExecutionDescription"]
    assert any("Train-trn1-s2" in e.message and "retry 1 of 2" in e.message for e in said)


def test_retry_retries_a_failed_execution_and_the_cli_refuses_one_that_did_not_fail(aws, capsys):
    from moto_aws import API_BUCKET, recorded_execution, session_with

    from bakeoff import deploy, retry, start, synth
    from bakeoff.pipelines.cli.main import main

    calls, answers = _lost_then_found(recorded_execution("pass"))
    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
    again = retry(arn, session=session_with(answers))
    assert again.arn == arn and again.pipeline_name == "bakeoff-quickstart" and len(calls["retry"]) == 1
    # Retried, it succeeded: asking again is refused before any request.
    with pytest.raises(SpecError, match="is Succeeded: only a Failed or Stopped execution can be retried"):
        retry(arn, session=session_with(answers))
    assert len(calls["retry"]) == 1

    # The CLI against moto itself, whose executions succeed at once: one line, exit 2.
    deployment = deploy(synth(QUICKSTART, bucket=API_BUCKET, role_arn=ROLE), role_arn=ROLE)
    seen = []
    session = boto3.session.Session(region_name="us-east-1")
    session.events.register("before-call.sagemaker.StartPipelineExecution",
                            lambda params, **kw: seen.append(json.loads(params["body"])))
    execution = start(deployment, display_name="seeds-0-4", description="the first five seeds", max_parallel_steps=2,
                      session=session)
    assert seen[0]["ParallelismConfiguration"] == {"MaxParallelExecutionSteps": 2}
    assert seen[0]["PipelineExecutionDisplayName"] == "seeds-0-4"
    assert main(["start", "bakeoff-quickstart", "--max-parallel", "0"]) == 2
    assert "at least 1 step" in capsys.readouterr().err
    assert main(["retry", execution.arn]) == 2
    err = capsys.readouterr().err
    assert "only a Failed or Stopped execution" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert main(["start", "bakeoff-quickstart", "--display-name", "round 2"]) == 2
    assert "display name 'round 2'" in capsys.readouterr().err


def test_retry_of_a_stopped_execution_runs_its_lost_steps_selectively_with_its_own_parameters():
    """A stopped execution cannot be retried; what it did not finish runs as a selective execution whose
    source is the stopped one (its finished steps' outputs reused), with the stopped execution's parameters."""
    from moto_aws import session_with

    from bakeoff import retry
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec

    definition = compile_pipeline(load_spec(QUICKSTART, ["seeds=2"])).definition
    names = [s["Name"] for s in definition["Steps"]]
    finished = [n for n in names if n.startswith("Train-p4d-")] + ["Train-trn1-s0"]
    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/stopped1"
    started = []

    def start(params):
        started.append(params)
        return {"PipelineExecutionArn": arn.replace("stopped1", "rerun1")}

    described = []

    def describe(params):
        described.append(params)
        return {"PipelineExecutionArn": arn, "PipelineExecutionStatus": "Stopped"}

    session = session_with({
        "DescribePipelineExecution": describe,
        "ListPipelineExecutionSteps": {"PipelineExecutionSteps": [
            *({"StepName": n, "StepStatus": "Succeeded"} for n in finished),
            {"StepName": "Train-trn1-s1", "StepStatus": "Stopped"}]},
        "DescribePipelineDefinitionForExecution": {"PipelineDefinition": json.dumps(definition)},
        "ListPipelineParametersForExecution": {"PipelineParameters": [{"Name": "MaxSteps", "Value": "40"}]},
        "StartPipelineExecution": start})
    again = retry(arn, session=session)
    assert again.arn.endswith("/execution/rerun1")
    (request,) = started
    selected = [s["StepName"] for s in request["SelectiveExecutionConfig"]["SelectedSteps"]]
    # Every step that did not succeed, the decision included; nothing that did.
    assert set(selected) == set(names) - set(finished) and "Train-trn1-s1" in selected and "Evaluate" in selected
    assert request["SelectiveExecutionConfig"]["SourcePipelineExecutionArn"] == arn
    assert request["PipelineParameters"] == [{"Name": "MaxSteps", "Value": "40"}]
    assert request["PipelineExecutionDisplayName"] == "rerun-stopped1"
    assert len(described) == 1  # the execution is described once, to learn it was stopped
