"""Engine logic that tests/e2e once checked with a second real bake-off, checked here with the jobs in the
fake container (fake_container.py): the same compiled requests, rules and records; the Evaluate step
and the gate are real. The e2e test keeps the real run of what only real jobs show."""
from fake_container import CPU_LEGS, FakeContainer, Recipe, bakeoff_cli, verdict_spec


def test_a_misspelt_parity_metric_one_job_at_a_time_runs_no_job_after_the_first_seed(monkeypatch, capsys,
                                                                                        tmp_path):
    # Once the second run of tests/e2e/test_validity_e2e.py's
    # test_a_misspelt_parity_metric_stops_after_the_first_seed_with_exit_2 (`--jobs 1`), which keeps the run with
    # jobs side by side (a later seed started beside the first is stopped and recorded so).
    spec = verdict_spec(tmp_path, legs=CPU_LEGS, seeds=3, parity={"metric": "val_mes", "margin": 0.5, "baseline": "g5"})
    container = FakeContainer(Recipe(metric="val_mse"))
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", tmp_path / "one", "--no-mlflow",
                               "--jobs", "1")
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "bakeoff.yaml:" in last and "parity.metric" in last and "(they reported: val_mse)" in last
    assert "Traceback" not in err
    assert sorted(p.name for p in (tmp_path / "one" / "jobs").iterdir()) == ["g5-s0", "m5-s0"]
    assert sorted(container.ran) == ["g5-s0", "m5-s0"]  # no job of a later seed started, none to stop
