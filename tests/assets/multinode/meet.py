"""Two hosts meet: each rank contributes rank+1 to an all-reduce and writes what it saw."""
import json
import os

import torch
import torch.distributed as dist

from bakeoff_runtime import Runtime

with Runtime.from_environment() as rt:
    total = torch.tensor([float(rt.rank + 1)])
    dist.all_reduce(total)
    seen = {"rank": rt.rank, "world_size": rt.world_size, "sum": float(total.item()),
            "master": os.environ.get("MASTER_ADDR"), "node_rank": os.environ.get("GROUP_RANK")}
    rt.env.output_data_dir.mkdir(parents=True, exist_ok=True)
    (rt.env.output_data_dir / f"meet-rank{rt.rank}.json").write_text(json.dumps(seen))
    rt.log_validation(0, val_loss=0.0)

# After the block: the Runtime left the group it joined (not to interpreter exit, where gloo can abort).
(rt.env.output_data_dir / f"left-rank{rt.rank}.json").write_text(
    json.dumps({"initialized": dist.is_initialized()}))
