"""SageMaker commands of the CLI: synth, deploy, start, status, wait, stop, report, prices.

Each command calls the Python API (`bakeoff.pipelines.api`) and formats its result: `--json` prints the
result's own serialisation, so the two cannot drift."""
from __future__ import annotations

import sys
from pathlib import Path

from bakeoff.pipelines.cli.output import emit, json_error, output_args, stderr_line

REGION_HELP = "AWS region (default: the region the ARN or spec names, else AWS_DEFAULT_REGION or the profile's)"


def _aws_args(p) -> None:
    p.add_argument("--region", help=REGION_HELP)
    p.add_argument("--profile", help="AWS profile to use (default: AWS_PROFILE or the default chain)")


def _wait_args(p, *, optional: bool = True) -> None:
    """--poll and --timeout; with `optional`, also --wait, which they then apply to (`bakeoff wait` always waits)."""
    if optional:
        p.add_argument("--wait", action="store_true",
                       help="wait for the execution to finish (exit 1 unless it succeeds)")
    p.add_argument("--poll", type=float, default=30.0, metavar="SECONDS",
                   help=f"seconds between status checks{' with --wait' if optional else ''} (default 30)")
    p.add_argument("--timeout", type=float, default=7 * 86400, metavar="SECONDS",
                   help="with --wait: give up waiting after this many seconds, exit 4 (default 7 days)" if optional
                   else "give up waiting after this many seconds, exit 4; the execution goes on (default 7 days)")


def _spec_args(p) -> None:
    p.add_argument("spec", help="bake-off spec (YAML)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field before validation (repeatable)")
    p.add_argument("--role", help="SageMaker execution role ARN for the jobs (default: a placeholder; "
                                  "deploy requires a real one)")
    p.add_argument("--bucket", help="S3 bucket for code, data, outputs and compile caches "
                                    "(default: storage.bucket in the spec, else 'bakeoff-artifacts')")
    p.add_argument("--region", help="AWS region (default: storage.region in the spec)")


def cmd_synth(args) -> int:
    from bakeoff.pipelines import api

    if args.cdk_out:
        return _synth_cdk_bundle(args)
    if args.mlflow_server:
        from bakeoff.pipelines.errors import SpecError

        raise SpecError("--mlflow-server goes with --cdk-out (the construct creates the server)",
                        field="--mlflow-server")
    result = api.synth(args.spec, overrides=args.overrides, bucket=args.bucket, role_arn=args.role,
                       region=args.region)
    if args.json:
        return emit(args, result, lambda r: None)
    text = result.definition_json()
    if args.output:
        Path(args.output).write_text(text)
        if not args.quiet:
            stderr_line(f"{args.output}: pipeline {result.pipeline_name}, {len(result.definition['Steps'])} top-level "
                        f"steps, {len(text):,} characters, {len(result.assets)} assets for s3://{result.bucket}")
    else:
        sys.stdout.write(text)
    return 0


def _synth_cdk_bundle(args) -> int:
    """The definition, assets and role manifest a CDK construct in any language deploys (cdk/construct)."""
    import json

    from bakeoff.pipelines.api._support import as_spec
    from bakeoff.pipelines.errors import SpecError
    from bakeoff.pipelines.sagemaker.cdk.bundle import write_bundle

    if args.bucket or args.role or args.output:
        raise SpecError("no --bucket, --role or --output with it: the construct creates the bucket and role",
                        field="--cdk-out")
    manifest = write_bundle(as_spec(args.spec, args.overrides), Path(args.cdk_out), region=args.region,
                            mlflow_server=args.mlflow_server)
    if args.json:
        sys.stdout.write(json.dumps(manifest, sort_keys=True) + "\n")
    elif not args.quiet:
        stderr_line(f"{args.cdk_out}: bake-off {manifest['name']} for {manifest['region']}, "
                    f"{len(manifest['assetKeys'])} assets, {len(manifest['executionGrants'])} execution-role grants")
    return 0


