"""CUDA backend of alignment scores and end cells (``align/kernels/align.cu``).

One thread aligns one pair, sweeping it in strips of ``config.ALIGN_STRIP_ROWS`` query rows.
Pairs whose every DP value provably fits 16 bits run in the narrow kernel (two 16-bit lanes
per register, DPX instructions); the others run in the wide one (32-bit lanes). The bound is
computed from the lengths and the scoring before the run, so no score is ever wrong. Pairs
with an empty side, or too long even for 32 bits, are computed by the CPU backend, which
defines the results.

Within a width, pairs run in decreasing order of strips, then of target length: a warp's
threads wait for each other after every strip, so they need equal strips and similar targets,
and a thread computes its pair alone, so the longest pairs must start first. Launches are cut
to the memory budget: each warp keeps a border of one row (H and F of every target column of
its lanes) between strips.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import config
from ..cuda.loader import get_kernel
from ..cuda.memory import device_chunks, launch_split
from . import _cpu

KERNEL_FILE = "align/kernels/align.cu"
_THREADS = 128  # the kernel's __launch_bounds__
_NARROW_NEG = -32768 + 1024  # Narrow::NEG in the kernel
_NARROW_LIMIT = 32767 - 256
_WIDE_LIMIT = (1 << 30) - (1 << 20)
_MAX_GAP_EXTEND = 1000  # Narrow::NEG - gap_extend must not wrap
# How the kernels look up substitution scores: DNA match/mismatch from two constants, a query
# profile of int8 scores (16-byte loads per strip and column), or a table in shared memory.
_SUB_DNA, _SUB_TABLE, _SUB_PROFILE = 0, 1, 2


def _kernel_name(wide: bool, mode: int, affine: bool, substitution: int, find_end: bool,
                 half: int) -> str:
    def flag(value: bool) -> str:
        return "true" if value else "false"

    return (f"align_pairs<{'Wide' if wide else 'Narrow'}, {mode}, {flag(affine)}, "
            f"{substitution}, {flag(find_end)}, {half}>")


def value_bounds(m: np.ndarray, n: np.ndarray, table: np.ndarray, gap_open: int,
                 gap_extend: int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, bounds ``(high, low)`` on every value the kernels compute (shifted scores,
    gap states, the padding rows' candidates), for every mode.

    No alignment of an ``m``-prefix and an ``n``-prefix scores above ``max(s, 0) * min(m, n)``;
    none of the global ones scores below all-gaps, ``-(2 * open + (m + n) * extend)``, and
    every mode's DP values are at least the global ones."""
    top = max(int(table.max()), 0)
    m = m.astype(np.int64)
    n = n.astype(np.int64)
    high = top * np.minimum(m, n) + top + gap_open
    low = -(2 * gap_open + (m + n) * gap_extend) - gap_open - gap_extend - 128
    return high, low


