"""The built-in Hugging Face trainer's model config and training arguments (entrypoints/hf_causal_lm.py,
which imports torch and transformers): the spec's sizes, run_clm's overrides, optimum-neuron's names."""
import importlib.util

import pytest

from conftest import ENTRYPOINTS


def _hf_module():
    spec = importlib.util.spec_from_file_location("hf_causal_lm", ENTRYPOINTS / "hf_causal_lm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
