"""A classifier trained the way many published scripts are written for a GPU box, written for
bakeoff's tests: `--device` defaults to "cuda" and nothing checks that there is one, so on a machine
without a GPU it stops at its first `.to(device)` unless told `--device cpu`. The data are a fixed
synthetic two-class problem; `--seed` seeds the model and the batch order.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="MLP classifier")
parser.add_argument("--device", default="cuda", help="device to train on")
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

if args.device == "xla":
    import torch_xla

    device = torch_xla.device()
else:
    device = torch.device(args.device)

g = torch.Generator().manual_seed(99)
x = torch.randn(1536, 16, generator=g)
y = (x[:, :4].sum(dim=1) > 0).long()
x_train, y_train, x_val, y_val = x[:1024], y[:1024], x[1024:], y[1024:]

torch.manual_seed(args.seed)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

for epoch in range(args.epochs):
    order = torch.randperm(len(x_train))
    model.train()
    for i in range(0, len(order), args.batch_size):
        idx = order[i:i + args.batch_size]
        data, target = x_train[idx].to(device), y_train[idx].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: train loss {loss.item():.5f}", flush=True)
    model.eval()
    with torch.no_grad():
        logits = model(x_val.to(device))
        val_loss = F.cross_entropy(logits, y_val.to(device)).item()
        accuracy = (logits.argmax(dim=1) == y_val.to(device)).float().mean().item()
    print(f"epoch {epoch}: val loss {val_loss:.5f} accuracy {accuracy:.4f}", flush=True)
