# PYTHON_ARGCOMPLETE_OK
"""The `bakeoff` command line. Start-up imports nothing heavy: each command
imports what it needs when it runs."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

from bakeoff.pipelines import __version__
from bakeoff.pipelines.cli.output import LocalDisplay, emit, json_error, output_args
from bakeoff.pipelines.errors import EXIT_BAD_INPUT, EXIT_COULD_NOT_RUN, EXIT_FAIL, exit_codes_help  # noqa: F401
from bakeoff.pipelines.errors import EXIT_PASS as EXIT_OK

# Every code (bakeoff.pipelines.errors.EXIT_CODES); each command's epilog lists its own.
EXIT_CODES_HELP = exit_codes_help()


class _UsageError(Exception):
    """argparse refused the command line (exit 2): raised instead of exiting, so `--json` can say so on stdout."""

    def __init__(self, parser: argparse.ArgumentParser, message: str):
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(self, message)


def _console():
    from bakeoff.pipelines.cli.output import console

    return console()


def _spec_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", help="bake-off spec (YAML)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field before validation, e.g. --set training.max_steps=50 (repeatable)")


def _load(args):
    from bakeoff.pipelines.spec.loader import load_spec

    return load_spec(args.spec, args.overrides)


# --- commands -------------------------------------------------------------------------
def cmd_run(args) -> int:
    display = None if args.quiet else LocalDisplay(verbose=getattr(args, "verbose", False))
    if display is not None:
        display.opening(args.spec)
    from bakeoff.pipelines import api
    from bakeoff.pipelines.cli.aws import _params

    result = api.run_local(args.spec, args.out, overrides=args.overrides, force=args.force,
                           mlflow=False if args.no_mlflow else None, rule_change=args.rule_change,
                           fresh_start=getattr(args, "fresh_start", None), parameters=_params(args.param),
                           until_decided=getattr(args, "until_decided", False),
                           max_seeds=getattr(args, "max_seeds", None), jobs=getattr(args, "jobs", None),
                           progress=display)

    def text(r) -> None:
        from bakeoff.pipelines.cli.summary import render_summary
        from bakeoff.pipelines.terminal_text import data

        console = _console()
        render_summary(r.evaluation, console)
        # Paths and addresses are the user's text: `runs/[bold]` or `:a:` in one shows as written.
        console.print(data(f"evaluation: {r.evaluation_path}"), highlight=False)
        if r.report_path:
            console.print(data(f"report: {r.report_path}"), highlight=False)
        if r.mlflow_parent_run_id:
            where = r.mlflow_tracking_uri or f"bakeoff ui {args.out}"
            console.print(data(f"MLflow: {where} (parent run {r.mlflow_parent_run_id})"), highlight=False)

    emit(args, result, text)
    return result.exit_code


def cmd_validate(args) -> int:
    from bakeoff.pipelines import api

    if not args.aws and (args.region or args.profile):
        from bakeoff.pipelines.errors import SpecError

        raise SpecError("--region and --profile say where to check the account: they go with --aws", field="--aws")
    result = api.validate(args.spec, overrides=args.overrides, previous_run=args.previous)
    if args.aws:  # after the offline checks: a spec that cannot compile never reaches AWS
        checks = api.account_checks(args.spec, overrides=args.overrides, region=args.region, profile=args.profile)
        result = result.model_copy(update={"account": checks})

    def text(r) -> None:
        print(f"{args.spec}: ok: {r.name}, {len(r.legs)} legs x {len(r.seeds)} seeds = {r.jobs} "
              f"training jobs, spec hash {r.spec_hash}")
        if r.process_model:
            print(f"  script mode: {r.process_model}")
        for leg in r.legs:
            where = (f"  leg {leg.name}: {leg.instance_count} x {leg.instance_type} ({leg.devices} "
                     f"device{'s' if leg.devices != 1 else ''}), backend {leg.backend}")
            if r.mode == "script":  # the script batches itself and sets its own precision
                print(f"{where}; {leg.processes_per_host} process{'es' if leg.processes_per_host != 1 else ''} per "
                      f"instance; arguments: {' '.join(leg.arguments) or 'none'}")
                continue
            print(f"{where}, {leg.precision}; per-device batch {leg.per_device_batch_size} x accumulation "
                  f"{leg.gradient_accumulation_steps} = global {leg.global_batch_size}")
        for warning in r.warnings:
            print(f"  warning: {warning}")
        if r.account is not None:
            _print_account(r.account)

    emit(args, result, text)
    if result.account is not None and result.account.problems:
        for line in result.account.problems:  # errors show even with --quiet or --json
            print(f"bakeoff: error: {line}", file=sys.stderr)  # bakeoff's own text (quotas, versions)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _print_account(checks) -> None:
    for q in checks.quotas:
        have = "not read" if q.value is None else f"{q.value:g}" + (" (AWS default)" if q.default_value else "")
        print(f"  quota {q.quota_name} ({q.quota_code or '?'}) in {checks.region}: {have}, needs {q.needed} at once"
              + (": SHORT" if q.short else ""))
    if checks.mlflow_server_version:
        print(f"  MLflow tracking server {checks.mlflow_server_version}, client {checks.mlflow_client_version}")
    for warning in checks.warnings:
        print(f"  account warning: {warning}")


def cmd_schema(args) -> int:
    from bakeoff.pipelines import api

    text = json.dumps(api.schema(), indent=2, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_data(args) -> int:
    from bakeoff.pipelines.plan.corpus import prepare_corpus

    manifest = prepare_corpus(Path(args.out))
    if args.json:
        print(json.dumps(manifest, indent=2))
        return EXIT_OK
    if args.quiet:
        return EXIT_OK
    for name, ch in sorted(manifest["channels"].items()):
        print(f"{name}: {Path(args.out) / ch['path']}  {ch['bytes']:,} bytes  sha256 {ch['sha256']}")
    print(f"corpus: {manifest['corpus']} (Python {manifest['python']}), manifest {Path(args.out) / 'manifest.json'}")
    return EXIT_OK


def cmd_instances(args) -> int:
    from bakeoff.pipelines import api

    def text(r) -> None:
        for kind in r.kinds:
            print(f"{kind.name}: {kind.description} (backends: {', '.join(kind.backends)})")
            for inst in kind.instances:
                price = (f"${inst.usd_per_hour:.2f}/h ({inst.price_basis}, {inst.price_as_of})"
                         if inst.usd_per_hour is not None else "no bundled price")
                acc = f"{inst.accelerators} x {inst.accelerator}" if inst.accelerator else "cpu"
                print(f"  {inst.name:22} {acc:18} {inst.devices:3} {'devices' if inst.devices != 1 else 'device '}  "
                      f"{price}")

    return emit(args, api.instances(), text)


def cmd_images(args) -> int:
    from bakeoff.estimators.images import LOOKED_UP, SOURCES, registry_account
    from bakeoff.pipelines import api
    from bakeoff_runtime.contract.backend_table import BACKENDS

    def text(result) -> None:
        print(f"Training images in {args.region} (registry account {registry_account(args.region)}), "
              f"looked up {LOOKED_UP}; * marks each backend's default, a leg's `image:` overrides it")
        for r in result.root:
            print(f"{'*' if r.default else ' '} {r.backend:7} {r.uri}")
            print(f"          {r.framework}, {r.python}, {r.detail}" + (f"; {r.note}" if r.note else ""))
        stale = sorted({r.backend for r in result.root if r.default and r.past_end_of_patch})
        if stale:
            print(f"the default {', '.join(stale)} images are past AWS's end of patch: they get no security fixes, "
                  "and image scanning (ECR, Inspector) in a platform account will flag them. bakeoff keeps PyTorch "
                  "2.9 on every leg (the last Neuron training image's) so that the legs differ by hardware alone; "
                  "a leg's `image:` (your own build, or a newer DLC for both legs) replaces it")
        if any(r.backend == "neuron" for r in result.root):
            print("no pytorch-training-neuronx image is published after Neuron SDK 2.30.0 (AWS's announcement, "
                  "in the sources below): a newer Neuron stack means an image of your own")
        for name, row in BACKENDS.items():
            if row.no_image:
                print(f"backend {name} {row.no_image}; give `image:`")
        print("sources: " + "; ".join(f"{k}: {v}" for k, v in SOURCES.items()))

    return emit(args, api.images(args.region), text)


def cmd_preflight(args) -> int:
    from bakeoff.pipelines import api
    from bakeoff.pipelines.api.preflight_view import render

    spec = _load(args)
    result = api.preflight(spec, legs=args.leg or None, steps=args.steps, out_dir=args.out,
                           progress=None if args.quiet else LocalDisplay())  # progress on stderr
    emit(args, result, lambda r: render(list(r.root.items()), spec, _console()))
    return EXIT_FAIL if result.blockers else EXIT_OK


def cmd_ui(args) -> int:
    from bakeoff.pipelines.cli.ui import serve

    return serve(args.dir, args.port, args.host, writes=args.allow_writes)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="bakeoff",
        description="Decide by measurement whether a model should train on AWS Trainium or NVIDIA GPUs: "
                    "the same training code on every leg, several seeds each, a parity verdict and the cost.",
        epilog=EXIT_CODES_HELP)
    ap.add_argument("--version", action="version", version=f"bakeoff {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="run the whole bake-off on this machine (trn legs on PyTorch/XLA's CPU device)")
    _spec_arg(p)
    p.add_argument("--out", required=True, help="run directory (jobs, evaluation, MLflow store)")
    p.add_argument("--force", action="store_true", help="re-run jobs whose inputs did not change")
    p.add_argument("--no-mlflow", action="store_true", help="do not log to MLflow")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a pipeline parameter for this run, as `bakeoff start --param` takes it (e.g. MaxSteps=50)")
    p.add_argument("--rule-change", metavar="WHY", help="re-decide finished jobs under a parity rule (metric, "
                   "margin, alpha, test, baseline) that differs from the one they ran under; the report shows "
                   "both rules and this reason")
    p.add_argument("--fresh-start", metavar="WHY", help="decide again a question (the same legs, rule and training "
                   "setup) that was decided before, in any --out, as a new attempt; the report shows this reason "
                   "and every attempt before it. Not needed for stage 2: fresh seeds after an inconclusive "
                   "stage 1 continue its design")
    p.add_argument("--until-decided", action="store_true", help="run seeds in rounds (the first is the spec's "
                   "seeds) and stop at pass or fail; a group-sequential design keeps the error rates")
    p.add_argument("--max-seeds", type=int, metavar="N", help="with --until-decided: the cap on seeds per leg "
                   "(default 4 x the spec's seeds); at the cap the run ends inconclusive with a recommendation")
    p.add_argument("--jobs", type=int, metavar="N", help="training jobs to run at once (default: one per core, "
                   "as many as the memory holds); their results are read in the plan's order, so the same jobs are "
                   "run, stopped and decided as with --jobs 1, which gives each job the whole machine")
    p.add_argument("-v", "--verbose", action="store_true", help="show every substitution for this machine "
                   "(devices, variables, each leg's local: block) before the jobs, not only the one-line gist")
    output_args(p, "print the final summary (verdict, exit code, paths, jobs run, evaluation) as JSON; "
                   "progress stays on stderr")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("preflight", help="a few steps on PyTorch/XLA's CPU device: recompilations, CPU "
                                         "fallbacks, fp64 and host transfers, each named; exit 1 on a blocker")
    _spec_arg(p)
    p.add_argument("--leg", action="append", default=[], help="leg to check (default: every trn leg)")
    p.add_argument("--steps", type=int, default=6, help="training steps to run (default 6)")
    p.add_argument("--out", help="keep the job's files here (default: a temporary directory)")
    output_args(p, "print each leg's report as JSON, by leg name")
    p.set_defaults(func=cmd_preflight)

    p = sub.add_parser("validate", help="check a spec and show the jobs it makes")
    _spec_arg(p)
    p.add_argument("--from", dest="previous", metavar="RUN_DIR", help="a previous run of this bake-off: warn when "
                   "its spread says the declared seeds are unlikely to decide the verdict")
    p.add_argument("--aws", action="store_true", help="also check the AWS account (read-only): each SageMaker quota "
                   "the pipeline draws on against its peak (exit 2 when one is short), and the MLflow tracking "
                   "server's version against the client the jobs install")
    from bakeoff.pipelines.cli.aws import _aws_args

    _aws_args(p)
    output_args(p, "print the plan (legs, batching, seeds, jobs, spec hash) and warnings as JSON (with --aws, the "
                   "account checks under `account`)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("schema", help="print the JSON Schema of the spec")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("data", help="prepare the built-in corpus as train/validation channels")
    p.add_argument("out", help="directory for the channels")
    output_args(p, "print the corpus manifest (channels, bytes, sha256) as JSON")
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("instances", help="list known instance types, backends and bundled prices")
    output_args(p, "print every leg kind, its backends and instance types with bundled prices as JSON")
    p.set_defaults(func=cmd_instances)

    p = sub.add_parser("images", help="the default training image of each backend, per region, with its source")
    p.add_argument("--region", default="us-east-1", help="region whose registry to show (default us-east-1)")
    output_args(p, "print the table as JSON")
    p.set_defaults(func=cmd_images)

    p = sub.add_parser("ui", help="serve the MLflow UI of a local run on 127.0.0.1")
    p.add_argument("dir", help="run directory given to `bakeoff run --out`")
    p.add_argument("--port", type=int, default=5000, help="port to serve the UI on (default 5000)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1, this machine only; "
                   "another address lets anyone who can reach it and has the printed link read the runs, and says "
                   "so)")
    p.add_argument("--allow-writes", action="store_true", help="let the UI change runs (rename, tag, delete); by "
                   "default it only reads")
    p.set_defaults(func=cmd_ui)

    from bakeoff.pipelines.cli.aws import register as register_aws

    register_aws(sub)
    from bakeoff.pipelines.cli.plan import register as register_plan

    register_plan(sub)
    from bakeoff.pipelines.cli.project import register as register_project

    register_project(sub)
    from bakeoff.pipelines.cli.completion import register as register_completion
    from bakeoff.pipelines.cli.init import register as register_init

    register_init(sub)
    register_completion(sub)
    for name, command in sub.choices.items():  # each command's epilog: the exit codes it can return
        command.epilog = f"{command.epilog} {exit_codes_help(name)}" if command.epilog else exit_codes_help(name)
    return ap


def _needs_stats(exc: BaseException, args) -> bool:
    """Whether `exc` came from importing numpy or scipy, the stats extra, on a path the API's own checks
    (pipelines/extras.py) do not cover; if so, says the extra's install line as they do (exit 2)."""
    from bakeoff.pipelines.extras import STATS_MODULES, missing_stats, stats_line

    seen: BaseException | None = exc
    while seen is not None and not (isinstance(seen, ModuleNotFoundError)
                                    and (seen.name or "").split(".")[0] in STATS_MODULES):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return False
    missing = missing_stats() or ((seen.name or "").split(".")[0],)
    print(f"bakeoff: error: {stats_line(f'bakeoff {args.command}', missing)}", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    from bakeoff.pipelines.cli.completion import autocomplete

    autocomplete(parser)  # a shell completing this line: print its completions and exit
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:  # as argparse reports it, and under --json on stdout too
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        from bakeoff.pipelines.errors import SpecError

        json_error(argv, SpecError(str(exc)))
        return EXIT_BAD_INPUT
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    from bakeoff.pipelines.errors import BakeoffError, SpecError

    try:
        return args.func(args)
    except BakeoffError as exc:
        if _needs_stats(exc, args):
            return EXIT_BAD_INPUT
        import os

        from bakeoff_runtime.contract import DEBUG_ENV

        if os.environ.get(DEBUG_ENV) and exc.__cause__ is not None:
            raise  # the API wrapped something unexpected: show where it came from
        hint = f" ({DEBUG_ENV}=1 shows the traceback)" if exc.__cause__ is not None else ""
        from bakeoff.pipelines.terminal_text import plain

        for one in (exc.errors if isinstance(exc, SpecError) else [exc]):  # bad input: every error, a line each
            print(f"bakeoff: error: {plain(one.for_cli())}{hint}", file=sys.stderr)  # may quote a job's output
        json_error(args, exc)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        import signal

        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"bakeoff: stopped by {signal.Signals(signum).name}; what finished is kept (a re-run into the same "
              "directory resumes)", file=sys.stderr)
        json_error(args, exc)
        return 128 + int(signum)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except Exception as exc:  # a bug or the machine: one line, exit 4, the traceback only on request
        if _needs_stats(exc, args):
            return EXIT_BAD_INPUT
        import os

        from bakeoff_runtime.contract import DEBUG_ENV

        if os.environ.get(DEBUG_ENV):
            raise
        from bakeoff.pipelines.terminal_text import plain

        first = plain((str(exc).strip().splitlines() or [""])[0][:300])
        print(f"bakeoff: error: could not run: {type(exc).__name__}: {first} ({DEBUG_ENV}=1 shows the "
              "traceback)", file=sys.stderr)
        json_error(args, exc)
        return EXIT_COULD_NOT_RUN


if __name__ == "__main__":
    sys.exit(main())
