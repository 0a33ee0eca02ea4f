"""deploy/start/status/report through boto3 over HTTP to a moto server on 127.0.0.1.

moto validates nothing (any definition is accepted, executions "succeed" at once and
run no steps) and does not implement ListPipelineExecutionSteps: step listings here
are recorded responses shaped like the real API, and say so where they are used.
"""
import json
import subprocess
import sys
import tarfile

import pytest
from botocore.stub import Stubber
from jobtree import seal
from moto_aws import BUCKET, QUICKSTART, ROLE, _client, _make_jobs, _recorded_fetch, _recorded_steps

from bakeoff.pipelines.errors import AwsError
from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.sagemaker.billable import apply_billable_time
from bakeoff.pipelines.sagemaker.ops import SageMakerOps
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_runtime.contract.output_digest import DIGEST_FILE
from conftest import ENTRYPOINTS


def test_deploy_requires_a_role(moto_env, cli):
    proc = cli("deploy", QUICKSTART, "--bucket", BUCKET, env=moto_env)
    assert proc.returncode == 2 and "--role is required" in proc.stderr


def _evaluation():
    def runs():
        return [{"seed": s, "status": "completed", "reason": None, "val_loss": 2.4, "billable_s": 60.0,
                         "cost_usd": None} for s in range(3)]
    return {"verdict": "pass", "summary": "parity holds", "bakeoff": "quickstart", "failed_checks": "none",
            "parity": {"metric": "val_loss", "direction": "minimize", "baseline": "p4d", "margin": 0.1, "alpha": 0.05},
            "checks": [{"name": "parity:trn1~p4d", "status": "passed", "passed": True, "why": "equivalent"}],
            "cost_basis": "estimate",
            "legs": {leg: {"instance_type": it, "instance_count": 1, "backend": b, "precision": "bf16",
                           "runs": runs(), "completed": 3, "metric": {"mean": 2.4, "std": 0.01},
                           "price": {"usd_per_hour": price, "source": "test", "as_of": "today"}}
                     for leg, it, b, price in (("trn1", "ml.trn1.32xlarge", "neuron", 36.0),
                                               ("p4d", "ml.p4d.24xlarge", "cuda", 18.0))}}


def test_status_and_report_against_moto_with_recorded_steps(aws_env, monkeypatch, capsys):
    sm, s3 = _client("sagemaker", aws_env), _client("s3", aws_env)
    s3.create_bucket(Bucket=BUCKET)
    arns, proc_arn = _make_jobs(sm, s3)
    s3.put_object(Bucket=BUCKET, Key="bakeoff/quickstart/evaluation/exec1/evaluation.json",
                  Body=json.dumps(_evaluation()).encode())
    failure = "AlgorithmError: neuronx-cc: compilation failed (see the job's log)"
    recorded = _recorded_steps(arns, proc_arn, failure=failure)
    ops = SageMakerOps(region="us-east-1")
    monkeypatch.setattr(ops.sm, "list_pipeline_execution_steps", lambda **kw: recorded)
    execution = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
    monkeypatch.setattr(ops.sm, "describe_pipeline_execution",
                        lambda **kw: {"PipelineExecutionStatus": "Failed", "FailureReason": "Step failure"})
    status = ops.status(execution)
    assert status["status"] == "Failed"
    first = status["steps"][0]
    assert first["name"] == "Train-trn1-s0" and first["status"] == "Failed" and first["failure_reason"] == failure
    assert first["job_arn"] == arns[("trn1", 0)]
    assert status["steps"][1]["cache_hit"] is True

    evaluation, billable = ops.fetch_evaluation(execution)  # describe_* and S3 over HTTP to moto
    assert evaluation["verdict"] == "pass"
    # moto reports no BillableTimeInSeconds and equal start/end times: the fallback gives 0 s.
    assert billable == dict.fromkeys(arns, 0.0)


def test_report_costs_jobs_by_billable_time():
    ops = SageMakerOps(region="us-east-1")
    execution = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
    arns = {("trn1", 0): "arn:aws:sagemaker:us-east-1:123456789012:training-job/t0",
            ("p4d", 0): "arn:aws:sagemaker:us-east-1:123456789012:training-job/p0"}
    proc_arn = "arn:aws:sagemaker:us-east-1:123456789012:processing-job/ev"
    with Stubber(ops.sm) as sm_stub, Stubber(ops.s3) as s3_stub:
        _recorded_fetch(sm_stub, s3_stub, execution, arns, proc_arn, {("trn1", 0): 1800, ("p4d", 0): 3600},
                        _evaluation())
        evaluation, billable = ops.fetch_evaluation(execution)
    assert billable == {("trn1", 0): 1800.0, ("p4d", 0): 3600.0}
    costed = apply_billable_time(evaluation, billable)
    trn = costed["legs"]["trn1"]["runs"][0]
    assert trn["billable_s"] == 1800.0 and trn["cost_usd"] == pytest.approx(18.0)  # 0.5 h x $36
    assert costed["legs"]["p4d"]["runs"][0]["cost_usd"] == pytest.approx(18.0)  # 1 h x $18
    assert "BillableTimeInSeconds" in costed["cost_basis"]


