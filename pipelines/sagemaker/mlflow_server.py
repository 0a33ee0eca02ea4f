"""Whether the MLflow client the jobs install matches the SageMaker managed tracking server they log to.

AWS: "To ensure compatibility between your MLflow client and tracking server, use the corresponding MLflow
version based on your tracking server version: For tracking server 2.13.x, use mlflow==2.13.2; 2.16.x,
mlflow==2.16.2; 3.0.x, mlflow==3.0.0" (docs.aws.amazon.com/sagemaker/latest/dg/mlflow-track-experiments.html).
So the two should agree in major.minor; a mismatch is a warning (the jobs train regardless, and MLflow
logging failures never stop them), naming both versions.

The server's version is DescribeMlflowTrackingServer's `MlflowVersion` (an `mlflow-tracking-server/NAME`
ARN; `aws sagemaker describe-mlflow-tracking-server --tracking-server-name`,
docs.aws.amazon.com/goto/aws-cli/sagemaker-2017-07-24/DescribeMlflowTrackingServer), or DescribeMlflowApp's
(an `mlflow-app/NAME` ARN, taken by its ARN; both shapes are in botocore's SageMaker model). The client's is
the pin in the requirements files a job with an `arn:` tracking URI installs (bakeoff_runtime.tracking.install),
read when the check runs: the pin may change.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bakeoff.pipelines.aws_session import aws
from bakeoff_runtime.tracking import install as mlflow_install

_ARN = re.compile(r"^arn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]+):\d{12}:(?P<kind>mlflow-tracking-server|mlflow-app)"
                  r"/(?P<name>.+)$")
_PIN = re.compile(r"^\s*(?P<package>mlflow-skinny|mlflow)\s*==\s*(?P<version>[0-9][0-9A-Za-z.+!-]*)\s*(?:#.*)?$",
                  re.I)
DENIED = ("AccessDeniedException", "AccessDenied")


def server_of(uri: str | None) -> dict[str, str] | None:
    """kind, name and region of a SageMaker MLflow tracking URI (an ARN); None for any other URI."""
    match = _ARN.match(uri or "")
    return match.groupdict() if match else None


def requirement_files() -> list[Path]:
    """What a job logging to a SageMaker tracking server installs, in order (mlflow_install.ensure_mlflow)."""
    return [Path(mlflow_install.REQUIREMENTS), Path(mlflow_install.REQUIREMENTS_SAGEMAKER)]


def client_pin(files: list[Path]) -> tuple[str, str, Path] | None:
    """(package, version, file) of the MLflow client the jobs install: the last pin wins, as in a pip
    install of these files in order (pip refuses two different pins of one package anyway)."""
    pin = None
    for path in files:
        for line in Path(path).read_text().splitlines():
            match = _PIN.match(line)
            if match:
                pin = (match["package"].lower(), match["version"], Path(path))
    return pin


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def server_version(sm: Any, server: dict[str, str], arn: str) -> str | None:
    """The server's MlflowVersion (raises botocore's ClientError when SageMaker refuses)."""
    if server["kind"] == "mlflow-app":
        return sm.describe_mlflow_app(Arn=arn).get("MlflowVersion")
    return sm.describe_mlflow_tracking_server(TrackingServerName=server["name"]).get("MlflowVersion")


def check(uri: str | None, sm_for_region: Any, files: list[Path] | None = None) -> tuple[str | None, str | None,
                                                                                       list[str]]:
    """(server version, client version, warnings) for the spec's tracking URI. `sm_for_region(region)`
    gives a SageMaker client in the server's region (its ARN's). Nothing to check (not a SageMaker ARN) is
    (None, None, [])."""
    from botocore.exceptions import ClientError

    server = server_of(uri)
    if server is None or uri is None:
        return None, None, []
    files = files if files is not None else requirement_files()
    pin = client_pin(files)
    client = pin[1] if pin else None
    action = "DescribeMlflowApp" if server["kind"] == "mlflow-app" else "DescribeMlflowTrackingServer"
    with aws(f"describe MLflow {server['kind']} {server['name']}"):
        try:
            version = server_version(sm_for_region(server["region"]), server, uri)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code") or "?")
            if code in DENIED:
                why = f"the caller is denied sagemaker:{action} ({code})"
            elif code == "ResourceNotFound":  # the one error botocore's model gives these operations
                why = f"it does not exist in {server['region']} ({code}): check mlflow.tracking_uri"
            else:
                why = f"{code}: {' '.join(str(exc.response.get('Error', {}).get('Message') or exc).split())[:200]}"
            return None, client, [f"MLflow client/server versions not compared: cannot describe {server['kind']} "
                                  f"{server['name']}: {why}"]
    if not version:
        return None, client, [f"MLflow {server['kind']} {server['name']} reports no MlflowVersion: client/server "
                              "versions not compared"]
    if pin is None:
        return version, None, [f"no mlflow or mlflow-skinny pin in {', '.join(f.name for f in files)}: "
                               f"cannot compare with the server's MLflow {version}"]
    package, client, path = pin
    if _major_minor(version) != _major_minor(client):
        return version, client, [
            f"MLflow {server['kind']} {server['name']} runs MLflow {version} but the jobs install {package} {client} "
            f"({path.name}); AWS asks for the client matching the server's major.minor: pin {package} "
            f"{'.'.join(_major_minor(version))}.x there, or log to a server of MLflow "
            f"{'.'.join(_major_minor(client))}"]
    return version, client, []