def align_pairs(qset, tset, q_index: np.ndarray, t_index: np.ndarray, table: np.ndarray,
                gap_open: int, gap_extend: int, mode: int, want_end: bool):
    """Scores and end cells of index pairs on the current CUDA device: int64 arrays ``score,
    query_end, target_end``, as the CPU backend's ``align_batch`` returns them (every mode
    reports its ends, except local alignments without ``want_end``: theirs are meaningless)."""
    import cupy

    count = len(q_index)
    score = np.zeros(count, dtype=np.int64)
    q_end = np.full(count, -1, dtype=np.int64)
    t_end = np.full(count, -1, dtype=np.int64)
    m = qset.lengths[q_index]
    n = tset.lengths[t_index]
    high, low = value_bounds(m, n, table, gap_open, gap_extend)
    dna = qset.alphabet.name == "dna" and _is_match_mismatch(table, qset.alphabet.match_codes)
    shifted = table.astype(np.int64) + gap_open
    profile = not dna and shifted.min() >= -127 and shifted.max() <= 127
    # Substitution scores live in int16 tables (int8 bytes for DNA in the narrow kernel).
    narrow_ok = gap_extend <= _MAX_GAP_EXTEND and (
        (shifted.min() >= -128 and shifted.max() <= 127) if dna else True)
    wide_ok = shifted.min() >= -32768 and shifted.max() <= 32767
    on_gpu = (m > 0) & (n > 0) & (high < _WIDE_LIMIT) & (low > -_WIDE_LIMIT) & wide_ok
    narrow = on_gpu & narrow_ok & (high < _NARROW_LIMIT) & (low > _NARROW_NEG + 256)
    find_end = want_end and mode == _cpu.LOCAL
    half = config.ALIGN_STRIP_ROWS // 2
    if config.ALIGN_STRIP_ROWS % 2 or half < 1:
        raise ValueError(f"ALIGN_STRIP_ROWS={config.ALIGN_STRIP_ROWS}: a positive even number")
    substitution = _SUB_DNA if dna else _SUB_PROFILE if profile else _SUB_TABLE
    setup = _Setup(mode, gap_open != gap_extend, substitution, find_end, half,
                   shifted.astype(np.int16), qset.alphabet.size, gap_open, gap_extend)
    strips = (m + 2 * half - 1) // (2 * half)
    # The kernels' order: by width, then strips, then target length, all descending. A warp's
    # threads wait for each other after every strip, so they need equal strips and similar
    # targets; a thread computes its pair alone, so the longest pairs must start first.
    group = np.where(narrow, 0, 1)
    key = (group * (int(strips.max(initial=0)) + 1) - strips) * (int(n.max(initial=0)) + 1) - n
    for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index, t_index,
                                                           config.ALIGN_GPU_CHUNK_PAIRS):
        profiles = setup.profiles(sequences)
        chunk = _Chunk(sequences, profiles, cupy.asarray(q_local), cupy.asarray(t_local),
                       cupy.asarray(n[part]))
        inside = on_gpu[part]
        order = cupy.argsort(cupy.asarray(np.where(inside, key[part], np.iinfo(np.int64).max)))
        counts = np.bincount(group[part][inside], minlength=2)
        for wide, (first, last) in enumerate(((0, counts[0]), (counts[0], counts.sum()))):
            if last > first:
                launch_split(functools.partial(setup.launch, bool(wide), chunk),
                             order[first:last],
                             (8 if wide else 4) * (int(n[part].mean()) + 2) + 32)
        for host, device in zip((score, q_end, t_end), chunk.results, strict=True):
            host[part][inside] = device.get()[inside]
    rest = np.flatnonzero(~on_gpu)
    if len(rest):
        s, _, qe, _, te, _ = _cpu.align_batch(
            qset.codes, qset.offsets, tset.codes, tset.offsets, q_index[rest], t_index[rest],
            table.astype(np.int64), qset.alphabet.match_codes, gap_open, gap_extend, mode, False,
            np.zeros(len(rest) + 1, dtype=np.int64), np.empty(0, dtype=np.uint8))
        score[rest], q_end[rest], t_end[rest] = s, qe, te
    return score, q_end, t_end


def _is_match_mismatch(table: np.ndarray, match_codes: int) -> bool:
    """Whether ``table`` scores one value on its diagonal (up to ``match_codes``) and another
    everywhere else: then the DNA kernels compute substitutions without a table."""
    diagonal = np.eye(len(table), dtype=bool)
    diagonal[match_codes:, match_codes:] = False
    return len(np.unique(table[diagonal])) <= 1 and len(np.unique(table[~diagonal])) <= 1


