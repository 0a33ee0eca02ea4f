"""`start_until_decided` / `bakeoff start SPEC --until-decided`: rounds on SageMaker, each an update of
the pipeline with more seeds whose finished steps the step cache can serve."""
import json

import pytest

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

    def start(self, name, parameters=None):
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
    from pipelines.api import _support

    holder = {}

    def ops_for(session, region, profile, arn=None):
        return holder["ops"]

    monkeypatch.setattr(_support, "ops_for", ops_for)
    import pipelines.api.aws as aws

    monkeypatch.setattr(aws, "ops_for", ops_for)
    return holder


def _train_steps(definition):
    # Tags are not part of a training step's cache key (AWS: docs.aws.amazon.com/sagemaker/latest/dg/
    # pipelines-default-keys.html); they carry the spec hash, which moves with the seed list.
    return {s["Name"]: {k: v for k, v in s["Arguments"].items() if k != "Tags"}
            for s in definition["Steps"] if s["Name"].startswith("Train-")}


def test_rounds_grow_the_seeds_and_keep_finished_steps_as_they_were(fake_ops):
    from pipelines import start_until_decided

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
    from pipelines import start_until_decided

    fake_ops["ops"] = FakeOps(["inconclusive", "inconclusive"])
    decision = start_until_decided(QUICKSTART, role_arn=ROLE, bucket="bakeoff-test-bucket", max_seeds=8)
    assert decision.verdict == "inconclusive" and decision.exit_code == 3
    assert [len(r.seeds) for r in decision.rounds] == [5, 8]
    assert decision.evaluation["recommendation"]["seeds"] == 8


def test_the_cli_needs_a_role_and_prints_the_result_as_json(fake_ops, capsys):
    from pipelines.cli.main import main

    assert main(["start", str(QUICKSTART), "--until-decided"]) == 2
    assert "--role" in capsys.readouterr().err
    fake_ops["ops"] = FakeOps(["fail"])
    code = main(["start", str(QUICKSTART), "--until-decided", "--role", ROLE, "--bucket", "bakeoff-test-bucket",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "fail" and len(out["rounds"]) == 1


def test_start_needs_a_pipeline_or_a_stack_and_until_decided_needs_the_spec(capsys):
    from pipelines.cli.main import main

    assert main(["start"]) == 2 and "one of the two" in capsys.readouterr().err
    assert main(["start", "--stack", "team-bakeoff", "--until-decided", "--role", ROLE]) == 2
    assert "not --stack" in capsys.readouterr().err
