"""A PyTorch/XLA training loop in the style of torch-neuronx's MLP tutorial: the device from
torch_xla, one `xm.mark_step()` per step. `--raise-at` plants a failure of the script's own, at a
step (0: before its first optimizer step), for the tests."""
import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--raise-at", type=int, default=-1)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
inputs = torch.randn(256, 8, generator=torch.Generator().manual_seed(7))
targets = inputs.sum(dim=1, keepdim=True)

for step in range(args.steps):
    if step == args.raise_at:
        raise RuntimeError(f"the script's own check failed at step {step}")
    rows = torch.randint(0, 256, (32,))
    loss = torch.nn.functional.mse_loss(model(inputs[rows].to(device)), targets[rows].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    xm.mark_step()
    print(f"step {step}: loss {loss.item():.5f}", flush=True)
print(f"validation loss {loss.item():.5f}", flush=True)
