"""The step kinds as plug-ins (pipelines/steps): the compiler is a loop over them, and what the validator
checks and what the CDK role may do come from what each kind declares, not from lists kept elsewhere."""
from pipelines.steps import COMPILED, KINDS, iam_actions, job_resources, operations


def test_every_kind_is_compiled_and_run_here_and_declares_what_it_is():
    assert {k.KIND for k in COMPILED} == set(KINDS)  # a kind the compiler writes, the local engine knows
    for kind in KINDS.values():
        assert callable(kind.compile) and callable(kind.run_local) and callable(kind.is_step)
        for step_type, (operation, name_field) in kind.STEP_TYPES.items():
            assert step_type[0].isupper() and operation.startswith("Create") and name_field.endswith("Name")
        assert all(a.startswith("sagemaker:") for a in kind.IAM_ACTIONS)


def test_the_validator_and_the_role_read_the_kinds():
    from pipelines.sagemaker.validate import operations as checked

    assert checked() == operations() == {"Training": ("CreateTrainingJob", "TrainingJobName"),
                                         "Processing": ("CreateProcessingJob", "ProcessingJobName")}
    assert iam_actions() == ["sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob",
                             "sagemaker:StopTrainingJob", "sagemaker:CreateProcessingJob",
                             "sagemaker:DescribeProcessingJob", "sagemaker:StopProcessingJob"]
    assert job_resources() == ["training-job", "processing-job"]


def test_a_new_kind_is_compiled_by_the_loop_without_the_compiler_knowing_it(monkeypatch, tmp_path):
    """A stand-in for "register the winner": a kind that appends one step after the gate's inputs; the
    compiler's loop writes it with no change of its own."""
    import pipelines.sagemaker.compiler as compiler
    import pipelines.steps as steps
    from conftest import tiny_spec, write_spec
    from pipelines.spec.loader import load_spec

    class Register:
        KIND, STEP_TYPES, IAM_ACTIONS, JOB_RESOURCES = "register", {}, (), ()

        @staticmethod
        def compile(c):
            c.steps.append({"Name": "RegisterWinner", "Type": "Fail", "DependsOn": ["Evaluate"],
                            "Arguments": {"ErrorMessage": "stand-in"}})

    spec = load_spec(str(write_spec(tmp_path / "b.yaml", tiny_spec())))
    before = [s["Name"] for s in compiler.compile_pipeline(spec, bucket="b").definition["Steps"]]
    monkeypatch.setattr(steps, "COMPILED", (*steps.COMPILED, Register))
    after = [s["Name"] for s in compiler.compile_pipeline(spec, bucket="b").definition["Steps"]]
    assert after == [*before, "RegisterWinner"]


def test_the_kinds_use_the_local_engine_through_its_public_attributes_only():
    """A kind's local half reads and sets the engine's state by name: a private one (`x._plan`) would tie it
    to the engine's insides, as `local/artifacts.py`'s `executor._record` once did."""
    import ast
    from pathlib import Path

    import pipelines.steps as steps

    roots = [Path(steps.__file__).parent, Path(steps.__file__).parent.parent / "local"]
    private = []
    for root in roots:
        for path in root.glob("*.py"):
            if path.name == "executor.py":  # the engine itself
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                        and isinstance(node.value, ast.Name) and node.value.id in ("x", "executor", "run")):
                    private.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    assert private == []
