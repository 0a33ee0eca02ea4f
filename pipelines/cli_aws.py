"""SageMaker commands of the CLI: synth, deploy, start, status, wait, report."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _spec_args(p) -> None:
    p.add_argument("spec", help="bake-off spec (YAML)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field before validation (repeatable)")
    p.add_argument("--role", help="SageMaker execution role ARN for the jobs (default: a placeholder; "
                                  "deploy requires a real one)")
    p.add_argument("--bucket", help="S3 bucket for code, data, outputs and compile caches "
                                    "(default: storage.bucket in the spec, else 'bakeoff-artifacts')")
    p.add_argument("--region", help="AWS region (default: storage.region in the spec)")


def _compile(args, role_required: bool = False):
    from .errors import SpecError
    from .loader import load_spec
    from .sagemaker.compiler import compile_pipeline
    from .sagemaker.validate import check_definition

    if role_required and not args.role:
        raise SpecError("--role is required: the SageMaker execution role ARN the jobs run as",
                        field="--role")
    spec = load_spec(args.spec, args.overrides)
    if args.bucket:
        from .spec import BUCKET_RE

        if not BUCKET_RE.match(args.bucket):
            raise SpecError(f"{args.bucket!r} is not an S3 bucket name", field="--bucket")
    compiled = compile_pipeline(spec, bucket=args.bucket, role_arn=args.role, region=args.region)
    check_definition(compiled.definition)
    return spec, compiled


def cmd_synth(args) -> int:
    spec, compiled = _compile(args)
    text = compiled.to_json(indent=2)
    if args.output:
        Path(args.output).write_text(text)
        steps = len(compiled.definition["Steps"])
        print(f"{args.output}: pipeline {compiled.name}, {steps} top-level steps, {len(text):,} characters, "
              f"{len(compiled.assets)} assets for s3://{compiled.bucket}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_deploy(args) -> int:
    from .plan import spec_hash
    from .sagemaker.ops import SageMakerOps

    spec, compiled = _compile(args, role_required=True)
    ops = SageMakerOps(region=args.region or spec.storage.region)
    result = ops.deploy(compiled, tags={"bakeoff:name": spec.name, "bakeoff:spec-hash": spec_hash(spec)},
                        progress=lambda m: print(m, file=sys.stderr))
    print(f"{result['action']} {result['pipeline_arn']} ({len(result['uploaded'])} assets uploaded, "
          f"{len(result['already_present'])} already present)")
    print(f"start it: bakeoff start {compiled.name}")
    return 0


def _params(pairs: list[str]) -> dict[str, str]:
    from .errors import SpecError

    out = {}
    for item in pairs:
        if "=" not in item:
            raise SpecError(f"--param {item!r}: expected NAME=VALUE, e.g. --param MaxSteps=500", field="--param")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _pipeline_name(value: str) -> tuple[str, str | None]:
    """The pipeline's name and region: from a spec file, or the name as given (no region)."""
    if Path(value).is_file():
        from .loader import load_spec
        from .sagemaker.compiler import pipeline_name

        spec = load_spec(value)
        return pipeline_name(spec), spec.storage.region
    return value, None


def cmd_start(args) -> int:
    from .sagemaker.ops import SageMakerOps

    name, spec_region = _pipeline_name(args.pipeline)
    ops = SageMakerOps(region=args.region or spec_region)
    arn = ops.start(name, _params(args.param))
    print(arn)
    if args.wait:
        return _wait(ops, arn, args.poll, args.timeout)
    return 0


def _print_status(status: dict) -> None:
    print(f"{status['execution_arn']}: {status['status']}"
          + (f" ({status['failure_reason']})" if status.get("failure_reason") else ""))
    for s in status["steps"]:
        extra = " (cache hit)" if s["cache_hit"] else ""
        reason = f": {s['failure_reason']}" if s.get("failure_reason") else ""
        print(f"  {s['name']:<28} {s['status'] or '-':<10}{extra}{reason}")