def cmd_deploy(args) -> int:
    from bakeoff.pipelines import api
    from bakeoff.pipelines.api.aws import QuotaShortfall

    try:
        result = api.deploy(args.spec, role_arn=args.role, bucket=args.bucket, region=args.region,
                            overrides=args.overrides, profile=args.profile, skip_quota_check=args.skip_quota_check,
                            progress=None if args.quiet else lambda ev: stderr_line(ev.message))
    except QuotaShortfall as exc:  # one line per short quota, then what could not be checked
        for line in exc.checks.problems:
            stderr_line(f"bakeoff: error: {line}")
        for line in exc.checks.warnings:
            stderr_line(f"bakeoff: warning: {line}")
        json_error(args, exc)
        return exc.exit_code

    def text(r) -> None:
        for line in r.warnings:
            stderr_line(f"bakeoff: warning: {line}")
        print(f"{r.action} {r.pipeline_arn} ({len(r.uploaded)} assets uploaded, {len(r.already_present)} already "
              "present)")
        print(f"start it: bakeoff start {r.pipeline_name}")

    return emit(args, result, text)


def _params(pairs: list[str]) -> dict[str, str]:
    from bakeoff.pipelines.errors import SpecError

    out = {}
    for item in pairs:
        if "=" not in item:
            raise SpecError(f"--param {item!r}: expected NAME=VALUE, e.g. --param MaxSteps=500", field="--param")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def cmd_start(args) -> int:
    from bakeoff.pipelines import api

    if args.until_decided:
        from bakeoff.pipelines.errors import SpecError

        if args.stack or not args.pipeline:
            raise SpecError("--until-decided deploys each round from the spec: give the spec file, not --stack",
                            field="--stack")
        if not args.role:
            raise SpecError("--until-decided deploys each round's pipeline: --role (the SageMaker execution role "
                            "ARN) is required", field="--role")
        decision = api.start_until_decided(
            args.pipeline, role_arn=args.role, bucket=args.bucket, max_seeds=args.max_seeds,
            parameters=_params(args.param), poll_s=args.poll, timeout_s=args.timeout, region=args.region,
            profile=args.profile, progress=None if args.quiet else lambda ev: stderr_line(ev.message))
        emit(args, decision, lambda d: print(
            "\n".join(f"round {r.round}: {len(r.seeds)} seeds, {r.verdict} ({r.execution_arn})" for r in d.rounds)
            + f"\nverdict: {d.verdict}"))
        return decision.exit_code
    execution = api.start(args.pipeline, _params(args.param), stack=args.stack, display_name=args.display_name,
                          description=args.description, max_parallel_steps=args.max_parallel, region=args.region,
                          profile=args.profile)
    if args.wait:
        return _wait(args, execution)
    return emit(args, execution, lambda r: print(r.arn))


def cmd_retry(args) -> int:
    from bakeoff.pipelines import api

    execution = api.retry(args.execution_arn, region=args.region, profile=args.profile)
    if args.wait:
        return _wait(args, execution)
    return emit(args, execution, lambda r: print(r.arn))


def _print_status(status) -> None:
    print(f"{status.execution_arn}: {status.status}" + (f" ({status.failure_reason})" if status.failure_reason else ""))
    for s in status.steps:
        extra = " (cache hit)" if s.cache_hit else ""
        reason = f": {s.failure_reason}" if s.failure_reason else ""
        print(f"  {s.name:<28} {s.status or '-':<10}{extra}{reason}")


def cmd_status(args) -> int:
    from bakeoff.pipelines import api

    status = api.status(args.execution_arn, region=args.region, profile=args.profile)
    emit(args, status, _print_status)
    return 0 if status.status != "Failed" else 1


def _wait(args, execution) -> int:
    from bakeoff.pipelines import api

    final = api.wait(execution, poll_s=args.poll, timeout_s=args.timeout, region=args.region, profile=args.profile,
                     progress=None if args.quiet else lambda ev: stderr_line(ev.message))
    emit(args, final, lambda r: print(f"{r.execution_arn}: {r.status}"
                                      + (f" ({r.failure_reason})" if r.failure_reason else "")))
    return 0 if final.succeeded else 1


