"""A doomed leg stops early: once a seed of it and of the baseline are both done and the leg is
shown broken, its remaining seeds are recorded as failed with the reason instead of run."""
import json
import shutil

import pytest

from conftest import ROOT, write_spec

TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "backend": "neuron", "precision": "fp32"}
G5 = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}


def _spec(tmp_path, plant, seeds=3):
    shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    return write_spec(tmp_path / "bakeoff.yaml", {
        "name": "doomed", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 16, "max_steps": 40, "log_interval": 10},
        "legs": [TRN, G5], "seeds": seeds, "parity": {"metric": "val_mse", "margin": 0.05, "baseline": "g5"}})


def test_the_rule_reads_curves_of_the_same_seed(tmp_path):
    from bakeoff.pipelines.local.doomed import DoomWatch
    from bakeoff.pipelines.spec.loader import load_spec

    watch = DoomWatch(load_spec(_spec(tmp_path, "none")))

    def job(name, values):
        model = tmp_path / name / "opt" / "ml" / "model"
        model.mkdir(parents=True)
        model.joinpath("metrics.jsonl").write_text("".join(
            json.dumps({"kind": "eval", "step": 10 * (i + 1), "val_mse": v}) + "\n" for i, v in enumerate(values)))
        return tmp_path / name

    assert watch.finished("trn1", 0, job("a", [0.30, 0.20])) is None  # no baseline of seed 0 yet
    assert watch.finished("g5", 1, job("b", [0.001, 0.0005])) is None  # another seed: nothing to pair
    why = watch.finished("g5", 0, job("c", [0.31, 0.19]))
    assert why is None and not watch.doomed  # within the margin
    assert watch.finished("trn1", 1, job("d", [0.5, float("nan")])).startswith("stopped early after seed 1")
    assert "nan" in watch.doomed["trn1"]


def test_the_margin_rule_judges_a_seed_against_noise_from_other_seeds_only(tmp_path):
    from bakeoff.pipelines.local.doomed import DoomWatch
    from bakeoff.pipelines.spec.loader import load_spec

    watch = DoomWatch(load_spec(_spec(tmp_path, "none", seeds=6)))

    def job(name, values):
        model = tmp_path / name / "opt" / "ml" / "model"
        model.mkdir(parents=True)
        model.joinpath("metrics.jsonl").write_text("".join(
            json.dumps({"kind": "eval", "step": 10 * (i + 1), "val_mse": v}) + "\n" for i, v in enumerate(values)))
        return tmp_path / name

    # Two legs, three seeds each within the margin, with some paired noise between them.
    for seed, gap in enumerate([0.01, -0.01, 0.0]):
        assert watch.finished("g5", seed, job(f"g{seed}", [0.5, 0.4])) is None
        for leg in ("trn1", "trn2"):
            assert watch.finished(leg, seed, job(f"{leg}-{seed}", [0.5 + gap, 0.4 + gap])) is None
    assert watch._noise("trn1", judged=3) == pytest.approx((0.01, 2))
    assert watch._noise("trn1", judged=2) is None  # two other pairs are too few
    # The bar: margin + a t(2) quantile at 0.00135 (about 19) x 0.01 = 0.05 + 0.19 = 0.24.
    assert watch.finished("g5", 3, job("g3", [0.5, 0.4])) is None
    assert watch.finished("trn1", 3, job("t3", [0.7, 0.6])) is None  # 0.2 beyond: not stopped (z=3 would)
    why = watch.finished("trn2", 3, job("u3", [0.8, 0.7]))  # 0.3 beyond: stopped
    assert why and "beyond the margin" in why and "trn2" in watch.doomed and "trn1" not in watch.doomed


def test_the_stop_bar_tightens_with_the_seeds_a_run_may_judge(tmp_path):
    from bakeoff.pipelines.local.doomed import FALSE_STOP_BUDGET, NOISE_TAIL, DoomWatch, stop_tail
    from bakeoff.pipelines.spec.loader import load_spec

    assert stop_tail(5) == NOISE_TAIL and stop_tail(40) == pytest.approx(FALSE_STOP_BUDGET / 40)
    spec = load_spec(_spec(tmp_path, "none", seeds=3))
    assert DoomWatch(spec).tail == NOISE_TAIL
    assert DoomWatch(spec, planned_seeds=40).tail == pytest.approx(0.01 / 40)  # a sequential design's cap
