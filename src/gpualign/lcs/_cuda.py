"""CUDA backend of LCS: one thread per subject, the query's bit-vector tiles in registers.

Batches of subjects flow through a few slots per GPU (:func:`plan`), each with its own
CUDA stream and page-locked host buffers. While the GPU works on one slot's batch, the host
copies the next batch into another slot's page-locked buffer (several threads; or not at all
when the subjects already lie in page-locked memory) and queues its host-to-device copy,
kernels and device-to-host copy; the lengths of a finished batch go to the caller's
``consume`` (top-N selection, LCS strings on CPU threads) while the GPU runs on. With several
devices, one such pipeline per GPU pulls batches from the shared source.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget
from ..sequences import DEVICE_PADDING, Alphabet, SequenceSet
from ..streaming import Batch

KERNEL_FILE = "lcs/kernels/lcs.cu"
_TILES_ALLOWED = (1, 2, 4, 8, 16, 32, 64)
_REMAP_BYTES = 512
_DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory a block gets without opting in


@dataclass
class _Query:
    """A query's match table, laid out for the kernel, on one device."""

    length: int
    tile: int
    n_tiles: int
    n_rows: int
    table: Any  # cupy uint32 (n_rows, n_tiles * tile)
    remap: Any  # cupy uint16 (256,)
    launches: list[tuple[int, int, int]]  # (tile_begin, tile_end, shared bytes)


def _shared_bytes(n_rows: int, words: int) -> int:
    # Rows padded by up to 4 words (row_padding in lcs.cu).
    return n_rows * (words + 4) * 4 + _REMAP_BYTES


