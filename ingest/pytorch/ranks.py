"""Many ranks, one entry: each rank's identity and timings reach rank 0, also when a rank dies.

Each rank writes its summary to `ranks/rank-<N>.json` in the run folder, first at start and again at the
end, so a rank that dies still leaves what it knew. At the end rank 0 gathers the summaries over a
separate gloo group with a time limit (the training's own group may be NCCL, busy or broken); if the
collective fails, because a rank is gone, rank 0 reads the files instead. The recorder builds the same
`ranks` section from the files when rank 0 itself never got that far.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from ingest.rank_summaries import read_summaries, write_summary


def identity() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torch.distributed when it is set up, else from torchrun's variables."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def gather(summary: dict[str, Any], folder: Path, timeout_s: float) -> list[dict[str, Any]] | None:
    """Every rank's summary on rank 0 (None on other ranks); from the files when the collective fails."""
    import torch.distributed as dist

    write_summary(folder, summary)
    rank, world, _ = identity()
    if world == 1:
        return [summary]
    # A failing rank takes no part in collectives: its peers may be dead, and a collective would wait for them.
    if summary.get("status") == "completed" and dist.is_available() and dist.is_initialized():
        try:
            group = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout_s))
            gathered: list[Any] = [None] * world if rank == 0 else []
            dist.gather_object(summary, gathered if rank == 0 else None, dst=0, group=group)
            if rank == 0:
                return [item for item in gathered if item is not None]
            return None
        except Exception:  # a rank died or the store is gone: the files hold what each rank wrote
            pass
    return read_summaries(folder) if rank == 0 else None
