"""tracking/script_writes.py: what a script logs to MLflow itself is recorded in its own process, through
each of the client's paths, and the values in its run that the record does not account for are told
apart. A real MLflow store (sqlite) and a real script process."""
import os
import subprocess
import sys
import textwrap

from bakeoff_runtime.contract import MLFLOW_WRITES_ENV
from bakeoff_runtime.tracking.script_writes import own_values, read_record
from conftest import ENTRYPOINTS

SCRIPT = textwrap.dedent("""
    import sys
    from bakeoff_runtime.tracking.script_writes import install
    install()                                   # what launch.run_worker does before the script
    import mlflow
    from mlflow.tracking import MlflowClient
    from mlflow.entities import Metric
    with mlflow.start_run():                    # the job's run, through MLFLOW_RUN_ID
        mlflow.log_metric("val_loss", 0.25, step=1)
        mlflow.log_metrics({"val_loss": 0.125, "acc": float("nan")}, step=2)
        mlflow.log_metric("acc", float("inf"), step=3, synchronous=False).wait()
    MlflowClient().log_batch(sys.argv[1], metrics=[Metric("val_loss", 0.0625, 0, 3)])
""")


def _history(client, run_id):
    return {name: [(m.step, m.value) for m in sorted(client.get_metric_history(run_id, name),
                                                       key=lambda m: (m.step, m.timestamp))]
            for name in client.get_run(run_id).data.metrics}


def test_every_write_of_the_script_is_its_own_and_a_write_from_elsewhere_is_not(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("writes")
    run_id = client.create_run(experiment).info.run_id
    record = tmp_path / "writes.jsonl"
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "MLFLOW_RUN_ID": run_id, MLFLOW_WRITES_ENV: str(record),
           "PYTHONPATH": str(ENTRYPOINTS)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, run_id], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

    own, foreign = own_values(_history(client, run_id), read_record(record, run_id))
    assert own == {"val_loss": [0.25, 0.125, 0.0625], "acc": [own["acc"][0], own["acc"][1]]} and not foreign
    # Another process (another job) logs into the same run, at a step the script used and at one it did not.
    client.log_metric(run_id, "val_loss", 1000.0, step=2)
    client.log_metric(run_id, "val_loss", 0.001, step=9)
    own, foreign = own_values(_history(client, run_id), read_record(record, run_id))
    assert own["val_loss"] == [0.25, 0.125, 0.0625] and foreign == {"val_loss": 2}