class _Setup:
    """The kernel arguments shared by every launch of one :func:`align_pairs` call."""

    def __init__(self, mode, affine, substitution, find_end, half, shifted_table, n_codes,
                 gap_open, gap_extend):
        self.mode, self.affine, self.substitution = mode, affine, substitution
        self.find_end, self.half = find_end, half
        self.shifted_table = shifted_table
        self.n_codes = n_codes
        self.gap_open, self.gap_extend = gap_open, gap_extend
        self.match = int(shifted_table[0, 0])
        self.mismatch = int(shifted_table[0, 1]) if n_codes > 1 else self.match

    def profiles(self, sequences):
        """``(profiles, profile_base, padded_rows)`` of every query record on the device
        (empty unless the kernels read query profiles): record k's rows are padded to whole
        strips and 16 bytes, so that every strip's load is aligned."""
        import cupy

        if self.substitution != _SUB_PROFILE:
            empty = cupy.zeros(1, dtype=cupy.int64)
            return cupy.zeros(16, dtype=cupy.int8), empty, empty.astype(cupy.int32)
        q_codes, q_offsets = sequences[:2]
        unit = max(2 * self.half, 16)
        lengths = q_offsets[1:] - q_offsets[:-1]
        padded = ((lengths + unit - 1) // unit * unit).astype(cupy.int32)
        sizes = padded.astype(cupy.int64) * self.n_codes
        base = cupy.zeros(len(sizes), dtype=cupy.int64)
        if len(sizes) > 1:
            cupy.cumsum(sizes[:-1], out=base[1:])
        profiles = cupy.empty(int(sizes.sum()) + 16, dtype=cupy.int8)
        if len(sizes):
            get_kernel(KERNEL_FILE, "build_profiles")(
                (len(sizes),), (256,),
                (q_codes, q_offsets, base, padded, cupy.asarray(self.shifted_table.ravel()),
                 np.int32(self.n_codes), profiles))
        return profiles, base, padded

    def launch(self, wide, chunk, members):
        """Align the pairs ``members`` (device positions in ``chunk``) in one launch; their
        scores and ends go to ``chunk.results``."""
        import cupy

        size = len(members)
        q_index, t_index = chunk.q_index[members], chunk.t_index[members]
        # Warp w's border segment: 32 lanes x (its longest target + 2) cells.
        warps = (size + 31) // 32
        longest = cupy.zeros(warps * 32, dtype=cupy.int64)
        longest[:size] = chunk.target_lengths[members]
        segment = 32 * (longest.reshape(warps, 32).max(axis=1) + 2)
        warp_border = cupy.zeros(warps, dtype=cupy.int64)
        if warps > 1:
            cupy.cumsum(segment[:-1], out=warp_border[1:])
        kernel = get_kernel(KERNEL_FILE, _kernel_name(wide, self.mode, self.affine,
                                                      self.substitution, self.find_end,
                                                      self.half))
        shared = 2 * self.n_codes ** 2 if self.substitution == _SUB_TABLE else 0
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        table = cupy.asarray(self.shifted_table.ravel())
        border = cupy.empty(int(segment.sum()) * (2 if wide else 1), dtype=cupy.uint32)
        results = [cupy.empty(size, dtype=cupy.int32) for _ in range(3)]
        q_codes, q_offsets, t_codes, t_offsets = chunk.sequences
        kernel(((size + _THREADS - 1) // _THREADS,), (_THREADS,),
               (q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, np.int32(size), table,
                np.int32(self.n_codes), np.int32(self.match), np.int32(self.mismatch),
                *chunk.profiles, np.int32(self.gap_open), np.int32(self.gap_extend), border,
                warp_border, *results), shared_mem=shared)
        for whole, part in zip(chunk.results, results, strict=True):
            whole[members] = part


class _Chunk:
    """A chunk of pairs on the device: sequences, query profiles, index arrays, target
    lengths, and the int32 results (score, query end, target end) its launches fill."""

    def __init__(self, sequences, profiles, q_index, t_index, target_lengths):
        import cupy

        self.sequences, self.profiles = sequences, profiles
        self.q_index, self.t_index = q_index, t_index
        self.target_lengths = target_lengths
        self.results = [cupy.zeros(len(q_index), dtype=cupy.int32) for _ in range(3)]