def cmd_wait(args) -> int:
    return _wait(args, args.execution_arn)


def cmd_stop(args) -> int:
    from bakeoff.pipelines import api

    status = api.stop(args.execution_arn, region=args.region, profile=args.profile)
    return emit(args, status, lambda r: print(f"{r.execution_arn}: {r.status}"))


def cmd_report(args) -> int:
    from bakeoff.pipelines import api

    target = args.target
    if not target.startswith("arn:"):
        target = Path(target)
    result = api.report(target, out_dir=args.out, region=args.region, profile=args.profile, write=args.write,
                        progress=None if args.quiet else lambda ev: stderr_line(f"bakeoff: {ev.message}"))

    def text(r) -> None:
        from bakeoff.pipelines.cli.output import console
        from bakeoff.pipelines.cli.summary import render_summary

        render_summary(r.evaluation, console())
        print(f"report: {r.report_path}")

    emit(args, result, text)
    if args.open and result.report_path:
        import webbrowser

        webbrowser.open(Path(result.report_path).resolve().as_uri())
    return result.exit_code


def cmd_prices(args) -> int:
    from bakeoff.pipelines import api

    result = api.prices(args.region, refresh=args.refresh, profile=args.profile)
    if result.refreshed is not None and not args.quiet:
        stderr_line(f"cached {result.refreshed} instance prices at {result.cache}")

    def text(r) -> None:
        for row in r.rows:
            bundled = (f"${row.bundled_usd_per_hour:.4g}/h ({row.bundled_basis}; {row.bundled_source})"
                       if row.bundled_usd_per_hour else "no bundled price")
            live = ""
            if row.price_list_usd_per_hour:
                live = f"  price list {row.price_list_as_of}: ${row.price_list_usd_per_hour:.4g}/h" + (
                    f", spot ${row.price_list_spot_usd_per_hour:.4g}/h" if row.price_list_spot_usd_per_hour else "")
            print(f"{row.instance:22} {bundled}{live}")
        if r.cache is None:
            print(f"(no Price List cache for {r.region}: `bakeoff prices --refresh` reads current prices)")

    return emit(args, result, text)


