"""CUDA backend of LCS: one thread per subject, the query's bit-vector tiles in registers.

Batches of subjects flow through the slots of :mod:`gpualign.cuda.pipeline`, a few per GPU
(:func:`plan`): while the GPU works on one slot's batch, the host copies the next batch into
another slot's page-locked buffer (or not at all when the subjects already lie in page-locked
memory) and queues its host-to-device copy, kernels and device-to-host copy; the lengths of a
finished batch go to the caller's ``consume`` (top-N selection, LCS strings on CPU threads)
while the GPU runs on. With several devices, one pipeline per GPU pulls batches from the shared
source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from ..cuda import pipeline
from ..cuda.host import is_page_locked
from ..cuda.launch import grid, reserve_shared
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget
from ..sequences import DEVICE_PADDING, Alphabet, SequenceSet
from ..streaming import Batch, iter_batches

KERNEL_FILE = "lcs/kernels/lcs.cu"
_TILES_ALLOWED = (1, 2, 4, 8, 16, 32, 64)
_REMAP_BYTES = 512


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
    wide = "true" if config.LCS_WIDE_LOADS else "false"
    kernel = get_kernel(KERNEL_FILE, f"lcs_tiles<{query.tile}, {wide}>")
    blocks, threads = grid(kernel, n_subjects)
    for begin, end, shared in query.launches:
        # Opts in above the default 48 KiB only where LCS_SHARED_BYTES is larger or leaves no
        # tile that fits.
        kernel(blocks, threads,
               (codes, offsets, order, np.int32(n_subjects), query.table,
                np.int32(query.n_rows), np.int32(query.n_tiles * query.tile), query.remap,
                np.int32(query.length), np.int32(query.n_tiles), np.int32(begin),
                np.int32(end), carries, lengths),
               shared_mem=reserve_shared(kernel, shared))


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
    larger, since one process (and one GIL) queues the batches of them all
    (benchmarks/results/tuning.md). Every batch is capped so that all slots fit the GPU."""
    residues, slots = config.LCS_GPU_BATCH_RESIDUES, config.LCS_GPU_SLOTS
    if isinstance(subjects, SequenceSet) and is_page_locked(subjects.codes):
        cells = config.LCS_GPU_PINNED_BATCH_CELLS * (1 if devices <= 1 else 2 * devices)
        residues = min(residues, cells // max(1, query_symbols))
        slots = config.LCS_GPU_PINNED_SLOTS
    slots = max(2, slots)
    per_symbol = 1 + 1 / 8 + 1  # codes, carries, and room for offsets/lengths of short subjects
    residues = max(1, min(residues, int(batch_budget() / (slots * per_symbol))))
    return residues, min(residues, config.LCS_GPU_FIRST_BATCH_RESIDUES), slots


class _Stage:
    """The LCS work of one device (:class:`gpualign.cuda.pipeline.Stage`): the queries' match
    tables, and per batch the subjects' copy, the kernels of every query and the lengths'
    copy back."""

    def __init__(self, queries: list[np.ndarray], alphabet: Alphabet):
        self.queries = [prepare_query(q, alphabet) for q in queries]

    def enqueue(self, slot: pipeline.Slot, batch: Batch) -> tuple[Batch, np.ndarray, Any]:
        subjects = batch.sequences
        count, residues = len(subjects), len(subjects.codes)
        queries = len(self.queries)
        direct = is_page_locked(subjects.codes)
        if not direct:
            host_codes = slot.host.get("codes", residues + DEVICE_PADDING, np.uint8)
            slot.stage(host_codes, subjects.codes)
            host_codes[residues:] = 0
        host_offsets = slot.host.get("offsets", count + 1, np.int64)
        host_offsets[:] = subjects.offsets
        host_out = slot.host.get("lengths", queries * count, np.int32).reshape(queries, count)
        codes = slot.gpu.get("codes", residues + DEVICE_PADDING, np.uint8)
        if direct:
            codes[:residues].set(subjects.codes, stream=slot.stream)
            codes[residues:] = 0
        else:
            codes.set(host_codes, stream=slot.stream)
        offsets = slot.gpu.get("offsets", count + 1, np.int64)
        offsets.set(host_offsets, stream=slot.stream)
        order = _order(subjects.lengths, offsets)
        carries = slot.gpu.get("carries", _carry_words(residues, count), np.uint32)
        out = slot.gpu.get("lengths", queries * count, np.int32).reshape(queries, count)
        for row, query in enumerate(self.queries):
            launch(query, codes, offsets, order, count, carries, out[row])
        out.get(stream=slot.stream, out=host_out, blocking=False)
        # ``order`` rides along so that its memory stays with the batch until it is done.
        return batch, host_out, order

    def finish(self, pending: tuple[Batch, np.ndarray, Any]) -> tuple[Batch, np.ndarray]:
        batch, host_out, _order_in_use = pending
        return batch, host_out.copy()

    def split(self, batch: Batch) -> list[Batch]:
        if len(batch) == 1:
            raise MemoryError(f"subject #{batch.start} ({len(batch.sequences.codes)} "
                              "symbols) does not fit in GPU memory") from None
        return _halves(batch)


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


def run(queries: list[np.ndarray], alphabet: Alphabet, subjects: Any, invalid: str,
        consume: Callable[[Batch, np.ndarray], None], devices: Sequence[int] | None) -> None:
    """Compute the LCS lengths of ``queries`` with every subject, cut into batches by
    :func:`plan`; ``consume(batch, lengths)`` is called once per batch (never concurrently),
    ``lengths`` of shape ``(len(queries), len(batch))``. ``devices``: the GPUs to split the
    batches over (default: the current one)."""
    residues, first, slots = plan(subjects, sum(map(len, queries)), len(devices or [0]))
    batches = iter_batches(subjects, alphabet, invalid=invalid, batch_residues=residues,
                           first_residues=first)
    pipeline.run(batches, lambda device: _Stage(queries, alphabet),
                 lambda done: consume(*done), devices, slots=slots,
                 staging_threads=config.LCS_STAGING_THREADS)
