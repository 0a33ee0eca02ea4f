"""The decision a bake-off serves, end to end on the local engine (its jobs in the fake container): the
spec's `decision:` reaches the Evaluate step, evaluation.json carries the projection, the terminal says it;
`bakeoff project` reads a finished run directory against other inputs without writing into it or running
a job, and bad input is one line and exit 2."""
import json

from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec

DECISION = {"production": {"samples": 3.6e9}, "instances": {"m5": 4}, "runs_per_period": 4, "period": "quarter",
            "purchase": {"g5": {"option": "spot", "discount_pct": 60, "interruption_overhead_pct": 10}},
            "porting": {"hours_spent": 10, "hours_expected": 10, "usd_per_hour": 100}}


def test_a_spec_with_a_decision_gets_its_projection_in_the_evaluation_and_on_the_terminal(tmp_path, monkeypatch,
                                                                                          capsys):
    spec = verdict_spec(tmp_path, seeds=3, decision=DECISION)
    code, out, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", tmp_path / "run",
                                 "--no-mlflow")
    assert code == 0, err[-2000:]
    ev = json.loads((tmp_path / "run" / "evaluation" / "evaluation.json").read_text())
    p = ev["projection"]
    assert p["schema"] == "bakeoff.projection/1" and p["emulated"] and p["decision"]["instances"] == {"m5": 4}
    m5, g5 = p["legs"]["m5"], p["legs"]["g5"]
    # 3.6e9 samples at the fake jobs' 1000 samples/s: 1,000 h on one instance, 250 h on four (no sweep: linear).
    assert m5["instances"] == 4 and m5["scaling"]["basis"] == "assumed linear"
    assert m5["hours_per_run"]["mean"] > 250 and g5["hours_per_run"]["mean"] > 1000 * 1.1
    assert g5["price"]["option"] == "spot" and "60% off" in " ".join(g5["rests_on"])
    assert p["comparisons"][0]["leg"] == "m5" and p["comparisons"][0]["porting_usd"] == 2000
    assert "decision: Emulated speeds, not a decision" in out.replace("\n", " ")


def test_bakeoff_project_reads_a_finished_run_against_other_inputs_and_leaves_it_untouched(tmp_path, monkeypatch,
                                                                                          capsys):
    spec = verdict_spec(tmp_path, seeds=3)
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", tmp_path / "run",
                               "--no-mlflow")
    assert code == 0, err[-2000:]
    run_ev = tmp_path / "run" / "evaluation" / "evaluation.json"
    before = run_ev.read_bytes()
    assert "projection" not in json.loads(before)  # no decision declared: none projected
    code, out, err = bakeoff_cli(monkeypatch, capsys, None, "project", tmp_path / "run", "--samples", "7.2e9",
                                 "--instances", "g5=2", "--hours-expected", "40", "--usd-per-hour", "150",
                                 "--out", tmp_path / "projected", "--json")
    assert code == 0, err[-2000:]
    result = json.loads(out)
    assert result["legs"]["g5"]["instances"] == 2 and result["porting_usd"] == 6000
    assert result["decision"]["production"] == {"units": 7.2e9, "unit": "samples", "steps": None, "batch": None}
    written = json.loads((tmp_path / "projected" / "evaluation.json").read_text())
    assert written["projection"]["sentence"] == result["sentence"]
    assert (tmp_path / "projected" / "report.html").exists()
    assert run_ev.read_bytes() == before  # the run directory is read, never written


def test_bad_decision_flags_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    spec = verdict_spec(tmp_path, seeds=2)
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", tmp_path / "run",
                               "--no-mlflow")
    assert code in (0, 3), err[-2000:]
    for args, words in ((["--instances", "p4d=4"], "'p4d' is not a leg of this bake-off"),
                        (["--purchase", "g5=spot"], "needs its discount_pct"),
                        (["--instances", "g5"], "expected LEG=VALUE"),
                        (["--tokens", "1e9", "--steps", "10"], "give one of tokens, samples or steps")):
        code, out, err = bakeoff_cli(monkeypatch, capsys, None, "project", tmp_path / "run", *args,
                                     "--out", tmp_path / "p")
        assert code == 2, (args, err)
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
