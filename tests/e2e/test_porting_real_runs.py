"""The "what porting cost" section from real local runs, with and without a preflight."""
import json

from shared_runs import shared_tiny_run  # noqa: F401  (the fixture `tiny_run`: one real run per invocation)

from bakeoff_runtime.report.document import render_html, render_markdown


def test_a_real_run_writes_the_section(tiny_run):
    ev = json.loads((tiny_run["out"] / "evaluation" / "evaluation.json").read_text())
    legs = ev["porting"]["legs"]
    assert set(legs) == set(ev["legs"]) - {ev["parity"]["baseline"]}
    assert all(e["code"]["lines_differ"] == 0 for e in legs.values())
    md = render_markdown(ev)
    assert "## What porting cost" in md and "What porting cost" in render_html(ev)


def test_a_local_run_with_a_preflight_shows_its_findings(tmp_path):
    from conftest import bakeoff, tiny_spec, write_spec

    spec = write_spec(tmp_path / "tiny.yaml", tiny_spec(preflight={"enabled": True, "steps": 4}))
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["porting"]["legs"]["trn1"]["preflight"]["verdict"] == "ready"
