"""One rule per run: `bakeoff run --param ParityMargin=...` decides, stops doomed legs, records and reports
under the margin it was started with, never the spec's, so it ends as the same jobs under a spec with that
margin do. Through the real CLI with the jobs in the fake container (fake_container.py); the Evaluate step
is real. The resolver itself: tests/unit/test_one_rule.py."""
import json
import random

from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec

SEEDS = 6


def _worse_by(gap: float) -> Recipe:
    """m5 worse than the baseline g5 by `gap` on every seed, give or take a few thousandths: far beyond
    a 0.05 margin (the doomed-leg watch stops such a leg once it has 3 other seeds' noise), well within 0.5."""
    values = {}
    for seed in range(SEEDS):
        base = 0.30 + random.Random(seed).gauss(0.0, 0.01)
        values[f"g5/{seed}"] = base
        values[f"m5/{seed}"] = base + gap + random.Random(f"m5/{seed}").uniform(-0.004, 0.004)
    return Recipe(values=values)


def _evaluation(out):
    return json.loads((out / "evaluation" / "evaluation.json").read_text())


def _parity_check(ev):
    check = next(c for c in ev["checks"] if c["name"] == "parity:m5~g5")
    return {k: check.get(k) for k in ("status", "margin", "diff", "ci", "test")}


def test_a_margin_parameter_is_the_rule_of_every_reader(monkeypatch, capsys, tmp_path):
    recipe = _worse_by(0.2)
    # What the spec's own margin does with these jobs: the watch stops the leg beyond 0.05.
    spec = verdict_spec(tmp_path / "a", seeds=SEEDS, margin=0.05)
    strict = tmp_path / "strict"
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(recipe), "run", spec, "--out", strict,
                               "--no-mlflow", "--jobs", "1")
    assert "leg m5: stopped early after seed" in err and "beyond the margin 0.05 " in err, err[-3000:]
    assert _evaluation(strict)["verdict"] != "pass" and code != 0

    # The same spec started with ParityMargin=0.5: every reader sees 0.5.
    out = tmp_path / "param"
    container = FakeContainer(recipe)
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", out, "--no-mlflow",
                               "--param", "ParityMargin=0.5")
    assert code == 0, err[-3000:]
    assert "stopped early" not in err and len(container.ran) == 2 * SEEDS  # the watch judged by 0.5
    ev = _evaluation(out)
    assert ev["verdict"] == "pass" and ev["parity"]["margin"] == 0.5
    assert ev["rule"]["current"]["margin"] == 0.5 and not ev["rule"]["changed"], ev["rule"]
    assert _parity_check(ev)["margin"] == 0.5
    assert json.loads((out / "parity-rule.json").read_text())["rule"]["margin"] == 0.5
    assert json.loads((out / "plan.json").read_text())["parity_rule"]["margin"] == 0.5
    report = (out / "evaluation" / "report.md").read_text()
    rule_line = next(line for line in report.splitlines() if line.startswith("- Parity metric val_mse"))
    assert "margin +/-0.5 (absolute)" in rule_line, rule_line
    assert "+/-0.05" not in report and "margin 0.05" not in report and "inside +/-0.5" in report

    # The same jobs under a spec whose margin is 0.5 decide the same.
    wide = tmp_path / "wide"
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(recipe), "run",
                               verdict_spec(tmp_path / "b", seeds=SEEDS, margin=0.5), "--out", wide, "--no-mlflow")
    assert code == 0, err[-3000:]
    assert _evaluation(wide)["verdict"] == "pass"
    assert _parity_check(_evaluation(wide)) == _parity_check(ev)
    assert _evaluation(wide)["rule"]["current"] == ev["rule"]["current"]

    # `bakeoff report DIR` deciding it again reads the parameters the run was started with.
    (out / "evaluation" / "evaluation.json").unlink()
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "report", out, "--write")
    assert "deciding again" in err and code == 0, err[-3000:]
    again = _evaluation(out)
    assert again["verdict"] == "pass" and again["rule"]["current"]["margin"] == 0.5 and not again["rule"]["changed"]
    assert _parity_check(again) == _parity_check(ev)


def test_the_margin_parameter_is_fixed_before_the_data_like_the_spec(monkeypatch, capsys, tmp_path):
    """The rule recorded before the jobs ran is the run's, parameter and all: re-deciding the same jobs
    under another margin, by the spec or by the parameter, needs --rule-change."""
    recipe = _worse_by(0.2)
    spec = verdict_spec(tmp_path, seeds=SEEDS, margin=0.05)
    out = tmp_path / "out"
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(recipe), "run", spec, "--out", out, "--no-mlflow",
                               "--param", "ParityMargin=0.5")
    assert code == 0, err[-3000:]
    # Without the parameter the spec's 0.05 is another rule than the one the jobs ran under.
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow")
    assert code == 2 and "parity rule changed after its jobs ran" in err and "margin 0.5 -> 0.05" in err, err[-2000:]
    # The same parameter again: the same rule, nothing to refuse (no job runs again).
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow",
                               "--param", "ParityMargin=0.5")
    assert "parity rule changed" not in err, err[-2000:]
    # A parameter that is no margin is refused before anything runs.
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", tmp_path / "bad", "--no-mlflow",
                               "--param", "ParityMargin=-1")
    assert code == 2 and "ParityMargin" in err and "positive" in err, err[-2000:]