@pytest.mark.parametrize("code,message,expect", [
    ("AccessDeniedException", "User is not authorized to perform: sagemaker:CreatePipeline",
     "access denied while trying to create pipeline bakeoff-quickstart"),
    ("ThrottlingException", "Rate exceeded", "AWS kept throttling while trying to create pipeline"),
    ("ResourceInUse", "Pipeline is being updated", "the pipeline is in use"),
    ("ValidationException", "Could not assume role arn:aws:iam::123456789012:role/bakeoff-test",
     "check that the role exists and trusts sagemaker.amazonaws.com"),
])
def test_aws_errors_are_one_clear_line(code, message, expect):
    compiled = compile_pipeline(load_spec(QUICKSTART), role_arn=ROLE, bucket=BUCKET)
    ops = SageMakerOps(region="us-east-1")
    with Stubber(ops.s3) as s3_stub, Stubber(ops.sm) as sm_stub:
        s3_stub.add_response("head_bucket", {}, {"Bucket": BUCKET})
        for asset in compiled.assets:
            s3_stub.add_response("head_object", {}, {"Bucket": BUCKET, "Key": asset.key})
        sm_stub.add_client_error("describe_pipeline", "ResourceNotFound", "Pipeline not found")
        sm_stub.add_client_error("create_pipeline", code, message)
        with pytest.raises(AwsError) as info:
            ops.deploy(compiled)
    text = str(info.value)
    assert expect in text and "\n" not in text


def test_evaluate_fetches_job_outputs_from_s3(aws_env, tmp_path):
    """The evaluation step's own download path (`--job NAME=s3://...output.tar.gz`), over HTTP."""
    s3 = _client("s3", aws_env)
    s3.create_bucket(Bucket="eval-fetch")
    cfg = {"bakeoff": "q", "spec_hash": "h", "parity": {"metric": "val_loss", "direction": "minimize",
                                                         "margin": 0.1, "margin_type": "absolute", "alpha": 0.05,
                                                         "baseline": "b"},
           "legs": {leg: {"instance_type": "ml.m5.xlarge", "instance_count": 1, "backend": "cpu", "seeds": [0, 1]}
                    for leg in ("a", "b")}}
    args = []
    for leg in ("a", "b"):
        for seed in (0, 1):
            src = tmp_path / f"{leg}{seed}"
            src.mkdir()
            (src / "summary.json").write_text(json.dumps({"leg": leg, "seed": seed, "status": "completed",
                                                          "metrics": {"val_loss": 2.0 + seed / 100}}))
            with tarfile.open(src / "output.tar.gz", "w:gz") as tar:
                tar.add(src / "summary.json", arcname="summary.json")
                tar.add(seal(src), arcname=DIGEST_FILE)
            key = f"jobs/{leg}-s{seed}/job/output/output.tar.gz"
            s3.upload_file(str(src / "output.tar.gz"), "eval-fetch", key)
            args.append(f"--job={leg}-s{seed}=s3://eval-fetch/{key}")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "evaluate.py"), "--config", str(tmp_path / "config.json"),
                           "--out", str(tmp_path / "out"), "--jobs", str(tmp_path / "jobs"), *args],
                          capture_output=True, text=True, env={**__import__("os").environ, **aws_env})
    assert proc.returncode == 0, proc.stderr
    ev = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert ev["legs"]["a"]["completed"] == 2 and ev["verdict"] == "pass"


