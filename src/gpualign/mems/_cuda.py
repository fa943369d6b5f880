"""CUDA backend of MEM search: ``kernels/mems.cu``, one thread per query position and strand.

The text goes to the device once per call and each page of the index when first searched (it
stays there while it fits in ``config.GPU_MEMORY_FRACTION`` of the device's free memory, else
it is copied again for each batch). Each batch of queries is searched in two launches per page:
one counts the MEMs of every query position, the second writes them at the offsets the counts
give, so the output needs no second guess of its size and comes out in order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cuda.launch import grid
from ..cuda.loader import get_kernel
from ..cuda.memory import fits_resident

__all__ = ["DeviceIndex", "PageBuilder", "find_all", "prepare"]

KERNEL_FILE = "mems/kernels/mems.cu"
INDEX_KERNEL_FILE = "mems/kernels/index.cu"
#: Device bytes per suffix while a page is sorted: the int64 rank, next rank, key, sorted key
#: and order arrays, and the sort's own buffers.
_SORT_BYTES_PER_SUFFIX = 64


class PageBuilder:
    """Suffix arrays and k-mer tables of the pages of ``text``, built on the GPU, as
    :class:`gpualign.mems._cpu.PageBuilder` builds them on the CPU (the same arrays).

    The suffixes are sorted by prefix doubling: each round ranks every suffix by its first
    ``2h`` symbols from the ranks of its first ``h`` and of the ``h`` after them, with one radix
    sort of 64-bit keys, until all ranks differ; that takes log2 of the longest repeat rounds.
    A page whose sort does not fit in ``config.GPU_MEMORY_FRACTION`` of the free memory is
    sorted on the CPU by libdivsufsort.
    """

    def __init__(self, text: np.ndarray, k: int):
        import cupy

        self.text, self.k = text, k
        self.device_text = cupy.asarray(text)
        self.cpu: Any = None  # the CPU builder of pages too large (its k-mer codes made once)

    def __call__(self, start: int, end: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        import cupy

        if not fits_resident(_SORT_BYTES_PER_SUFFIX * (stop - start)):
            if self.cpu is None:
                from ._cpu import PageBuilder as CpuPageBuilder

                self.cpu = CpuPageBuilder(self.text, self.k)
            return self.cpu(start, end, stop)
        order = _sorted_suffixes(self.device_text[start:stop])
        if stop > end:
            order = order[order < end - start]
        suffix_array = order.astype(cupy.int32)
        rows = len(suffix_array)
        codes = cupy.empty(rows, dtype=cupy.int64)
        kernel = get_kernel(INDEX_KERNEL_FILE, "kmer_codes_at_rows")
        kernel(*grid(kernel, rows), (self.device_text, np.int64(len(self.text)),
                                     np.int64(start), suffix_array, np.int64(rows),
                                     np.int32(self.k), codes))
        kmer_rows = cupy.zeros((4 ** self.k, 2), dtype=cupy.int64)
        kernel = get_kernel(INDEX_KERNEL_FILE, "kmer_bounds")
        kernel(*grid(kernel, rows), (codes, np.int64(rows), kmer_rows))
        return suffix_array.get(), kmer_rows.get()


def _sorted_suffixes(symbols):
    """Start positions of the suffixes of ``symbols`` (a CuPy ``uint8`` array) in
    lexicographic order, a suffix before the longer ones it begins (``int64``)."""
    import cupy

    length = len(symbols)
    if length < 2:
        return cupy.zeros(length, dtype=cupy.int64)
    rank = symbols.astype(cupy.int64)
    base = max(length, 256) + 1  # above every rank + 1, so keys of distinct pairs differ
    span = 1
    while True:
        following = cupy.zeros(length, dtype=cupy.int64)  # 0: the suffix ends first
        if span < length:
            following[:length - span] = rank[span:] + 1
        keys = rank * base + following
        order = cupy.argsort(keys)
        keys = keys[order]
        sorted_rank = cupy.empty(length, dtype=cupy.int64)
        sorted_rank[0] = 0
        sorted_rank[1:] = cupy.cumsum(keys[1:] != keys[:-1])
        rank[order] = sorted_rank
        if int(sorted_rank[-1]) == length - 1:
            return order
        span *= 2


class DeviceIndex:
    """A :class:`~gpualign.mems.MemIndex` on the current CUDA device."""

    def __init__(self, index: Any):
        import cupy

        self.index = index
        self.text = cupy.asarray(index.text)
        self.resident = fits_resident(sum(page.suffix_array.nbytes + page.kmer_rows.nbytes
                                          for page in index.pages))
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


def prepare(index: Any) -> DeviceIndex:
    """The reference as :func:`find_all` searches it: ``index`` on the current device."""
    return DeviceIndex(index)


def find_all(codes: np.ndarray, offsets: np.ndarray, strands: int, first_reverse: bool,
             index: DeviceIndex, page_number: int, min_length: int,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The MEMs of every query of ``codes``/``offsets`` against page ``page_number`` of
    ``index`` (from :func:`prepare`), as :func:`gpualign.mems._cpu.find_all` returns them:
    host arrays ``entry, query_pos, text_pos, length``, ordered by entry, then query
    position, then text position."""
    import cupy

    queries = len(offsets) - 1
    positions = strands * (int(offsets[-1]) if queries > 0 else 0)
    if positions == 0:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    suffix_array, kmer_rows = index.page(page_number)
    common = (cupy.asarray(codes), cupy.asarray(offsets), np.int32(queries), np.int32(strands),
              np.int32(first_reverse), np.int64(positions), index.text,
              np.int64(index.index.pages[page_number].start), suffix_array,
              np.int64(len(suffix_array)), kmer_rows, np.int32(index.index.kmer_size),
              np.int32(min_length))
    counts = cupy.empty(positions, dtype=cupy.int32)
    unused = cupy.zeros(1, dtype=cupy.int64)
    count = get_kernel(KERNEL_FILE, "mems_at<false>")
    count(*grid(count, positions), (*common, counts, unused, unused, unused, unused, unused))
    ends = cupy.cumsum(counts, dtype=cupy.int64)
    total = int(ends[-1])
    found = [cupy.empty(total, dtype=cupy.int64) for _ in range(4)]
    if total:
        emit = get_kernel(KERNEL_FILE, "mems_at<true>")
        emit(*grid(emit, positions), (*common, counts, ends - counts, *found))
    return tuple(column.get() for column in found)
