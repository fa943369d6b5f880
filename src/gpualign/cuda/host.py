"""Host memory the GPU reads and writes fast: page-locked ("pinned") and mapped buffers.

Copies between the GPU and page-locked memory run at full bus speed and can overlap kernels;
with unified addressing a kernel can even write page-locked memory directly. Where the system
refuses to pin (limits on locked memory), every function here falls back to ordinary memory,
so callers need no second path.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["HostBuffers", "is_page_locked", "mapped", "maps_host_memory", "pinned_copy",
           "pinned_empty"]


def pinned_empty(count: int, dtype: Any) -> tuple[np.ndarray, bool]:
    """An uninitialized host array of ``count`` elements, page-locked where the system lets
    CuPy pin it, else ordinary memory; and whether it is page-locked."""
    import cupy
    import cupyx

    try:
        return cupyx.empty_pinned(count, dtype=dtype), True
    except (cupy.cuda.runtime.CUDARuntimeError, MemoryError):
        return np.empty(count, dtype=dtype), False


def pinned_copy(array: np.ndarray) -> np.ndarray:
    """A copy of the 1-D ``array`` in page-locked memory (ordinary memory where pinning is
    refused)."""
    copy = pinned_empty(max(len(array), 1), array.dtype)[0][:len(array)]
    copy[:] = array
    return copy


@functools.cache
def maps_host_memory(device: int) -> bool:
    """Whether kernels on ``device`` can use host pointers of page-locked memory as they are."""
    import cupy

    properties = cupy.cuda.runtime.getDeviceProperties(device)
    return bool(properties["unifiedAddressing"] and properties["canMapHostMemory"])


def mapped(host: np.ndarray) -> Any:
    """A device array over the page-locked host array ``host`` (from :func:`pinned_empty`):
    with unified addressing, memory from ``cudaHostAlloc`` has the same address on the device,
    so kernels write it over the bus without a copy. Check :func:`maps_host_memory` first."""
    import cupy

    memory = cupy.cuda.UnownedMemory(host.ctypes.data, host.nbytes, host,
                                     cupy.cuda.Device().id)
    return cupy.ndarray(host.shape, host.dtype, cupy.cuda.MemoryPointer(memory, 0))


def is_page_locked(array: np.ndarray) -> bool:
    """Whether the whole of ``array`` lies in page-locked host memory (a view of a set made by
    :meth:`~gpualign.SequenceSet.pin_memory`, say): then it is copied to the GPU directly.

    Locking memory per call instead (``cudaHostRegister``) costs more than a staging copy
    (benchmarks/results/tuning.md)."""
    import cupy

    if not array.nbytes:
        return False
    runtime = cupy.cuda.runtime
    host = getattr(runtime, "memoryTypeHost", 1)  # cudaMemoryTypeHost
    try:
        return all(runtime.pointerGetAttributes(address).type == host
                   for address in (array.ctypes.data, array.ctypes.data + array.nbytes - 1))
    except runtime.CUDARuntimeError:  # older drivers reject pointers they do not know
        return False


class HostBuffers:
    """Named page-locked host arrays that grow to the largest request and are then reused, so
    that a steady stream of batches allocates nothing.

    Examples
    --------
    >>> buffers = HostBuffers()  # doctest: +SKIP
    >>> buffers.get("codes", 1000, np.uint8).shape  # doctest: +SKIP
    (1000,)
    """

    def __init__(self) -> None:
        self._held: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int, dtype: Any) -> np.ndarray:
        """A page-locked host array of ``size`` elements of ``dtype`` under ``name`` (its
        contents are whatever the last user left)."""
        held = self._held.get(name)
        if held is None or held.size < size or held.dtype != np.dtype(dtype):
            held = pinned_empty(max(size, 1), dtype)[0]
            self._held[name] = held
        return held[:size]
