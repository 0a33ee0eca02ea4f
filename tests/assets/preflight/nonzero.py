import torch

from common import batch, train


def step_loss(rt, model, step, gen):
    x, y = batch(rt, gen, 32)
    _, loss = model(x, y)
    rare = torch.nonzero(y > 250)  # data-dependent output shape: falls back to the CPU on XLA
    return loss + 0.0 * rare.shape[0]


train(step_loss)
