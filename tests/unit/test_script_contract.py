"""Script mode's contract with an unchanged script: arguments and SM_* variables as AWS's training
toolkit makes them, the settings that cross into the container, metrics read from output."""
import json

import pytest

from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.script_mode import (
    MetricRegex,
    ScriptSettings,
    command_line,
    requirements_command,
    sagemaker_environment,
    script_hyperparameters,
)
from bakeoff_runtime.training.script_metrics import LogMetrics, trainer_state
from bakeoff_runtime.training.script_summary import throughput


def test_arguments_are_the_toolkits_sorted_key_value_pairs():
    # sagemaker-training-toolkit mapping.to_cmd_args: sorted keys, "-k" for one letter, str() of the
    # decoded value, a mapping as k=v pairs.
    hps = {"lr": 0.001, "epochs": 2, "b": True, "opts": {"y": 2, "x": 1}, "name": "run a"}
    assert command_line(hps) == ["-b", "True", "--epochs", "2", "--lr", "0.001", "--name", "run a",
                                 "--opts", "x=1,y=2"]
    assert command_line({"weight_tying": False, "n_layer": 2}, "equals") == ["--n_layer=2", "--weight_tying=False"]


def test_bakeoff_and_platform_hyperparameters_never_reach_the_script():
    hps = {"bakeoff_leg": "trn1", "bakeoff_seed": 3, "sagemaker_program": "x.py", "seed": 3, "lr": 0.1}
    assert script_hyperparameters(hps) == {"seed": 3, "lr": 0.1}


def test_settings_cross_the_boundary_unchanged():
    settings = ScriptSettings(argument_style="equals", metrics=(MetricRegex("val_loss", r"val ([0-9.]+)"),),
                              seed_argument="seed", units_per_step=256.0, unit="tokens", hf_trainer_state=True)
    assert ScriptSettings.from_json(settings.to_json()) == settings


def _env(tmp_path):
    config = tmp_path / "input" / "config"
    config.mkdir(parents=True)
    (config / "hyperparameters.json").write_text(json.dumps({"lr": "0.1", "bakeoff_seed": "2"}))
    (config / "resourceconfig.json").write_text(json.dumps(
        {"current_host": "algo-1", "hosts": ["algo-1"], "current_instance_type": "ml.trn1.2xlarge",
         "network_interface_name": "eth0"}))
    (config / "inputdataconfig.json").write_text(json.dumps({"training": {}, "validation": {}}))
    return TrainingEnv.from_environ({"SM_INPUT_DIR": str(tmp_path / "input"), "SM_MODEL_DIR": str(tmp_path / "m"),
                                     "SM_OUTPUT_DIR": str(tmp_path / "o")})


def test_sagemaker_variables_as_the_toolkit_writes_them(tmp_path):
    env = _env(tmp_path)
    hps = script_hyperparameters(env.hyperparameters)
    out = sagemaker_environment(env, hps, entry_point="train.py", code_dir=tmp_path, num_gpus=0, num_neurons=2,
                                user_args=command_line(hps))
    assert out["SM_HPS"] == '{"lr":0.1}' and out["SM_HP_LR"] == "0.1"
    assert out["SM_CHANNELS"] == '["training","validation"]'
    assert out["SM_CHANNEL_TRAINING"] == str(tmp_path / "input" / "data" / "training")
    assert out["SM_MODEL_DIR"] == str(tmp_path / "m") and out["SM_OUTPUT_DATA_DIR"] == str(tmp_path / "o" / "data")
    assert out["SM_NUM_GPUS"] == "0" and out["SM_NUM_NEURONS"] == "2"
    assert out["SM_HOSTS"] == '["algo-1"]' and out["SM_CURRENT_HOST"] == "algo-1"
    assert out["SM_USER_ARGS"] == '["--lr","0.1"]' and out["SM_USER_ENTRY_POINT"] == "train.py"
    training_env = json.loads(out["SM_TRAINING_ENV"])
    assert training_env["hps"] == {"lr": 0.1} and training_env["current_instance_type"] == "ml.trn1.2xlarge"
    # Reading them back gives the same job (what a script using the variables sees).
    again = TrainingEnv.from_environ(out)
    assert again.model_dir == env.model_dir and again.hosts == env.hosts and set(again.channels) == set(env.channels)


def test_requirements_install_from_the_bundles_wheels_when_there_are_some(tmp_path):
    assert requirements_command(tmp_path) is None
    (tmp_path / "requirements.txt").write_text("numpy\n")
    assert requirements_command(tmp_path)[1:] == ["-m", "pip", "install", "-r", "requirements.txt"]
    (tmp_path / "wheels").mkdir()
    assert requirements_command(tmp_path)[-3:] == ["--no-index", "--find-links", "wheels"]


def test_log_metrics_read_every_match_and_keep_non_finite_values(tmp_path):
    log = LogMetrics((MetricRegex("train_loss", r"loss ([-+0-9.eEnaif]+)"),
                      MetricRegex("val_acc", r"Accuracy: \d+/\d+ \(([0-9.]+)%\)")), "train_loss",
                     tmp_path / "metrics.jsonl")
    for line in ["iter 1: loss 2.5", "noise", "Test set: Accuracy: 3/4 (75%)", "iter 2: loss nan"]:
        log.feed(line)
    log.close()
    assert log.series["train_loss"][0] == 2.5 and str(log.series["train_loss"][1]) == "nan"
    assert log.series["val_acc"] == [75.0]
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records] == ["train", "eval", "train"]
    assert records[1] == {**records[1], "val_acc": 75.0, "step": 1}


def test_trainer_state_log_history(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": [
        {"loss": 4.1, "grad_norm": 1.0, "learning_rate": 1e-3, "epoch": 0.1, "step": 5},
        {"eval_loss": 3.9, "eval_runtime": 0.1, "epoch": 0.2, "step": 10},
        {"loss": 3.5, "step": 10, "epoch": 0.2}]}))
    series, records = trainer_state(path, "train_loss")
    assert series == {"train_loss": [4.1, 3.5], "eval_loss": [3.9]}
    assert [(r["kind"], r["step"]) for r in records] == [("train", 5), ("eval", 10), ("train", 10)]


@pytest.mark.parametrize("synced, expected", [
    # steps 0-4 are warm-up; two intervals after it, 0.1 s and 0.3 s per step: the median of 2 is their mean
    ([(1, 0.0), (5, 5.0), (10, 5.5), (20, 8.5)], 0.2),
])
def test_throughput_is_the_median_step_time_after_warm_up(synced, expected):
    settings = ScriptSettings(units_per_step=64.0, warmup_steps=5, sync_interval=10)
    tp = throughput({"steps": 20, "synced": synced}, settings)
    assert tp["step_time_s"] == pytest.approx(expected)
    assert tp["samples_per_sec"] == pytest.approx(64 / expected) and tp["measured_steps"] == 15
    assert throughput({"steps": 3, "synced": [(1, 0.0)]}, settings)["samples_per_sec"] is None
