"""A tiny tied-embedding model on the Runtime contract, with the port mistakes the verdict must
catch planted by hyperparameter (each job trains in a second or two):

    plant: none         a correct port: the model and batches on rt.device
    plant: host_device  the script's own device choice ("cuda if there is one, else the CPU"),
                        so a neuron leg trains on the host CPU
    plant: untie        no tie_weights(): moving the model to XLA un-ties its embedding and output
    plant: nonzero      torch.nonzero in the step: a CPU fallback on XLA
"""
import torch
import torch.nn as nn

from bakeoff_runtime import Runtime


class TinyLM(nn.Module):
    def __init__(self, vocab=32, dim=8, tie=True):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self._tie = tie
        if tie:
            self.head.weight = self.embed.weight

    def forward(self, x):
        return self.head(torch.tanh(self.embed(x)))


with Runtime.from_environment() as rt:
    plant = str(rt.hp("plant", "none"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu") if plant == "host_device" else rt.device
    torch.manual_seed(rt.seed)
    model = TinyLM()
    if plant == "untie":
        model = model.to(device)  # what a port that skips rt.prepare does on XLA
    else:
        model.tie_weights = lambda: setattr(model.head, "weight", model.embed.weight)
        model = rt.prepare(model) if plant != "host_device" else model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(rt.seed)
    steps, batch = int(rt.hp("max_steps", 12)), int(rt.hp("global_batch_size", 8))
    for step in range(steps):
        x = torch.randint(0, 32, (batch, 6), generator=gen)
        x, y = x.to(device), torch.roll(x, 1, dims=1).to(device)
        with rt.autocast():
            logits = model(x)
            if plant == "nonzero":
                logits = logits + 0 * torch.nonzero(x > 3).shape[0]
            loss = nn.functional.cross_entropy(logits.float().reshape(-1, 32), y.reshape(-1))
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad(set_to_none=True)
        rt.track_step(step, loss, samples=batch)
    with rt.validating(), torch.no_grad():
        x = torch.randint(0, 32, (64, 6), generator=torch.Generator().manual_seed(99)).to(device)
        val = nn.functional.cross_entropy(model(x).float().reshape(-1, 32), torch.roll(x, 1, dims=1).reshape(-1))
    rt.log_validation(steps, val_loss=float(val.item()))
