"""Create a local MLflow store the way a bake-off wants it, before any job opens it.

MLflow creates a "Default" experiment in every new database, with its artifact root under
whatever directory the first client happened to run in (for a local bake-off, the first
job's code directory). The local executor runs this once per run directory instead: the
bake-off's experiment gets its artifact location under the run directory, and the empty
Default experiment goes to MLflow's trash.

    python -m bakeoff_runtime.tracking.file_store TRACKING_URI EXPERIMENT ARTIFACT_LOCATION
"""
from __future__ import annotations

import sys


def prepare_store(tracking_uri: str, experiment: str, artifact_location: str) -> str:
    from bakeoff_runtime.tracking.install import use_installed_mlflow

    use_installed_mlflow()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    exp_id = found.experiment_id if found else client.create_experiment(experiment,
                                                                        artifact_location=artifact_location)
    from bakeoff_runtime.tracking.parent_run import mark_training_experiment

    mark_training_experiment(client, exp_id)  # the UI opens on the runs, not on a GenAI overview
    default = client.get_experiment("0") if exp_id != "0" else None
    if default is not None and default.lifecycle_stage == "active" and \
            not client.search_runs(["0"], max_results=1):
        client.delete_experiment("0")
    return str(exp_id)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    print(prepare_store(*sys.argv[1:]))
