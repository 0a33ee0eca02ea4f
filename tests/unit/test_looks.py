"""Which decisions on a bake-off's data are new looks at it (pipelines/local/looks.py)."""
import json

import pytest

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.local import looks

DESIGN = {"looks": [3], "max_seeds": 9, "spending": "pocock"}


def _jobs(seeds, key="k"):
    return {f"Train-{leg}-s{s}": f"{key}-{leg}-{s}" for s in seeds for leg in ("trn1", "p4d")}


def _decided(out, number, seeds, verdict, sequential=None, key="k"):
    looks.record(out, number, _jobs(seeds, key), list(seeds), sequential,
                 {"verdict": verdict, "parity": {"alpha": 0.05}})


def test_the_first_decision_is_look_one_and_the_same_jobs_decide_as_the_same_look(tmp_path):
    assert looks.check(tmp_path, _jobs([0, 1, 2]), [0, 1, 2], None) == 1
    _decided(tmp_path, 1, [0, 1, 2], "inconclusive")
    assert looks.check(tmp_path, _jobs([2, 1, 0]), [2, 1, 0], None) == 1
    _decided(tmp_path, 1, [0, 1, 2], "pass")  # decided again (a lost job re-run): replaced, not added
    record = json.loads((tmp_path / looks.LOOKS_FILE).read_text())
    assert [(x["look"], x["verdict"], x["alpha"]) for x in record["looks"]] == [(1, "pass", 0.05)]
    assert "jobs" not in looks.for_evaluation(tmp_path, 2)["earlier"][0]  # keys say nothing to a reader


@pytest.mark.parametrize("seeds", [[0, 1, 2, 3, 4], [0, 1], [2, 3, 4]])
def test_jobs_that_overlap_an_earlier_fixed_look_are_refused_in_any_design(tmp_path, seeds):
    _decided(tmp_path, 1, [0, 1, 2], "inconclusive")
    for sequential in (None, DESIGN):
        with pytest.raises(SpecError, match=r"decided `inconclusive` on seeds 0-2 \(look 1, fixed design\)") as e:
            looks.check(tmp_path, _jobs(seeds), seeds, sequential)
        assert "e.g. `seeds: [" in str(e.value) and "--until-decided" in str(e.value)


def test_fresh_seeds_or_a_changed_training_setup_are_new_data(tmp_path):
    _decided(tmp_path, 1, [0, 1, 2], "inconclusive")
    assert looks.check(tmp_path, _jobs([3, 4, 5]), [3, 4, 5], None) == 2
    # The same seeds with other hyperparameters are other jobs (other keys): not a second look.
    assert looks.check(tmp_path, _jobs([0, 1, 2, 3], key="steps31"), [0, 1, 2, 3], None) == 2
    _decided(tmp_path, 2, [3, 4, 5], "pass")
    assert looks.for_evaluation(tmp_path, 2)["earlier"][0]["seeds"] == [0, 1, 2]


def test_a_sequential_design_counts_its_own_looks_but_not_another_design_s(tmp_path):
    _decided(tmp_path, 1, [0, 1, 2], "inconclusive", DESIGN)
    grown = {**DESIGN, "looks": [3, 6]}
    assert looks.check(tmp_path, _jobs(range(6)), list(range(6)), grown) == 2
    with pytest.raises(SpecError, match="look 1, sequential design"):
        looks.check(tmp_path, _jobs(range(6)), list(range(6)), None)  # a fixed decision after sequential looks
    with pytest.raises(SpecError):
        looks.check(tmp_path, _jobs(range(6)), list(range(6)), {**grown, "max_seeds": 12})  # another design
    assert looks.sequential_of(tmp_path, _jobs([0, 1, 2])) == DESIGN


def test_a_definition_s_training_steps_are_its_data_without_their_tags():
    step = {"Name": "Train-trn1-s3", "Type": "Training", "Arguments": {"HyperParameters": {"lr": "0.1"},
                                                                      "Tags": [{"Key": "spec", "Value": "a"}]}}
    retagged = {**step, "Arguments": {**step["Arguments"], "Tags": [{"Key": "spec", "Value": "b"}]}}
    other = {**step, "Arguments": {"HyperParameters": {"lr": "0.2"}}}
    evaluate = {"Name": "Evaluate", "Type": "Processing", "Arguments": {}}
    jobs, seeds = looks.training_steps({"Steps": [step, evaluate]})
    assert list(jobs) == ["Train-trn1-s3"] and seeds == [3]
    assert looks.training_steps({"Steps": [retagged]})[0] == jobs
    assert looks.training_steps({"Steps": [other]})[0] != jobs


def test_a_definition_s_seeds_are_those_of_its_seeded_training_steps_only():
    from bakeoff.pipelines.sagemaker.more_seeds import seeds_of

    steps = [{"Name": name, "Type": kind, "Arguments": {}} for name, kind in [
        ("Preflight", "Training"), ("Precompile-trn1", "Training"), ("Train-trn1-s2", "Training"),
        ("Train-p4d-s0", "Training"), ("Train-p4d-s2", "Training"), ("Evaluate", "Processing")]]
    jobs, seeds = looks.training_steps({"Steps": steps})
    assert list(jobs) == ["Train-trn1-s2", "Train-p4d-s0", "Train-p4d-s2"] and seeds == [0, 2]
    assert seeds_of({"Steps": steps}) == seeds
    assert seeds_of({}) == [] and looks.training_steps({"Steps": None}) == ({}, [])


def test_an_unreadable_record_is_one_clear_error(tmp_path):
    (tmp_path / looks.LOOKS_FILE).write_text("{")
    with pytest.raises(SpecError, match="cannot be read") as e:
        looks.check(tmp_path, _jobs([0, 1]), [0, 1], None)
    assert e.value.file == str(tmp_path / looks.LOOKS_FILE)
