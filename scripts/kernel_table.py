"""GPU time by kernel over a few repetitions of a workload, from torch's profiler.

CUPTI (under torch.profiler) records every kernel and copy of the process, pycudamlx's and
MLX-CUDA's included (CUDA-graph launches too), so the same table works for us and the peer:
where a step's GPU time goes, and whether the GPU or the host bounds it. Needs torch with CUDA.
"""

from __future__ import annotations

import collections
import logging
from typing import Callable

log = logging.getLogger("kernel_table")


def kernel_table(run_once: Callable[[], None], n: int, top: int, unit: str) -> float:
    """Run ``run_once`` ``n`` times under the profiler and log GPU microseconds per ``unit`` by
    kernel name (most first, ``top`` rows); returns the GPU busy microseconds per ``unit``."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.init()
    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
        for _ in range(n):
            run_once()
    totals: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    for ev in prof.events():
        if ev.device_type.name != "CUDA":
            continue
        name = ev.name if len(ev.name) < 70 else ev.name[:67] + "..."
        totals[name] += ev.device_time
        counts[name] += 1
    busy = sum(totals.values()) / max(n, 1)
    log.info("GPU busy %.0f us/%s in %d kernels/copies per %s", busy, unit,
             sum(counts.values()) // max(n, 1), unit)
    for name, us in totals.most_common(top):
        log.info("%9.1f us/%s %6.1f per %s  %s", us / n, unit, counts[name] / n, unit, name)
    return busy
