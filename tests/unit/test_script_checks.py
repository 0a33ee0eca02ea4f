"""What `bakeoff validate` says of a script-mode script before any job starts: read from its source
(pipelines/plan/script_scan.py) against the spec (pipelines/plan/script_checks.py). Scripts here are
written inline, each in a style published scripts use."""
import json
import textwrap

import pytest

from conftest import write_spec

METRICS = [{"name": "train_loss", "regex": r"train loss ([0-9.]+)"},
           {"name": "val_loss", "regex": r"val loss ([0-9.]+)"}]
TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"}
G5 = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}
P4D = {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "precision": "fp32"}

ARGPARSE = """
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--device", default="cpu")
p.add_argument("--accel", action="store_true", help="use an accelerator")
args = p.parse_args()
device = torch.device(args.device)
print(f"train loss {0.5}")
print(f"val loss {0.4}")
"""

DDP = """
import os
import torch
import torch.distributed as dist
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
print("val loss 0.4")
"""


def _spec(tmp_path, script=ARGPARSE, legs=(TRN, G5), files=None, **top):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_text(textwrap.dedent(script))
    for name, body in (files or {}).items():
        (src / name).write_text(textwrap.dedent(body))
    entry = {"source_dir": "src", "script": "train.py", "mode": "script",
             "script_mode": {"metrics": METRICS, "seed": {"argument": "seed"}, **top.pop("script_mode", {})}}
    data = {"name": "checks", "entrypoint": entry, "legs": [dict(leg) for leg in legs], "seeds": 2,
            "parity": {"metric": "val_loss", "margin": 0.1, "baseline": legs[-1]["name"]}, **top}
    return write_spec(tmp_path / "bakeoff.yaml", data)


def _warnings(proc) -> list[str]:
    return [ln.strip()[len("warning: "):] for ln in proc.stdout.splitlines() if ln.strip().startswith("warning: ")]


def _requests(spec):
    from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec

    steps = compile_pipeline(load_spec(spec)).definition["Steps"]
    return {s["Name"]: s["Arguments"] for s in steps if s["Type"] == "Training"}


@pytest.mark.parametrize("where", ["hyperparameters", "leg"])
def test_a_store_true_flag_given_as_a_hyperparameter_is_refused_before_anything_runs(tmp_path, where, cli):
    over = {"hyperparameters": {"accel": True}} if where == "hyperparameters" else {}
    legs = (TRN, {**G5, "hyperparameters": {"accel": True}}) if where == "leg" else (TRN, G5)
    proc = cli("validate", _spec(tmp_path, legs=legs, **over))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    field = "hyperparameters.accel" if where == "hyperparameters" else "legs.1.hyperparameters.accel"
    assert field in line and "--accel True" in line and "store_true" in line and "train.py:8" in line, line
    assert "`arguments:`" in line and "unrecognized arguments: True" in line


def test_spec_level_arguments_reach_every_leg_before_the_legs_own(tmp_path, cli):
    spec = _spec(tmp_path, legs=({**TRN, "arguments": ["--device", "xla"]}, G5), arguments=["--accel"])
    assert cli("validate", spec).returncode == 0
    requests = _requests(spec)
    assert requests["Train-trn1-s0"]["AlgorithmSpecification"]["ContainerArguments"] == [
        "train.py", "--accel", "--device", "xla"]
    assert requests["Train-g5-s0"]["AlgorithmSpecification"]["ContainerArguments"] == ["train.py", "--accel"]


