"""`bakeoff preflight` without --out: its job files are scratch, gone once every leg has a report,
kept when a leg did not finish (the error names the job's log there)."""
import json

from conftest import ROOT, bakeoff, write_spec

PLANTED = ROOT / "tests" / "assets" / "preflight"


def _spec(tmp_path, source_dir, script):
    return write_spec(tmp_path / "spec.yaml", {
        "name": "scratch", "entrypoint": {"source_dir": str(source_dir), "script": script,
                                          "allow_outside_spec_dir": True},
        "legs": [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"},
                 {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "precision": "fp32"}], "seeds": 2})


def test_a_preflight_without_out_leaves_no_scratch_behind(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = bakeoff("preflight", _spec(tmp_path, PLANTED, "clean.py"), "--json", env={"TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["trn1"]["verdict"] == "ready"
    assert [p.name for p in scratch.iterdir() if p.name.startswith("bakeoff-preflight-")] == []


def test_a_preflight_that_did_not_finish_keeps_the_log_its_error_names(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "broken.py").write_text("raise RuntimeError('the model would not build')\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = bakeoff("preflight", _spec(tmp_path, source, "broken.py"), env={"TMPDIR": str(scratch)})
    assert proc.returncode != 0
    kept = [p for p in scratch.iterdir() if p.name.startswith("bakeoff-preflight-")]
    assert len(kept) == 1
    log = kept[0] / "preflight" / "trn1" / "stdout.log"
    assert str(log) in proc.stderr + proc.stdout and log.exists()
