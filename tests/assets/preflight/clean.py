from common import batch, train


def step_loss(rt, model, step, gen):
    x, y = batch(rt, gen, 32)
    return model(x, y)[1]


train(step_loss)