def _choose_tile(words: int, n_rows: int) -> int:
    """The tile (32-bit words per pass) with the least work: the padded words plus, per pass,
    ``config.LCS_TILE_PASS_COST`` words for reading the subject and the carries; ties go to the
    larger tile."""
    tiles = sorted(set(config.LCS_TILE_WORDS))
    if not tiles or any(t not in _TILES_ALLOWED for t in tiles):
        raise ValueError(f"LCS_TILE_WORDS={config.LCS_TILE_WORDS}: expected values among "
                         f"{_TILES_ALLOWED}")
    fitting = [t for t in tiles if _shared_bytes(n_rows, t) <= config.LCS_SHARED_BYTES]
    def cost(tile: int) -> tuple[float, int]:
        passes = -(-words // tile)
        return passes * (tile + config.LCS_TILE_PASS_COST), -tile

    return min(fitting or tiles[:1], key=cost)


def prepare_query(query: np.ndarray, alphabet: Alphabet) -> _Query:
    """Match table and launch plan of ``query`` on the current device."""
    import cupy

    present = np.unique(query[query < alphabet.match_codes])
    remap = np.zeros(256, dtype=np.uint16)
    remap[present] = np.arange(1, len(present) + 1)
    n_rows = len(present) + 1
    words = max(1, -(-len(query) // 32))
    tile = _choose_tile(words, n_rows)
    n_tiles = -(-words // tile)
    table = np.zeros((n_rows, n_tiles * tile), dtype=np.uint32)
    position = np.flatnonzero(remap[query] > 0)
    np.bitwise_or.at(table, (remap[query[position]], position >> 5),
                     np.left_shift(np.uint32(1), (position & 31).astype(np.uint32)))
    per_launch = max(1, (config.LCS_SHARED_BYTES - _shared_bytes(n_rows, 0)) // (n_rows * tile * 4))
    launches = []
    for begin in range(0, n_tiles, per_launch):
        end = min(n_tiles, begin + per_launch)
        launches.append((begin, end, _shared_bytes(n_rows, (end - begin) * tile)))
    return _Query(len(query), tile, n_tiles, n_rows, cupy.asarray(table), cupy.asarray(remap),
                  launches)


def launch(query: _Query, codes, offsets, order, n_subjects: int, carries, lengths) -> None:
    """Queue the kernels of one query over a batch on the current stream (``lengths`` filled)."""
    if n_subjects == 0:
        return
    if query.length == 0:
        lengths[...] = 0
        return
    threads = config.LCS_THREADS_PER_BLOCK
    wide = "true" if config.LCS_WIDE_LOADS else "false"
    kernel = get_kernel(KERNEL_FILE, f"lcs_tiles<{query.tile}, {wide}>")
    blocks = (n_subjects + threads - 1) // threads
    for begin, end, shared in query.launches:
        if shared > _DEFAULT_SHARED_LIMIT and kernel.max_dynamic_shared_size_bytes < shared:
            # Only when LCS_SHARED_BYTES leaves no tile that fits: opt in to more.
            kernel.max_dynamic_shared_size_bytes = shared
        kernel((blocks,), (threads,),
               (codes, offsets, order, np.int32(n_subjects), query.table,
                np.int32(query.n_rows), np.int32(query.n_tiles * query.tile), query.remap,
                np.int32(query.length), np.int32(query.n_tiles), np.int32(begin),
                np.int32(end), carries, lengths),
               shared_mem=shared)


def _order(lengths: np.ndarray, offsets):
    """Thread-to-subject order on the device: longest subjects first (uniform: identity).
    ``offsets`` is the device copy of the subjects' offsets: sorting there keeps the host from
    waiting for a copy."""
    import cupy

    if len(lengths) == 0 or lengths.min() == lengths.max():
        return cupy.arange(len(lengths), dtype=cupy.int32)
    return cupy.argsort(offsets[:-1] - offsets[1:]).astype(cupy.int32)


def _carry_words(residues: int, count: int) -> int:
    return (residues >> 5) + count + 1


def resident_lengths(queries: list[np.ndarray], alphabet: Alphabet, subjects: SequenceSet,
                     device: int | None = None) -> np.ndarray:
    """Kernels only: LCS lengths of ``queries`` with a set kept on the device (benchmarks)."""
    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id):
        codes, offsets = subjects.to_device()
        order = _order(subjects.lengths, offsets)
        carries = cupy.empty(_carry_words(len(subjects.codes), len(subjects)), dtype=cupy.uint32)
        out = cupy.empty((len(queries), len(subjects)), dtype=cupy.int32)
        for row, query in enumerate(queries):
            launch(prepare_query(query, alphabet), codes, offsets, order, len(subjects), carries,
                   out[row])
        return out.get()


def plan(subjects: Any, query_symbols: int, devices: int = 1) -> tuple[int, int, int]:
    """``(batch residues, first batch residues, slots)`` for ``subjects``, queries of
    ``query_symbols`` in all and ``devices`` GPUs: batches of a set in page-locked memory are
    cut by GPU work (``config.LCS_GPU_PINNED_*``); with several GPUs, ``2 x devices`` times
    larger, since one process (and one GIL) queues the batches of them all: on two H200s the
    paper's shape took 68 ms with batches 2x larger, 60 ms 4x, 68 ms 8x (98 ms on one GPU).
    Every batch is capped so that all slots fit the GPU."""
    residues, slots = config.LCS_GPU_BATCH_RESIDUES, config.LCS_GPU_SLOTS
    if isinstance(subjects, SequenceSet) and _page_locked(subjects.codes):
        cells = config.LCS_GPU_PINNED_BATCH_CELLS * (1 if devices <= 1 else 2 * devices)
        residues = min(residues, cells // max(1, query_symbols))
        slots = config.LCS_GPU_PINNED_SLOTS
    slots = max(2, slots)
    per_symbol = 1 + 1 / 8 + 1  # codes, carries, and room for offsets/lengths of short subjects
    residues = max(1, min(residues, int(batch_budget() / (slots * per_symbol))))
    return residues, min(residues, config.LCS_GPU_FIRST_BATCH_RESIDUES), slots


def _staging_threads() -> int:
    return config.LCS_STAGING_THREADS or os.cpu_count() or 1


def _page_locked(array: np.ndarray) -> bool:
    """Whether the whole of ``array`` lies in page-locked host memory (a view of a set made by
    :meth:`SequenceSet.pin_memory`, say): then it is copied to the GPU directly.

    Locking memory per call instead (``cudaHostRegister``) was measured on the H100 host at
    88 ms to lock and 62 ms to unlock 2.9 GB, more than staging the copy costs."""
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


class _Slot:
    """A stream with its page-locked host buffers, its device buffers and the batch it is
    working on. Buffers grow to the largest batch and are then reused, so that the steady
    state allocates nothing."""

    def __init__(self):
        import cupy

        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.host: dict[str, np.ndarray] = {}
        self.gpu: dict[str, Any] = {}
        self.pending: tuple[Batch, np.ndarray, Any, Any] | None = None

    def buffer(self, name: str, size: int, dtype) -> np.ndarray:
        """A page-locked host array of ``size`` elements."""
        import cupyx

        held = self.host.get(name)
        if held is None or held.size < size:
            held = cupyx.empty_pinned(max(size, 1), dtype=dtype)
            self.host[name] = held
        return held[:size]

    def device_buffer(self, name: str, size: int, dtype):
        """A device array of ``size`` elements (only used on this slot's stream)."""
        import cupy

        held = self.gpu.get(name)
        if held is None or held.size < size:
            self.gpu.pop(name, None)  # give the old one back before allocating
            held = cupy.empty(max(size, 1), dtype=dtype)
            self.gpu[name] = held
        return held[:size]


class _Pipeline:
    """``slots`` slots on one device, used in turn; ``submit`` batches, then ``drain``."""

    def __init__(self, device: int, queries: list[np.ndarray], alphabet: Alphabet, consume,
                 copier: ThreadPoolExecutor, slots: int):
        import cupy

        self.device = cupy.cuda.Device(device)
        with self.device:
            self.queries = [prepare_query(q, alphabet) for q in queries]
            self.slots = [_Slot() for _ in range(max(2, slots))]
        self.turn = 0
        self.consume = consume
        self.copier = copier

    def _stage(self, destination: np.ndarray, source: np.ndarray) -> None:
        """Copy into page-locked memory on several threads (NumPy releases the GIL)."""
        destination = destination[:len(source)]
        step = max(1 << 22, -(-len(source) // _staging_threads()))
        if len(source) <= step:
            destination[:] = source
            return
        parts = [self.copier.submit(np.copyto, destination[lo:lo + step], source[lo:lo + step])
                 for lo in range(0, len(source), step)]
        for part in parts:
            part.result()

    def _finish(self, slot: _Slot) -> None:
        if slot.pending is None:
            return
        batch, host_out, event, _order_in_use = slot.pending
        slot.pending = None
        event.synchronize()
        self.consume(batch, host_out.copy())

    def _enqueue(self, slot: _Slot, batch: Batch) -> None:

        subjects = batch.sequences
        count, residues = len(subjects), len(subjects.codes)
        direct = _page_locked(subjects.codes)
        if not direct:
            host_codes = slot.buffer("codes", residues + DEVICE_PADDING, np.uint8)
            self._stage(host_codes, subjects.codes)
            host_codes[residues:] = 0
        host_offsets = slot.buffer("offsets", count + 1, np.int64)
        host_offsets[:] = subjects.offsets
        host_out = slot.buffer("lengths", len(self.queries) * count, np.int32).reshape(
            len(self.queries), count)
        queries = len(self.queries)
        with slot.stream:
            codes = slot.device_buffer("codes", residues + DEVICE_PADDING, np.uint8)
            if direct:
                codes[:residues].set(subjects.codes, stream=slot.stream)
                codes[residues:] = 0
            else:
                codes.set(host_codes, stream=slot.stream)
            offsets = slot.device_buffer("offsets", count + 1, np.int64)
            offsets.set(host_offsets, stream=slot.stream)
            order = _order(subjects.lengths, offsets)
            carries = slot.device_buffer("carries", _carry_words(residues, count), np.uint32)
            out = slot.device_buffer("lengths", queries * count, np.int32).reshape(queries, count)
            for row, query in enumerate(self.queries):
                launch(query, codes, offsets, order, count, carries, out[row])
            out.get(stream=slot.stream, out=host_out, blocking=False)
            event = slot.stream.record()
        slot.pending = (batch, host_out, event, order)

    def submit(self, batch: Batch) -> None:
        import cupy

        with self.device:
            slot = self.slots[self.turn]
            self._finish(slot)
            try:
                self._enqueue(slot, batch)
            except cupy.cuda.memory.OutOfMemoryError:
                if len(batch) == 1:
                    raise MemoryError(f"subject #{batch.start} ({len(batch.sequences.codes)} "
                                      "symbols) does not fit in GPU memory") from None
                self.drain()
                cupy.get_default_memory_pool().free_all_blocks()
                for half in _halves(batch):
                    self.submit(half)
                return
            self.turn = (self.turn + 1) % len(self.slots)

    def drain(self) -> None:
        """Wait for the batches in flight and hand their results over, oldest first."""
        with self.device:
            for _ in self.slots:
                self._finish(self.slots[self.turn])
                self.turn = (self.turn + 1) % len(self.slots)

    def synchronize(self) -> None:
        """Wait for the work in flight without handing results over (after an error)."""
        for slot in self.slots:
            slot.stream.synchronize()


def _halves(batch: Batch) -> list[Batch]:
    subjects = batch.sequences
    half = len(subjects) // 2
    parts = []
    for lo, hi in ((0, half), (half, len(subjects))):
        base = subjects.offsets[lo]
        parts.append(Batch(batch.start + lo, SequenceSet(
            subjects.codes[base:subjects.offsets[hi]], subjects.offsets[lo:hi + 1] - base,
            subjects.names[lo:hi], subjects.alphabet)))
    return parts


def run(queries: list[np.ndarray], alphabet: Alphabet, batches, consume,
        devices: list[int] | None, slots: int | None = None) -> None:
    """Compute the LCS lengths of ``queries`` with every batch; ``consume(batch, lengths)`` is
    called once per batch (never concurrently), ``lengths`` of shape (queries, subjects);
    ``slots`` batches in flight per GPU (default ``config.LCS_GPU_SLOTS``)."""
    import cupy

    if devices is None:
        devices = [cupy.cuda.Device().id]
    available = cupy.cuda.runtime.getDeviceCount()
    for device in devices:
        if device >= available:
            raise ValueError(f"devices: GPU {device} does not exist ({available} present)")
    lock = threading.Lock()

    def consume_locked(batch: Batch, lengths: np.ndarray) -> None:
        with lock:
            consume(batch, lengths)

    with ThreadPoolExecutor(max_workers=_staging_threads(),
                            thread_name_prefix="gpualign-stage") as copier:
        _run_pipelines(queries, alphabet, batches, consume_locked, devices, copier,
                       slots or config.LCS_GPU_SLOTS)


def _run_pipelines(queries, alphabet, batches, consume, devices, copier, slots) -> None:
    """One pipeline per device, each pulling batches from the shared source."""
    source = iter(batches)
    source_lock = threading.Lock()
    errors: list[BaseException] = []

    def work(device: int) -> None:
        pipeline = None
        try:
            pipeline = _Pipeline(device, queries, alphabet, consume, copier, slots)
            while not errors:
                with source_lock:
                    batch = next(source, None)
                if batch is None:
                    break
                pipeline.submit(batch)
            pipeline.drain()
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
            if pipeline is not None:
                pipeline.synchronize()  # no copy may still read host memory

    if len(devices) == 1:
        work(devices[0])
    else:
        threads = [threading.Thread(target=work, args=(d,), name=f"gpualign-gpu{d}")
                   for d in devices]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
