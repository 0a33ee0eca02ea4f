"""`bakeoff run --json` of a real bake-off prints the final summary."""
from __future__ import annotations

import json

from shared_runs import copied_tiny_run  # noqa: F401  (the fixture `tiny_run`: a copy of the one real run)

from conftest import bakeoff


def test_run_json_is_the_final_summary(tiny_run):
    from bakeoff import RunSummary, run_local

    assert tiny_run["proc"].returncode in (0, 1, 3), tiny_run["proc"].stderr[-2000:]
    proc = bakeoff("run", tiny_run["spec"], "--out", tiny_run["out"], "--json")
    assert proc.returncode in (0, 1, 3), proc.stderr[-2000:]
    printed = RunSummary.model_validate(json.loads(proc.stdout))
    again = run_local(tiny_run["spec"], tiny_run["out"])  # right after: every job unchanged, none re-run
    assert again.executed == () and sorted(again.skipped) == sorted(printed.executed + printed.skipped)
    ignore = {"evaluation", "executed", "skipped"}  # the evaluation is decided again (its timings differ)
    assert printed.model_dump(mode="json", exclude=ignore) == again.model_dump(mode="json", exclude=ignore)
    assert printed.verdict == again.verdict and proc.returncode == again.exit_code
