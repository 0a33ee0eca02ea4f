"""The step kinds as plug-ins (pipelines/steps, and their local halves in pipelines/local/kinds): the compiler
is a loop over them, the local engine runs each by its local module, and what the validator checks and what
the CDK role may do come from what each kind declares, not from lists kept elsewhere."""
from bakeoff.pipelines.steps import COMPILED, KINDS, iam_actions, job_resources, operations


def test_every_kind_is_compiled_and_declares_what_it_is():
    assert {k.KIND for k in COMPILED} == set(KINDS)
    for kind in KINDS.values():
        assert callable(kind.compile) and callable(kind.is_step) and not hasattr(kind, "run_local")
        for step_type, (operation, name_field) in kind.STEP_TYPES.items():
            assert step_type[0].isupper() and operation.startswith("Create") and name_field.endswith("Name")
        assert all(a.startswith("sagemaker:") for a in kind.IAM_ACTIONS)


def test_every_compiled_kind_is_run_here_or_says_why_not():
    """A kind the compiler writes is run by the local engine, or declared not run here with the reason the run
    prints; never both, and no local kind the compiler does not write."""
    from bakeoff.pipelines.local.kinds import LOCAL_KINDS, NOT_RUN_HERE

    assert set(LOCAL_KINDS) == set(KINDS) - set(NOT_RUN_HERE)
    assert set(NOT_RUN_HERE) <= set(KINDS) and not set(NOT_RUN_HERE) & set(LOCAL_KINDS)
    assert all(isinstance(why, str) and why.strip() for why in NOT_RUN_HERE.values())
    for kind, module in LOCAL_KINDS.items():
        assert kind == module.KIND and callable(module.run_local)


def test_a_kind_not_run_here_is_said_and_passed_over_and_an_unknown_one_refused():
    from types import SimpleNamespace

    from bakeoff.pipelines.local.kinds import NOT_RUN_HERE, run_step

    notes: list[str] = []
    run = SimpleNamespace(executor=SimpleNamespace(progress=SimpleNamespace(note=notes.append)))
    kind, why = next(iter(NOT_RUN_HERE.items()))
    assert run_step(run, kind, "Step-a") and notes == [f"Step-a: not run on this machine ({why}); going on"]
    assert not run_step(run, None, "Odd") and not run_step(run, "register", "RegisterWinner")
    assert len(notes) == 1


def test_the_validator_and_the_role_read_the_kinds():
    from bakeoff.pipelines.sagemaker.validate import operations as checked

    assert checked() == operations() == {"Training": ("CreateTrainingJob", "TrainingJobName"),
                                         "Processing": ("CreateProcessingJob", "ProcessingJobName")}
    assert iam_actions() == ["sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob",
                             "sagemaker:StopTrainingJob", "sagemaker:CreateProcessingJob",
                             "sagemaker:DescribeProcessingJob", "sagemaker:StopProcessingJob"]
    assert job_resources() == ["training-job", "processing-job"]


def test_a_new_kind_is_compiled_by_the_loop_without_the_compiler_knowing_it(monkeypatch, tmp_path):
    """A stand-in for "register the winner": a kind that appends one step after the gate's inputs; the
    compiler's loop writes it with no change of its own."""
    import bakeoff.pipelines.sagemaker.compiler as compiler
    import bakeoff.pipelines.steps as steps
    from bakeoff.pipelines.spec.loader import load_spec
    from conftest import tiny_spec, write_spec

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


def _private_reads(source: str) -> list[tuple[int, str]]:
    """`x._name` (read or set) and `getattr(x, "_name")`/`setattr(...)` on the engine or the run."""
    import ast

    def engine(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id in ("x", "executor", "run")) or (
            isinstance(node, ast.Attribute) and node.attr in ("x", "executor"))

    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and engine(node.value)):
            found.append((node.lineno, node.attr))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                and len(node.args) > 1 and engine(node.args[0]) and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_") and not str(node.args[1].value).startswith("__")):
            found.append((node.lineno, str(node.args[1].value)))
    return found


def test_the_private_read_check_sees_each_way_of_reading():
    assert sorted(a for _, a in _private_reads("x._plan\nrun.executor._outputs = 1\nself.x._train()\n"
                                         "getattr(x, '_attempt', None)\nx.plan\ngetattr(x, 'rule', None)")) == \
        ["_attempt", "_outputs", "_plan", "_train"]


def test_the_kinds_use_the_local_engine_through_its_public_attributes_only():
    """A kind's local half reads and sets the engine's state by name (run_state.Engine): a private one
    (`x._plan`) would tie it to the engine's insides, as `local/artifacts.py`'s `executor._record` once did."""
    from pathlib import Path

    import bakeoff.pipelines.local as local

    private = []
    for path in sorted(Path(local.__file__).parent.rglob("*.py")):
        if path.name == "executor.py":  # the engine itself
            continue
        private += [f"{path.name}:{line} {attr}" for line, attr in _private_reads(path.read_text())]
    assert private == []
