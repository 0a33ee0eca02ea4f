"""A port onto bakeoff's Runtime as a hurried user writes one, for bakeoff's tests: it reports its
steps with rt.track_step and its validation with rt.log_validation, but keeps its own device choice
("cuda if there is one, else the CPU") and steps its optimizer itself, never through
rt.optimizer_step or rt.prepare. On a trn leg that trains on the host CPU.
"""
import torch
import torch.nn.functional as F

from bakeoff_runtime import Runtime

with Runtime.from_environment() as rt:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(5)
    x = torch.randn(768, 12, generator=g)
    y = x @ torch.randn(12, 1, generator=g) / 3
    torch.manual_seed(rt.seed)
    model = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(rt.hp("lr", 0.01)))
    batch = 32
    for step in range(rt.max_steps):
        i = (step * batch) % 512
        xb, yb = x[i:i + batch].to(device), y[i:i + batch].to(device)
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rt.track_step(step, loss, samples=batch)
    with torch.no_grad():
        rt.log_validation(rt.max_steps, val_loss=F.mse_loss(model(x[512:].to(device)), y[512:].to(device)).item())
