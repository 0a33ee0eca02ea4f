"""deploy/start/wait through the real CLI over HTTP to a moto server on 127.0.0.1, and AWS throttling
retried with backoff against a real HTTP endpoint."""
import json

from moto_aws import BUCKET, QUICKSTART, ROLE, _client

from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.sagemaker.ops import SageMakerOps
from bakeoff.pipelines.spec.loader import load_spec
from conftest import bakeoff


def test_deploy_start_over_http(moto_env, tmp_path):
    proc = bakeoff("deploy", QUICKSTART, "--role", ROLE, "--bucket", BUCKET, env=moto_env)
    assert proc.returncode == 4  # could not run: neither bad input nor a verdict
    assert proc.stderr.strip() == (f"bakeoff: error: S3 bucket '{BUCKET}' does not exist; create it (or deploy "
                                   "the CDK stack) or pass --bucket with one that does")
    s3 = _client("s3", moto_env)
    s3.create_bucket(Bucket=BUCKET)

    proc = bakeoff("deploy", QUICKSTART, "--role", ROLE, "--bucket", BUCKET, env=moto_env)
    assert proc.returncode == 0, proc.stderr
    assert "created arn:aws:sagemaker:us-east-1:" in proc.stdout and "4 assets uploaded" in proc.stdout
    compiled = compile_pipeline(load_spec(QUICKSTART), role_arn=ROLE, bucket=BUCKET)
    sm = _client("sagemaker", moto_env)
    described = sm.describe_pipeline(PipelineName="bakeoff-quickstart")
    assert json.loads(described["PipelineDefinition"]) == compiled.definition
    assert described["RoleArn"] == ROLE
    # At most max_parallel_steps steps at once: a new account's small training quotas are not overrun.
    assert described["ParallelismConfiguration"] == {"MaxParallelExecutionSteps": 8}
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=described["PipelineArn"])["Tags"]}
    assert tags["bakeoff:name"] == "quickstart" and "bakeoff:spec-hash" in tags
    for asset in compiled.assets:
        assert s3.get_object(Bucket=BUCKET, Key=asset.key)["Body"].read() == asset.body

    again = bakeoff("deploy", QUICKSTART, "--role", ROLE, "--bucket", BUCKET, env=moto_env)
    assert again.returncode == 0 and "updated" in again.stdout
    assert "0 assets uploaded, 4 already present" in again.stdout

    start = bakeoff("start", "bakeoff-quickstart", "--param", "MaxSteps=10", env=moto_env)
    assert start.returncode == 0, start.stderr
    arn = start.stdout.strip()
    assert arn.startswith("arn:aws:sagemaker:us-east-1:") and "bakeoff-quickstart" in arn
    params = sm.list_pipeline_parameters_for_execution(PipelineExecutionArn=arn)["PipelineParameters"]
    assert {"Name": "MaxSteps", "Value": "10"} in params

    bad = bakeoff("start", "bakeoff-quickstart", "--param", "Steps=10", env=moto_env)
    assert bad.returncode == 2 and "unknown pipeline parameter(s) Steps" in bad.stderr
    missing = bakeoff("start", "bakeoff-nope", env=moto_env)
    assert missing.returncode == 4 and len(missing.stderr.strip().splitlines()) == 1
    assert "bakeoff: error: cannot start pipeline bakeoff-nope" in missing.stderr

    waited = bakeoff("wait", arn, "--poll", "0.1", env=moto_env)
    assert waited.returncode == 0 and waited.stdout.strip().endswith("Succeeded")


def test_throttling_is_retried_with_backoff(monkeypatch):
    """A real HTTP endpoint on 127.0.0.1 that throttles twice, then answers."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    calls = []

    class Throttling(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            calls.append(time_now())
            throttled = len(calls) <= 2
            body = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"} if throttled else
                              {"PipelineName": "p", "PipelineArn": "arn:aws:sagemaker:us-east-1:1:pipeline/p",
                               "PipelineDefinition": "{}"}).encode()
            self.send_response(400 if throttled else 200)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    from time import monotonic as time_now

    server = HTTPServer(("127.0.0.1", 0), Throttling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for k, v in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.server_port}", "AWS_ACCESS_KEY_ID": "t",
                     "AWS_SECRET_ACCESS_KEY": "t"}.items():
            monkeypatch.setenv(k, v)
        ops = SageMakerOps(region="us-east-1")
        assert ops._pipeline_exists("p") is True
    finally:
        server.shutdown()
    assert len(calls) == 3  # two throttled attempts, retried, then the answer