def cmd_status(args) -> int:
    from .sagemaker.ops import SageMakerOps

    status = SageMakerOps(region=args.region, arn=args.execution_arn).status(args.execution_arn)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
    else:
        _print_status(status)
    return 0 if status["status"] != "Failed" else 1


def _wait(ops, arn: str, poll: float, timeout: float) -> int:
    last: dict[str, str] = {}

    def progress(ex):
        state = ex.get("PipelineExecutionStatus")
        if last.get("state") != state:
            print(f"{arn}: {state}", file=sys.stderr)
            last["state"] = state

    final = ops.wait(arn, poll_s=poll, timeout_s=timeout, progress=progress)
    print(f"{arn}: {final['status']}" + (f" ({final['failure_reason']})" if final.get("failure_reason") else ""))
    return 0 if final["status"] == "Succeeded" else 1


def cmd_wait(args) -> int:
    from .sagemaker.ops import SageMakerOps

    return _wait(SageMakerOps(region=args.region, arn=args.execution_arn), args.execution_arn, args.poll, args.timeout)


def render_reports(evaluation_path: Path, out_dir: Path) -> Path:
    """Run the entrypoints' report writer (the same code the evaluation step runs)."""
    import subprocess

    from .bundle import REPORT_SCRIPT, entrypoints_dir

    proc = subprocess.run([sys.executable, str(entrypoints_dir() / REPORT_SCRIPT), "--evaluation",
                           str(evaluation_path), "--out", str(out_dir)], capture_output=True, text=True)
    if proc.returncode != 0:
        from .errors import BakeoffError

        raise BakeoffError(f"could not write the report: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return out_dir / "report.html"


def _current_evaluation(run_dir: Path, path: Path) -> dict:
    """The verdict of a local run directory, decided again from its jobs when they changed
    after it was written (or it was never written): a stale verdict is never shown."""
    from .errors import RunError, SpecError
    from .local.executor import stale_evaluation

    why = stale_evaluation(run_dir)
    if why is None:
        return dict(json.loads(path.read_text()))
    if not (run_dir / "spec.json").exists() or not (run_dir / "pipeline.json").exists():
        if path.exists():
            raise RunError(f"{run_dir}: {why}, and it holds no spec to decide again from; run `bakeoff run SPEC "
                           f"--out {run_dir}`")
        raise SpecError(f"no evaluation at {path}; run `bakeoff run SPEC --out {run_dir}` first")
    from .local.executor import LocalExecutor
    from .spec import BakeoffSpec

    print(f"bakeoff: {run_dir}: {why}; deciding again from its jobs", file=sys.stderr)
    spec = BakeoffSpec.model_validate(json.loads((run_dir / "spec.json").read_text()))
    return dict(LocalExecutor(spec, run_dir).reevaluate().evaluation)


def cmd_report(args) -> int:
    from rich.console import Console

    from .errors import SpecError
    from .report import apply_billable_time, render_summary

    target = Path(args.target)
    if target.is_dir():
        path = target / "evaluation" / "evaluation.json"
        evaluation = _current_evaluation(target, path)
        out_dir = path.parent
    elif args.target.startswith("arn:"):
        from .sagemaker.ops import SageMakerOps

        evaluation, billable = SageMakerOps(region=args.region, arn=args.target).fetch_evaluation(args.target)
        evaluation = apply_billable_time(evaluation, billable)
        out_dir = Path(args.out or f"bakeoff-report-{args.target.rsplit('/', 1)[-1]}")
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "evaluation.json"
        path.write_text(json.dumps(evaluation, indent=2, sort_keys=True, default=str) + "\n")
    else:
        raise SpecError(f"{args.target!r} is neither a run directory nor a pipeline execution ARN")
    report = render_reports(path, out_dir)
    if args.json:
        print(json.dumps(evaluation, indent=2, sort_keys=True, default=str))
    else:
        render_summary(evaluation, Console())
        print(f"report: {report}")
    if args.open:
        import webbrowser

        webbrowser.open(report.resolve().as_uri())
    from .errors import VERDICT_EXIT

    return VERDICT_EXIT.get(evaluation["verdict"], 4)


def cmd_prices(args) -> int:
    from estimators import all_instance_types
    from estimators.prices import BUNDLED

    from .prices import cache_path, cached, refresh

    if args.refresh:
        body = refresh(args.region)
        print(f"cached {len(body['prices'])} instance prices from {body['source']} at {cache_path(args.region)}",
              file=sys.stderr)
    live = cached(args.region) or {}
    rows = []
    for name in all_instance_types():
        row = BUNDLED.get(name)
        rows.append({"instance": name,
                     "bundled_usd_per_hour": row.price.usd_per_hour if row else None,
                     "bundled_basis": row.basis if row else None,
                     "bundled_source": f"{row.price.source} ({row.price.as_of})" if row else None,
                     "price_list_usd_per_hour": (live.get(name) or {}).get("usd_per_hour"),
                     "price_list_spot_usd_per_hour": (live.get(name) or {}).get("spot"),
                     "price_list_as_of": (live.get(name) or {}).get("as_of")})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        bundled = f"${r['bundled_usd_per_hour']:.4g}/h ({r['bundled_basis']}; {r['bundled_source']})" \
            if r["bundled_usd_per_hour"] else "no bundled price"
        live_txt = (f"  price list {r['price_list_as_of']}: ${r['price_list_usd_per_hour']:.4g}/h"
                    + (f", spot ${r['price_list_spot_usd_per_hour']:.4g}/h"
                       if r["price_list_spot_usd_per_hour"] else "")
                    ) if r["price_list_usd_per_hour"] else ""
        print(f"{r['instance']:22} {bundled}{live_txt}")
    if not live:
        print(f"(no Price List cache for {args.region}: `bakeoff prices --refresh` reads current prices)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("synth", help="write the SageMaker pipeline definition JSON (offline, deterministic)")
    _spec_args(p)
    p.add_argument("-o", "--output", help="write here instead of stdout")
    p.set_defaults(func=cmd_synth)

    p = sub.add_parser("deploy", help="upload code/data if absent and create or update the SageMaker pipeline")
    _spec_args(p)
    p.set_defaults(func=cmd_deploy)

    p = sub.add_parser("start", help="start an execution of a deployed pipeline")
    p.add_argument("pipeline", help="pipeline name (or the spec file it was deployed from)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="pipeline parameter for this execution, e.g. MaxSteps=500 (repeatable)")
    p.add_argument("--wait", action="store_true", help="wait for the execution to finish")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between status checks with --wait")
    p.add_argument("--timeout", type=float, default=7 * 86400, help="give up waiting after this many seconds")
    p.add_argument("--region")
    p.set_defaults(func=cmd_start)

    p = sub.add_parser("status", help="each step of a pipeline execution: state and failure reason")
    p.add_argument("execution_arn")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--region")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("wait", help="wait for a pipeline execution to finish")
    p.add_argument("execution_arn")
    p.add_argument("--poll", type=float, default=30.0)
    p.add_argument("--timeout", type=float, default=7 * 86400)
    p.add_argument("--region")
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("report", help="the bake-off summary of a run dir or a pipeline execution")
    p.add_argument("target", help="run directory (local) or pipeline execution ARN (SageMaker)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    p.add_argument("--open", action="store_true", help="regenerate report.html and open it in a browser")
    p.add_argument("--out", help="for an execution ARN: where to write the report (default ./bakeoff-report-ID)")
    p.add_argument("--region")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("prices", help="SageMaker training prices: bundled (with source and date), or "
                                      "--refresh from the AWS Price List API")
    p.add_argument("--refresh", action="store_true", help="read current on-demand and spot prices "
                                                          "(pricing:GetProducts) and cache them")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_prices)
