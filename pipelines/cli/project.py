"""`bakeoff project`: a finished bake-off read against the production run it is meant to decide, the
spec's `decision:` section given as flags (pipelines/spec/decision.py): cost per run on each leg, the
saving and its interval, and when the porting pays back. Nothing is re-run."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from bakeoff.pipelines.cli.output import emit, output_args, stderr_line


def _pairs(items: list[str], flag: str, example: str) -> dict[str, str]:
    from bakeoff.pipelines.errors import SpecError

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SpecError(f"{flag} {item!r}: expected LEG=VALUE, e.g. {flag} {example}", field=flag)
        out[name] = value
    return out


def _number(text: str, flag: str) -> float:
    from bakeoff.pipelines.errors import SpecError

    try:
        return float(text)
    except ValueError:
        raise SpecError(f"{flag} {text!r}: expected a number", field=flag) from None


def decision_from_flags(args) -> dict[str, Any]:
    """The spec-shaped decision the flags give (only what they give: the rest comes from the run's own)."""
    out: dict[str, Any] = {}
    production = {k: getattr(args, k) for k in ("tokens", "samples", "steps", "batch") if getattr(args, k) is not None}
    if production:
        out["production"] = production
    if args.instances:
        out["instances"] = {k: int(_number(v, "--instances")) for k, v in
                            _pairs(args.instances, "--instances", "trn1=16").items()}
    if args.purchase:
        purchase = {}
        for leg, value in _pairs(args.purchase, "--purchase", "p4d=spot:60:10").items():
            option, *numbers = value.split(":")
            entry: dict[str, Any] = {"option": option}
            for key, text in zip(("discount_pct", "interruption_overhead_pct"), numbers, strict=False):
                entry[key] = _number(text, "--purchase")
            purchase[leg] = entry
        out["purchase"] = purchase
    porting = {k: v for k, v in (("hours_spent", args.hours_spent), ("hours_expected", args.hours_expected),
                                 ("usd_per_hour", args.usd_per_hour)) if v is not None}
    if porting:
        out["porting"] = porting
    for key in ("runs_per_period", "period", "confidence"):
        if getattr(args, key) is not None:
            out[key] = getattr(args, key)
    return out


def cmd_project(args) -> int:
    from bakeoff.pipelines import api

    target = args.target if args.target.startswith("arn:") else Path(args.target)
    result = api.project(target, decision_from_flags(args), out_dir=args.out, region=args.region,
                         profile=args.profile,
                         progress=None if args.quiet else lambda ev: stderr_line(f"bakeoff: {ev.message}"))

    def text(r) -> None:
        from bakeoff.pipelines.cli.summary import render_projection

        render_projection(r)
        if r.report_path:
            print(f"report: {r.report_path}")

    emit(args, result, text)
    if args.open and result.report_path:
        import webbrowser

        webbrowser.open(Path(result.report_path).resolve().as_uri())
    return 0


def register(sub) -> None:
    from bakeoff.pipelines.cli.aws import _aws_args

    p = sub.add_parser("project", help="what a production run would cost on each leg, the saving and its "
                                       "interval, and when the porting pays back, from a finished run",
                       epilog="what the flags leave out comes from the spec's `decision:` section the run was "
                              "evaluated under, then the defaults (the bake-off's own size, as many instances, "
                              "once a quarter, on demand, no porting effort).")
    p.add_argument("target", help="run directory (local) or pipeline execution ARN (SageMaker)")
    size = p.add_argument_group("the production run")
    size.add_argument("--tokens", type=float, metavar="N", help="tokens one production run trains on")
    size.add_argument("--samples", type=float, metavar="N", help="samples one production run trains on")
    size.add_argument("--steps", type=float, metavar="N", help="optimizer steps of one production run, at the "
                      "bake-off's global batch unless --batch")
    size.add_argument("--batch", type=float, metavar="B", help="the production run's global batch (with --steps)")
    size.add_argument("--instances", action="append", default=[], metavar="LEG=N", help="instances of a production "
                      "run on LEG (repeatable; default: as in the bake-off)")
    size.add_argument("--runs-per-period", type=float, metavar="R", help="production runs per period (default 1)")
    size.add_argument("--period", choices=("week", "month", "quarter", "year"), help="the period (default quarter)")
    cost = p.add_argument_group("how it is bought, and the port")
    cost.add_argument("--purchase", action="append", default=[], metavar="LEG=OPTION[:DISCOUNT[:OVERHEAD]]",
                      help="how LEG is bought: on_demand, spot, savings_plan or reserved, with the percent off on "
                      "demand and (spot) the percent of run time lost to interruptions, e.g. p4d=spot:60:10")
    cost.add_argument("--hours-spent", type=float, metavar="H", help="engineer-hours already spent porting")
    cost.add_argument("--hours-expected", type=float, metavar="H", help="engineer-hours still expected")
    cost.add_argument("--usd-per-hour", type=float, metavar="USD", help="loaded cost of an engineer-hour")
    p.add_argument("--confidence", type=float, help="level of the intervals (default 0.9)")
    p.add_argument("--out", help="where to write evaluation.json with the projection and report.html (default "
                                 "./bakeoff-project-NAME; the run directory is never written)")
    p.add_argument("--open", action="store_true", help="open report.html in a browser")
    _aws_args(p)
    output_args(p, "print the projection as JSON (what the Python API's `project` returns)")
    p.set_defaults(func=cmd_project)
