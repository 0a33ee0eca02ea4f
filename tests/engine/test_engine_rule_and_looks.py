"""The parity rule is fixed before the data, and a re-run after a verdict is a counted look: the local
engine's records (parity-rule.json, looks.json) and refusals, through the real CLI with the jobs in the
fake container (fake_container.py). Once tests/e2e/test_verdict_e2e.py, where each run trained real jobs."""
import json

from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec


def test_changing_the_rule_after_the_data_needs_a_reason_and_shows_both(monkeypatch, capsys, tmp_path):
    spec, out = verdict_spec(tmp_path), tmp_path / "out"
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", out, "--no-mlflow")
    assert code == 0 and json.loads((out / "evaluation" / "evaluation.json").read_text())["verdict"] == "pass", err
    # Neither the refusal nor the re-decision runs a job (bakeoff_cli's None: any job would fail the test).
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow",
                               "--set", "parity.margin=0.5")
    assert code == 2 and "parity rule changed after its jobs ran" in err, err
    assert "margin 0.05 -> 0.5" in err
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow",
                               "--set", "parity.margin=0.5", "--rule-change", "the 0.05 margin was a unit mistake")
    assert code == 0, err[-2000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["rule"]["changed"] and ev["rule"]["original"]["margin"] == 0.05 and ev["rule"]["current"]["margin"] == 0.5
    assert "unit mistake" in (out / "evaluation" / "report.html").read_text()


def test_a_truncated_rule_file_does_not_let_a_new_rule_through(monkeypatch, capsys, tmp_path):
    """parity-rule.json emptied (a crash while writing it, or by hand) with finished jobs kept: a new
    margin is refused as if the rule had changed; with a reason it decides and says the rule was lost."""
    spec, out = verdict_spec(tmp_path), tmp_path / "out"
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", out, "--no-mlflow")
    assert code == 0 and json.loads((out / "evaluation" / "evaluation.json").read_text())["verdict"] == "pass", err
    (out / "parity-rule.json").write_text("")
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow",
                               "--set", "parity.margin=0.5")
    assert code == 2 and "rule they ran under is not recorded" in err, err[-2000:]
    assert "Traceback" not in err
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow",
                               "--set", "parity.margin=0.5", "--rule-change", "the file was lost in a crash")
    assert code == 0, err[-2000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["rule"]["changed"] and ev["rule"]["original"] is None
    assert "not recorded" in ev["rule"]["reason"] and "lost in a crash" in ev["rule"]["reason"]
    assert json.loads((out / "parity-rule.json").read_text())["changed_to"]["margin"] == 0.5


def test_a_re_run_after_inconclusive_is_a_counted_look(monkeypatch, capsys, tmp_path):
    """Adding seeds to an undecided bake-off and deciding again at the full alpha is optional
    stopping: refused with the way on; the same seeds decide as the same look; fresh seeds are a
    second look, and the verdict, looks.json and the report say so."""
    spec, out = verdict_spec(tmp_path, margin=0.01), tmp_path / "out"
    container = FakeContainer(Recipe(unpaired={"m5": 0.05}))
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", out, "--no-mlflow")
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "inconclusive" and ev["looks"] == {"this_look": 1, "earlier": []}, err[-2000:]
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow", "--set", "seeds=6")
    assert code == 2, err[-2000:]
    line = err.strip().splitlines()
    assert len(line) == 1 and "decided `inconclusive` on seeds 0-2 (look 1, fixed design)" in line[0], err
    assert "e.g. `seeds: [6, 7, 8, 9, 10, 11]`" in line[0] and "--until-decided" in line[0]
    assert not (out / "jobs" / "m5-s3").exists(), "a refused look spent seeds"
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow")  # the same look
    assert code == 3, err[-2000:]
    assert json.loads((out / "evaluation" / "evaluation.json").read_text())["looks"]["this_look"] == 1
    ran_before = len(container.ran)
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", out, "--no-mlflow",
                               "--set", "seeds=[3, 4, 5]")
    assert code in (0, 1, 3), err[-2000:]
    assert sorted(container.ran[ran_before:]) == ["g5-s3", "g5-s4", "g5-s5", "m5-s3", "m5-s4", "m5-s5"]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["looks"]["this_look"] == 2
    assert [(x["look"], x["seeds"], x["verdict"]) for x in ev["looks"]["earlier"]] == [(1, [0, 1, 2], "inconclusive")]
    record = json.loads((out / "looks.json").read_text())["looks"]
    assert [(x["look"], x["seeds"]) for x in record] == [(1, [0, 1, 2]), (2, [3, 4, 5])]
    assert "This is look 2 at this directory's data; before it: look 1 (fixed) on seeds 0-2: inconclusive" in \
        (out / "evaluation" / "report.md").read_text()
