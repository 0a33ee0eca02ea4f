"""Small CNN classifier in the style of pytorch/examples mnist/main.py.

SageMaker script mode: hyperparameters arrive as ``--key value`` arguments,
the model is written to ``$SM_MODEL_DIR/model.pt``. The data are synthetic
1x12x12 "images" labelled by a fixed, smooth random linear teacher (so the task is
learnable), unless ``$SM_CHANNEL_TRAINING/data.pt`` exists, in which case it
is loaded as a dict with "x_train", "y_train", "x_test", "y_test".
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.fc1 = nn.Linear(8 * 5 * 5, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc1(x), dim=1)


def make_data(n_train, n_test):
    channel = os.environ.get("SM_CHANNEL_TRAINING")
    if channel and os.path.isfile(os.path.join(channel, "data.pt")):
        d = torch.load(os.path.join(channel, "data.pt"))
        return d["x_train"], d["y_train"], d["x_test"], d["y_test"]
    g = torch.Generator().manual_seed(1234)
    # A smooth (upsampled 3x3) random linear teacher, so the conv net can learn it.
    coarse = torch.randn(10, 1, 3, 3, generator=g)
    teacher = F.interpolate(coarse, size=(12, 12), mode="bilinear", align_corners=False)
    teacher = teacher.view(10, 144).t()
    x = torch.randn(n_train + n_test, 1, 12, 12, generator=g)
    y = (x.view(-1, 144) @ teacher).argmax(dim=1)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if (batch_idx + 1) % args.log_interval == 0:
            seen = (batch_idx + 1) * len(data)
            total = len(train_loader.dataset)
            print(f"Train Epoch: {epoch} [{seen}/{total} ({100.0 * seen / total:.0f}%)]\tLoss: {loss.item():.6f}",
                  flush=True)


def test(model, device, test_loader):
    model.eval()
    test_loss = torch.zeros((), device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum")
            correct += (output.argmax(dim=1) == target).sum()
    n = len(test_loader.dataset)
    correct = int(correct.item())
    print(f"Test set: Average loss: {test_loss.item() / n:.4f}, Accuracy: {correct}/{n} ({100.0 * correct / n:.0f}%)",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description="Synthetic-image CNN example")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--test-batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=5)
    parser.add_argument("--train-samples", type=int, default=640)
    parser.add_argument("--test-samples", type=int, default=256)
    parser.add_argument("--device", type=str,
                        default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--model-dir", type=str,
                        default=os.environ.get("SM_MODEL_DIR", "./model"))
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    x_train, y_train, x_test, y_test = make_data(args.train_samples, args.test_samples)
    train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size,
                              shuffle=True, drop_last=True)
    test_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=args.test_batch_size,
                             drop_last=True)

    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)

    os.makedirs(args.model_dir, exist_ok=True)
    state = {k: v.cpu() for k, v in model.state_dict().items()}
    torch.save(state, os.path.join(args.model_dir, "model.pt"))
    print("Saved model to {}".format(os.path.join(args.model_dir, "model.pt")), flush=True)


if __name__ == "__main__":
    main()
