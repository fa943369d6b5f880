"""How much device memory one batch may use."""

from __future__ import annotations

from .. import config


def batch_budget() -> int:
    """Bytes one batch may allocate: a fraction of the free memory, capped by the config."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    # Memory CuPy's pool holds but does not use is free for us too.
    pool = cupy.get_default_memory_pool()
    free += pool.total_bytes() - pool.used_bytes()
    budget = int(free * config.GPU_MEMORY_FRACTION)
    if config.GPU_BATCH_BYTES is not None:
        budget = min(budget, int(config.GPU_BATCH_BYTES))
    return max(budget, 1)
