"""The SageMaker training container contract, and what a job leaves behind when it dies."""
import json

from bakeoff_runtime.contract import TrainingEnv


def test_training_env_from_sagemaker_files(tmp_path):
    config = tmp_path / "input" / "config"
    config.mkdir(parents=True)
    # SageMaker hands hyperparameters over as strings (JSON-encoded by the SDKs).
    (config / "hyperparameters.json").write_text(json.dumps({"lr": "0.003", "seed": "2", "name": "\"x\"",
                                                             "raw": "plain"}))
    (config / "resourceconfig.json").write_text(json.dumps(
        {"current_host": "algo-2", "hosts": ["algo-1", "algo-2"], "current_instance_type": "ml.trn1.32xlarge"}))
    (config / "inputdataconfig.json").write_text(json.dumps({"train": {}, "validation": {}}))
    env = TrainingEnv.from_environ({"SM_INPUT_DIR": str(tmp_path / "input"), "SM_MODEL_DIR": str(tmp_path / "m"),
                                    "SM_OUTPUT_DIR": str(tmp_path / "o"), "SM_NUM_NEURONS": "32"})
    assert env.hyperparameters == {"lr": 0.003, "seed": 2, "name": "x", "raw": "plain"}
    assert env.hosts == ["algo-1", "algo-2"] and env.host_rank == 1 and env.host_count == 2
    assert env.instance_type == "ml.trn1.32xlarge" and env.num_neurons == 32
    assert env.channels == {"train": tmp_path / "input" / "data" / "train",
                            "validation": tmp_path / "input" / "data" / "validation"}
    assert env.failure_file == tmp_path / "o" / "failure"


def test_defaults_are_the_container_paths():
    env = TrainingEnv.from_environ({})
    assert str(env.model_dir) == "/opt/ml/model"
    assert str(env.output_data_dir) == "/opt/ml/output/data"
    assert str(env.failure_file) == "/opt/ml/output/failure"
    assert str(env.checkpoint_dir) == "/opt/ml/checkpoints"


def test_sm_hps_and_channel_variables_win(tmp_path):
    env = TrainingEnv.from_environ({"SM_HPS": json.dumps({"max_steps": 5}), "SM_CHANNEL_TRAIN": "/data/t",
                                    "SM_INPUT_DIR": str(tmp_path)})
    assert env.hyperparameters == {"max_steps": 5}
    assert str(env.channels["train"]) == "/data/t"


def test_the_job_environment_is_one_value_with_one_name_per_variable():
    from bakeoff_runtime.contract import ENV, JobEnvironment, metric_definitions, parse_step_line, step_line

    env = JobEnvironment(name="q", leg="trn1", backend="neuron", nproc_per_node=32, continue_on_failure=True)
    assert env.to_environ() == {"BAKEOFF_NAME": "q", "BAKEOFF_LEG": "trn1", "BAKEOFF_BACKEND": "neuron",
                                "BAKEOFF_NPROC_PER_NODE": "32", "BAKEOFF_CONTINUE_ON_FAILURE": "1"}
    assert JobEnvironment.from_environ(env.to_environ()) == env
    assert len(set(ENV.values())) == len(ENV) and all(v.startswith("BAKEOFF_") for v in ENV.values())
    line = step_line(7, {"train_loss": 2.5, "val_acc": 0.5, "lr": 1e-3})
    assert parse_step_line(line) == (7, {"train_loss": "2.5", "val_acc": "0.5", "lr": "0.001"})
    import re

    acc = next(d for d in metric_definitions({"validation:acc": "acc"}) if d["Name"] == "validation:acc")
    assert re.search(acc["Regex"], line) is None  # `acc` is not read out of `val_acc`
    assert re.search(acc["Regex"], step_line(7, {"acc": 0.75})).group(1) == "0.75"
