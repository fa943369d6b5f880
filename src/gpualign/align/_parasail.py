"""Scores on the CPU through parasail's striped SIMD kernels (Farrar), on every core.

parasail computes exactly the recurrences of :mod:`._cpu` (same gap convention, fed our own
substitution table, so DNA's ``N`` matches nothing), several times faster per core than the
scalar Numba DP; it is used for ``task="score"`` when installed. 16-bit lanes first; a pair
whose score saturates them is rerun in 32-bit, so no score is ever clipped. The calls go through
ctypes, which releases the GIL, so a thread pool uses every core.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..codes import ALIGN_GLOBAL, ALIGN_LOCAL, ALIGN_OVERLAP, ALIGN_SEMI_GLOBAL
from ..sequences import SequenceSet

#: parasail's name of each mode: semi-global is ``sg_dx`` (both target ends free), overlap
#: ``sg`` (all four ends free).
_NAMES = {ALIGN_GLOBAL: "nw", ALIGN_LOCAL: "sw", ALIGN_SEMI_GLOBAL: "sg_dx", ALIGN_OVERLAP: "sg"}
_PAIRS_PER_TASK = 256


def available(alphabet_name: str) -> bool:
    """parasail is installed and can spell the alphabet (not raw bytes: NUL and the rest)."""
    if alphabet_name not in ("dna", "protein"):
        return False
    try:
        import parasail  # noqa: F401
    except ImportError:
        return False
    return True


def matrix(alphabet_symbols: bytes, table: np.ndarray):
    """The parasail matrix of our substitution ``table`` over the first ``len(table)``
    symbols of an alphabet (built once per table, then cached)."""
    size = len(table)
    return _matrix(alphabet_symbols[:size].decode("ascii"),
                   np.ascontiguousarray(table, dtype=np.int32).tobytes(), size)


@functools.lru_cache(maxsize=16)
def _matrix(symbols: str, table_bytes: bytes, size: int):
    import parasail

    table = np.frombuffer(table_bytes, dtype=np.int32).reshape(size, size)
    built = parasail.matrix_create(symbols, 0, 0)
    for i in range(size):
        for j in range(size):
            built.set_value(i, j, int(table[i, j]))
    return built


def kernel_kind(gap_open: int, gap_extend: int) -> str:
    """parasail's vectorization to use: ``"striped"``, or ``"scan"`` for linear gaps."""
    # Striped kernels disagree with the DP when gap_open == gap_extend (measured: most pairs
    # with linear gaps differ); the prefix-scan kernels agree everywhere.
    return "scan" if gap_open == gap_extend else "striped"


def lanes_fit(bits: int, kind: str, lengths: np.ndarray, table: np.ndarray, gap_open: int,
              gap_extend: int) -> np.ndarray:
    """Which queries (of these ``lengths``) parasail's ``bits``-bit kernels of ``kind`` score
    exactly, or flag as saturated: none when a substitution score or a gap cost is beyond the
    lanes' range (parasail stores them in lanes, where they would wrap); for the scan kernels,
    only those whose ``segments * gap_extend`` fits a lane (the kernel adds that sum in one
    lane: beyond the range it wraps and the score is wrong without the saturation flag)."""
    if bits >= 32:
        return np.ones(len(lengths), dtype=bool)
    limit = (1 << (bits - 1)) - 1
    if not (-limit <= int(table.min()) and int(table.max()) <= limit and 0 <= gap_open <= limit
            and 0 <= gap_extend <= limit):
        return np.zeros(len(lengths), dtype=bool)
    if kind == "scan":
        # Segments of a query: its length over the lanes of a vector, fewest (128-bit
        # vectors) of parasail's instruction sets, so the bound holds on any of them.
        segments = -(-lengths.astype(np.int64) // (128 // bits))
        return segments * gap_extend <= limit
    return np.ones(len(lengths), dtype=bool)


def _border_score(m: int, n: int, mode: int, gap_open: int, gap_extend: int) -> int:
    """Score when a sequence is empty (parasail needs both non-empty)."""
    gap = max(m, n)
    if gap and (mode == ALIGN_GLOBAL or (mode == ALIGN_SEMI_GLOBAL and n == 0)):
        return -(gap_open + (gap - 1) * gap_extend)
    return 0


def scores(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
           table: np.ndarray, gap_open: int, gap_extend: int, mode: int) -> np.ndarray:
    """Score of every pair (``int64``)."""
    import parasail

    scores_of = matrix(qset.alphabet.symbols, table)
    kind = kernel_kind(gap_open, gap_extend)
    narrow = getattr(parasail, f"{_NAMES[mode]}_{kind}_16")
    wide = getattr(parasail, f"{_NAMES[mode]}_{kind}_32")
    out = np.empty(len(q_index), dtype=np.int64)
    q_lengths, t_lengths = qset.lengths, tset.lengths
    narrow_fits = lanes_fit(16, kind, q_lengths, table, gap_open, gap_extend)

    def work(lo: int, hi: int) -> None:
        for p in range(lo, hi):
            qi, ti = int(q_index[p]), int(t_index[p])
            if not q_lengths[qi] or not t_lengths[ti]:
                out[p] = _border_score(int(q_lengths[qi]), int(t_lengths[ti]), mode,
                                       gap_open, gap_extend)
                continue
            query, target = qset[qi], tset[ti]
            result = narrow(query, target, gap_open, gap_extend, scores_of) \
                if narrow_fits[qi] else None
            if result is None or result.saturated:
                result = wide(query, target, gap_open, gap_extend, scores_of)
            out[p] = result.score

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                            thread_name_prefix="gpualign-align") as pool:
        for part in [pool.submit(work, lo, min(lo + _PAIRS_PER_TASK, len(q_index)))
                     for lo in range(0, len(q_index), _PAIRS_PER_TASK)]:
            part.result()
    return out
