"""The same training steps bakeoff compiles, built with the SageMaker Python SDK 3.x
(ModelTrainer + TrainingStep) under moto: the reference for the SDK-agreement test
and the baseline for the synth benchmark.

    .venv/bin/python benchmarks/sdk_build.py SPEC [--set KEY=VALUE ...]   # prints the definition
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sdk_definition(spec, role: str, bucket: str) -> dict:
    """Build every leg x seed TrainingStep with the SDK; returns the parsed definition."""
    os.environ.setdefault("AWS_DEFAULT_REGION", spec.storage.region)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ["SAGEMAKER_VALIDATE_ROLE"] = "false"  # the SDK would call IAM otherwise
    from moto import mock_aws

    from bakeoff.pipelines.plan.bundle import entrypoints_dir
    from bakeoff.pipelines.plan.model import build_plan

    with mock_aws():
        import boto3
        from sagemaker.core.shapes import OutputDataConfig, StoppingCondition
        from sagemaker.core.training.configs import Compute, InputData, SourceCode
        from sagemaker.core.workflow.pipeline_context import PipelineSession
        from sagemaker.mlops.workflow.pipeline import Pipeline
        from sagemaker.mlops.workflow.steps import CacheConfig, TrainingStep
        from sagemaker.train.model_trainer import ModelTrainer

        boto3.client("s3").create_bucket(Bucket=bucket)
        session = PipelineSession(default_bucket=bucket)
        steps = []
        plan = build_plan(spec)
        for job in plan.jobs:
            leg = spec.leg(job.leg)
            trainer = ModelTrainer(
                sagemaker_session=session, role=role, training_image=plan.leg(job.leg).image,
                source_code=SourceCode(source_dir=str(entrypoints_dir()), entry_script="launch.py"),
                compute=Compute(instance_type=leg.instance_type, instance_count=leg.instance_count,
                                volume_size_in_gb=leg.volume_size_gb),
                hyperparameters=dict(job.hyperparameters), environment=dict(job.environment),
                stopping_condition=StoppingCondition(max_runtime_in_seconds=leg.max_runtime_s),
                output_data_config=OutputDataConfig(
                    s3_output_path=f"s3://{bucket}/{spec.storage.prefix}/{spec.name}/jobs/{job.name}"),
                base_job_name=f"bakeoff-{leg.name}")
            args = trainer.train(input_data_config=[
                InputData(channel_name=name, data_source=f"s3://{bucket}/{spec.storage.prefix}/data/{name}/")
                for name in ("train", "validation")], wait=False)
            steps.append(TrainingStep(name=f"Train-{leg.name}-s{job.seed}", step_args=args,
                                      cache_config=CacheConfig(enable_caching=True, expire_after="P30D")))
        return json.loads(Pipeline(name=f"bakeoff-{spec.name}", steps=steps, sagemaker_session=session).definition())


def main() -> None:
    import argparse

    from bakeoff.pipelines.spec.loader import load_spec

    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    text = json.dumps(sdk_definition(load_spec(args.spec, args.overrides),
                                     "arn:aws:iam::123456789012:role/bakeoff-bench", "bakeoff-artifacts"), indent=2)
    if args.output:
        Path(args.output).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
