"""The one MLflow run of an experiment (tests/*/test_mlflow_client*.py)."""




def _run(client, exp_name="client"):
    exp = client.get_experiment_by_name(exp_name)
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]
