"""Script mode as declared: what the spec refuses before anything runs, and the SageMaker
definition it compiles to, checked against botocore's SageMaker model."""
import io
import json
import shutil
import tarfile

import pytest

from conftest import ROOT, write_spec

ASSETS = ROOT / "tests" / "assets" / "script_mode"
METRICS = [{"name": "train_loss", "regex": r"step \d+: loss ([0-9.]+)"},
           {"name": "val_loss", "regex": r"validation loss ([0-9.]+)"}]


def _spec(tmp_path, **over):
    shutil.copytree(ASSETS / "plain_loop", tmp_path / "plain_loop", dirs_exist_ok=True)
    entry = {"source_dir": "plain_loop", "script": "train.py", "mode": "script",
             "script_mode": {"metrics": METRICS, "seed": {"argument": "seed"}, "units_per_step": 32}}
    data = {"name": "sm", "entrypoint": entry, "hyperparameters": {"steps": 30},
            "legs": [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "arguments": ["--device", "xla"]},
                     {"name": "g5", "instance_type": "ml.g5.xlarge"}],
            "seeds": 2, "parity": {"metric": "val_loss", "margin": 0.5, "baseline": "g5"}}
    for key, value in over.items():
        node, *path = key.split(".")
        target = data
        for part in [node, *path][:-1]:
            target = target[part] if not part.isdigit() else target[int(part)]
        last = [node, *path][-1]
        if value is None:
            target.pop(last, None)
        else:
            target[int(last) if last.isdigit() else last] = value
    return write_spec(tmp_path / "bakeoff.yaml", data)


@pytest.mark.parametrize("over, field, words", [
    ({"parity.metric": "accuracy"}, "parity.metric", "declare 'accuracy' in entrypoint.script_mode.metrics"),
    ({"entrypoint.script_mode.metrics": [{"name": "val_loss", "regex": "loss [0-9.]+"}]},
     "entrypoint.script_mode.metrics", "needs a group around the value"),
    ({"entrypoint.mode": "runtime"}, "entrypoint.script_mode", "need `mode: script`"),
    ({"legs.0.precompile": True}, "legs[0].precompile", "precompile"),
    ({"hyperparameters": {"seed": 3}}, "hyperparameters.seed", "carries the seed"),
    ({"legs.0.arguments": ["x" * 300]}, "legs[0].arguments", "at most 256"),
    # a repeat inside a repeat: exponential in a line's length (a 40-digit line stalled a job)
    ({"entrypoint.script_mode.metrics": [{"name": "val_loss", "regex": r"loss ((\d+)+)$"}]},
     "entrypoint.script_mode.metrics", "a repeat inside a repeat"),
    ({"entrypoint.script_mode.metrics": [{"name": "val_loss", "regex": r"loss ((?:\d*\.?\d*)*)x"}]},
     "entrypoint.script_mode.metrics", "a repeat inside a repeat"),
])
def test_script_mode_refuses_what_it_cannot_do_in_one_line(tmp_path, over, field, words, cli):
    proc = cli("validate", _spec(tmp_path, **over))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr and field in line and words in line, line


def test_per_leg_arguments_need_script_mode(tmp_path, cli):
    spec = write_spec(tmp_path / "b.yaml", {
        "name": "rt", "legs": [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "arguments": ["--x"]},
                               {"name": "g5", "instance_type": "ml.g5.xlarge"}]})
    proc = cli("validate", spec)
    assert proc.returncode == 2 and "legs[0].arguments" in proc.stderr and "mode: script" in proc.stderr


