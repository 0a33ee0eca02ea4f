"""bakeoff's built-in Hugging Face trainer (`entrypoint.builtin: hf-causal-lm`): a `transformers`
causal LM built from a config, trained on the Runtime contract like any bake-off script.

No weights are downloaded: `AutoConfig.for_model(model_type, ...)` makes the config (sizes from
the spec's `model:` section), the model is initialised on the host from the seed, so every leg
starts from bit-identical weights, and the corpus is bytes (vocabulary 256): the built-in corpus
or your `train`/`validation` channels. `bakeoff init DIR --template hf` copies this file as an
editable script.

Knobs, as `hyperparameters:` in the spec, named as in transformers/optimum-neuron
(`NeuronTrainingArguments` in huggingface/optimum-neuron optimum/neuron/trainers/training_args.py;
`tensor_parallel_size`/`pipeline_parallel_size` in its TrainingNeuronConfig; `config_overrides`
as in transformers' run_clm.py):
  model_type            AutoConfig.for_model's model type (default llama; gpt2, qwen2, mistral, ...)
  config_overrides      "key=value,key=value" applied with PretrainedConfig.update_from_string
  attn_implementation   eager (default: the same arithmetic on every backend), sdpa
  gradient_checkpointing  true/false
  learning_rate, weight_decay, adam_beta1, adam_beta2, adam_epsilon, max_grad_norm, warmup_steps,
  lr_scheduler_type (cosine, constant, linear): when given they replace the spec's
  training.optimizer values (every leg gets the same hyperparameters, so legs stay equal).
The global batch is the spec's; each rank takes its slice (per_device_train_batch_size and
gradient_accumulation_steps are derived per leg, as optimum-neuron users set them by hand).
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bakeoff_runtime.contract import PROCESS_START_ENV  # noqa: E402  (torch-free)

STARTED = float(os.environ.get(PROCESS_START_ENV, time.time()))
# Nothing is fetched from the Hub: the model is built from a config.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402

from bakeoff_runtime import Runtime  # noqa: E402
from bakeoff_runtime.training.reference.data import BatchSplit, ByteBatches, load_channel, validation_batches  # noqa: E402

VOCAB = 256  # bytes
NOT_INSTALLED = ("transformers is not installed in this environment: install bakeoff's `hf` extra "
                 "(pip install 'bakeoff[hf]'), or on SageMaker give the leg an `image:` that has it")


def _flag(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def build_config(hp, sequence_length: int):
    """The model's config from the spec: sizes from `model:`, the rest from the model type's defaults."""
    try:
        from transformers import AutoConfig
    except ImportError:
        raise SystemExit(f"[bakeoff] {NOT_INSTALLED}") from None
    model_type = str(hp("model_type", "llama"))
    d_model, n_heads = int(hp("d_model", 128)), int(hp("n_heads", 4))
    defaults = AutoConfig.for_model(model_type).to_dict()
    sizes: dict[str, int | float] = {
        "vocab_size": VOCAB, "hidden_size": d_model, "num_hidden_layers": int(hp("n_layers", 2)),
        "num_attention_heads": n_heads, "max_position_embeddings": sequence_length}
    width = int(hp("mlp_ratio", 4)) * d_model
    for name in ("intermediate_size", "n_inner", "ffn_dim"):
        if name in defaults:
            sizes[name] = width
            break
    if "num_key_value_heads" in defaults:
        sizes["num_key_value_heads"] = n_heads  # plain multi-head; GQA through config_overrides
    dropout = float(hp("dropout", 0.0))
    for name, value in defaults.items():
        if isinstance(value, float) and ("dropout" in name or name.endswith("pdrop")):
            sizes[name] = dropout
    config = AutoConfig.for_model(model_type, **sizes)
    overrides = hp("config_overrides")
    if overrides:
        config.update_from_string(str(overrides))
    config.use_cache = False  # training: no KV cache
    return config


def lr_at(step: int, base: float, warmup: int, total: int, schedule: str, min_ratio: float) -> float:
    if warmup and step < warmup:
        return base * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if schedule == "constant":
        return base
    if schedule == "linear":
        return base * (1 - progress)
    if schedule == "cosine":
        return base * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
    raise ValueError(f"lr_scheduler_type {schedule!r} is not one of cosine, constant, linear")


def training_arguments(hp, rt: Runtime, per_device: int, accumulation: int) -> dict:
    """The run's settings under their transformers/optimum-neuron names: what ran, in words an
    optimum-neuron user reads at a glance (recorded in summary.json)."""
    def pick(hf_name: str, ours: str, default):
        return hp(hf_name, hp(ours, default))

    if int(hp("tensor_parallel_size", 1)) != 1 or int(hp("pipeline_parallel_size", 1)) != 1:
        raise ValueError("tensor_parallel_size / pipeline_parallel_size > 1 are not supported by the built-in "
                         "hf-causal-lm trainer (data parallel only); bring your own optimum-neuron script")
    return {
        "learning_rate": float(pick("learning_rate", "lr", 3e-3)),
        "weight_decay": float(hp("weight_decay", 0.1)),
        "adam_beta1": float(pick("adam_beta1", "beta1", 0.9)),
        "adam_beta2": float(pick("adam_beta2", "beta2", 0.95)),
        "adam_epsilon": float(pick("adam_epsilon", "eps", 1e-8)),
        "max_grad_norm": float(pick("max_grad_norm", "grad_clip", 1.0)),
        "lr_scheduler_type": str(pick("lr_scheduler_type", "schedule", "cosine")),
        "warmup_steps": int(hp("warmup_steps", 20)),
        "max_steps": int(hp("max_steps", 200)),
        "per_device_train_batch_size": per_device,
        "gradient_accumulation_steps": accumulation,
        "bf16": rt.precision == "bf16",
        "gradient_checkpointing": _flag(hp("gradient_checkpointing", False)),
        "seed": rt.seed,
        "logging_steps": rt.log_interval,
        "attn_implementation": str(hp("attn_implementation", "eager")),
    }


@torch.no_grad()
def evaluate(rt: Runtime, model, batches) -> float:
    model.eval()
    total: torch.Tensor | None = None
    for x, y in batches:
        with rt.autocast():
            loss = causal_lm_loss(model, x.to(rt.device), y.to(rt.device))
        total = loss if total is None else total + loss
    model.train()
    if total is None:
        raise ValueError("no validation batches")
    return float((total / len(batches)).item())


def causal_lm_loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # The batches are already shifted (y is x one byte on): the loss is taken here, in fp32,
    # rather than by the model's own label shifting.
    logits = model(input_ids=x).logits
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))


def main() -> None:
    with Runtime.from_environment(started_at=STARTED) as rt:
        hp = rt.hp
        sequence_length = int(hp("sequence_length", 128))
        split = BatchSplit.from_hyperparameters(hp, rt.world_size)
        global_batch, per_device, accumulation = (split.global_batch_size, split.per_device_batch_size,
                                                  split.gradient_accumulation_steps)
        args = training_arguments(hp, rt, per_device, accumulation)
        rt.extra["fairness"] = split.fairness()
        rt.extra["training_arguments"] = args
        max_steps = args["max_steps"]

        if "train" not in rt.env.channels:
            raise FileNotFoundError("no 'train' data channel (SM_CHANNEL_TRAIN)")
        train = ByteBatches(load_channel(rt.env.channels["train"]), sequence_length, global_batch, rt.seed)
        val_data = load_channel(rt.env.channels.get("validation", rt.env.channels["train"]))
        val = validation_batches(val_data, sequence_length, int(hp("eval_batch_size", 16)),
                                 int(hp("eval_batches", 8)))

        config = build_config(hp, sequence_length)
        from transformers import AutoModelForCausalLM

        # Initialised on the host with the seed, then moved: every backend starts from the same weights.
        torch.manual_seed(rt.seed)
        model = AutoModelForCausalLM.from_config(config, attn_implementation=args["attn_implementation"])
        if args["gradient_checkpointing"]:
            model.gradient_checkpointing_enable()
        rt.extra["parameters"] = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
        rt.extra["hf_config"] = {"model_type": config.model_type, "architecture": type(model).__name__,
                                 **{k: getattr(config, k) for k in ("hidden_size", "num_hidden_layers",
                                                                    "num_attention_heads", "vocab_size")}}
        print(f"[bakeoff] {type(model).__name__} from config ({rt.extra['parameters']:,} parameters, no weights "
              f"downloaded); training arguments: {args}", flush=True)
        model = rt.prepare(model)

        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": args["weight_decay"]},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args["learning_rate"],
                                betas=(args["adam_beta1"], args["adam_beta2"]), eps=args["adam_epsilon"],
                                foreach=False)
        min_ratio = float(hp("min_lr_ratio", 0.1))
        eval_interval = int(hp("eval_interval", 50))
        tokens_per_step = global_batch * sequence_length

        model.train()
        for step in range(max_steps):
            lr = lr_at(step, args["learning_rate"], args["warmup_steps"], max_steps, args["lr_scheduler_type"],
                       min_ratio)
            for group in opt.param_groups:
                group["lr"] = lr
            loss_sum: torch.Tensor | None = None
            for x, y in train.micro_batches(step, rt.rank, rt.world_size, accumulation):
                with rt.autocast():
                    loss = causal_lm_loss(model, x.to(rt.device), y.to(rt.device))
                (loss / accumulation).backward()
                loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
            rt.optimizer_step(opt, clip_grad_norm=args["max_grad_norm"])
            opt.zero_grad(set_to_none=True)
            assert loss_sum is not None  # accumulation >= 1: at least one micro-batch ran
            rt.track_step(step, loss_sum / accumulation, tokens=tokens_per_step, lr=lr)
            if eval_interval and (step + 1) % eval_interval == 0 and step + 1 < max_steps:
                with rt.validating():
                    rt.log_validation(step + 1, val_loss=evaluate(rt, model, val))
        with rt.validating():
            val_loss = evaluate(rt, model, val)
        rt.log_validation(max_steps, val_loss=val_loss, val_bits_per_byte=val_loss / math.log(2))
        if rt.rank == 0:
            inner = model.module if hasattr(model, "module") else model
            # A config.json beside the weights: the trained model loads with from_pretrained.
            inner.config.save_pretrained(rt.env.model_dir)
            torch.save({k: v.detach().cpu() for k, v in inner.state_dict().items()}, rt.env.model_dir / "model.pt")


if __name__ == "__main__":
    main()
