"""What each kernel takes of a streaming multiprocessor (SM), and how many of its blocks fit.

A kernel's registers, static shared memory and local memory come from the compiled function
(CuPy's ``num_regs``, ``shared_size_bytes``, ``local_size_bytes``), its block size from its
launch bounds as :func:`gpualign.cuda.launch.block_threads` reads them, and its dynamic shared
memory from what :func:`gpualign.cuda.launch.reserve_shared` reserved for it in this process.
:func:`occupancy` turns them into resident blocks per SM and theoretical occupancy the way
NVIDIA's occupancy calculator does (``cuda_occupancy.h``): the least of the limits set by the
SM's warp slots, its block slots, its registers (allocated per warp in units of 256, in each of
the SM's four sub-partitions) and its shared memory (allocated per block in units of 128 bytes,
plus what the system reserves per block: 1 KiB from compute capability 8.0 on), the SM's
shared memory being taken at its largest carve-out.

Examples
--------
>>> sm90 = DeviceResources("H100", 9, 0, sms=132, max_threads_per_sm=2048, max_blocks_per_sm=32,
...                        registers_per_sm=65536, registers_per_block=65536,
...                        shared_per_sm=233472, shared_per_block_optin=232448,
...                        reserved_shared_per_block=1024)
>>> fit = occupancy(KernelResources(registers=64, block_threads=256), sm90)
>>> fit.blocks_per_sm, fit.occupancy, fit.limited_by
(4, 0.5, ('registers',))
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from . import launch, loader

__all__ = ["DeviceResources", "KernelReport", "KernelResources", "Occupancy", "device_resources",
           "kernel_report", "kernel_resources", "occupancy", "used_since"]

#: Registers are allocated to a warp in units of this many (every architecture from sm_50 on).
REGISTER_ALLOCATION_UNIT = 256

#: Registers a thread may have at most (from sm_50 on).
MAX_REGISTERS_PER_THREAD = 255


@dataclass(frozen=True)
class DeviceResources:
    """What one SM of a device offers (``cudaDeviceProp``'s fields, per SM)."""

    name: str
    major: int
    minor: int
    sms: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    shared_per_sm: int
    shared_per_block_optin: int
    reserved_shared_per_block: int
    warp_size: int = 32

    @property
    def sub_partitions(self) -> int:
        """Warp schedulers of an SM, each with its own quarter (half on sm_60) of the
        registers."""
        return 2 if (self.major, self.minor) == (6, 0) else 4

    @property
    def shared_allocation_unit(self) -> int:
        """Bytes in which a block's shared memory is allocated."""
        return 128 if self.major >= 7 else 256


@dataclass(frozen=True)
class KernelResources:
    """What one block of a kernel needs."""

    registers: int
    block_threads: int
    static_shared: int = 0
    dynamic_shared: int = 0
    local_bytes: int = 0

    @property
    def shared(self) -> int:
        """Shared memory of a block, static and dynamic (without the system's reserve)."""
        return self.static_shared + self.dynamic_shared


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks of a kernel per SM and the share of the SM's warp slots they fill."""

    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float
    limited_by: tuple[str, ...]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(kernel: KernelResources, device: DeviceResources) -> Occupancy:
    """Resident blocks per SM and theoretical occupancy of ``kernel`` on ``device``.

    Parameters
    ----------
    kernel : KernelResources
        Registers per thread, threads per block and shared memory per block.
    device : DeviceResources
        The SM's limits.

    Returns
    -------
    Occupancy
        ``limited_by`` names every limit that allows no more blocks than the result
        (``"warps"``, ``"blocks"``, ``"registers"``, ``"shared memory"``); a kernel that does
        not fit at all has 0 blocks.

    Examples
    --------
    >>> sm90 = DeviceResources("H100", 9, 0, 132, 2048, 32, 65536, 65536, 233472, 232448, 1024)
    >>> occupancy(KernelResources(registers=40, block_threads=128, dynamic_shared=48 * 1024),
    ...           sm90)
    Occupancy(blocks_per_sm=4, warps_per_sm=16, occupancy=0.25, limited_by=('shared memory',))
    """
    warps_per_block = -(-kernel.block_threads // device.warp_size)
    max_warps = device.max_threads_per_sm // device.warp_size
    limits = {"warps": max_warps // warps_per_block, "blocks": device.max_blocks_per_sm}

    registers_per_warp = _round_up(kernel.registers * device.warp_size, REGISTER_ALLOCATION_UNIT)
    # The hardware checks a block's registers as if its warps filled every sub-partition alike.
    assumed = registers_per_warp * _round_up(warps_per_block, device.sub_partitions)
    if (kernel.registers > MAX_REGISTERS_PER_THREAD or assumed > device.registers_per_block
            or registers_per_warp * warps_per_block > device.registers_per_block):
        limits["registers"] = 0
    elif registers_per_warp:
        per_partition = device.registers_per_sm // device.sub_partitions // registers_per_warp
        limits["registers"] = per_partition * device.sub_partitions // warps_per_block

    reserved = device.reserved_shared_per_block
    shared = _round_up(kernel.shared + reserved, device.shared_allocation_unit)
    if shared > device.shared_per_block_optin + reserved:
        limits["shared memory"] = 0
    elif shared:
        limits["shared memory"] = device.shared_per_sm // shared

    blocks = min(limits.values())
    warps = blocks * warps_per_block
    return Occupancy(blocks, warps, warps / max_warps,
                     tuple(name for name, limit in limits.items() if limit == blocks))


@functools.cache
def device_resources(device: int) -> DeviceResources:
    """The :class:`DeviceResources` of CUDA device ``device`` (read once per process).

    Examples
    --------
    >>> device_resources(0).max_threads_per_sm  # doctest: +SKIP
    2048
    """
    import cupy

    properties = cupy.cuda.runtime.getDeviceProperties(device)
    return DeviceResources(
        name=launch.device_limits(device).name,
        major=int(properties["major"]),
        minor=int(properties["minor"]),
        sms=int(properties["multiProcessorCount"]),
        max_threads_per_sm=int(properties["maxThreadsPerMultiProcessor"]),
        max_blocks_per_sm=int(properties["maxBlocksPerMultiProcessor"]),
        registers_per_sm=int(properties["regsPerMultiprocessor"]),
        registers_per_block=int(properties["regsPerBlock"]),
        shared_per_sm=int(properties["sharedMemPerMultiprocessor"]),
        shared_per_block_optin=int(properties["sharedMemPerBlockOptin"]),
        reserved_shared_per_block=int(properties["reservedSharedMemPerBlock"]),
        warp_size=int(properties["warpSize"]),
    )


def kernel_resources(kernel: Any) -> KernelResources:
    """The :class:`KernelResources` of a compiled kernel (a CuPy function), with the dynamic
    shared memory reserved for it so far in this process.

    Examples
    --------
    >>> kernel = loader.get_kernel("edit/kernels/path.cu", "trace_paths")  # doctest: +SKIP
    >>> kernel_resources(kernel).block_threads  # doctest: +SKIP
    128
    """
    return KernelResources(
        registers=int(kernel.num_regs),
        block_threads=launch.block_threads(kernel),
        static_shared=int(kernel.shared_size_bytes),
        dynamic_shared=launch.SHARED_RESERVED.get(id(kernel), 0),
        local_bytes=int(kernel.local_size_bytes),
    )


@dataclass(frozen=True)
class KernelReport:
    """One kernel instance: where it comes from, what a block takes and how many fit an SM."""

    path: str
    name: str
    options: tuple[str, ...]
    resources: KernelResources
    occupancy: Occupancy


def kernel_report(path: str, name: str, options: tuple[str, ...] = ()) -> KernelReport:
    """The :class:`KernelReport` of kernel ``name`` of package file ``path`` on the current
    device (compiled if it is not yet).

    Examples
    --------
    >>> kernel_report("edit/kernels/path.cu", "trace_paths").occupancy.blocks_per_sm
    ... # doctest: +SKIP
    16
    """
    import cupy

    kernel = loader.get_kernel(path, name, options)
    resources = kernel_resources(kernel)
    fit = occupancy(resources, device_resources(cupy.cuda.Device().id))
    return KernelReport(path, name, tuple(options), resources, fit)


def used_since(before: dict[tuple[str, str, tuple[str, ...]], int]
               ) -> list[tuple[str, str, tuple[str, ...]]]:
    """The kernels asked for since ``before``, a copy of :data:`gpualign.cuda.loader.REQUESTS`
    taken earlier, in the order of their first use.

    Examples
    --------
    >>> before = dict(loader.REQUESTS)
    >>> used_since(before)
    []
    """
    return [key for key, count in loader.REQUESTS.items() if count > before.get(key, 0)]