def test_the_compiled_definition_runs_the_script_as_sagemaker_would(tmp_path):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.sagemaker.compiler import compile_plan
    from bakeoff.pipelines.sagemaker.validate import definition_problems
    from bakeoff.pipelines.spec.loader import load_spec

    compiled = compile_plan(build_plan(load_spec(_spec(tmp_path))))
    assert definition_problems(compiled.definition) == []
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    args = steps["Train-trn1-s1"]["Arguments"]
    algo = args["AlgorithmSpecification"]
    # The script and the leg's arguments travel as ContainerArguments: never parsed by the shell.
    assert algo["ContainerEntrypoint"][:2] == ["/bin/sh", "-c"] and algo["ContainerEntrypoint"][2].endswith('"$@"')
    assert algo["ContainerArguments"] == ["train.py", "--device", "xla"]
    assert steps["Train-g5-s1"]["Arguments"]["AlgorithmSpecification"]["ContainerArguments"] == ["train.py"]
    # The script's hyperparameters (its seed among them) and bakeoff's own, prefixed so they stay off its command line.
    assert args["HyperParameters"] == {"bakeoff_leg": "trn1", "bakeoff_seed": "1", "seed": "1", "steps": "30"}
    assert args["Environment"]["BAKEOFF_INSTALL_REQUIREMENTS"] == "1"
    names = [d["Name"] for d in algo["MetricDefinitions"]]
    assert names[:2] == ["train_loss", "val_loss"] and algo["MetricDefinitions"][1]["Regex"] == METRICS[1]["regex"]
    # The launcher's settings ride in the code bundle, beside the script.
    code = next(a for a in compiled.assets if a.key.endswith("sourcedir.tar.gz"))
    with tarfile.open(fileobj=io.BytesIO(code.body)) as tar:
        settings = json.loads(tar.extractfile("bakeoff_script.json").read())
    assert settings["seed_argument"] == "seed" and settings["metrics"][1]["name"] == "val_loss"


def test_bakeoff_init_writes_a_script_mode_spec_around_an_existing_script(tmp_path, cli):
    shutil.copy(ASSETS / "plain_loop" / "train.py", tmp_path / "train.py")
    proc = cli("init", tmp_path, "--template", "script", "--script", tmp_path / "train.py")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "bakeoff.yaml").read_text()
    assert "mode: script" in text and "seed: {argument: seed}" in text and "arguments: [--device, xla]" in text
    assert cli("validate", tmp_path / "bakeoff.yaml").returncode == 0
    missing = cli("init", tmp_path / "other", "--template", "script")
    assert missing.returncode == 2 and "--script PATH" in missing.stderr


def test_requirements_without_wheels_are_refused_when_the_jobs_have_no_network(tmp_path, cli):
    spec = _spec(tmp_path, security={"network_isolation": True})
    (tmp_path / "plain_loop" / "requirements.txt").write_text("numpy\n")
    proc = cli("validate", spec)
    assert proc.returncode == 2 and "entrypoint.script_mode.install_requirements" in proc.stderr
    assert "pip download -r requirements.txt -d wheels" in proc.stderr
    (tmp_path / "plain_loop" / "wheels").mkdir()
    (tmp_path / "plain_loop" / "wheels" / "numpy-2.0-py3-none-any.whl").write_bytes(b"not really a wheel")
    assert cli("validate", spec).returncode == 0


@pytest.mark.parametrize("folder, entry, legs, metric", [
    ("script_mode", {"metrics": [{"name": "val_loss", "regex": r"Test set: Average loss: ([0-9.]+)"}],
                      "seed": {"argument": "seed"}}, [["--device", "xla"], []], "val_loss"),
    ("keyvalue_gpt", {"argument_style": "equals", "metrics": [{"name": "val_loss", "regex": r"val loss ([0-9.]+)"}]},
     [["--device=xla"], []], "val_loss"),
    ("hf_trainer", {"hf_trainer_state": True, "seed": {"argument": "seed"}}, [[], []], "eval_loss"),
])
def test_every_test_script_synthesizes_a_definition_botocore_accepts(tmp_path, folder, entry, legs, metric, cli):
    # The MNIST-style CNN is the example's own script (examples/script_mode), not a copy of it.
    source = ROOT / "examples" / folder if folder == "script_mode" else ASSETS / folder
    shutil.copytree(source, tmp_path / folder)
    spec = write_spec(tmp_path / "b.yaml", {
        "name": folder.replace("_", "-"), "entrypoint": {"source_dir": folder, "script": "train.py", "mode": "script",
                                                         "script_mode": entry},
        "legs": [{"name": "trn1", "instance_type": "ml.trn1.32xlarge", "arguments": legs[0]},
                 {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "arguments": legs[1]}],
        "seeds": 3, "parity": {"metric": metric, "margin": 0.1}})
    proc = cli("synth", spec, "-o", tmp_path / "definition.json")
    assert proc.returncode == 0, proc.stderr
    from bakeoff.pipelines.sagemaker.validate import definition_problems

    definition = json.loads((tmp_path / "definition.json").read_text())
    assert definition_problems(definition) == []
    train = next(s for s in definition["Steps"] if s["Name"] == "Train-trn1-s0")["Arguments"]
    assert train["AlgorithmSpecification"]["ContainerArguments"] == ["train.py", *legs[0]]


