"""The built-in Hugging Face causal LM (`entrypoint.builtin: hf-causal-lm`)."""
import importlib.util

import pytest

from conftest import ENTRYPOINTS, HF_TINY, tiny_spec, write_spec


def _hf_module():
    spec = importlib.util.spec_from_file_location("hf_causal_lm", ENTRYPOINTS / "hf_causal_lm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_spec_selects_the_hf_trainer(tmp_path):
    from pipelines.plan.model import build_plan
    from pipelines.spec.loader import load_spec

    spec = load_spec(str(write_spec(tmp_path / "hf.yaml", tiny_spec(**HF_TINY))))
    plan = build_plan(spec)
    assert plan.bundle.script == "hf_causal_lm.py"
    assert "hf_causal_lm.py" in dict(plan.bundle.files)
    hps = plan.jobs[0].hyperparameters
    assert (hps["d_model"], hps["n_layers"], hps["n_heads"], hps["model_type"]) == (32, 1, 2, "llama")
    # The reference LM is untouched: same script as before.
    assert build_plan(load_spec(str(write_spec(tmp_path / "ref.yaml", tiny_spec())))).bundle.script == "train.py"


def test_without_transformers_a_run_is_one_line_of_bad_input(tmp_path, monkeypatch, capsys):
    from pipelines.cli.main import main
    from pipelines.plan import builtins

    real = builtins.importlib.util.find_spec
    monkeypatch.setattr(builtins.importlib.util, "find_spec",
                        lambda name, *a: None if name == "transformers" else real(name, *a))
    path = write_spec(tmp_path / "hf.yaml", tiny_spec(**HF_TINY))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "transformers" in err and "bakeoff[hf]" in err
    assert not (tmp_path / "out").exists()  # refused before anything started


@pytest.mark.parametrize("model_type,width_key", [("llama", "intermediate_size"), ("gpt2", "n_inner")])
def test_config_takes_its_sizes_from_the_spec(model_type, width_key):
    hf = _hf_module()
    hps = {"model_type": model_type, "d_model": 48, "n_layers": 3, "n_heads": 4, "mlp_ratio": 2, "dropout": 0.0}
    config = hf.build_config(hps.get, 64)
    assert config.model_type == model_type
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (48, 3, 4)
    assert config.vocab_size == 256 and config.max_position_embeddings == 64
    assert getattr(config, width_key) == 96
    drops = {k: v for k, v in config.to_dict().items() if isinstance(v, float) and ("dropout" in k or "pdrop" in k)}
    assert drops and set(drops.values()) == {0.0}  # GPT-2's 0.1 defaults would make legs differ by chance


def test_config_overrides_as_run_clm_takes_them():
    hf = _hf_module()
    config = hf.build_config({"model_type": "llama", "d_model": 32, "n_heads": 4,
                              "config_overrides": "num_key_value_heads=2,rms_norm_eps=1e-5"}.get, 32)
    assert config.num_key_value_heads == 2 and config.rms_norm_eps == 1e-5


def test_optimum_neuron_names_win_and_tensor_parallel_is_refused():
    hf = _hf_module()

    class Rt:
        precision, seed, log_interval = "bf16", 3, 10

    hps = {"lr": 0.003, "learning_rate": 1e-4, "grad_clip": 1.0, "max_grad_norm": 0.5, "schedule": "cosine"}
    args = hf.training_arguments(hps.get, Rt, per_device=4, accumulation=2)
    assert args["learning_rate"] == 1e-4 and args["max_grad_norm"] == 0.5 and args["lr_scheduler_type"] == "cosine"
    assert args["bf16"] is True and args["per_device_train_batch_size"] == 4
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        hf.training_arguments({"tensor_parallel_size": 8}.get, Rt, 1, 1)


def _p4d_spec(**extra):
    spec = tiny_spec(**HF_TINY, **extra)
    assert [leg["backend"] for leg in spec["legs"]] == ["neuron", "cuda"]  # a trn1 leg and a p4d leg
    return spec


def test_every_job_of_a_script_that_imports_transformers_installs_it_where_the_image_lacks_it(tmp_path):
    """AWS's PyTorch 2.9 GPU image has no transformers (the Neuron one does): without this every p4d job crashed."""
    from pipelines.sagemaker.compiler import compile_pipeline
    from pipelines.spec.loader import load_spec

    steps = compile_pipeline(load_spec(str(write_spec(tmp_path / "hf.yaml", _p4d_spec())))).definition["Steps"]
    envs = {s["Name"]: s["Arguments"]["Environment"] for s in steps if s["Type"] == "Training"}
    assert envs and all(env["BAKEOFF_INSTALL_PACKAGES"] == "transformers" for env in envs.values())
    reference = compile_pipeline(load_spec(str(write_spec(tmp_path / "ref.yaml", tiny_spec())))).definition["Steps"]
    assert not any("BAKEOFF_INSTALL_PACKAGES" in s["Arguments"].get("Environment", {}) for s in reference)


def test_under_network_isolation_a_leg_that_cannot_install_transformers_is_refused_in_one_line(tmp_path, capsys):
    from pipelines.cli.main import main

    path = write_spec(tmp_path / "hf.yaml", _p4d_spec(security={"network_isolation": True}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "leg 'p4d'" in err and "transformers==4.56.2" in err and "legs.1.image" in err
    # An image of the user's own is taken as given.
    spec = _p4d_spec(security={"network_isolation": True})
    spec["legs"][1]["image"] = "123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:hf"
    assert main(["validate", str(write_spec(tmp_path / "own.yaml", spec))]) == 0


def test_a_job_skips_what_its_image_has_and_names_what_it_could_not_install(tmp_path):
    from bakeoff_runtime.process.package_install import ensure_packages

    assert ensure_packages(tmp_path, {"BAKEOFF_INSTALL_PACKAGES": "json"}) is None  # importable: nothing run
    (tmp_path / "wheels").mkdir()  # a bundle's wheels, without the package: pip --no-index cannot find it
    why = ensure_packages(tmp_path, {"BAKEOFF_INSTALL_PACKAGES": "bakeoff_no_such_package"})
    assert why.startswith("the script imports bakeoff_no_such_package, which this image lacks")
    assert "the code bundle's wheels" in why