def _bare_env(tmp_path, **extra):
    """An environment with no AWS configuration at all (no credentials, no region, no profile)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_EC2_METADATA_DISABLED": "true", **extra})
    return env


def test_no_region_and_no_credentials_are_one_line_not_a_traceback(tmp_path, monkeypatch, cli):
    import os

    def run(*args):  # the CLI in this process, in an environment with nothing of AWS in it
        with monkeypatch.context() as m:
            for key in [k for k in os.environ if k.startswith("AWS_")]:
                m.delenv(key)
            return cli(*args, env={k: v for k, v in _bare_env(tmp_path).items() if k.startswith("AWS_")})

    no_region = run("start", "bakeoff-quickstart")
    assert no_region.returncode == 4 and "Traceback" not in no_region.stderr
    assert len(no_region.stderr.strip().splitlines()) == 1 and "no AWS region set" in no_region.stderr
    no_creds = run("deploy", str(QUICKSTART), "--role", ROLE, "--bucket", BUCKET)
    assert no_creds.returncode == 4 and "Traceback" not in no_creds.stderr
    assert len(no_creds.stderr.strip().splitlines()) == 1 and "no AWS credentials found" in no_creds.stderr


def test_status_and_report_take_the_region_from_the_execution_arn():
    from bakeoff.pipelines.aws_session import region_of

    arn = "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/bakeoff-q/execution/abc123"
    assert region_of(arn) == "eu-west-1" and region_of("bakeoff-q") is None
    assert SageMakerOps(arn=arn).sm.meta.region_name == "eu-west-1"
    assert SageMakerOps(region="us-west-2", arn=arn).sm.meta.region_name == "us-west-2"  # --region wins


def test_a_retry_is_the_modelled_request_and_idempotent_per_attempt():
    ops = SageMakerOps(region="us-east-1")
    arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-q/execution/abc123"
    tokens = []
    with Stubber(ops.sm) as stub:  # Stubber checks the request against botocore's SageMaker model
        for attempt in (1, 1, 2):
            from bakeoff.pipelines.hashing import digest

            token = digest(f"{arn}#{attempt}", 32)
            tokens.append(token)
            stub.add_response("retry_pipeline_execution", {"PipelineExecutionArn": arn},
                              {"PipelineExecutionArn": arn, "ClientRequestToken": token})
        assert [ops.retry(arn, a) for a in (1, 1, 2)] == [arn] * 3
        stub.assert_no_pending_responses()
    assert tokens[0] == tokens[1] != tokens[2] and len(tokens[0]) >= 32


def test_a_deploy_with_more_seeds_after_an_undecided_execution_is_refused(aws_env, monkeypatch):
    """SageMaker's executions are the looks of a deployed bake-off: the definition each ran says which
    jobs it decided on. Deploying seeds that overlap them without being the same set is refused. (A
    pipeline of its own: the module's moto server keeps the quickstart's pipeline of other tests.)"""
    import bakeoff.pipelines.api.aws as api

    sm, s3 = _client("sagemaker", aws_env), _client("s3", aws_env)
    s3.create_bucket(Bucket=BUCKET)
    arns, proc_arn = _make_jobs(sm, s3)
    undecided = {**_evaluation(), "verdict": "inconclusive"}
    s3.put_object(Bucket=BUCKET, Key="bakeoff/quickstart/evaluation/exec1/evaluation.json",
                  Body=json.dumps(undecided).encode())
    ops = SageMakerOps(region="us-east-1")
    # Recorded shape of ListPipelineExecutionSteps (moto does not implement it); the rest over HTTP.
    monkeypatch.setattr(ops.sm, "list_pipeline_execution_steps", lambda **kw: _recorded_steps(arns, proc_arn))
    monkeypatch.setattr(api, "ops_for", lambda *a, **k: ops)

    def deploy(seeds):
        return api.deploy(QUICKSTART, role_arn=ROLE, bucket=BUCKET, overrides=[f"seeds={seeds}", "name=looks"],
                          skip_quota_check=True)

    first = deploy(3)
    assert first.action == "created" and ops.decided_looks(first.pipeline_name) == []
    execution = api.start(first.pipeline_name)
    assert sm.describe_pipeline_execution(PipelineExecutionArn=execution.arn)["PipelineExecutionStatus"] == "Succeeded"
    looks = ops.decided_looks(first.pipeline_name)
    assert [(x["seeds"], x["verdict"], x["design"]["kind"]) for x in looks] == [([0, 1, 2], "inconclusive", "fixed")]
    with pytest.raises(api.SpecError) as refused:
        deploy(6)
    line = str(refused.value)
    assert "pipeline bakeoff-looks was decided `inconclusive` on seeds 0-2 (look 1, fixed design: " in line
    assert execution.arn in line and "e.g. `seeds: [6, 7, 8, 9, 10, 11]`" in line
    definition = json.loads(sm.describe_pipeline(PipelineName=first.pipeline_name)["PipelineDefinition"])
    assert not any(s["Name"].endswith("-s5") for s in definition["Steps"]), "the refused deploy updated the pipeline"
    assert deploy(3).action == "updated"  # the same seeds: the same look
    fresh = deploy("[3, 4, 5]")
    assert fresh.action == "updated"
