"""Every container the pipeline starts knows the pipeline's region: botocore reads AWS_DEFAULT_REGION (not
AWS_REGION), and a client without one raises NoRegionError (SageMaker) or goes to S3's global endpoint."""
import boto3

from bakeoff import load_spec
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from conftest import ROOT


def test_every_training_and_processing_step_names_the_pipelines_region(monkeypatch):
    compiled = compile_pipeline(load_spec(ROOT / "examples" / "quickstart.yaml"), region="eu-west-1",
                                bucket="b", role_arn="arn:aws:iam::123456789012:role/r")
    steps = [s for s in compiled.definition["Steps"] if s["Type"] in ("Training", "Processing")]
    assert {s["Type"] for s in steps} == {"Training", "Processing"}
    for step in steps:
        assert step["Arguments"]["Environment"]["AWS_DEFAULT_REGION"] == "eu-west-1", step["Name"]
    # What a container's boto3 then does with only that environment: the regional endpoints.
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_DEFAULT_REGION", steps[-1]["Arguments"]["Environment"]["AWS_DEFAULT_REGION"])
    session = boto3.session.Session()
    assert session.client("sagemaker").meta.region_name == "eu-west-1"
    assert "eu-west-1" in session.client("s3").meta.endpoint_url
