"""The seeds check through the local engine: evidence about the harness (does the seed reach the script?),
never a `fail` of the verdict. A parity metric that moves in steps ties across seeds by chance; only
bit-identical training losses say the seeds were one run.

The fake job (fake_job.py) logs a training loss of 1 / (1 + step) + the final metric, so where the
rounded metric ties, its losses tie too: that is the identical-losses case. `--param MaxSteps=0` makes
its jobs log no training loss at all (what script mode without a loss regex writes): the tie-alone case."""
import json

from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec

NO_LOSSES = ("--param", "MaxSteps=0")


def _run(monkeypatch, capsys, tmp_path, recipe, *extra):
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(recipe), "run", verdict_spec(tmp_path),
                               "--out", tmp_path / "out", "--no-mlflow", *extra)
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    assert path.exists(), err[-3000:]
    ev = json.loads(path.read_text())
    return code, ev, {c["name"]: c for c in ev["checks"]}


def test_identical_legs_whose_stepped_metric_ties_and_that_log_no_loss_are_not_failed(monkeypatch, capsys, tmp_path):
    # val_mse rounded to 0.1: every seed of both legs lands on 0.3.
    code, ev, checks = _run(monkeypatch, capsys, tmp_path, Recipe(quantum=0.1), *NO_LOSSES)
    for leg in ("m5", "g5"):
        assert ev["legs"][leg]["metric"]["values"] == [0.3, 0.3, 0.3]
        check = checks[f"seeds:{leg}"]
        assert check["status"] == "unchecked", check
        assert "by chance" in check["why"] and "log the training loss" in check["why"]
    assert ev["verdict"] != "fail" and code != 1 and "seeds" not in ev["failed_checks"]


def test_identical_training_losses_on_every_seed_leave_the_verdict_inconclusive_with_the_fix(monkeypatch, capsys,
                                                                                              tmp_path):
    code, ev, checks = _run(monkeypatch, capsys, tmp_path, Recipe(quantum=0.1))
    check = checks["seeds:m5"]
    assert check["status"] == "inconclusive" and "ignore its seed" in check["why"]
    assert "final training loss" in check["why"] and "no spread to test" in check["why"]
    assert ev["verdict"] == "inconclusive" and code == 3 and "seeds" not in ev["failed_checks"]
    assert "seeds:m5" in ev["undecided_checks"] and "entrypoint.script_mode.seed" in ev["to_decide"]


def test_a_metric_that_is_zero_on_every_run_is_not_a_failure(monkeypatch, capsys, tmp_path):
    zero = Recipe(values={f"{leg}/{seed}": 0.0 for leg in ("m5", "g5") for seed in range(3)})
    code, ev, checks = _run(monkeypatch, capsys, tmp_path, zero, *NO_LOSSES)
    assert checks["seeds:m5"]["status"] == "unchecked" and checks["seeds:g5"]["status"] == "unchecked"
    assert ev["verdict"] != "fail" and code != 1 and "seeds" not in ev["failed_checks"]
