"""`bakeoff plan SPEC [--from RUN] [--json]`: seeds, jobs and cost of a verdict before running it."""
from __future__ import annotations

import argparse

from bakeoff.pipelines.cli.output import emit, output_args


def cmd_plan(args) -> int:
    from bakeoff.pipelines import api
    from bakeoff.pipelines.advice.budget import render

    # The command is a shell over the façade: its --json is the façade's result, nothing else.
    plan = api.plan(args.spec, overrides=args.overrides, from_run=args.previous, max_seeds=args.max_seeds)
    return emit(args, plan, lambda p: print("\n".join(render(p))))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="seeds per leg for 80%% and 95%% power, jobs, instance-hours and cost of the "
                                    "fixed and the sequential (--until-decided) design")
    p.add_argument("spec", help="bake-off spec (YAML)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field before validation (repeatable)")
    p.add_argument("--from", dest="previous", metavar="RUN", help="a previous run of this bake-off (its directory): "
                   "plan from its paired spread and job hours; without it, the pilot to run")
    p.add_argument("--max-seeds", type=int, metavar="N", help="the sequential design's cap on seeds per leg "
                   "(default 4 x the spec's seeds)")
    output_args(p, "print the plan as JSON (what the Python API's `plan` returns)")
    p.set_defaults(func=cmd_plan)
