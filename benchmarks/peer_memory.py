"""Between benchmark rows: give back every implementation's cached GPU memory, so that one row's
pools do not crowd the next (shared by bench.py and every workloads_*.py)."""

from __future__ import annotations

import gc
from typing import Any


def free(impls: dict[str, Any]) -> None:
    """Collect garbage, then empty torch's, CuPy's and MLX-CUDA's caches where present."""
    gc.collect()
    if "torch" in impls:
        impls["torch"].torch.cuda.empty_cache()
    if "cupy" in impls:
        impls["cupy"].cp.get_default_memory_pool().free_all_blocks()
    if "mlx-cuda" in impls:
        impls["mlx-cuda"].mx.clear_cache()
