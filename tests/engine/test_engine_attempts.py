"""Attempts are counted per question, wherever their --out is (pipelines/local/questions.py): through the
real CLI, the jobs in the fake container (fake_container.py), the Evaluate step real.

A question (the same legs, rule and training setup) decided once is not decided again on other seeds as
if for the first time: after an inconclusive stage 1 a run of fresh seeds is its stage 2, decided with
stage 1 by the two-stage design (verdict/two_stage.py); after a decided question, or one whose design has
ended, a new attempt needs `--fresh-start REASON` and the evaluation lists every attempt before it."""
import json

from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec

UNDECIDED = Recipe(unpaired={"m5": 0.04})  # its own noise on m5: 3 seeds leave a 0.04 margin undecided


def _evaluation(out):
    return json.loads((out / "evaluation" / "evaluation.json").read_text())


def _parity(ev):
    return next(c for c in ev["checks"] if c["name"] == "parity:m5~g5")


def test_fresh_seeds_in_a_new_out_after_an_inconclusive_stage_1_are_its_stage_2(monkeypatch, capsys, tmp_path):
    first = verdict_spec(tmp_path / "one", seeds=3, margin=0.04)
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(UNDECIDED), "run", first, "--out",
                               tmp_path / "stage1", "--no-mlflow")
    ev1 = _evaluation(tmp_path / "stage1")
    assert ev1["verdict"] == "inconclusive" and code == 3, err[-3000:]
    rec = ev1["recommendation"]
    assert rec["next"] == "stage 2" and rec["fresh_seeds"][0] == 3, rec
    assert ev1["attempt"]["number"] == 1 and ev1["attempt"]["stage"] == 1 and ev1["attempt"]["earlier"] == []

    # Deciding the same jobs again (a re-run into the same --out) is the same attempt, not a new one.
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(UNDECIDED), "run", first, "--out",
                               tmp_path / "stage1", "--no-mlflow")
    assert code == 3 and _evaluation(tmp_path / "stage1")["attempt"]["number"] == 1, err[-3000:]

    # The advised fresh seeds, in another directory: stage 2, decided with stage 1's figures.
    fresh = rec["fresh_seeds"][:12]
    second = verdict_spec(tmp_path / "two", seeds=fresh, margin=0.04)
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(UNDECIDED), "run", second, "--out",
                               tmp_path / "stage2", "--no-mlflow")
    ev2 = _evaluation(tmp_path / "stage2")
    assert code in (0, 1, 3), err[-3000:]
    assert ev2["attempt"]["number"] == 2 and ev2["attempt"]["stage"] == 2, ev2["attempt"]
    assert [a["verdict"] for a in ev2["attempt"]["earlier"]] == ["inconclusive"]
    check = _parity(ev2)
    assert check["stage"] == 2 and check["stage1"]["n_pairs"] == 3 and "two-stage" in check["why"], check

    # Its design spent, the question takes no third decision on other seeds without saying so.
    third = verdict_spec(tmp_path / "three", seeds=[100, 101, 102], margin=0.04)
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", third, "--out", tmp_path / "again", "--no-mlflow")
    assert code == 2 and "--fresh-start REASON" in err and "attempt nobody counts" in err, err[-3000:]
    assert not (tmp_path / "again" / "evaluation").exists()


def test_a_decided_question_is_started_over_only_on_purpose_and_the_evaluation_says_so(monkeypatch, capsys,
                                                                                       tmp_path):
    spec = verdict_spec(tmp_path / "a", seeds=3, margin=0.05)
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", tmp_path / "first",
                               "--no-mlflow")
    assert code == 0, err[-3000:]
    # The same question on other seeds, in a new directory: refused, one line, exit 2, no job run.
    other = verdict_spec(tmp_path / "b", seeds=[10, 11, 12], margin=0.05)
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", other, "--out", tmp_path / "second", "--no-mlflow")
    assert code == 2 and "was decided `pass`" in err and "Traceback" not in err, err[-3000:]
    # Started over on purpose: decided, and the evaluation names the reason and the attempt before.
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", other, "--out",
                               tmp_path / "second", "--no-mlflow", "--fresh-start", "new data pipeline")
    assert code == 0, err[-3000:]
    attempt = _evaluation(tmp_path / "second")["attempt"]
    assert attempt["number"] == 2 and attempt["fresh_start"] == "new data pipeline"
    assert attempt["earlier"][0]["verdict"] == "pass" and attempt["earlier"][0]["out"] == str(tmp_path / "first")


def test_another_question_is_not_an_earlier_attempt(monkeypatch, capsys, tmp_path):
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run",
                               verdict_spec(tmp_path / "a", margin=0.05), "--out", tmp_path / "a-out", "--no-mlflow")
    assert code == 0, err[-3000:]
    # Another margin is another rule, so another question: decided on its own.
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run",
                               verdict_spec(tmp_path / "b", margin=0.08), "--out", tmp_path / "b-out", "--no-mlflow")
    assert code == 0 and _evaluation(tmp_path / "b-out")["attempt"]["number"] == 1, err[-3000:]


def test_the_report_names_every_attempt_before_this_one(monkeypatch, capsys, tmp_path):
    first = verdict_spec(tmp_path / "one", seeds=3, margin=0.04)
    bakeoff_cli(monkeypatch, capsys, FakeContainer(UNDECIDED), "run", first, "--out", tmp_path / "s1", "--no-mlflow")
    fresh = _evaluation(tmp_path / "s1")["recommendation"]["fresh_seeds"]
    second = verdict_spec(tmp_path / "two", seeds=fresh, margin=0.04)
    bakeoff_cli(monkeypatch, capsys, FakeContainer(UNDECIDED), "run", second, "--out", tmp_path / "s2", "--no-mlflow")
    report = (tmp_path / "s2" / "evaluation" / "report.md").read_text()
    assert "Attempt 2 at this question (stage 2 of its two-stage design" in report
    assert f"attempt 1 (stage 1, seeds 0-2 in {tmp_path / 's1'}): inconclusive" in report


def test_the_same_seeds_in_another_out_are_the_same_attempt_not_a_new_one(monkeypatch, capsys, tmp_path):
    # The same draws decided again (a run directory deleted and run again, a colleague's copy): no new
    # evidence, so neither a new attempt nor a refusal.
    spec = verdict_spec(tmp_path / "a", seeds=3, margin=0.05)
    for out in ("first", "again"):
        code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out", tmp_path / out,
                                   "--no-mlflow")
        assert code == 0, err[-3000:]
        attempt = _evaluation(tmp_path / out)["attempt"]
        assert attempt["number"] == 1 and attempt["earlier"] == []
    # Seeds that overlap a decided attempt's without being its seeds are refused like any other new attempt.
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", verdict_spec(tmp_path / "b", seeds=[1, 2, 3],
                                                                               margin=0.05),
                               "--out", tmp_path / "overlap", "--no-mlflow")
    assert code == 2 and "--fresh-start REASON" in err, err[-2000:]
