"""A DDP training script started by torchrun, in the style of PyTorch's DDP tutorial series
(distributed/ddp-tutorial-series/multigpu_torchrun.py), written for bakeoff's tests: it reads
LOCAL_RANK, initialises a process group, wraps the model in DistributedDataParallel and shards the
data with a DistributedSampler; its epochs and snapshot interval are positional arguments. It runs
on CUDA where there is a GPU and on the CPU (gloo) elsewhere; `--device xla` puts it on PyTorch/XLA
with the "xla" process group. Rank 0 prints the losses.
"""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.distributed import all_reduce, destroy_process_group, get_world_size, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def ddp_setup(device_kind: str) -> torch.device:
    local_rank = int(os.environ["LOCAL_RANK"])
    if device_kind == "xla":
        import torch_xla
        import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" process group)

        init_process_group("xla", init_method="xla://")
        return torch_xla.device()
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        init_process_group(backend="nccl")
        return torch.device("cuda", local_rank)
    init_process_group(backend="gloo")
    return torch.device("cpu")


class Trainer:
    def __init__(self, model, train_data, val_data, lr, device, save_every):
        self.rank = int(os.environ["RANK"])
        self.device = device
        self.model = model.to(device)
        self.train_data, self.val_data = train_data, val_data
        self.save_every = save_every
        ids = [device.index] if device.type == "cuda" else None
        # PyTorch/XLA's DDP takes gradient_as_bucket_view=True (docs.pytorch.org/xla, "DDP").
        self.model = DDP(self.model, device_ids=ids, gradient_as_bucket_view=device.type == "xla")
        # After the move: PyTorch/XLA's .to() gives the module new parameter objects.
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()
        return loss

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        total, batches = torch.zeros((), device=self.device), 0
        for source, targets in self.train_data:
            total += self._run_batch(source.to(self.device), targets.to(self.device)).detach()
            batches += 1
        if self.rank == 0:
            b_sz = len(next(iter(self.train_data))[0])
            print(f"[RANK{self.rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {batches} | "
                  f"train loss {total.item() / batches:.6f}", flush=True)

    def _validate(self):
        self.model.eval()
        total = torch.zeros((), device=self.device)
        count = torch.zeros((), device=self.device)
        with torch.no_grad():
            for source, targets in self.val_data:
                source, targets = source.to(self.device), targets.to(self.device)
                total += F.mse_loss(self.model(source), targets, reduction="sum")
                count += targets.numel()
        all_reduce(total)
        all_reduce(count)
        self.model.train()
        return (total / count).item()

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)
            if epoch % self.save_every == 0 and self.rank == 0:
                print(f"Epoch {epoch} | world size {get_world_size()}", flush=True)
        val = self._validate()
        if self.rank == 0:
            print(f"val loss {val:.6f}", flush=True)


def make_data(n_train, n_val):
    """A fixed linear teacher with noise: the same data on every run and every rank."""
    g = torch.Generator().manual_seed(7)
    w = torch.randn(20, 1, generator=g) / 4
    x = torch.randn(n_train + n_val, 20, generator=g)
    y = x @ w + 0.1 * torch.randn(n_train + n_val, 1, generator=g)
    return TensorDataset(x[:n_train], y[:n_train]), TensorDataset(x[n_train:], y[n_train:])


def loader(dataset: Dataset, batch_size: int, seed: int):
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, drop_last=True,
                      sampler=DistributedSampler(dataset, seed=seed, drop_last=True))


def main(save_every, total_epochs, batch_size, device_kind, seed):
    device = ddp_setup(device_kind)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    train_set, val_set = make_data(512, 256)
    trainer = Trainer(model, loader(train_set, batch_size, seed), loader(val_set, batch_size, seed), 0.05, device,
                      save_every)
    trainer.train(total_epochs)
    destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="simple distributed training job")
    parser.add_argument("total_epochs", type=int, help="Total epochs to train the model")
    parser.add_argument("save_every", type=int, help="How often to report")
    parser.add_argument("--batch_size", default=16, type=int, help="Input batch size on each device (default: 16)")
    parser.add_argument("--device", default="auto", help="auto (CUDA if there is one, else the CPU) or xla")
    parser.add_argument("--seed", default=0, type=int, help="model initialisation and data order")
    args = parser.parse_args()
    main(args.save_every, args.total_epochs, args.batch_size, args.device, args.seed)
