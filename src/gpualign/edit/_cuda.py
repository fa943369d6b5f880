"""CUDA backend of edit distance.

Pairs are binned by query length (``config.EDIT_KERNEL_BINS``) and each bin goes to the kernel
specialization made for it: one pair per thread for short queries, a query's words spread over
lanes of a warp for long ones. Sequence sets move to the GPU once when they fit, else each batch
gathers the sequences it needs. Batches are sized from free device memory, and a batch that still
runs out of memory is split. CIGARs are traced on CPU threads while the GPU works on the next
batch. Pairs whose results need no dynamic programming (an empty side, or a global length
difference over ``k``) and queries longer than the last bin are computed by the CPU backend, so
that every backend returns the same results.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from tqdm import tqdm

from .. import config
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget
from . import _cpu

KERNEL_FILE = "edit/kernels/myers.cu"


def _kernel_name(lanes: int, words_per_lane: int, dna: bool) -> str:
    return f"myers_edit<{lanes}, {words_per_lane}, {'true' if dna else 'false'}>"


class _Batch:
    """Device arrays for one batch of pairs: the sequences and the pair indices into them."""

    def __init__(self, qset, tset, q_index, t_index, resident: bool):
        import cupy

        if resident:
            self.q_codes, self.q_offsets = qset.to_device()
            self.t_codes, self.t_offsets = tset.to_device()
        else:
            q_unique, q_index = np.unique(q_index, return_inverse=True)
            t_unique, t_index = np.unique(t_index, return_inverse=True)
            self.q_codes, self.q_offsets = qset.take(q_unique).to_device()
            self.t_codes, self.t_offsets = tset.take(t_unique).to_device()
        self.q_index = cupy.asarray(q_index, dtype=cupy.int64)
        self.t_index = cupy.asarray(t_index, dtype=cupy.int64)
        self.size = len(q_index)


def _run_kernel(batch: _Batch, t_length, alphabet, lanes: int, words_per_lane: int,
                mode_flags: tuple[int, int, int, int], cutoff: int):
    """Launch one pass; returns host (distance, end). ``mode_flags`` is
    (top_delta, reverse, tie_last, global_mode)."""
    import cupy

    top_delta, reverse, tie_last, global_mode = mode_flags
    dna = alphabet.name == "dna"
    word_stride = lanes * words_per_lane
    if dna:
        table = cupy.zeros(1, dtype=cupy.uint64)
    else:
        table = cupy.zeros(batch.size * alphabet.size * word_stride, dtype=cupy.uint64)
        builder = get_kernel(KERNEL_FILE, "build_match_table")
        work = batch.size * word_stride
        builder(((work + 255) // 256,), (256,),
                (batch.q_codes, batch.q_offsets, batch.q_index, np.int32(batch.size),
                 np.int32(word_stride), np.int32(alphabet.size), np.int32(alphabet.match_codes),
                 np.int32(reverse), table))
    distance = cupy.empty(batch.size, dtype=cupy.int32)
    end = cupy.empty(batch.size, dtype=cupy.int32)
    threads = config.EDIT_THREADS_PER_BLOCK
    blocks = (batch.size * lanes + threads - 1) // threads
    kernel = get_kernel(KERNEL_FILE, _kernel_name(lanes, words_per_lane, dna))
    kernel((blocks,), (threads,),
           (batch.q_codes, batch.q_offsets, batch.t_codes, batch.t_offsets, batch.q_index,
            batch.t_index, cupy.asarray(t_length, dtype=cupy.int32), table,
            np.int32(alphabet.size), np.int32(word_stride), np.int32(batch.size),
            np.int32(top_delta), np.int32(reverse), np.int32(tie_last), np.int32(global_mode),
            np.int32(cutoff), distance, end))
    return distance.get(), end.get()


def _bin_pairs(words: np.ndarray) -> np.ndarray:
    """Index into ``config.EDIT_KERNEL_BINS`` for each pair; ``len(bins)`` when too long."""
    limits = np.array([b[0] for b in config.EDIT_KERNEL_BINS], dtype=np.int64)
    return np.searchsorted(limits, words, side="left")


def _split_by_budget(cost: np.ndarray, budget: int) -> list[slice]:
    """Consecutive slices whose summed cost stays within ``budget`` (at least one pair each)."""
    slices = []
    cumulative = np.cumsum(cost)
    lo = 0
    while lo < len(cost):
        base = cumulative[lo - 1] if lo else 0
        hi = int(np.searchsorted(cumulative, base + budget, side="right"))
        hi = max(hi, lo + 1)
        slices.append(slice(lo, hi))
        lo = hi
    return slices


def edit_pairs(qset, tset, q_index, t_index, mode, k, task, progress=False):
    """Edit distance of index pairs on the current CUDA device (same contract as the CPU's)."""
    import cupy

    count = len(q_index)
    distance = np.full(count, -1, dtype=np.int32)
    start = np.full(count, -1, dtype=np.int32)
    end = np.full(count, -1, dtype=np.int32)
    q_len = qset.lengths[q_index]
    t_len = tset.lengths[t_index]
    words = (q_len + 63) // 64
    bins = _bin_pairs(words)
    on_cpu = (q_len == 0) | (t_len == 0) | (bins >= len(config.EDIT_KERNEL_BINS))
    if mode == _cpu.GLOBAL and k >= 0:
        on_cpu |= np.abs(q_len - t_len) > k
    want_start = task != "distance"
    cpu_pairs = np.flatnonzero(on_cpu)
    if len(cpu_pairs):
        (distance[cpu_pairs], start[cpu_pairs], end[cpu_pairs]) = _cpu.distance_batch(
            qset, tset, q_index[cpu_pairs], t_index[cpu_pairs], mode, k, want_start)

    alphabet = qset.alphabet
    budget = batch_budget()
    resident_bytes = sum(s.codes.nbytes + s.offsets.nbytes for s in (qset, tset))
    resident = resident_bytes <= budget // 2
    if resident:
        budget -= resident_bytes
    gpu_pairs = np.flatnonzero(~on_cpu)
    gpu_bins = bins[gpu_pairs]
    if gpu_bins.size and gpu_bins.min() != gpu_bins.max():
        order = np.argsort(gpu_bins.astype(np.uint8), kind="stable")  # a radix sort: O(n)
        gpu_pairs, gpu_bins = gpu_pairs[order], gpu_bins[order]
    bin_sizes = np.bincount(gpu_bins, minlength=len(config.EDIT_KERNEL_BINS))
    bin_ids = np.flatnonzero(bin_sizes)
    bin_bounds = np.concatenate(([0], np.cumsum(bin_sizes)))

    cigar: list[str | None] | None = [None] * count if task == "path" else None
    tracer = ThreadPoolExecutor(max_workers=1) if task == "path" else None
    traced: list[tuple[np.ndarray, Future]] = []
    bar = tqdm(total=count, disable=not progress, unit="pair", desc="edit", leave=False)
    bar.update(len(cpu_pairs))
    try:
        for bin_id in bin_ids:
            members = gpu_pairs[bin_bounds[bin_id]:bin_bounds[bin_id + 1]]
            _, lanes, words_per_lane = config.EDIT_KERNEL_BINS[bin_id]
            table_bytes = (0 if alphabet.name == "dna"
                           else alphabet.size * lanes * words_per_lane * 8)
            per_pair = 48 + table_bytes
            if resident:  # every pair costs the same: no per-pair arithmetic over large arrays
                step = max(1, budget // per_pair)
                pending = [members[lo:lo + step] for lo in range(0, len(members), step)]
            else:
                cost = per_pair + q_len[members] + t_len[members] + 16
                pending = [members[s] for s in _split_by_budget(cost, budget)]
            while pending:
                pairs = pending.pop(0)
                try:
                    _compute_batch(qset, tset, q_index, t_index, pairs, resident, lanes,
                                   words_per_lane, mode, k, want_start, distance, start, end)
                except cupy.cuda.memory.OutOfMemoryError:
                    cupy.get_default_memory_pool().free_all_blocks()
                    if len(pairs) == 1:
                        raise
                    half = len(pairs) // 2
                    pending[:0] = [pairs[:half], pairs[half:]]
                    continue
                if tracer is not None:
                    traced.append((pairs, tracer.submit(
                        _cpu.cigar_batch, qset, tset, q_index[pairs], t_index[pairs],
                        start[pairs], end[pairs])))
                bar.update(len(pairs))
        if cigar is not None:
            if len(cpu_pairs):
                traced.append((cpu_pairs, tracer.submit(
                    _cpu.cigar_batch, qset, tset, q_index[cpu_pairs], t_index[cpu_pairs],
                    start[cpu_pairs], end[cpu_pairs])))
            for pairs, future in traced:
                for p, text in zip(pairs.tolist(), future.result(), strict=True):
                    cigar[p] = text
    finally:
        bar.close()
        if tracer is not None:
            tracer.shutdown(wait=True)
    return distance, start, end, cigar


def _compute_batch(qset, tset, q_index, t_index, pairs, resident, lanes, words_per_lane, mode,
                   k, want_start, distance, start, end):
    """Forward pass (distance, end) and, for infix locations, the reversed pass (start)."""
    batch = _Batch(qset, tset, q_index[pairs], t_index[pairs], resident)
    t_len = tset.lengths[t_index[pairs]]
    top_delta = 0 if mode == _cpu.INFIX else 1
    d, e = _run_kernel(batch, t_len, qset.alphabet, lanes, words_per_lane,
                       (top_delta, 0, 0, int(mode == _cpu.GLOBAL)), k)
    distance[pairs] = d
    end[pairs] = e
    found = d >= 0
    start[pairs] = np.where(found, 0, -1)
    if not (want_start and mode == _cpu.INFIX):
        return
    # Leftmost start of an optimal alignment ending at ``end``: the longest reversed target
    # prefix (of target[:end]) that the reversed query matches at the same cost.
    again = found & (e > 0)
    if not again.any():
        return
    sub = pairs[again]
    back = _Batch(qset, tset, q_index[sub], t_index[sub], resident)
    _, length = _run_kernel(back, e[again], qset.alphabet, lanes, words_per_lane,
                            (1, 1, 1, 0), -1)
    start[sub] = e[again] - length
