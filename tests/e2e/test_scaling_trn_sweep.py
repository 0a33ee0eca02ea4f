"""A trn scaling sweep run locally end to end."""
import json

from conftest import bakeoff, tiny_spec, write_spec


# --- end to end -----------------------------------------------------------------------------------
def test_a_trn_sweep_runs_locally_end_to_end(tmp_path):
    data = tiny_spec(seeds=1)  # one seed a size: the sweep, not the verdict, is under test
    data["training"].update({"global_batch_size": 32, "max_steps": 8, "log_interval": 2})
    data["legs"][0]["scaling"] = [{"instance_type": "ml.trn1.32xlarge"}]
    data["legs"][1]["scaling"] = [{"instance_type": "ml.p4d.24xlarge", "instance_count": 2}]
    data["mlflow"] = {"enabled": False}
    out = tmp_path / "out"
    # -v: each size of a leg on its own line is a detail of the substitutions.
    proc = bakeoff("run", write_spec(tmp_path / "sweep.yaml", data), "-v", "--out", out)
    assert proc.returncode in (0, 1, 3), proc.stdout + proc.stderr
    assert "leg p4d-x2: 2 x ml.p4d.24xlarge" in proc.stdout + proc.stderr
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    for leg, devices in (("trn1", [2, 32]), ("p4d", [8, 16])):
        points = ev["scaling"][leg]
        assert [p["devices"] for p in points] == devices
        assert all(p["throughput"] and p["efficiency"] is not None for p in points)
    assert [p["processes"] for p in ev["scaling"]["trn1"]] == [1, 1]  # xla:cpu: one process, said so
    assert [p["processes"] for p in ev["scaling"]["p4d"]] == [2, 2]  # gloo across two processes
    assert "parity:trn1-32xlarge~p4d" in {c["name"] for c in ev["checks"]}
    html = (out / "evaluation" / "report.html").read_text()
    assert "Throughput vs devices" in html and "Emulated on this machine" in html
    plan = json.loads((out / "plan.json").read_text())
    assert plan["legs"]["trn1-32xlarge"]["local_processes"] == 1
    assert "cannot run collectives" in plan["legs"]["trn1-32xlarge"]["local_processes_why"]
