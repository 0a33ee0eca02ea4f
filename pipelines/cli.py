"""The `bakeoff` command line. Start-up imports nothing heavy: each command
imports what it needs when it runs."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from . import __version__
from .errors import EXIT_BAD_INPUT, EXIT_COULD_NOT_RUN, EXIT_FAIL  # noqa: F401
from .errors import EXIT_PASS as EXIT_OK

EXIT_CODES_HELP = ("exit codes: 0 parity holds (pass), 1 parity fails (fail), 2 bad input, "
                   "3 inconclusive (the verdict says what would decide it), 4 could not run")


def _console():
    from rich.console import Console

    return Console()


def _spec_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", help="bake-off spec (YAML)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field before validation, e.g. --set training.max_steps=50 (repeatable)")


def _load(args):
    from .loader import load_spec

    return load_spec(args.spec, args.overrides)


# --- commands -------------------------------------------------------------------------
def cmd_run(args) -> int:
    from .local import LocalExecutor
    from .report import render_summary

    spec = _load(args)
    console = _console()
    from .cli_aws import _params

    result = LocalExecutor(spec, Path(args.out), force=args.force, mlflow=False if args.no_mlflow else None,
                           rule_change=args.rule_change, parameters=_params(args.param)).run()
    render_summary(result.evaluation, console)
    console.print(f"evaluation: {result.evaluation_path}", highlight=False)
    report = result.evaluation_path.with_name("report.html")
    if report.exists():
        console.print(f"report: {report}", highlight=False)
    if result.evaluation.get("mlflow", {}).get("parent_run_id"):
        where = spec.mlflow.tracking_uri or f"bakeoff ui {args.out}"
        console.print(f"MLflow: {where} (parent run {result.evaluation['mlflow']['parent_run_id']})", highlight=False)
    return result.exit_code


def cmd_validate(args) -> int:
    from .plan import build_plan
    from .validation_advice import design_warnings, seed_warnings

    spec = _load(args)
    plan = build_plan(spec)  # packs the code bundle: a missing script or an unsafe source_dir is found here
    _check_compiles(spec, plan)
    print(f"{args.spec}: ok: {spec.name}, {len(spec.legs)} legs x {len(spec.seed_list)} seeds = {len(plan.jobs)} "
          f"training jobs, spec hash {plan.spec_hash}")
    for leg in plan.legs:
        b = leg.batching
        print(f"  leg {leg.name}: {leg.instance_count} x {leg.instance_type} ({leg.devices} devices), "
              f"backend {leg.backend}, {leg.precision}; per-device batch {b.per_device_batch_size} x "
              f"accumulation {b.gradient_accumulation_steps} = global {b.global_batch_size}")
    for warning in seed_warnings(spec, Path(args.previous) if args.previous else None) + design_warnings(spec):
        print(f"  warning: {warning}")
    return EXIT_OK


def _check_compiles(spec, plan) -> None:
    """What `synth` would refuse, found by `validate`: the definition is compiled offline and
    checked against botocore's SageMaker model; a problem is blamed on the spec field it comes from."""
    from .errors import SpecError
    from .loader import locate
    from .names import parse_step_name
    from .sagemaker.compiler import compile_plan
    from .sagemaker.validate import definition_problems

    problems = definition_problems(compile_plan(plan).definition)
    if not problems:
        return
    first = problems[0]
    field: tuple = ("seeds",)
    named = re.search(r"\b(Train-[A-Za-z0-9-]+)", first)
    step = parse_step_name(named.group(1)) if named else None
    if "Environment" in first and step:
        field = ("legs", [leg.name for leg in spec.legs].index(step[0]), "environment")
    elif "HyperParameters" in first:
        field = ("hyperparameters",)
    file, line = locate(spec, field)
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    raise SpecError(f"SageMaker would refuse the pipeline: {first}{more}", file=file, line=line,
                    field=".".join(str(p) for p in field))


