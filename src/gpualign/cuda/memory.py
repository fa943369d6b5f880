"""Device memory, the one budget: how much one batch may use, whether data may stay resident,
chunks of pairs whose sequences fit, and launches that split when they run out of memory. No
other module asks the device how much memory is free."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import config


def free_bytes() -> int:
    """Free memory of the current device, counting what CuPy's pool holds but does not use."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    pool = cupy.get_default_memory_pool()
    return int(free + pool.total_bytes() - pool.used_bytes())


def batch_budget() -> int:
    """Bytes one batch may allocate: ``config.GPU_MEMORY_FRACTION`` of the free memory, capped
    by ``config.GPU_BATCH_BYTES``."""
    budget = int(free_bytes() * config.GPU_MEMORY_FRACTION)
    if config.GPU_BATCH_BYTES is not None:
        budget = min(budget, int(config.GPU_BATCH_BYTES))
    return max(budget, 1)


def fits_resident(nbytes: int) -> bool:
    """Whether data of ``nbytes`` may stay on the device for a whole call (an index, a page's
    sort): at most ``config.GPU_MEMORY_FRACTION`` of the free memory. Unlike
    :func:`batch_budget` this is not capped by ``config.GPU_BATCH_BYTES``, which bounds
    batches."""
    return nbytes <= config.GPU_MEMORY_FRACTION * free_bytes()


def device_chunks(qset, tset, q_index, t_index, step):
    """Yield ``(slice, device sequences, local q_index, local t_index)`` chunks of at most
    ``step`` pairs: the whole sets on the device when they fit (local indices are then the
    same object when ``q_index is t_index``), else each chunk's own gathered sequences; nothing
    (and nothing copied) for no pairs."""
    count = len(q_index)
    if count == 0:
        return
    step = max(1, step)
    budget = batch_budget()
    # A set already on the device (a search's database) costs nothing more.
    resident_bytes = sum(s.codes.nbytes + s.offsets.nbytes for s in (qset, tset)
                         if not s.on_device())
    if resident_bytes <= budget // 2:
        sequences = (*qset.to_device(), *tset.to_device())
        for lo in range(0, count, step):
            part = slice(lo, min(count, lo + step))
            q_part = q_index[part]
            # One array for both sides when the caller passed one (queries[i] with targets[i]):
            # the consumer may then copy it to the device once.
            yield part, sequences, q_part, q_part if t_index is q_index else t_index[part]
        return
    # Too large to keep: cut chunks so that each one's sequences fill at most half the budget.
    residues = qset.lengths[q_index] + tset.lengths[t_index] + 32
    lo = 0
    while lo < count:
        hi = min(count, lo + step)
        fits = int(np.searchsorted(np.cumsum(residues[lo:hi]), budget // 2, side="right"))
        part = slice(lo, lo + max(1, fits))
        q_unique, q_local = np.unique(q_index[part], return_inverse=True)
        t_unique, t_local = np.unique(t_index[part], return_inverse=True)
        sequences = (*qset.take(q_unique).to_device(), *tset.take(t_unique).to_device())
        yield part, sequences, q_local, t_local
        lo = part.stop


def launch_split(launch, members, per_pair_bytes: int, budget: int | None = None):
    """Run ``launch(part)`` over ``members`` in parts that fit the memory budget (``budget``:
    :func:`batch_budget`, where the caller has it); a part that still runs out of memory is
    halved and retried."""
    import cupy

    step = max(1, (batch_budget() if budget is None else budget) // per_pair_bytes)
    pending = [members[lo:lo + step] for lo in range(0, len(members), step)]
    while pending:
        part = pending.pop(0)
        try:
            launch(part)
        except cupy.cuda.memory.OutOfMemoryError:
            cupy.get_default_memory_pool().free_all_blocks()
            if len(part) == 1:
                raise
            half = len(part) // 2
            pending[:0] = [part[:half], part[half:]]


def carved(*shapes: tuple[Any, Any]) -> list:
    """Uninitialized CuPy arrays of the ``(shape, dtype)`` pairs ``shapes``, carved out of one
    allocation (each 256-byte aligned): a batch's buffers at the cost of one request to the
    memory pool, and one OutOfMemoryError for all of them.

    Examples
    --------
    >>> codes, counts = carved((100, "uint32"), ((3, 5), "int32"))  # doctest: +SKIP
    >>> codes.shape, counts.shape  # doctest: +SKIP
    ((100,), (3, 5))
    """
    import cupy

    sizes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
             for shape, dtype in shapes]
    starts = [0]
    for size in sizes:
        starts.append(starts[-1] + -(-size // 256) * 256)
    memory = cupy.cuda.alloc(max(starts[-1], 1))
    return [cupy.ndarray(shape, dtype, memory + start)
            for (shape, dtype), start in zip(shapes, starts, strict=False)]
