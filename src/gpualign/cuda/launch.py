"""Launch sizes from the kernel and the device, never from a constant copied into Python.

A kernel states its block size in its ``__launch_bounds__``; CuPy reports it back as the
function's ``max_threads_per_block`` (the bound, or less where the kernel's registers allow
fewer threads). Grids are sized from it, shared memory is checked against the device's limits,
and a kernel whose needs the device cannot meet raises :class:`KernelResourceError` naming the
kernel, what it needs and what the device has.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["DeviceLimits", "KernelResourceError", "block_threads", "device_limits", "grid",
           "reserve_shared", "side_streams"]

#: Dynamic shared memory a block gets without opting in (the CUDA default on every GPU).
DEFAULT_SHARED_BYTES = 48 * 1024

#: The most dynamic shared memory reserved for each kernel in this process, by
#: ``id(kernel)``: the resident blocks of :mod:`gpualign.cuda.report` depend on it.
SHARED_RESERVED: dict[int, int] = {}


class KernelResourceError(RuntimeError):
    """A kernel needs more of a resource (threads, shared memory) than the device has."""


@dataclass(frozen=True)
class DeviceLimits:
    """The limits of one device that launches are checked against."""

    name: str
    max_grid_x: int
    shared_per_block_optin: int


@functools.cache
def device_limits(device: int) -> DeviceLimits:
    """The :class:`DeviceLimits` of CUDA device ``device`` (read once per process)."""
    import cupy

    properties = cupy.cuda.runtime.getDeviceProperties(device)
    name = properties["name"]
    return DeviceLimits(
        name=name.decode() if isinstance(name, bytes) else str(name),
        max_grid_x=int(properties["maxGridSize"][0]),
        shared_per_block_optin=int(properties["sharedMemPerBlockOptin"]),
    )


def _current_device() -> int:
    import cupy

    return cupy.cuda.Device().id


def side_streams(user: str, count: int, non_blocking: bool = False) -> tuple:
    """``count`` CUDA streams of the current device on which the launches of ``user`` (a name:
    users of different names never share a stream) run side by side, the same ones on every
    call of the calling thread (kept per device, user, count and thread, so that searches in
    threads of one process do not wait for each other's launches): CuPy's memory pool
    keeps freed blocks per stream, so fresh streams on every call would find none to reuse and
    allocate anew. They synchronize with the legacy default stream, as ``cupy.cuda.Stream()``
    does, unless ``non_blocking`` (then they wait for nothing queued there, and nothing there
    waits for them); a caller orders its launches on them with events.

    Examples
    --------
    >>> first = side_streams("search", 4)  # doctest: +SKIP
    >>> first is side_streams("search", 4), first is side_streams("paths", 4)  # doctest: +SKIP
    (True, False)
    """
    return _streams(_current_device(), user, max(1, int(count)), threading.get_ident(),
                    bool(non_blocking))


@functools.cache
def _streams(device: int, user: str, count: int, thread: int, non_blocking: bool) -> tuple:
    import cupy

    with cupy.cuda.Device(device):
        return tuple(cupy.cuda.Stream(non_blocking=non_blocking) for _ in range(count))


def block_threads(kernel: Any) -> int:
    """Threads per block of ``kernel``: its launch bounds as the compiled function reports
    them."""
    return int(kernel.max_threads_per_block)


def grid(kernel: Any, items: int, items_per_block: int | None = None,
         ) -> tuple[tuple[int], tuple[int]]:
    """``(grid, block)`` for ``items`` work items, ``items_per_block`` to a block (default: one
    a thread). Raises :class:`KernelResourceError` when the grid is larger than the device
    allows.

    Examples
    --------
    >>> class Kernel:  # a stand-in for a compiled cupy.RawKernel
    ...     max_threads_per_block = 128
    >>> grid(Kernel(), 1000)  # doctest: +SKIP
    ((8,), (128,))
    """
    threads = block_threads(kernel)
    per_block = items_per_block or threads
    blocks = max(1, -(-int(items) // per_block))
    limit = device_limits(_current_device()).max_grid_x
    if blocks > limit:
        raise KernelResourceError(f"kernel {_name(kernel)}: {blocks} blocks of {per_block} items "
                                  f"exceed the device's grid limit of {limit}")
    return (blocks,), (threads,)


def reserve_shared(kernel: Any, shared_bytes: int) -> int:
    """Let ``kernel`` use ``shared_bytes`` of dynamic shared memory per block: opt in above the
    default 48 KiB, or raise :class:`KernelResourceError` when the device has less. Returns
    ``shared_bytes``."""
    shared_bytes = int(shared_bytes)
    # Keyed by identity: the loader keeps every kernel it hands out, so an id is never reused.
    SHARED_RESERVED[id(kernel)] = max(shared_bytes, SHARED_RESERVED.get(id(kernel), 0))
    if shared_bytes <= DEFAULT_SHARED_BYTES:
        return shared_bytes
    limits = device_limits(_current_device())
    available = limits.shared_per_block_optin - int(kernel.shared_size_bytes)
    if shared_bytes > available:
        raise KernelResourceError(
            f"kernel {_name(kernel)} needs {shared_bytes} bytes of shared memory per block; "
            f"{limits.name} offers {available}")
    if kernel.max_dynamic_shared_size_bytes < shared_bytes:
        kernel.max_dynamic_shared_size_bytes = shared_bytes
    return shared_bytes


def _name(kernel: Any) -> str:
    return str(getattr(kernel, "name", kernel))
