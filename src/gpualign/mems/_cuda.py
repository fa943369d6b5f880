"""CUDA backend of MEM search: ``kernels/mems.cu``, one thread per query position.

The index (text, suffix array, k-mer table) goes to the device once per call; each batch of
queries is searched in two launches: one counts the MEMs of every query position, the second
writes them at the offsets the counts give, so the output needs no second guess of its size.
"""

from __future__ import annotations

import numpy as np

from ..cuda.loader import get_kernel

KERNEL_FILE = "mems/kernels/mems.cu"
_THREADS = 256


class DeviceIndex:
    """A :class:`~gpualign.mems.MemIndex` on the current CUDA device, copied once."""

    def __init__(self, index):
        import cupy

        self.text = cupy.asarray(index.text)
        self.suffix_array = cupy.asarray(index.suffix_array.astype(np.int32, copy=False))
        self.kmer_rows = cupy.asarray(np.ascontiguousarray(index.kmer_rows, dtype=np.int64))
        self.kmer_size = int(index.kmer_size)


def find_all(codes: np.ndarray, offsets: np.ndarray, index: DeviceIndex, min_length: int):
    """The MEMs of every entry of ``codes``/``offsets`` (a query on one strand), as
    :func:`gpualign.mems._cpu.find_all` returns them: host arrays ``entry, query_pos,
    text_pos, length``, ordered by entry, then query position, then suffix-array row."""
    import cupy

    entries = len(offsets) - 1
    positions = int(offsets[-1]) if entries > 0 else 0
    if positions == 0:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    grid = ((positions + _THREADS - 1) // _THREADS,)
    common = (cupy.asarray(codes), cupy.asarray(offsets), np.int32(entries),
              np.int64(positions), index.text, index.suffix_array,
              np.int64(len(index.suffix_array)), index.kmer_rows, np.int32(index.kmer_size),
              np.int32(min_length))
    counts = cupy.empty(positions, dtype=cupy.int64)
    unused = cupy.zeros(1, dtype=cupy.int64)
    get_kernel(KERNEL_FILE, "mems_at<false>")(
        grid, (_THREADS,), (*common, counts, unused, unused, unused, unused, unused))
    ends = cupy.cumsum(counts)
    total = int(ends[-1])
    found = [cupy.empty(total, dtype=cupy.int64) for _ in range(4)]
    if total:
        get_kernel(KERNEL_FILE, "mems_at<true>")(
            grid, (_THREADS,), (*common, counts, ends - counts, *found))
    return tuple(column.get() for column in found)
