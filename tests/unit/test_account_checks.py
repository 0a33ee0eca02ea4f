"""Deploy-time account checks: SageMaker quotas against the pipeline's peak, and the MLflow server's version.

moto 5.2.5 implements neither Service Quotas' ListServiceQuotas (only ListAWSDefaultServiceQuotas, and not
for sagemaker) nor SageMaker's DescribeMlflowTrackingServer: grep `.venv/lib/python*/site-packages/moto/
servicequotas/responses.py` and `moto/sagemaker/responses.py`. So those two answer through botocore's
Stubber, whose responses are checked against botocore's own service models; S3 and the pipeline itself
are moto's (in-process `mock_aws`), so `deploy` runs end to end. The quota codes of ml.p4d.24xlarge,
ml.m5.xlarge (processing) and the account-wide total are the ones a real sagemaker listing shows; the
trn1 codes are made up (no public listing we found has them).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from conftest import tiny_spec, write_spec

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/bakeoff-test"
BUCKET = "bakeoff-quota-test"
TRN1 = "ml.trn1.32xlarge for training job usage"
TRN1_SPOT = "ml.trn1.32xlarge for spot training job usage"
P4D = "ml.p4d.24xlarge for training job usage"
EVAL = "ml.m5.xlarge for processing job usage"
TOTAL = "Number of instances across all training jobs"
CODES = {TRN1: "L-7A1B2C3D", TRN1_SPOT: "L-7A1B2C3E", P4D: "L-09B4A649",
         "ml.p4d.24xlarge for spot training job usage": "L-09D56C4F", EVAL: "L-0307F515", TOTAL: "L-00C91CB5"}
SERVER = "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/bakeoff-mlflow"


def _spec(tmp_path: Path, *, seeds: int = 3, trn1: dict | None = None, **over) -> Path:
    """Two legs (trn1.32xlarge, p4d) reading S3 data (no corpus to prepare, so compiling is quick)."""
    spec = tiny_spec(seeds=seeds, data={"channels": {"train": "s3://bakeoff-data/train/",
                                                     "validation": "s3://bakeoff-data/validation/"}}, **over)
    spec["legs"][0].update(instance_type="ml.trn1.32xlarge", **(trn1 or {}))
    spec["training"]["global_batch_size"] = 64
    return write_spec(tmp_path / "bakeoff.yaml", spec)


def _quota(name: str, value: float) -> dict:
    """One quota as ListServiceQuotas returns it (the model's Quota shape)."""
    code = CODES.get(name, "L-0F0F0F0F")
    return {"ServiceCode": "sagemaker", "ServiceName": "Amazon SageMaker", "QuotaCode": code, "QuotaName": name,
            "QuotaArn": f"arn:aws:servicequotas:{REGION}:123456789012:sagemaker/{code}", "Value": value,
            "Unit": "None", "Adjustable": True, "GlobalQuota": False}


def _listing(stub: Stubber, quotas: list[dict], operation: str = "list_service_quotas", pages: int = 1) -> None:
    size = -(-len(quotas) // pages) if quotas else 0
    for i in range(pages):
        page: dict = {"Quotas": quotas[i * size:(i + 1) * size]}
        if i < pages - 1:
            page["NextToken"] = f"page{i + 1}"
        expected = {"ServiceCode": "sagemaker", "MaxResults": 100, **({"NextToken": f"page{i}"} if i else {})}
        stub.add_response(operation, page, expected)


ENOUGH = {TRN1: 8, TRN1_SPOT: 8, P4D: 8, EVAL: 2, TOTAL: 20}


@pytest.fixture
def aws(monkeypatch):
    """moto in this process, and the operations of one session (made before any call, as the API shares them)."""
    from moto import mock_aws

    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        from bakeoff.pipelines.api._support import ops_for
        from bakeoff.pipelines.sagemaker import quotas

        session = boto3.session.Session(region_name=REGION)
        ops = ops_for(session, REGION)  # the API finds these operations again through the session
        sq = Stubber(ops.client("service-quotas", retries=quotas.RETRIES))
        sq.activate()
        yield ops, sq
        sq.deactivate()


@pytest.fixture
def cli(aws, monkeypatch):
    """`main([...])` with every AWS call through the fixture's session."""
    import bakeoff.pipelines.api.aws as aws_api

    ops, _ = aws
    real = aws_api.ops_for
    monkeypatch.setattr(aws_api, "ops_for", lambda s, region=None, profile=None, arn=None:
                        real(ops.session, region, None, arn))
    return aws


def _checks(spec: Path, ops):
    from bakeoff.pipelines import api

    return api.account_checks(spec, session=ops.session)


# --- what the pipeline needs ---------------------------------------------------------------------
def test_the_peak_counts_instances_seeds_spot_and_helper_steps_that_run_together(tmp_path):
    from bakeoff.pipelines.api import synth
    from bakeoff.pipelines.sagemaker.quotas import needs

    spec = _spec(tmp_path, trn1={"instance_count": 2, "collective_check": True, "precompile": True,
                                 "managed_spot": "after_first_seed"})
    compiled = synth(spec)._compiled
    steps = [s["Name"] for s in compiled.definition["Steps"]]
    assert steps[:3] == ["Collective-trn1", "Precompile-trn1", "Train-trn1-s0"]
    # Collective -> Precompile -> seeds run one after the other on trn1's on-demand quota: 2 instances, not 6;
    # seeds 1 and 2 run on spot (a quota of their own) side by side: 2 x 2.
    assert {n.quota: n.needed for n in needs(compiled.definition, 8)} == {
        TRN1: 2, TRN1_SPOT: 4, P4D: 3, EVAL: 1, TOTAL: 5}
    # Two steps at once: the spot seeds still fit (4); on demand, a trn1 helper (2) beside one p4d seed (1).
    assert {n.quota: n.needed for n in needs(compiled.definition, 2)} == {
        TRN1: 2, TRN1_SPOT: 4, P4D: 2, EVAL: 1, TOTAL: 3}


def test_enough_quota_is_no_problem(aws, tmp_path):
    ops, sq = aws
    _listing(sq, [_quota(name, value) for name, value in ENOUGH.items()])
    checks = _checks(_spec(tmp_path), ops)
    assert checks.problems == () and checks.warnings == () and checks.ok
    by_name = {q.quota_name: q for q in checks.quotas}
    assert set(by_name) == {TRN1, P4D, EVAL, TOTAL}
    assert by_name[TRN1].needed == 3 and by_name[TRN1].value == 8 and by_name[TRN1].quota_code == CODES[TRN1]
    assert not any(q.short for q in checks.quotas)
    sq.assert_no_pending_responses()


def test_a_short_trn1_quota_exits_2_with_one_line_naming_the_quota_and_the_need(cli, tmp_path, capsys):
    from bakeoff.pipelines.cli.main import main

    _, sq = cli
    _listing(sq, [_quota(name, 1 if name == TRN1 else value) for name, value in ENOUGH.items()])
    assert main(["validate", str(_spec(tmp_path)), "--aws"]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"bakeoff: error: quota '{TRN1}' ({CODES[TRN1]}) is 1 in {REGION}; the pipeline "
                               "needs 3 at once")
    assert (f"aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code {CODES[TRN1]} "
            f"--desired-value 3 --region {REGION}") in lines[0]
    # One trn1 job needs 1 instance, so running fewer steps at once would also fit the quota.
    assert lines[0].endswith("; or set max_parallel_steps: 1 in the spec (jobs then queue)")
    assert f"quota {TRN1} ({CODES[TRN1]}) in {REGION}: 1, needs 3 at once: SHORT" in out


def test_a_short_quota_stops_deploy_before_anything_is_created(cli, tmp_path, capsys):
    from bakeoff.pipelines import SpecError, api
    from bakeoff.pipelines.cli.main import main

    ops, sq = cli
    ops.s3.create_bucket(Bucket=BUCKET)
    spec = _spec(tmp_path, max_parallel_steps=4)
    _listing(sq, [_quota(name, 0 if name == P4D else value) for name, value in ENOUGH.items()])
    assert main(["deploy", str(spec), "--role", ROLE, "--bucket", BUCKET]) == 2
    err = capsys.readouterr().err
    assert err.count("bakeoff: error: ") == 1 and f"quota '{P4D}' ({CODES[P4D]}) is 0" in err
    assert "needs 3 at once (3 of its steps use it, at most 4 steps run at once)" in err
    assert ops.s3.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 0  # nothing uploaded
    assert ops.sm.list_pipelines()["PipelineSummaries"] == []  # nothing created
    _listing(sq, [_quota(name, 0 if name == P4D else value) for name, value in ENOUGH.items()])
    assert main(["deploy", str(spec), "--role", ROLE, "--bucket", BUCKET, "--json"]) == 2
    body = json.loads(capsys.readouterr().out)  # a program reading stdout learns why: one error per short quota
    assert body["exit_code"] == 2 and body["error"] == "QuotaShortfall"
    assert [e["message"] for e in body["errors"]] == [line.removeprefix("bakeoff: error: ")
                                                      for line in err.splitlines() if line.startswith("bakeoff: ")]

    _listing(sq, [_quota(name, 2 if name == P4D else value) for name, value in ENOUGH.items()])
    with pytest.raises(SpecError) as caught:  # the Python API: a SpecError (exit 2) carrying the checks
        api.deploy(spec, role_arn=ROLE, bucket=BUCKET, session=ops.session)
    assert caught.value.exit_code == 2 and caught.value.checks.problems == (str(caught.value),)
    # Two p4d jobs at once fit: the line offers that instead of a bigger quota.
    assert str(caught.value).endswith("; or set max_parallel_steps: 2 in the spec (jobs then queue)")


def test_enough_quota_deploys_and_skip_quota_check_reads_none(cli, tmp_path, capsys):
    from bakeoff.pipelines.cli.main import main

    ops, sq = cli
    ops.s3.create_bucket(Bucket=BUCKET)
    spec = _spec(tmp_path)
    _listing(sq, [_quota(name, value) for name, value in ENOUGH.items()])
    assert main(["deploy", str(spec), "--role", ROLE, "--bucket", BUCKET, "-q"]) == 0
    assert [p["PipelineName"] for p in ops.sm.list_pipelines()["PipelineSummaries"]] == ["bakeoff-tiny"]
    sq.assert_no_pending_responses()
    # No quota answers queued: any Service Quotas call would fail the stubbed client.
    assert main(["deploy", str(spec), "--role", ROLE, "--bucket", BUCKET, "--skip-quota-check", "--json"]) == 0
    assert '"action": "updated"' in capsys.readouterr().out


def test_spot_seeds_count_against_the_spot_quota_alone(aws, tmp_path):
    ops, sq = aws
    # Every trn1 job on spot: its on-demand quota (0 here) is not drawn on at all.
    quotas = {**ENOUGH, TRN1: 0, TRN1_SPOT: 2}
    _listing(sq, [_quota(name, value) for name, value in quotas.items()])
    checks = _checks(_spec(tmp_path, trn1={"managed_spot": True}), ops)
    assert TRN1 not in {q.quota_name for q in checks.quotas}
    assert len(checks.problems) == 1 and checks.problems[0].startswith(
        f"quota '{TRN1_SPOT}' ({CODES[TRN1_SPOT]}) is 2 in {REGION}; the pipeline needs 3 at once")
    # 3 p4d seeds on demand: the account-wide total counts them, not the spot seeds.
    assert {q.quota_name: q.needed for q in checks.quotas}[TOTAL] == 3


def test_every_page_of_the_listing_is_read(aws, tmp_path):
    ops, sq = aws
    filler = [_quota(f"ml.c5.{i}xlarge for endpoint usage", 1) for i in range(40)]
    _listing(sq, filler + [_quota(name, value) for name, value in ENOUGH.items()], pages=3)
    checks = _checks(_spec(tmp_path), ops)
    assert checks.problems == () and checks.warnings == ()
    assert {q.quota_name: q.value for q in checks.quotas}[P4D] == 8  # on the last page
    sq.assert_no_pending_responses()


def test_a_quota_without_an_applied_value_is_read_from_the_defaults_and_an_unlisted_one_warns(aws, tmp_path):
    ops, sq = aws
    applied = {name: value for name, value in ENOUGH.items() if name not in (P4D, EVAL)}
    _listing(sq, [_quota(name, value) for name, value in applied.items()])
    _listing(sq, [_quota(P4D, 2)], operation="list_aws_default_service_quotas")
    checks = _checks(_spec(tmp_path), ops)
    p4d = next(q for q in checks.quotas if q.quota_name == P4D)
    assert p4d.default_value and p4d.value == 2
    assert checks.problems == (checks.problems[0],) and "(AWS default, no applied value)" in checks.problems[0]
    assert checks.warnings == (f"quota '{EVAL}' is not listed by Service Quotas in {REGION} (is the instance type "
                               "offered there?): not checked",)


def test_access_denied_is_one_warning_and_the_deploy_goes_on(cli, tmp_path, capsys):
    from bakeoff.pipelines.cli.main import main

    ops, sq = cli
    ops.s3.create_bucket(Bucket=BUCKET)
    spec = _spec(tmp_path)
    denied = "User: arn:aws:iam::123456789012:user/dev is not authorized to perform: servicequotas:ListServiceQuotas"
    sq.add_client_error("list_service_quotas", "AccessDeniedException", denied, 400)
    assert main(["validate", str(spec), "--aws"]) == 0
    out, err = capsys.readouterr()
    warning = ("quotas not checked: the caller is denied servicequotas:ListServiceQuotas (AccessDeniedException); "
               "grant it, or deploy with --skip-quota-check")
    assert f"  account warning: {warning}" in out.splitlines() and err == ""

    sq.add_client_error("list_service_quotas", "AccessDeniedException", denied, 400)
    assert main(["deploy", str(spec), "--role", ROLE, "--bucket", BUCKET]) == 0
    out, err = capsys.readouterr()
    assert f"bakeoff: warning: {warning}" in err.splitlines() and "Traceback" not in err
    assert out.startswith("created arn:aws:sagemaker:us-east-1:")


# --- the MLflow tracking server's version ------------------------------------------------------------
def _server(ops, *versions: str, error: str | None = None) -> Stubber:
    """DescribeMlflowTrackingServer in the server's region (us-west-2: another client than the pipeline's),
    answering each call with the next version."""
    stub = Stubber(ops.client("sagemaker", region="us-west-2"))
    if error:
        stub.add_client_error("describe_mlflow_tracking_server", error, "no", 400,
                              expected_params={"TrackingServerName": "bakeoff-mlflow"})
    for version in versions:
        stub.add_response("describe_mlflow_tracking_server",
                          {"TrackingServerArn": SERVER, "TrackingServerName": "bakeoff-mlflow",
                           "MlflowVersion": version, "TrackingServerStatus": "Created", "IsActive": "Active"},
                          {"TrackingServerName": "bakeoff-mlflow"})
    stub.activate()
    return stub


def _pinned() -> str:
    from bakeoff.pipelines.sagemaker.mlflow_server import client_pin, requirement_files

    pin = client_pin(requirement_files())
    assert pin is not None, "the jobs' MLflow requirements pin no mlflow client"
    return pin[1]


def test_an_mlflow_server_of_another_minor_version_is_a_warning_naming_both(aws, tmp_path):
    ops, sq = aws
    client = _pinned()
    major, minor = (int(x) for x in client.split(".")[:2])
    other = f"{major}.{minor + 1}.0"
    _listing(sq, [_quota(name, value) for name, value in ENOUGH.items()])
    server = _server(ops, other)
    checks = _checks(_spec(tmp_path, mlflow={"tracking_uri": SERVER}), ops)
    assert checks.problems == () and (checks.mlflow_server_version, checks.mlflow_client_version) == (other, client)
    assert len(checks.warnings) == 1 and f"runs MLflow {other}" in checks.warnings[0]
    assert f"install mlflow-skinny {client}" in checks.warnings[0]
    server.assert_no_pending_responses()


def test_a_matching_mlflow_server_is_silent(aws, tmp_path):
    ops, sq = aws
    same = ".".join(_pinned().split(".")[:2]) + ".0"  # the patch may differ
    _listing(sq, [_quota(name, value) for name, value in ENOUGH.items()])
    _server(ops, same)
    checks = _checks(_spec(tmp_path, mlflow={"tracking_uri": SERVER}), ops)
    assert checks.warnings == () and checks.problems == () and checks.mlflow_server_version == same


def test_the_client_pin_is_read_from_the_requirement_files_when_the_check_runs(aws, tmp_path):
    from bakeoff.pipelines.sagemaker import mlflow_server

    ops, _ = aws
    base = tmp_path / "mlflow-requirements.txt"
    base.write_text("# the client\nmlflow-skinny==3.17.2\n")
    sagemaker = tmp_path / "mlflow-requirements-sagemaker.txt"
    sagemaker.write_text("sagemaker-mlflow==0.5.0\nmlflow-skinny==3.0.1  # matches the server\n")
    _server(ops, "3.0.0", "2.16.2")
    sm = ops.client("sagemaker", region="us-west-2")
    assert mlflow_server.check(SERVER, lambda region: sm, [base, sagemaker]) == ("3.0.0", "3.0.1", [])
    version, client, warnings = mlflow_server.check(SERVER, lambda region: sm, [base, sagemaker])
    assert (version, client) == ("2.16.2", "3.0.1") and len(warnings) == 1
    assert re.search(r"runs MLflow 2\.16\.2 but the jobs install mlflow-skinny 3\.0\.1 "
                     r"\(mlflow-requirements-sagemaker\.txt\)", warnings[0])


def test_a_denied_describe_is_a_warning_naming_the_action(aws, tmp_path):
    ops, sq = aws
    _listing(sq, [_quota(name, value) for name, value in ENOUGH.items()])
    _server(ops, error="AccessDeniedException")
    checks = _checks(_spec(tmp_path, mlflow={"tracking_uri": SERVER}), ops)
    assert checks.problems == () and checks.warnings == (
        "MLflow client/server versions not compared: cannot describe mlflow-tracking-server bakeoff-mlflow: "
        "the caller is denied sagemaker:DescribeMlflowTrackingServer (AccessDeniedException)",)