def test_a_trn_leg_with_no_route_to_xla_is_named_with_the_option_that_would_give_it_one(tmp_path, cli):
    proc = cli("validate", _spec(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [warning] = [w for w in _warnings(proc) if w.startswith("leg trn1 has no way to reach PyTorch/XLA")]
    assert "`arguments: [--device, xla]`" in warning and "train.py:7" in warning
    given = cli("validate", _spec(tmp_path, legs=({**TRN, "arguments": ["--device", "xla"]}, G5)))
    assert not [w for w in _warnings(given) if "PyTorch/XLA" in w]


def test_torch_accelerator_on_a_trn_leg_says_the_smallest_change_and_the_trn2_path(tmp_path, cli):
    script = ARGPARSE.replace("device = torch.device(args.device)",
                              "device = torch.accelerator.current_accelerator() if args.accel else 'cpu'")
    proc = cli("validate", _spec(tmp_path, script=script, arguments=["--accel"]))
    [warning] = [w for w in _warnings(proc) if "torch.accelerator" in w]
    assert warning.startswith("leg trn1: train.py picks its device through torch.accelerator")
    assert "torch_xla.device()" in warning and "TorchNeuron" in warning and "torchneuron" in warning


def test_a_plain_script_on_a_multi_device_instance_says_what_it_uses_of_what_is_billed(tmp_path, cli):
    spec = _spec(tmp_path, legs=({**TRN, "arguments": ["--device", "xla"]}, P4D))
    proc = cli("validate", spec)
    assert "script mode: train.py initialises no process group" in proc.stdout
    [warning] = [w for w in _warnings(proc) if w.startswith("leg p4d:")]
    assert "of the 8 of ml.p4d.24xlarge the bill counts" in warning and "distributed: true" in warning
    assert "leg p4d: 1 x ml.p4d.24xlarge (8 devices), backend cuda; 1 process per instance" in proc.stdout
    env = _requests(spec)["Train-p4d-s0"]["Environment"]
    assert env["BAKEOFF_NPROC_PER_NODE"] == "1"  # the compiled request says what runs: one process


def test_a_distributed_script_is_detected_and_runs_one_process_per_device(tmp_path, cli):
    spec = _spec(tmp_path, script=DDP, legs=({**TRN, "arguments": ["--device", "xla"]}, P4D))
    proc = cli("validate", spec)
    assert "train.py reads LOCAL_RANK (train.py:5): it is distributed (torchrun, one process per device)" \
        in proc.stdout, proc.stdout
    assert not [w for w in _warnings(proc) if "bill counts" in w]
    requests = _requests(spec)
    assert requests["Train-p4d-s0"]["Environment"]["BAKEOFF_NPROC_PER_NODE"] == "8"
    assert requests["Train-trn1-s0"]["Environment"]["BAKEOFF_NPROC_PER_NODE"] == "2"
    bundle = requests["Train-p4d-s0"]["InputDataConfig"][0]  # the launcher reads the same decision
    assert bundle["ChannelName"] == "code"


def test_the_spec_overrides_what_the_script_shows_and_a_spawning_script_runs_once(tmp_path, cli):
    forced = cli("validate", _spec(tmp_path, script=DDP, legs=(TRN, P4D), script_mode={"distributed": False}))
    assert "entrypoint.script_mode.distributed is false" in forced.stdout
    spawn = DDP + "import torch.multiprocessing as mp\nmp.spawn(print, nprocs=2)\n"
    once = cli("validate", _spec(tmp_path, script=spawn, legs=(TRN, P4D)))
    assert "starts its own processes with mp.spawn" in once.stdout, once.stdout


def test_a_plain_script_on_several_instances_is_refused(tmp_path, cli):
    legs = ({**TRN, "instance_type": "ml.trn1.32xlarge", "instance_count": 2, "arguments": ["--device", "xla"]}, P4D)
    proc = cli("validate", _spec(tmp_path, legs=legs))
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert "legs.0.instance_count" in line and "each of the 2 instances" in line and "distributed: true" in line


def test_a_module_neither_the_image_nor_requirements_provide_is_named_and_a_local_run_refuses(tmp_path, cli):
    script = "import torch\nimport no_such_module_xyz\nprint('val loss 1')\n"
    legs = ({**TRN, "arguments": ["--device", "xla"]}, G5)
    spec = _spec(tmp_path, script=script, legs=legs)
    proc = cli("validate", spec)
    warnings = _warnings(proc)
    assert any(w.startswith("leg g5: the script imports no_such_module_xyz (train.py:2), which AWS's pytorch-training")
               for w in warnings), warnings
    assert any("lacks no_such_module_xyz (train.py:2" in w and "pip install no_such_module_xyz" in w for w in warnings)
    run = cli("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert run.returncode == 2 and "no job was started" in run.stderr, run.stderr
    assert not (tmp_path / "out" / "jobs").exists()
    # Listed in requirements.txt: SageMaker installs it, so only this Python's lack is said.
    listed = _spec(tmp_path, script=script, legs=legs, files={"requirements.txt": "no-such-module-xyz==1.0\n"})
    again = _warnings(cli("validate", listed))
    assert not [w for w in again if "pytorch-training" in w] and [w for w in again if "-r requirements.txt" in w]


def test_a_guarded_import_and_the_scripts_own_modules_are_not_requirements(tmp_path, cli):
    script = "try:\n    import wandb_missing_xyz\nexcept ImportError:\n    pass\nimport helpers\nprint('val loss 1')\n"
    proc = cli("validate", _spec(tmp_path, script=script, files={"helpers.py": "import os\n"}))
    assert not [w for w in _warnings(proc) if " lacks " in w or "the script imports" in w], _warnings(proc)


def test_a_script_that_insists_on_cuda_is_told_about_the_local_block_which_the_definition_never_sees(tmp_path, cli):
    script = ARGPARSE.replace('p.add_argument("--device", default="cpu")', 'p.add_argument("--device", default="cuda")')
    trn = {**TRN, "arguments": ["--device", "xla"]}
    spec = _spec(tmp_path, script=script, legs=(trn, G5))
    warnings = _warnings(cli("validate", spec))
    [hint] = [w for w in warnings if w.startswith("leg g5:")]
    assert "insists on CUDA (its --device option defaults to 'cuda'" in hint
    assert "local: {arguments: [--device, cpu]}" in hint and "never deployed" in hint
    # With the block: nothing to say, and the compiled pipeline is byte for byte the one without it.
    (tmp_path / "with-local").mkdir()
    local = _spec(tmp_path / "with-local", script=script,
                  legs=(trn, {**G5, "local": {"arguments": ["--device", "cpu"], "environment": {"A": "1"}}}))
    assert not [w for w in _warnings(cli("validate", local)) if "insists on CUDA" in w]
    from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec

    plain, with_local = compile_pipeline(load_spec(spec)), compile_pipeline(load_spec(local))
    assert json.dumps(plain.definition, sort_keys=True) == json.dumps(with_local.definition, sort_keys=True)
    assert "--device\", \"cpu" not in json.dumps(with_local.definition) and "\"A\"" not in json.dumps(
        with_local.definition)


def test_a_key_equals_value_configurator_asks_for_the_equals_style(tmp_path, cli):
    script = "import torch\nlr = 0.1\nexec(open('configurator.py').read())\nprint('val loss 1')\n"
    proc = cli("validate", _spec(tmp_path, script=script, files={"configurator.py": "import sys\n"},
                                 hyperparameters={"lr": 0.2}))
    assert any("argument_style: equals" in w for w in _warnings(proc)), _warnings(proc)


def test_an_option_the_parser_does_not_declare_is_named(tmp_path, cli):
    proc = cli("validate", _spec(tmp_path, hyperparameters={"learning_rate": 0.1}))
    assert any("declares no --learning_rate" in w for w in _warnings(proc)), _warnings(proc)
