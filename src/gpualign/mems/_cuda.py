"""CUDA backend of MEM search: ``kernels/mems.cu``, one thread per query position and strand.

The text goes to the device once per call and each page of the index when first searched (it
stays there while it fits in ``config.GPU_MEMORY_FRACTION`` of the device's free memory, else
it is copied again for each batch). Each batch of queries is searched in two launches per page:
one counts the MEMs of every query position, the second writes them at the offsets the counts
give, so the output needs no second guess of its size and comes out in order.
"""

from __future__ import annotations

import numpy as np

from .. import config
from ..cuda.loader import get_kernel

KERNEL_FILE = "mems/kernels/mems.cu"
_THREADS = 256


class DeviceIndex:
    """A :class:`~gpualign.mems.MemIndex` on the current CUDA device."""

    def __init__(self, index):
        import cupy

        self.index = index
        self.text = cupy.asarray(index.text)
        free, _ = cupy.cuda.runtime.memGetInfo()
        page_bytes = sum(page.suffix_array.nbytes + page.kmer_rows.nbytes
                         for page in index.pages)
        self.resident = page_bytes <= config.GPU_MEMORY_FRACTION * free
        self._pages: dict[int, tuple] = {}
        for name in ("mems_at<false>", "mems_at<true>"):  # compiled or loaded now, off the
            get_kernel(KERNEL_FILE, name)                  # path of the first batch

    def page(self, number: int) -> tuple:
        """``(suffix_array, kmer_rows)`` of page ``number`` on the device."""
        import cupy

        if number in self._pages:
            return self._pages[number]
        page = self.index.pages[number]
        arrays = (cupy.asarray(page.suffix_array), cupy.asarray(page.kmer_rows))
        if self.resident:
            self._pages[number] = arrays
        return arrays


def find_all(codes: np.ndarray, offsets: np.ndarray, strands: int, first_reverse: bool,
             index: DeviceIndex, page_number: int, min_length: int):
    """The MEMs of every query of ``codes``/``offsets`` against one page, as
    :func:`gpualign.mems._cpu.find_all` returns them: host arrays ``entry, query_pos,
    text_pos, length``, ordered by entry, then query position, then text position."""
    import cupy

    queries = len(offsets) - 1
    positions = strands * (int(offsets[-1]) if queries > 0 else 0)
    if positions == 0:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    suffix_array, kmer_rows = index.page(page_number)
    grid = ((positions + _THREADS - 1) // _THREADS,)
    common = (cupy.asarray(codes), cupy.asarray(offsets), np.int32(queries), np.int32(strands),
              np.int32(first_reverse), np.int64(positions), index.text,
              np.int64(index.index.pages[page_number].start), suffix_array,
              np.int64(len(suffix_array)), kmer_rows, np.int32(index.index.kmer_size),
              np.int32(min_length))
    counts = cupy.empty(positions, dtype=cupy.int32)
    unused = cupy.zeros(1, dtype=cupy.int64)
    get_kernel(KERNEL_FILE, "mems_at<false>")(
        grid, (_THREADS,), (*common, counts, unused, unused, unused, unused, unused))
    ends = cupy.cumsum(counts, dtype=cupy.int64)
    total = int(ends[-1])
    found = [cupy.empty(total, dtype=cupy.int64) for _ in range(4)]
    if total:
        get_kernel(KERNEL_FILE, "mems_at<true>")(
            grid, (_THREADS,), (*common, counts, ends - counts, *found))
    return tuple(column.get() for column in found)
