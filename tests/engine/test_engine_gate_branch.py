"""A step in the parity gate's pass branch (a team's own, added through the SDK adapter, say) is run here by
the kind that claims it, or the run stops saying it cannot be: never skipped unseen."""
from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec


def test_a_step_no_kind_runs_here_in_the_pass_branch_stops_the_run_saying_so(tmp_path, monkeypatch, capsys):
    import bakeoff.pipelines.steps.gate as gate

    compile_step = gate.compile_step

    def with_register(spec):
        step = compile_step(spec)
        step["Arguments"]["IfSteps"] = [{"Name": "RegisterWinner", "Type": "RegisterModel", "Arguments": {}}]
        return step

    monkeypatch.setattr(gate, "compile_step", with_register)
    spec = verdict_spec(tmp_path, seeds=2)
    code, out, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(Recipe()), "run", spec, "--out",
                                 tmp_path / "run", "--no-mlflow")
    assert code == 4, (code, err[-2000:])
    assert "holds step RegisterWinner (RegisterModel), which no step kind of bakeoff runs on this machine" in err
