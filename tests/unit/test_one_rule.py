"""The run's parity rule, resolved once from the spec and the parameters the run was started with
(pipelines/local/run_rule.py), and the doomed-leg watch judging by it. Through `bakeoff run`:
tests/engine/test_engine_one_rule.py."""
import json

import pytest

from conftest import tiny_spec, write_spec


def _spec(tmp_path, **parity):
    from bakeoff.pipelines.spec.loader import load_spec

    data = tiny_spec()
    data["parity"] = {**data["parity"], **parity}
    return load_spec(write_spec(tmp_path / "bakeoff.yaml", data))


def test_without_parameters_the_rule_is_the_specs(tmp_path):
    from bakeoff.pipelines.local.run_rule import resolved_rule

    spec = _spec(tmp_path)
    assert resolved_rule(spec).as_dict() == spec.parity_rule()
    assert resolved_rule(spec, {"MaxSteps": 7, "ParityMargin": None}).as_dict() == spec.parity_rule()


@pytest.mark.parametrize("value", ["0.5", 0.5])  # as `--param` gives it, and as the definition types it
def test_the_margin_parameter_sets_the_margin_and_nothing_else(tmp_path, value):
    from bakeoff.pipelines.local.run_rule import resolved_rule

    spec = _spec(tmp_path, alpha=0.1, test="non_inferiority", direction="maximize")
    rule = resolved_rule(spec, {"ParityMargin": value, "MaxSteps": 7})
    assert rule.margin == 0.5 and rule.absolute_margin == 0.5
    assert {**spec.parity_rule(), "margin": 0.5} == rule.as_dict()
    assert (rule.metric, rule.direction, rule.alpha, rule.test, rule.baseline) == (
        "val_loss", "maximize", 0.1, "non_inferiority", "p4d")
    assert json.loads(json.dumps(rule.as_dict())) == rule.as_dict()  # what parity-rule.json holds, as it reads back


def test_a_relative_margin_has_no_absolute_margin(tmp_path):
    from bakeoff.pipelines.local.run_rule import resolved_rule

    rule = resolved_rule(_spec(tmp_path, margin=0.02, margin_type="relative"), {"ParityMargin": "0.1"})
    assert rule.margin == 0.1 and rule.margin_type == "relative" and rule.absolute_margin is None


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "wide"])
def test_a_margin_parameter_that_is_no_margin_is_refused(tmp_path, value):
    from bakeoff.pipelines.local.run_rule import resolved_rule

    with pytest.raises(ValueError, match="ParityMargin"):
        resolved_rule(_spec(tmp_path), {"ParityMargin": value})


def _job(root, name, values):
    model = root / name / "opt" / "ml" / "model"
    model.mkdir(parents=True)
    model.joinpath("metrics.jsonl").write_text("".join(
        json.dumps({"kind": "eval", "step": 10 * (i + 1), "val_loss": v}) + "\n" for i, v in enumerate(values)))
    return root / name


def _feed(watch, root, gap):
    """Four seeds of trn1 worse than p4d by `gap` (a little noise apart): the fourth is judged against
    the noise of the first three. Returns the reason the leg was stopped, or None."""
    why = None
    for seed, jitter in enumerate([0.002, -0.002, 0.001, 0.0]):
        watch.finished("p4d", seed, _job(root, f"p4d-{seed}", [0.5, 0.4]))
        why = watch.finished("trn1", seed, _job(root, f"trn1-{seed}", [0.5 + gap + jitter, 0.4 + gap + jitter]))
        if why:
            break
    return why


def test_the_doomed_leg_watch_judges_by_the_runs_rule(tmp_path):
    from bakeoff.pipelines.local.doomed import DoomWatch
    from bakeoff.pipelines.local.run_rule import resolved_rule

    spec = _spec(tmp_path, margin=0.05)
    spec = spec.model_copy(update={"seeds": 6})
    why = _feed(DoomWatch(spec), tmp_path / "spec", 0.2)  # the spec's 0.05: stopped beyond it
    assert why and "beyond the margin 0.05 " in why, why
    wide = resolved_rule(spec, {"ParityMargin": "0.5"})
    assert _feed(DoomWatch(spec, rule=wide), tmp_path / "param", 0.2) is None
    later = DoomWatch(spec)
    later.judge_by(wide)  # what the local engine's runner does with the run's rule, before any job is read
    assert later.margin == 0.5 and _feed(later, tmp_path / "later", 0.2) is None
    with pytest.raises(RuntimeError):
        later.judge_by(wide)  # not once a job was read: no leg is judged by two rules
    # Beyond 0.5 as well: stopped, and the reason names the margin it was judged by.
    why = _feed(DoomWatch(spec, rule=wide), tmp_path / "far", 0.9)
    assert why and "beyond the margin 0.5 " in why, why