def test_preflight_says_what_a_script_mode_bake_off_does_instead(tmp_path, cli):
    proc = cli("preflight", _spec(tmp_path))
    assert proc.returncode == 2 and "entrypoint.mode" in proc.stderr and "PT_XLA_DEBUG_LEVEL" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["my train.py", "t$(id>x).py", "../outside.py", "/abs/train.py"])
def test_a_script_name_a_shell_could_read_is_refused_in_one_line(tmp_path, name, cli):
    proc = cli("validate", _spec(tmp_path, **{"entrypoint.script": name}))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "entrypoint.script" in line and "relative path inside source_dir" in line, line


@pytest.mark.parametrize("folder, expect", [
    # word_language_model's style: its train-loss lines and its "valid loss" lines are told apart.
    ("accelerator_rnn", {"train": "| epoch   1 |     5/   37 batches | lr 5.00 | ms/batch  1.04 | loss  1.80 | "
                                  "ppl 6.05",
                         "val": "| end of epoch   1 | time:  0.05s | valid loss  1.91 | valid ppl     6.73"}),
    ("keyvalue_gpt", {"train": "step 20: train loss 2.9141, val loss 2.9420", "val": "step 20: train loss 2.9141, "
                      "val loss 2.9420", "style": "argument_style: equals", "trn": "arguments: [--device=xla]"}),
    ("cuda_default", {"train": "epoch 0: train loss 0.31000", "val": "epoch 0: val loss 0.29000 accuracy 0.9",
                      "local": "local: {arguments: [--device, cpu]}"}),
])
def test_init_writes_regexes_from_the_scripts_own_prints_that_match_only_their_lines(tmp_path, folder, expect, cli):
    import re

    import yaml

    for path in (ASSETS / folder).glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    proc = cli("init", tmp_path, "--template", "script", "--script", tmp_path / "train.py")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "bakeoff.yaml").read_text()
    metrics = {m["name"]: re.compile(m["regex"]) for m in yaml.safe_load(text)["entrypoint"]["script_mode"]["metrics"]}
    train, val = metrics["train_loss"], metrics["val_loss"]
    assert train.search(expect["train"]) and val.search(expect["val"])
    if expect["train"] != expect["val"]:  # one line each: neither regex reads the other's line
        assert not train.search(expect["val"]) and not val.search(expect["train"])
    else:  # one line carries both: each reads its own value
        assert train.search(expect["train"]).group(1) == "2.9141" and val.search(expect["val"]).group(1) == "2.9420"
    for key in ("style", "trn", "local"):
        if key in expect:
            assert expect[key] in text, text
    assert cli("validate", tmp_path / "bakeoff.yaml").returncode == 0


def test_init_warns_when_the_trn_leg_has_no_way_to_reach_xla(tmp_path, cli):
    shutil.copy(ASSETS / "accelerator_rnn" / "train.py", tmp_path / "train.py")
    proc = cli("init", tmp_path, "--template", "script", "--script", tmp_path / "train.py")
    assert proc.returncode == 0 and "warning: leg trn1: train.py picks its device through torch.accelerator" \
        in proc.stdout, proc.stdout


@pytest.mark.parametrize("regex", [r"loss ([0-9.]+)", r"loss: (\d+(?:\.\d+)?)", r"(?:val|eval)_loss=([-+0-9.eE]+)",
                                   r"step (\d+).*loss ([0-9.]{1,32})"])
def test_an_ordinary_metric_regex_is_not_a_nested_repeat(regex):
    from bakeoff.pipelines.spec.script import nested_repeat

    assert nested_repeat(regex) is None


def test_a_long_line_is_cut_for_the_regexes_and_said_once(tmp_path, capsys):
    from bakeoff_runtime.contract.script_mode import MetricRegex
    from bakeoff_runtime.training.script_metrics import MATCH_CHARS, LogMetrics

    metrics = LogMetrics((MetricRegex("val_loss", r"val loss ([0-9.]+)"),), "train_loss", tmp_path / "m.jsonl")
    for _ in range(3):
        metrics.feed("x" * (10 * MATCH_CHARS) + " val loss 0.5\n")  # past the cut: not read
    metrics.feed("val loss 0.25\n")
    metrics.close()
    assert metrics.cut_lines == 3 and metrics.series == {"val_loss": [0.25]}
    assert capsys.readouterr().out.count("was cut to its first") == 1
