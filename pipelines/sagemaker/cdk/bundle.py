"""`bakeoff synth --cdk-out DIR`: the compiled pipeline as a CDK construct in any language deploys it.

    DIR/manifest.json    what the construct needs besides the files (FORMAT, below)
    DIR/definition.json  the definition, compact JSON with sorted keys, the bucket and role as sentinels
    DIR/assets/<key>     each asset at its content-addressed S3 key
    DIR/rendered/<key>   with `mlflow_server`: the assets that name the tracking server (the evaluation config),
                         which the construct deploys under a key of its own stack with the server's ARN filled in

The construct (cdk/construct) replaces the sentinels by its bucket's name and role's ARN (so the deployed
definition is `bakeoff synth --bucket B --role R` byte for byte), deploys the assets under their keys, and builds
the role from the manifest's grants (grants.py). A Python app's construct (cdk/bakeoff_cdk) writes its bundle
with this function at synth time. With `mlflow_server` (`bakeoff synth --cdk-out DIR --mlflow-server`, the
Python construct's `mlflow_tracking_server=True`) the jobs track to a SageMaker MLflow tracking server the
construct creates, named by a sentinel ARN until the construct fills in its ARN."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bakeoff.estimators.images import image_region
from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.names import FAIL_STEP, INCONCLUSIVE_STEP
from bakeoff.pipelines.spec.model import BakeoffSpec, sagemaker_regions

from . import grants
from .mlflow_server import MLFLOW_CLIENT_FOR_SERVER, MLFLOW_SERVER_VERSION, check_server_region
from .placeholders import BUCKET_SENTINEL, MLFLOW_ARN, mlflow_sentinel, role_sentinel
from .reads import data_uris, image_uris
from .reasons import REASONS

FORMAT = 2  # 2: rendered assets, the MLflow server, every reason an allowed data URI needs


def declared_region(spec: BakeoffSpec) -> str | None:
    """The region the spec names itself (`storage.region` written in it), or None where it leaves the default: a
    spec that names one runs only there, one that does not may be compiled for any."""
    explicit = "storage" in spec.model_fields_set and "region" in spec.storage.model_fields_set
    return spec.storage.region if explicit else None


def bundle_region(spec: BakeoffSpec, region: str | None) -> str:
    declared = declared_region(spec)
    region = region or spec.storage.region
    if region not in sagemaker_regions():
        raise SpecError(f"{region!r} is not a region where SageMaker runs", field="--region")
    if declared and declared != region:
        raise SpecError(f"the spec runs in {spec.storage.region}, not {region}; drop storage.region from the spec to "
                        "compile it for another region", field="--region")
    return region


def write_bundle(spec: BakeoffSpec, out: Path, region: str | None = None,
                 mlflow_server: bool = False) -> dict[str, Any]:
    """Compile `spec` for `region` (default: its storage.region) into `out` (replaced); returns the manifest.
    `mlflow_server`: for a construct that creates a SageMaker MLflow tracking server the jobs track to."""
    from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
    from bakeoff.pipelines.sagemaker.validate import check_definition

    region = bundle_region(spec, region)
    role = role_sentinel(region)
    server = mlflow_sentinel(region) if mlflow_server else None
    if server:
        check_server_region(region, "--mlflow-server")
        spec = spec.model_copy(update={"mlflow": spec.mlflow.model_copy(update={"tracking_uri": server,
                                                                               "enabled": True})})
    compiled = compile_pipeline(spec, bucket=BUCKET_SENTINEL, role_arn=role, region=region)
    definition = compiled.definition
    check_definition(definition)
    foreign = sorted({uri for uri in image_uris(definition) if image_region(uri) not in (None, region)})
    if foreign:
        raise SpecError(f"the pipeline would pull {foreign[0]} in {region}; SageMaker pulls images only from its "
                        "own region", field="image")
    for asset in compiled.assets:  # only an MLflow server the construct creates is written into an asset
        if BUCKET_SENTINEL.encode() in asset.body or role.encode() in asset.body:
            raise SpecError(f"asset {asset.key} names the stack's bucket or role, which a bundle cannot carry")
    rendered = [a for a in compiled.assets if server and server.encode() in a.body]
    prefix = spec.storage.prefix
    mlflow_arns = [MLFLOW_ARN] if server else grants.spec_mlflow_arns(spec.mlflow.tracking_uri, spec.mlflow.enabled)
    execution = grants.execution_grants(definition, prefix, region, mlflow_arns)
    start = grants.start_grants(definition, f"{prefix}/{spec.name}/evaluation", region)
    # The grants' reasons, those of CDK's BucketDeployment handler that deploys the assets, of the data
    # locations a stack may allow (allowedDataUris) and of the tracking server's artifacts.
    used = ({g["reason"] for g in execution + start if g["reason"]}
            | {k for k in REASONS if k.startswith("deployment-")}
            | {"data-prefixes"} | ({"mlflow-artifacts"} if server else set()))
    manifest = {
        "format": FORMAT, "name": spec.name, "description": spec.description or "", "region": region,
        "prefix": prefix, "maxParallelSteps": spec.max_parallel_steps,
        "sentinels": {"bucket": BUCKET_SENTINEL, "role": role, "mlflow": server},
        "parameters": {p["Name"]: p.get("Type", "String") for p in definition.get("Parameters", [])},
        "dataParameters": data_uris(definition),
        "executionGrants": execution, "startGrants": start, "reasons": {k: REASONS[k] for k in sorted(used)},
        # The gate's Fail steps, whose failure is the verdict (notifications, the construct's onVerdict).
        "gateSteps": {"fail": FAIL_STEP, "inconclusive": INCONCLUSIVE_STEP},
        "definition": "definition.json", "assets": "assets",
        "assetKeys": sorted(a.key for a in compiled.assets if a not in rendered),
        # Each keeps its content hash: the construct keys it by that hash and its stack's own values.
        "rendered": "rendered", "renderedAssets": [{"key": a.key, "sha256": a.sha256} for a in rendered],
        "mlflowServer": {"version": MLFLOW_SERVER_VERSION, "clientForServer": MLFLOW_CLIENT_FOR_SERVER}
        if server else None,
    }
    if out.exists():
        shutil.rmtree(out)
    (out / "assets").mkdir(parents=True)
    (out / "definition.json").write_text(json.dumps(definition, sort_keys=True, separators=(",", ":")))
    for asset in compiled.assets:
        target = out / ("rendered" if asset in rendered else "assets") / asset.key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(asset.body)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest
