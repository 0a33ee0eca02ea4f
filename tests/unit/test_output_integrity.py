"""A job's published output is checked against the digest the job wrote when it finished: an output
changed afterwards (by hand, by another job) is a lost run, never its numbers used."""
import io
import json
import tarfile

from jobtree import seal

from bakeoff_runtime.contract.output_digest import DIGEST_FILE
from bakeoff_runtime.verdict.evaluation import evaluate
from bakeoff_runtime.verdict.job_outputs import load_job, load_jobs

CONFIG = {"parity": {"metric": "val_loss", "margin": 0.05, "alpha": 0.05, "baseline": "gpu"},
          "legs": {leg: {"instance_type": "ml.m5.xlarge", "instance_count": 1, "backend": "cpu", "seeds": [0, 1, 2]}
                   for leg in ("trn", "gpu")}}


def _published(root, leg, seed, val, sealed=True):
    """output.tar.gz as the Evaluate step fetches it into jobs/<leg>-s<seed>/."""
    src = root / "src" / f"{leg}-s{seed}"
    src.mkdir(parents=True)
    (src / "summary.json").write_text(json.dumps({"leg": leg, "seed": seed, "status": "completed",
                                                  "metrics": {"val_loss": val}}))
    (src / "metrics.jsonl").write_text(json.dumps({"kind": "eval", "step": 10, "val_loss": val}) + "\n")
    names = ["summary.json", "metrics.jsonl"] + ([seal(src).name] if sealed else [])
    target = root / "jobs" / f"{leg}-s{seed}"
    target.mkdir(parents=True)
    with tarfile.open(target / "output.tar.gz", "w:gz") as tar:
        for name in names:
            tar.add(src / name, arcname=name)
    return target / "output.tar.gz"


def _replace(tarball, name, body: bytes):
    with tarfile.open(tarball) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    members[name] = body
    with tarfile.open(tarball, "w:gz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _bakeoff(root):
    return {(leg, seed): _published(root, leg, seed, 2.40 + seed / 100) for leg in ("trn", "gpu") for seed in range(3)}


def _run(ev, leg, seed):
    return next(r for r in ev["legs"][leg]["runs"] if r["seed"] == seed)


def test_untouched_outputs_pass(tmp_path):
    _bakeoff(tmp_path)
    assert evaluate(CONFIG, load_jobs(tmp_path / "jobs"))["verdict"] == "pass"


def test_a_rewritten_summary_is_a_lost_run_not_a_fail(tmp_path):
    tars = _bakeoff(tmp_path)
    # Another job (same machine, same role) makes the trn leg look worse than it was.
    _replace(tars["trn", 1], "summary.json", json.dumps(
        {"leg": "trn", "seed": 1, "status": "completed", "metrics": {"val_loss": 9.0}}).encode())
    ev = evaluate(CONFIG, load_jobs(tmp_path / "jobs"))
    run = _run(ev, "trn", 1)
    assert run["status"] == "lost" and run["failure_kind"] == "changed-output"
    assert "summary.json does not match against the digest the job recorded" in run["reason"]
    assert ev["verdict"] == "inconclusive"  # the tampered 9.0 would have been a fail


def test_rewritten_metrics_or_a_dropped_digest_are_caught(tmp_path):
    tars = _bakeoff(tmp_path)
    _replace(tars["trn", 0], "metrics.jsonl", b'{"kind": "eval", "step": 10, "val_loss": 0.1}\n')
    assert "metrics.jsonl does not match" in load_job(tars["trn", 0].parent)["summary_problem"]
    unsealed = _published(tmp_path / "x", "trn", 0, 2.4, sealed=False)
    assert f"carries no {DIGEST_FILE}" in load_job(unsealed.parent)["summary_problem"]
    _replace(tars["gpu", 2], DIGEST_FILE, b"not json")
    assert "is not the digest the job wrote" in load_job(tars["gpu", 2].parent)["summary_problem"]


def test_one_jobs_output_copied_over_anothers_is_caught(tmp_path):
    tars = _bakeoff(tmp_path)
    tars["trn", 2].write_bytes(tars["gpu", 2].read_bytes())  # consistent in itself, digest and all
    job = load_job(tars["trn", 2].parent)
    assert job["summary"] is None and "the output of trn-s2 is that of gpu-s2" in job["summary_problem"]


def test_a_failed_job_that_died_before_its_digest_is_still_judged_by_what_it_left(tmp_path):
    src = tmp_path / "trn-s0" / "opt" / "ml" / "model"
    src.mkdir(parents=True)
    (src / "summary.json").write_text(json.dumps({"leg": "trn", "seed": 0, "status": "failed", "reason": "OOM"}))
    job = load_job(tmp_path / "trn-s0")
    assert job["summary"]["reason"] == "OOM" and job["summary_problem"] is None
