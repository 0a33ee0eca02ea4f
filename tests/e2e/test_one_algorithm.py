"""One algorithm on every leg: with two ranks, the clipped update of the XLA code path
(reduce, then clip, then step) equals DistributedDataParallel's on the CUDA/CPU path.

PyTorch/XLA's CPU client cannot run collectives across processes (under torchrun each
process sees a world of 1, and CPU_NUM_DEVICES=2 hangs in XLA's rendezvous; both tried
with torch-xla 2.9.0), so the Neuron backend's step runs here with `xm.reduce_gradients`
provided by gloo: on Trainium that call is an all-reduce that averages over replicas
(pytorch/xla r2.9 torch_xla/core/xla_model.py: REDUCE_SUM scaled by 1/world_size), which is
what the stand-in does. The order of operations under test is the backend's own code.
"""
import json
import os
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bakeoff_runtime.training.backends import Backend
from bakeoff_runtime.training.backends.cpu import CpuBackend
from bakeoff_runtime.training.backends.neuron import NeuronBackend

CLIP = 0.05


class GlooXm:
    """The one xm call the Neuron backend makes, with gloo doing the all-reduce."""

    @staticmethod
    def reduce_gradients(optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
                    p.grad.div_(dist.get_world_size())


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def _local_batch(rank):
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own slice of the global batch
    x = torch.randn(16, 6, generator=g) * (1 + 3 * rank)  # very different gradient norms per rank
    return x, x.sum(1, keepdim=True)


def _step(path, rank):
    model = _model()
    x, y = _local_batch(rank)
    if path == "ddp":
        backend = CpuBackend("fp32")
        wrapped = backend.wrap_model(model, 2)  # DistributedDataParallel: averages in backward
    else:
        backend = object.__new__(NeuronBackend)
        Backend.__init__(backend, "fp32")
        backend._xm = GlooXm
        wrapped = model  # no DDP on XLA: the optimizer step reduces
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    torch.nn.functional.mse_loss(wrapped(x), y).backward()
    if path == "clip-before-reduce":  # the old order: clip each rank's own gradient, then reduce
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        GlooXm.reduce_gradients(opt)
        opt.step()
    else:
        backend.optimizer_step(opt, clip_grad_norm=CLIP)
    return [p.detach().clone() for p in model.parameters()]


def _worker(rank, store_path, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=2)
    try:
        result = {path: [t.tolist() for t in _step(path, rank)] for path in ("ddp", "neuron", "clip-before-reduce")}
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
            json.dump(result, fh)
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(sys.platform != "linux", reason="gloo over a file store")
def test_clipped_update_is_the_same_on_both_code_paths(tmp_path):
    mp.start_processes(_worker, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=2, start_method="spawn")
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank in ranks:
        for ddp, neuron in zip(rank["ddp"], rank["neuron"], strict=False):
            assert torch.allclose(torch.tensor(ddp), torch.tensor(neuron), atol=1e-6)
    # Both ranks hold the same parameters after the step (one algorithm across ranks too).
    for a, b in zip(ranks[0]["neuron"], ranks[1]["neuron"], strict=False):
        assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-6)
    # The test can tell the orders apart: clipping before the reduce is another update.
    differs = [not torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-4)
               for a, b in zip(ranks[0]["ddp"], ranks[0]["clip-before-reduce"], strict=False)]
    assert any(differs)
