"""The local engine runs a definition in the order the definition gives (DependsOn and property
reads), each step by its kind: read from compiled definitions, and from hand-made ones for the
orders the compiler does not make today."""
import pytest

from bakeoff.pipelines.errors import RunError
from bakeoff.pipelines.local import step_graph
from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff.pipelines.steps import kind_of as step_kind
from bakeoff.pipelines.steps.training import is_step as _is_training_job
from conftest import ROOT


def _definition(*overrides: str) -> dict:
    spec = load_spec(ROOT / "examples" / "quickstart.yaml", ["seeds=2", *overrides])
    return compile_pipeline(spec, bucket="b").definition


def test_a_compiled_definition_runs_preflight_checks_precompile_jobs_evaluate_gate():
    definition = _definition("preflight.enabled=true", "legs.0.collective_check=true", "legs.0.precompile=true")
    order = step_graph.run_order(definition, _is_training_job)
    assert order == ["Preflight", "Collective-trn1", "Precompile-trn1", step_graph.BATCH, "Evaluate", "ParityGate"]
    kinds = [step_kind(s) for s in definition["Steps"]]
    assert None not in kinds and kinds.count("training") == 4
    assert step_graph.batch_constraints(definition, _is_training_job) == {
        "Train-p4d-s0": set(), "Train-p4d-s1": set(), "Train-trn1-s0": set(), "Train-trn1-s1": set()}


def test_the_gate_waits_for_the_evaluate_step_it_reads_without_a_depends_on():
    gate = next(s for s in _definition()["Steps"] if s["Name"] == "ParityGate")
    assert "DependsOn" not in gate and step_graph.dependencies(gate) == {"Evaluate"}  # its JsonGet's property file


def test_a_spot_legs_later_seeds_wait_for_its_first_inside_the_batch():
    definition = _definition("legs.0.managed_spot=after_first_seed")
    after = step_graph.batch_constraints(definition, _is_training_job)
    assert after["Train-trn1-s1"] == {"Train-trn1-s0"} and after["Train-p4d-s1"] == set()


def _steps(*edges: tuple[str, list[str]]) -> dict:
    return {"Steps": [{"Name": name, "Type": "Training", "DependsOn": deps} for name, deps in edges]}


def test_ready_steps_keep_the_definitions_order_and_a_circle_or_unknown_step_is_refused():
    assert step_graph.run_order(_steps(("B", []), ("A", []), ("C", ["A"])), lambda s: False) == ["B", "A", "C"]
    assert step_graph.run_order(_steps(("C", ["A"]), ("A", [])), lambda s: False) == ["A", "C"]
    with pytest.raises(RunError, match="circle: A waits for B, B waits for A"):
        step_graph.run_order(_steps(("A", ["B"]), ("B", ["A"])), lambda s: False)
    with pytest.raises(RunError, match="waits for Nowhere, which is not one of its steps"):
        step_graph.run_order(_steps(("A", ["Nowhere"])), lambda s: False)


def test_a_step_the_engine_cannot_run_has_no_kind():
    assert step_kind({"Name": "Lambda", "Type": "Lambda"}) is None
    assert step_kind({"Name": "Train-x-s0", "Type": "Training"}) == "training"
    assert step_kind({"Name": "Other", "Type": "Training"}) is None