def cmd_schema(args) -> int:
    from .spec import BakeoffSpec

    text = json.dumps(BakeoffSpec.model_json_schema(), indent=2, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_data(args) -> int:
    from .data import prepare_corpus

    manifest = prepare_corpus(Path(args.out))
    for name, ch in sorted(manifest["channels"].items()):
        print(f"{name}: {Path(args.out) / ch['path']}  {ch['bytes']:,} bytes  sha256 {ch['sha256']}")
    print(f"corpus: {manifest['corpus']} (Python {manifest['python']}), manifest {Path(args.out) / 'manifest.json'}")
    return EXIT_OK


def cmd_instances(args) -> int:
    from estimators import kinds
    from estimators.prices import BUNDLED

    for kind in kinds().values():
        print(f"{kind.name}: {kind.description} (backends: {', '.join(kind.backends)})")
        for name, inst in kind.instances.items():
            row = BUNDLED.get(name)
            price = f"${row.price.usd_per_hour:.2f}/h ({row.basis}, {row.price.as_of})" if row else "no bundled price"
            acc = f"{inst.accelerators} x {inst.accelerator}" if inst.accelerator else "cpu"
            print(f"  {name:22} {acc:18} {inst.devices:3} devices  {price}")
    return EXIT_OK


def cmd_images(args) -> int:
    from estimators.images import CATALOG, LOOKED_UP, SOURCES, registry_account

    rows = [{"backend": i.backend, "default": i.default, "uri": i.uri(args.region), "framework": i.framework,
             "python": i.python, "detail": i.detail, "source": SOURCES[i.source], "note": i.note} for i in CATALOG]
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    print(f"Training images in {args.region} (registry account {registry_account(args.region)}), "
          f"looked up {LOOKED_UP}; * marks each backend's default, a leg's `image:` overrides it")
    for r in rows:
        print(f"{'*' if r['default'] else ' '} {r['backend']:7} {r['uri']}")
        print(f"          {r['framework']}, {r['python']}, {r['detail']}" + (f"; {r['note']}" if r["note"] else ""))
    print("backend torchneuron: no published image (TorchNeuron is a closed beta on Trn2/Trn3); give `image:`")
    print("sources: " + "; ".join(f"{k}: {v}" for k, v in SOURCES.items()))
    return EXIT_OK


def cmd_preflight(args) -> int:
    from .preflight import render, run_preflight

    spec = _load(args)
    console = _console()
    results = run_preflight(spec, args.leg or None, steps=args.steps,
                            out_dir=Path(args.out) if args.out else None)  # progress on stderr
    if args.json:
        print(json.dumps(dict(results), indent=2))
    else:
        render(results, spec, console)
    return EXIT_FAIL if any(r["blockers"] for _, r in results) else EXIT_OK


def cmd_ui(args) -> int:
    import shutil
    import subprocess

    db = Path(args.dir) / "mlflow" / "mlflow.db"
    if not db.exists():
        from .errors import SpecError

        raise SpecError(f"no MLflow store at {db}; run `bakeoff run SPEC --out {args.dir}` first")
    exe = shutil.which("mlflow") or str(Path(sys.executable).with_name("mlflow"))
    cmd = [exe, "ui", "--backend-store-uri", f"sqlite:///{db.resolve()}", "--host", "127.0.0.1",
           "--port", str(args.port)]
    print(f"MLflow UI on http://127.0.0.1:{args.port} (Ctrl-C to stop)")
    return subprocess.call(cmd)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bakeoff",
        description="Decide by measurement whether a model should train on AWS Trainium or NVIDIA GPUs: "
                    "the same training code on every leg, several seeds each, a parity verdict and the cost.",
        epilog=EXIT_CODES_HELP)
    ap.add_argument("--version", action="version", version=f"bakeoff {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="run the whole bake-off on this machine (trn legs on PyTorch/XLA's CPU device)",
                       epilog=EXIT_CODES_HELP)
    _spec_arg(p)
    p.add_argument("--out", required=True, help="run directory (jobs, evaluation, MLflow store)")
    p.add_argument("--force", action="store_true", help="re-run jobs whose inputs did not change")
    p.add_argument("--no-mlflow", action="store_true", help="do not log to MLflow")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a pipeline parameter for this run, as `bakeoff start --param` takes it (e.g. MaxSteps=50)")
    p.add_argument("--rule-change", metavar="WHY", help="re-decide finished jobs under a parity rule (metric, "
                   "margin, alpha, test, baseline) that differs from the one they ran under; the report shows "
                   "both rules and this reason")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("preflight", help="a few steps on PyTorch/XLA's CPU device: recompilations, CPU "
                                         "fallbacks, fp64 and host transfers, each named; exit 1 on a blocker")
    _spec_arg(p)
    p.add_argument("--leg", action="append", default=[], help="leg to check (default: every trn leg)")
    p.add_argument("--steps", type=int, default=6, help="training steps to run (default 6)")
    p.add_argument("--out", help="keep the job's files here (default: a temporary directory)")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.set_defaults(func=cmd_preflight)

    p = sub.add_parser("validate", help="check a spec and show the jobs it makes")
    _spec_arg(p)
    p.add_argument("--from", dest="previous", metavar="RUN_DIR", help="a previous run of this bake-off: warn when "
                   "its spread says the declared seeds are unlikely to decide the verdict")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("schema", help="print the JSON Schema of the spec")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("data", help="prepare the built-in corpus as train/validation channels")
    p.add_argument("out", help="directory for the channels")
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("instances", help="list known instance types, backends and bundled prices")
    p.set_defaults(func=cmd_instances)

    p = sub.add_parser("images", help="the default training image of each backend, per region, with its source")
    p.add_argument("--region", default="us-east-1", help="region whose registry to show (default us-east-1)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.set_defaults(func=cmd_images)

    p = sub.add_parser("ui", help="serve the MLflow UI of a local run on 127.0.0.1")
    p.add_argument("dir", help="run directory given to `bakeoff run --out`")
    p.add_argument("--port", type=int, default=5000)
    p.set_defaults(func=cmd_ui)

    from .cli_aws import register as register_aws

    register_aws(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    from .errors import BakeoffError

    try:
        return args.func(args)
    except BakeoffError as exc:
        print(f"bakeoff: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        import signal

        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"bakeoff: stopped by {signal.Signals(signum).name}; what finished is kept (a re-run into the same "
              "directory resumes)", file=sys.stderr)
        return 128 + int(signum)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except Exception as exc:  # a bug or the machine: one line, exit 4, the traceback only on request
        import os

        if os.environ.get("BAKEOFF_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        print(f"bakeoff: error: could not run: {type(exc).__name__}: {first} (BAKEOFF_DEBUG=1 shows the "
              "traceback)", file=sys.stderr)
        return EXIT_COULD_NOT_RUN


if __name__ == "__main__":
    sys.exit(main())
