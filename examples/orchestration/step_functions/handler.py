"""A Lambda handler for a Step Functions state machine that runs a bake-off on SageMaker.

The state machine (`state_machine.asl.json` beside this file) calls the one handler with an `action`:

    deploy -> start -> (Wait 60 s -> poll) until finished -> report -> Choice on the verdict

A Lambda function runs for at most 900 seconds
(docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html), and a bake-off runs for hours, so
the handler never waits: `poll` asks once and the state machine's Wait state does the waiting.

Each action takes and returns JSON only. Package this file with bakeoff installed (and the spec file)
as the function's code; give the function's role sagemaker:*Pipeline*, sagemaker:Describe*Job,
s3:GetObject/PutObject/HeadObject on the bucket, and iam:PassRole on the SageMaker execution role.

What that package weighs (bakeoff 0.1.0 without extras, for Lambda's Python 3.12 on x86_64, with this file
and a spec), measured so:

    uv build --wheel --out-dir dist
    uv pip install --target pkg --python-platform x86_64-manylinux_2_28 --python-version 3.12 dist/bakeoff-*.whl
    cp examples/orchestration/step_functions/handler.py examples/quickstart.yaml pkg/
    du -sb pkg; (cd pkg && zip -qr9 ../function.zip .)

48,645,562 bytes unpacked (46 MiB), 24,788,933 bytes zipped (24 MiB). Of that, boto3, botocore and s3transfer
are 27.2 MB (28.2 MB with jmespath, python-dateutil, six and urllib3, which come with them): Lambda's Python
runtimes already hold boto3 (docs.aws.amazon.com/lambda/latest/dg/lambda-python.html, "Runtime-included SDK
versions"), so a package that leaves them out is 20.4 MB, but it then runs on whatever boto3 version that
runtime holds. rich (with pygments, markdown-it-py and mdurl: 6.1 MB) and argcomplete (0.1 MB) come with the
core for the command line; this handler never imports them, nor numpy or scipy (the `stats` extra, which
`plan` and the evaluation step need, not deploy, start, poll or a report without a `decision:` section).
Built the same way before numpy and scipy left the core, the package was 214,337,435 bytes unpacked, SciPy
112 MB and NumPy 53 MB of it, and 75,621,807 bytes zipped.

Lambda takes a .zip of at most 50 MB uploaded directly (a larger one goes through S3) and at most 250 MB
(262,144,000 bytes) unpacked, layers included (docs.aws.amazon.com/lambda/latest/dg/limits.html, "AWS Lambda
Deployment Limits"; the figure in bytes as Lambda's own error states it,
repost.aws/questions/QUt1Cc15fbTkWsVXPNmj6MNQ): this package uploads directly and uses 19% of the unpacked
limit. tests/e2e/test_slim_core.py builds it from the wheel and runs deploy, start, poll and report from it.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from bakeoff import Deployment, Execution, SpecError, TimedOut, deploy, report, start, wait


def handler(event: dict[str, Any], context: Any = None, session: Any = None) -> dict[str, Any]:
    """Dispatch on `event["action"]`: deploy, start, poll or report. `session` (a boto3.Session) is for
    callers other than Lambda; Lambda's own credentials are used without it."""
    action = event.get("action")
    if action == "deploy":
        spec = event.get("spec") or os.environ.get("BAKEOFF_SPEC", "bakeoff.yaml")
        role = event.get("role_arn") or os.environ["BAKEOFF_ROLE_ARN"]
        result = deploy(spec, role_arn=role, bucket=event.get("bucket") or os.environ.get("BAKEOFF_BUCKET"),
                        region=event.get("region"), session=session)
        return {"deployment": result.model_dump(mode="json")}
    if action == "start":
        execution = start(Deployment.model_validate(event["deployment"]), event.get("parameters"), session=session)
        return {"execution": execution.model_dump(mode="json")}
    if action == "poll":
        handle = Execution.model_validate(event["execution"])
        try:
            state = wait(handle, timeout_s=0, session=session)  # one look, no waiting
        except TimedOut:
            return {"execution": handle.model_dump(mode="json"), "finished": False, "status": "Executing"}
        return {"execution": handle.model_dump(mode="json"), "finished": True, "status": state.status,
                "failure_reason": state.failure_reason}
    if action == "report":
        handle = Execution.model_validate(event["execution"])
        out = os.path.join(tempfile.gettempdir(), "bakeoff-report")  # Lambda may write only under /tmp
        result = report(handle, out_dir=out, render=False, session=session)
        return {"verdict": result.verdict, "summary": result.evaluation.get("summary"),
                "exit_code": result.exit_code}
    raise SpecError(f"unknown action {action!r}; expected deploy, start, poll or report")