def register(sub) -> None:
    p = sub.add_parser("synth", help="write the SageMaker pipeline definition JSON (offline, deterministic)")
    _spec_args(p)
    p.add_argument("-o", "--output", help="write the definition here instead of stdout")
    p.add_argument("--cdk-out", metavar="DIR", help="write a bundle for the CDK construct (cdk/construct) into DIR: "
                                                   "the definition with the bucket and role left to the stack, its "
                                                   "assets and what the execution role needs (DIR is replaced)")
    p.add_argument("--mlflow-server", action="store_true",
                   help="with --cdk-out: the jobs track to a SageMaker MLflow tracking server the construct creates "
                        "(its mlflowTrackingServer: true)")
    output_args(p, "print the pipeline's name, bucket, assets (key, sha256, size) and definition as one JSON "
                   "object instead of the bare definition")
    p.set_defaults(func=cmd_synth)

    p = sub.add_parser("deploy", help="upload code/data if absent and create or update the SageMaker pipeline")
    _spec_args(p)
    p.add_argument("--profile", help="AWS profile to use (default: AWS_PROFILE or the default chain)")
    p.add_argument("--skip-quota-check", action="store_true",
                   help="do not compare the account's SageMaker quotas with the pipeline's peak first (for a caller "
                        "without servicequotas:ListServiceQuotas, or one who knows better); a short quota otherwise "
                        "stops the deploy with exit 2 before anything is created")
    output_args(p, "print the pipeline ARN, action and uploaded keys as JSON")
    p.set_defaults(func=cmd_deploy)

    p = sub.add_parser("start", help="start an execution of a deployed pipeline")
    p.add_argument("pipeline", nargs="?", help="pipeline name (or the spec file it was deployed from); or --stack")
    p.add_argument("--stack", help="a CloudFormation stack with a BakeoffPipeline construct: start the pipeline "
                                   "its PipelineName output names (in --region)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="pipeline parameter for this execution, e.g. MaxSteps=500 (repeatable)")
    _wait_args(p)
    p.add_argument("--display-name", metavar="NAME",
                   help="the execution's name in SageMaker's console and execution list, e.g. round-2-seeds-5-9 "
                        "(letters, digits and dashes, at most 82; --until-decided names its rounds itself)")
    p.add_argument("--description", metavar="TEXT", help="the execution's description (at most 3,072 characters)")
    p.add_argument("--max-parallel", type=int, metavar="N",
                   help="run at most N steps of this execution at once (default: the pipeline's max_parallel_steps)")
    p.add_argument("--until-decided", action="store_true",
                   help="PIPELINE is a spec: run it in rounds, adding the seeds the evaluation recommends, until "
                        "pass or fail or --max-seeds; finished seeds are served by the step cache")
    p.add_argument("--max-seeds", type=int, metavar="N",
                   help="with --until-decided: the most seeds per leg (default 4x the spec's seeds, at most 100)")
    p.add_argument("--role", help="with --until-decided: the SageMaker execution role ARN the jobs run as")
    p.add_argument("--bucket", help="with --until-decided: S3 bucket for code, data and outputs "
                                    "(default: storage.bucket in the spec)")
    _aws_args(p)
    output_args(p, "print the execution handle (ARN, pipeline, region, parameters) as JSON; with --wait, the "
                   "final state")
    p.set_defaults(func=cmd_start)

    p = sub.add_parser("retry", help="run again what a Failed or Stopped execution lost (its finished steps are "
                                     "kept), e.g. a seed lost to a capacity or network failure")
    p.add_argument("execution_arn", help="the Failed or Stopped pipeline execution's ARN (a Stopped one's lost steps "
                                         "run as a new, selective execution, whose ARN is printed)")
    _wait_args(p)
    _aws_args(p)
    output_args(p, "print the execution handle (ARN, pipeline, region) as JSON; with --wait, the final state")
    p.set_defaults(func=cmd_retry)

    p = sub.add_parser("status", help="each step of a pipeline execution: state and failure reason")
    p.add_argument("execution_arn", help="the pipeline execution ARN `bakeoff start` printed")
    _aws_args(p)
    output_args(p, "print the execution's and each step's state as JSON")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("wait", help="wait for a pipeline execution to finish (exit 0 if it succeeded, else 1)")
    p.add_argument("execution_arn", help="the pipeline execution ARN `bakeoff start` printed")
    _wait_args(p, optional=False)
    _aws_args(p)
    output_args(p, "print the final state as JSON")
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("stop", help="stop a pipeline execution (its running jobs are stopped)")
    p.add_argument("execution_arn", help="the pipeline execution ARN `bakeoff start` printed")
    _aws_args(p)
    output_args(p, "print the execution's state after the request as JSON")
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser("report", help="the bake-off summary of a run dir or a pipeline execution")
    p.add_argument("target", help="run directory (local) or pipeline execution ARN (SageMaker)")
    p.add_argument("--open", action="store_true", help="open report.html in a browser")
    p.add_argument("--out", help="where to write evaluation.json and the report (default: an execution ARN's "
                                 "./bakeoff-report-ID; for a run directory, nothing is written: its own report)")
    p.add_argument("--write", action="store_true", help="a run directory: write into it, deciding its verdict "
                   "again when its jobs changed after it was written and rendering its report anew")
    _aws_args(p)
    output_args(p, "print the evaluation as JSON, with a `files` key holding the report's paths")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("prices", help="SageMaker training prices: bundled (with source and date), or "
                                      "--refresh from the AWS Price List API")
    p.add_argument("--refresh", action="store_true", help="read current on-demand and spot prices "
                                                          "(pricing:GetProducts) and cache them")
    p.add_argument("--region", default="us-east-1", help="region whose prices to show (default us-east-1)")
    p.add_argument("--profile", help="AWS profile for --refresh (default: AWS_PROFILE or the default chain)")
    output_args(p, "print the region, cache file and one row per instance type as JSON")
    p.set_defaults(func=cmd_prices)
