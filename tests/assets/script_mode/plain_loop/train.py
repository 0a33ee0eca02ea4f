"""A bare PyTorch loop configured by argparse, with the device as an argument: the kind of script a
team already runs on SageMaker. `--plant` adds one of the mistakes a port makes, for the tests."""
import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
parser.add_argument("--plant", default="none", choices=["none", "nonzero", "crash", "fixed_seed"])
parser.add_argument("--log-to-mlflow", type=int, default=0, help="also log the validation MSE to MLflow")
args = parser.parse_args()

torch.manual_seed(0 if args.plant == "fixed_seed" else args.seed)
device = torch.device(args.device)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
data = torch.Generator().manual_seed(1234)
inputs = torch.randn(512, 8, generator=data)
targets = inputs @ torch.randn(8, 1, generator=data)
order = torch.randperm(512)  # drawn from the global generator: the seed changes the batches

for step in range(args.steps):
    rows = order[(step * args.batch_size) % 512:][:args.batch_size]
    x, y = inputs[rows].to(device), targets[rows].to(device)
    loss = torch.nn.functional.mse_loss(model(x), y)
    if args.plant == "nonzero":
        loss = loss + 0.0 * torch.nonzero(x > 0).float().sum()  # a data-dependent shape, every step
    if args.plant == "crash" and step == 3:
        raise RuntimeError("shapes do not match: expected 16, got 8")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.5f}", flush=True)

with torch.no_grad():
    val = torch.nn.functional.mse_loss(model(inputs.to(device)), targets.to(device)).item()
print(f"validation loss {val:.5f}", flush=True)
if args.log_to_mlflow:
    import mlflow

    with mlflow.start_run():
        mlflow.log_metric("val_mse", val, step=args.steps)
os.makedirs(os.environ.get("SM_MODEL_DIR", "model"), exist_ok=True)
torch.save(model.state_dict(), os.path.join(os.environ.get("SM_MODEL_DIR", "model"), "model.pt"))
