"""bakeoff's evaluation step: parity verdict, figures and cost for every leg.

    python evaluate.py --jobs DIR --config config.json --out DIR

DIR holds one sub-directory per training job (its model dir, or the model.tar.gz
SageMaker wrote). Writes DIR/evaluation.json with a top-level `verdict` that a
SageMaker ConditionStep reads with JsonGet. Exit 0 whatever the verdict: gating
is the pipeline's (or `bakeoff run`'s) job.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bakeoff_runtime.contract import (  # noqa: E402
    LOCAL_S3_ROOT_ENV,
    LOCAL_STEPS_ENV,
    job_name,
    parse_training_step_name,
)
from bakeoff_runtime.contract.documents import read_evaluation_config  # noqa: E402
from bakeoff_runtime.contract.rule import with_margin_parameter  # noqa: E402
from bakeoff_runtime.report.document import write_reports  # noqa: E402
from bakeoff_runtime.tracking.parent_run import log_parent  # noqa: E402
from bakeoff_runtime.verdict.evaluation import evaluate, write_evaluation  # noqa: E402
from bakeoff_runtime.verdict.job_outputs import load_jobs  # noqa: E402

if TYPE_CHECKING:
    from bakeoff_runtime.contract.documents import EvaluationConfig, MlflowConfig


def _s3_reader():
    """Downloads from S3 (boto3 ships in SageMaker's images), or from the local store when the
    local executor runs this step (BAKEOFF_LOCAL_S3_ROOT, one of its substitutions)."""
    root = os.environ.get(LOCAL_S3_ROOT_ENV)
    if root:
        def local(uri: str, target: Path) -> None:
            bucket, _, key = uri[len("s3://"):].partition("/")
            shutil.copyfile(Path(root) / bucket / key, target)
        return local
    import boto3

    s3 = boto3.client("s3")

    def remote(uri: str, target: Path) -> None:
        bucket, _, key = uri[len("s3://"):].partition("/")
        s3.download_file(bucket, key, str(target))
    return remote


def fetch_jobs(specs: list[str], jobs_dir: Path) -> None:
    """Download each job's small output archive (NAME=S3_URI)."""
    read = _s3_reader()
    for spec in specs:
        name, _, uri = spec.partition("=")
        target = jobs_dir / name
        target.mkdir(parents=True, exist_ok=True)
        try:
            read(uri, target / "output.tar.gz")
        except Exception as exc:  # a missing output is reported by the evaluation as a lost job
            print(f"[bakeoff] WARNING: cannot fetch {uri}: {exc}", file=sys.stderr)


def fetch_records(specs: list[str], records: Path) -> None:
    """Download each step's model.tar.gz (KIND/LEG=S3_URI) into `records`/KIND/LEG."""
    read = _s3_reader()
    for spec in specs:
        name, _, uri = spec.partition("=")
        parts = name.split("/")
        if len(parts) != 2 or any(p in ("", ".", "..") for p in parts):
            print(f"[bakeoff] WARNING: record {name!r} is not KIND/LEG; ignored", file=sys.stderr)
            continue
        target = records.joinpath(*parts)
        target.mkdir(parents=True, exist_ok=True)
        try:
            read(uri, target / "model.tar.gz")
        except Exception as exc:  # read_records reports a check that left nothing as failed
            print(f"[bakeoff] WARNING: cannot fetch {uri}: {exc}", file=sys.stderr)


def execution_jobs(execution_arn: str, job_prefix: str) -> list[str]:
    """NAME=S3_URI of every training step of the execution, from ListPipelineExecutionSteps
    (a bake-off with more jobs than the step's arguments can name). A cached step names the
    earlier job whose output it reuses, as SageMaker records it."""
    local = os.environ.get(LOCAL_STEPS_ENV)
    if local:
        steps = json.loads(Path(local).read_text())["PipelineExecutionSteps"]
    else:
        import boto3

        sm = boto3.client("sagemaker")
        steps, token = [], None
        while True:
            page = sm.list_pipeline_execution_steps(PipelineExecutionArn=execution_arn,
                                                    **({"NextToken": token} if token else {}))
            steps += page.get("PipelineExecutionSteps", [])
            token = page.get("NextToken")
            if not token:
                break
    out = []
    for step in steps:
        parsed = parse_training_step_name(step.get("StepName", ""))
        arn = ((step.get("Metadata") or {}).get("TrainingJob") or {}).get("Arn")
        if parsed and arn:
            name = job_name(*parsed)
            out.append(f"{name}={job_prefix.rstrip('/')}/{name}/{arn.rsplit('/', 1)[-1]}/output/output.tar.gz")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", required=True, type=Path, help="directory of job outputs")
    ap.add_argument("--config", required=True, help="evaluation config: a JSON file or an inline JSON object")
    ap.add_argument("--out", required=True, type=Path, help="where evaluation.json goes")
    ap.add_argument("--margin", type=float, default=None, help="override the parity margin (pipeline parameter)")
    ap.add_argument("--parent-key", default=None, help="groups MLflow runs under one parent (the execution id)")
    ap.add_argument("--job", action="append", default=[], metavar="NAME=S3_URI",
                    help="a training job's output.tar.gz to fetch into --jobs/NAME (SageMaker)")
    ap.add_argument("--records", type=Path, help="model artifacts of the run's Preflight step (<DIR>/preflight) "
                                                 "and collective checks (<DIR>/collective/<leg>)")
    ap.add_argument("--record", action="append", default=[], metavar="KIND/LEG=S3_URI",
                    help="a step's model.tar.gz to fetch into --records/KIND/LEG (more steps than the step's "
                         "inputs can name)")
    ap.add_argument("--execution-arn", help="find the jobs through ListPipelineExecutionSteps (large bake-offs)")
    ap.add_argument("--job-prefix", help="with --execution-arn: the S3 prefix the jobs write under")
    args = ap.parse_args(argv)
    cfg = read_evaluation_config(args.config)
    cfg = with_margin_parameter(cfg, args.margin)  # the ParityMargin pipeline parameter (contract/rule.py)
    if args.parent_key and cfg.get("mlflow"):
        cfg["mlflow"]["parent_key"] = args.parent_key
    if args.execution_arn:
        args.job += execution_jobs(args.execution_arn, args.job_prefix or "")
    if args.job:
        fetch_jobs(args.job, args.jobs)
    if args.records:
        from bakeoff_runtime.verdict.porting import read_records

        if args.record:
            fetch_records(args.record, args.records)
        # What porting cost: the preflight's findings, the collective checks.
        cfg.update(cast("EvaluationConfig", read_records(args.records)))
    jobs = load_jobs(args.jobs) if args.jobs.exists() else []
    result = evaluate(cfg, jobs)
    path = write_evaluation(result, args.out)
    reports = write_reports(result, args.out)
    mlflow_cfg = cast("MlflowConfig", dict(cfg.get("mlflow") or {}))
    if mlflow_cfg and os.environ.get("MLFLOW_TRACKING_URI"):
        # The job's environment wins over the config asset (a CDK stack substitutes the
        # tracking server's ARN there), as MLflow's own clients do.
        mlflow_cfg["tracking_uri"] = os.environ["MLFLOW_TRACKING_URI"]
    if mlflow_cfg.get("tracking_uri"):
        from bakeoff_runtime.tracking.install import ensure_mlflow

        ensure_mlflow(Path(__file__).resolve().parent, environ={**os.environ,
                                                                "MLFLOW_TRACKING_URI": mlflow_cfg["tracking_uri"]})
        result["mlflow"] = log_parent(mlflow_cfg, result, path, extra_artifacts=reports, jobs_dir=args.jobs)
        write_evaluation(result, args.out)
    print(f"[bakeoff] verdict={result['verdict']} failed_checks={result['failed_checks']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
