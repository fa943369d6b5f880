"""Host memory the GPU reads and writes fast: page-locked ("pinned") and mapped buffers.

Copies between the GPU and page-locked memory run at full bus speed and can overlap kernels;
with unified addressing a kernel can even write page-locked memory directly. Where the system
refuses to pin (limits on locked memory), every function here falls back to ordinary memory,
so callers need no second path.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

__all__ = ["HostBuffers", "PinnedStaging", "device_constant", "is_page_locked", "mapped",
           "maps_host_memory", "pinned_copy", "pinned_empty", "thread_buffers",
           "upload_together"]


#: Per thread: the page-locked memory of :func:`thread_buffers`, and the event that ends the
#: last copy from each buffer of :func:`upload_together` (by name).
_TOGETHER = threading.local()


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
        self._held: dict[str, tuple[np.ndarray, bool]] = {}

    def get(self, name: str, size: int, dtype: Any) -> np.ndarray:
        """A page-locked host array of ``size`` elements of ``dtype`` under ``name`` (its
        contents are whatever the last user left; ordinary memory where the system refuses
        to pin, see :meth:`pinned`)."""
        held = self._held.get(name)
        if held is None or held[0].size < size or held[0].dtype != np.dtype(dtype):
            held = pinned_empty(max(size, 1), dtype)
            self._held[name] = held
        return held[0][:size]

    def pinned(self, name: str) -> bool:
        """Whether the array under ``name`` is page-locked (a kernel may then write it through
        :func:`mapped`)."""
        return name in self._held and self._held[name][1]


def thread_buffers() -> HostBuffers:
    """The calling thread's :class:`HostBuffers`, kept for the life of the process: locking
    memory costs far more than a small call's work, so the calls of a thread reuse theirs (a
    thread of its own: no other thread writes them meanwhile)."""
    held = getattr(_TOGETHER, "buffers", None)
    if held is None:
        held = _TOGETHER.buffers = HostBuffers()
    return held


class PinnedStaging:
    """Copies of ordinary host memory to the GPU, queued on one stream through two page-locked
    pieces used in turn: the host stages one piece while the other is copied, so the copies run
    at full bus speed and overlap kernels with a fixed amount of locked memory, however much
    data goes through. Keep it (and its pieces) until the stream has done its copies.

    Examples
    --------
    >>> import cupy  # doctest: +SKIP
    >>> staging = PinnedStaging(cupy.cuda.Stream(non_blocking=True), 4)  # doctest: +SKIP
    >>> on_device = cupy.empty(10, dtype=cupy.uint8)  # doctest: +SKIP
    >>> staging.copy(on_device, np.arange(10, dtype=np.uint8))  # doctest: +SKIP
    >>> staging.stream.synchronize()  # doctest: +SKIP
    >>> on_device.tolist()  # doctest: +SKIP
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """

    def __init__(self, stream: Any, piece_bytes: int) -> None:
        self.stream = stream
        self._pieces = [pinned_empty(max(piece_bytes, 1), np.uint8)[0] for _ in range(2)]
        #: The event that ends each piece's last copy: the host may overwrite it after.
        self._copied: list[Any] = [None, None]
        self._turn = 0

    def copy(self, destination: Any, source: np.ndarray) -> None:
        """Queue the copy of the 1-D uint8 ``source`` into the uint8 device array
        ``destination`` of the same length on :attr:`stream`, after the work queued there
        before. Returns once all of ``source`` is staged (the caller may then change it), the
        last pieces' copies still queued."""
        step = len(self._pieces[0])
        for lo in range(0, len(source), step):
            piece, copied = self._pieces[self._turn], self._copied[self._turn]
            if copied is not None:
                copied.synchronize()
            part = source[lo:lo + step]
            piece[:len(part)] = part
            destination[lo:lo + len(part)].set(piece[:len(part)], stream=self.stream)
            self._copied[self._turn] = self.stream.record()
            self._turn = 1 - self._turn


def upload_together(arrays: list[np.ndarray], stream: Any = None) -> list[Any]:
    """Copy small host arrays to the current device with one copy, queued on ``stream``
    (default: the current stream): packed into a page-locked buffer of the calling thread
    (kept and reused), so the copy is queued at once (on an H100, a small copy from ordinary
    memory took up to 190 us while kernels ran, 10 to 20 us from page-locked memory). Returns
    CuPy arrays of the same shapes and dtypes, views of one allocation.

    Examples
    --------
    >>> index, lengths = upload_together([np.arange(4), np.ones(4, np.int32)])  # doctest: +SKIP
    >>> index.tolist(), lengths.dtype  # doctest: +SKIP
    ([0, 1, 2, 3], dtype('int32'))
    """
    import cupy

    stream = cupy.cuda.get_current_stream() if stream is None else stream
    arrays = [np.ascontiguousarray(array) for array in arrays]
    starts = [0]
    for array in arrays:  # each array starts 16-byte aligned
        starts.append(starts[-1] + -(-array.nbytes // 16) * 16)
    total = starts[-1]
    name = f"upload together {cupy.cuda.Device().id}"
    copied = getattr(_TOGETHER, "copied", None)
    if copied is None:
        copied = _TOGETHER.copied = {}
    if name in copied:
        copied[name].synchronize()  # the buffer's last copy has read it
    buffer = thread_buffers().get(name, total, np.uint8)
    for array, start in zip(arrays, starts, strict=False):
        buffer[start:start + array.nbytes] = array.reshape(-1).view(np.uint8)
    on_device = cupy.empty(total, dtype=cupy.uint8)
    on_device.set(buffer, stream=stream)
    copied[name] = stream.record()
    return [cupy.ndarray(array.shape, array.dtype, on_device.data + start)
            for array, start in zip(arrays, starts, strict=False)]


def device_constant(array: np.ndarray) -> Any:
    """A read-only copy of the small host ``array`` (a substitution table) on the current
    device, flattened: made on the first call with those values and kept, so that calls with
    the same table do not upload it again (about 0.15 ms a copy from ordinary memory).

    Examples
    --------
    >>> table = device_constant(np.array([[2, -3], [-3, 2]], dtype=np.int16))  # doctest: +SKIP
    >>> table.tolist()  # doctest: +SKIP
    [2, -3, -3, 2]
    """
    import cupy

    array = np.ascontiguousarray(array)
    return _device_constant(cupy.cuda.Device().id, array.tobytes(), array.dtype.str)


@functools.lru_cache(maxsize=32)
def _device_constant(device: int, data: bytes, dtype: str) -> Any:
    """:func:`device_constant` of these bytes on ``device``."""
    import cupy

    with cupy.cuda.Device(device):
        copy = cupy.asarray(np.frombuffer(data, dtype=dtype))
        # Complete before any caller's stream may read it (the copy from pageable memory
        # returns early, and the next caller may be another thread on another stream).
        cupy.cuda.get_current_stream().synchronize()
        return copy
