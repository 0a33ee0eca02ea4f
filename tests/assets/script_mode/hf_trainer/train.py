"""Tiny causal LM with the Hugging Face Trainer, in the style of the
transformers run_clm.py example as used in SageMaker Hugging Face jobs.

A typical run:
  python train.py --output_dir /opt/ml/model --max_steps 40 \
      --per_device_train_batch_size 8 --learning_rate 1e-3 --logging_steps 5 \
      --eval_strategy steps --eval_steps 20 --dataloader_drop_last true \
      --seed 42 --report_to none
--output_dir defaults to $SM_MODEL_DIR. On a torch_xla device add
--optim adamw_torch (the default fused AdamW does not take XLA tensors).
The GPT-2 is built from a config (no download); the data are a synthetic
token stream from a fixed Markov chain, or $SM_CHANNEL_TRAINING/data.pt
(a 1-D tensor of token ids < 64) when present.
"""
import logging
import os
import sys
from dataclasses import dataclass, field

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments, set_seed

logger = logging.getLogger(__name__)


@dataclass
class ModelArgs:
    block_size: int = field(default=32, metadata={"help": "Sequence length."})
    train_samples: int = field(default=256, metadata={"help": "Number of training sequences."})
    eval_samples: int = field(default=64, metadata={"help": "Number of evaluation sequences."})
    vocab_size: int = field(default=64)
    n_layer: int = field(default=2)
    n_head: int = field(default=2)
    n_embd: int = field(default=32)


def make_corpus(vocab_size, length):
    channel = os.environ.get("SM_CHANNEL_TRAINING")
    if channel and os.path.isfile(os.path.join(channel, "data.pt")):
        return torch.load(os.path.join(channel, "data.pt")).long()
    g = torch.Generator().manual_seed(1234)
    # Each token has 4 possible successors: a learnable, not memorisable, stream.
    successors = torch.randint(vocab_size, (vocab_size, 4), generator=g)
    choice = torch.randint(4, (length,), generator=g)
    tokens = [0]
    for i in range(length - 1):
        tokens.append(int(successors[tokens[-1], choice[i]]))
    return torch.tensor(tokens, dtype=torch.long)


class LMDataset(Dataset):
    def __init__(self, corpus, block_size, num_samples, seed):
        g = torch.Generator().manual_seed(seed)
        self.starts = torch.randint(len(corpus) - block_size, (num_samples,), generator=g)
        self.corpus, self.block_size = corpus, block_size

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        s = int(self.starts[i])
        ids = self.corpus[s:s + self.block_size]
        return {"input_ids": ids, "labels": ids.clone()}


def main():
    if not any(a == "--output_dir" or a.startswith("--output_dir=") for a in sys.argv[1:]):
        sys.argv[1:1] = ["--output_dir", os.environ.get("SM_MODEL_DIR", "./model")]
    parser = HfArgumentParser((ModelArgs, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
    logger.setLevel(logging.INFO)
    logger.info(f"Device: {training_args.device}, seed: {training_args.seed}, output_dir: {training_args.output_dir}")

    set_seed(training_args.seed)

    corpus = make_corpus(model_args.vocab_size, 20000)
    split = int(0.9 * len(corpus))
    train_dataset = LMDataset(corpus[:split], model_args.block_size, model_args.train_samples, 1234)
    eval_dataset = LMDataset(corpus[split:], model_args.block_size, model_args.eval_samples, 4321)

    config = GPT2Config(n_layer=model_args.n_layer, n_head=model_args.n_head, n_embd=model_args.n_embd,
                        vocab_size=model_args.vocab_size, n_positions=model_args.block_size)
    model = GPT2LMHeadModel(config)
    logger.info(f"Model parameters: {sum(p.numel() for p in model.parameters()) / 1e3:.1f}K")

    trainer = Trainer(model=model, args=training_args,
                      train_dataset=train_dataset, eval_dataset=eval_dataset)

    train_result = trainer.train()
    trainer.log_metrics("train", train_result.metrics)
    trainer.save_metrics("train", train_result.metrics)

    metrics = trainer.evaluate()
    trainer.log_metrics("eval", metrics)
    trainer.save_metrics("eval", metrics)

    trainer.save_state()
    trainer.save_model()
    if trainer.is_world_process_zero():
        state = {k: v.cpu() for k, v in trainer.model.state_dict().items()}
        torch.save(state, os.path.join(training_args.output_dir, "model.pt"))
    print(f"eval_loss {metrics['eval_loss']:.4f}", flush=True)


if __name__ == "__main__":
    main()
