"""The first stage of the all-vs-all cascade: a tile's pairs whose lengths allow the identity
threshold, with the largest edit distance each may have, in one compiled pass (no per-pair
temporaries: tiles of a million pairs are generated and filtered at a few ns a pair)."""

from __future__ import annotations

import numpy as np
from numba import njit

# Bounds are compared with a little slack: never drop a pair to rounding.
_EPS = 1e-9


@njit(cache=True, nogil=True)
def _bound(m: int, n: int, threshold: float, columns: bool) -> tuple[bool, int]:
    """Whether lengths ``m`` and ``n`` allow identity ``threshold``, and the largest edit
    distance that still could (see the module documentation of :mod:`gpualign.allpairs.api`)."""
    short, long_ = float(min(m, n)), float(max(m, n))
    if columns:
        fits = short >= threshold * long_ - _EPS
        limit = np.floor(short * (1 - threshold) / max(threshold, _EPS) + _EPS)
    else:
        fits = True
        limit = np.floor((long_ - short) + 2 * short * (1 - threshold) + _EPS)
    return fits and long_ > 0, int(limit)


@njit(cache=True, nogil=True)
def length_survivors(q_lengths: np.ndarray, t_lengths: np.ndarray, row_start: int,
                     column_start: int, side: int, same: bool, threshold: float,
                     columns: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The pairs of the tile at ``(row_start, column_start)`` (``side`` sequences a side;
    one set: only ``i < j``) that pass the length bound, in row-major order: ``(q_index,
    t_index, limit, pairs in the tile)``."""
    row_end = min(row_start + side, len(q_lengths))
    column_end = min(column_start + side, len(t_lengths))
    size = max(row_end - row_start, 0) * max(column_end - column_start, 0)
    q_index = np.empty(size, dtype=np.int64)
    t_index = np.empty(size, dtype=np.int64)
    limit = np.empty(size, dtype=np.int64)
    pairs = kept = 0
    for i in range(row_start, row_end):
        first = max(column_start, i + 1) if same else column_start
        pairs += max(column_end - first, 0)
        for j in range(first, column_end):
            fits, most = _bound(q_lengths[i], t_lengths[j], threshold, columns)
            if fits:
                q_index[kept], t_index[kept], limit[kept] = i, j, most
                kept += 1
    return q_index[:kept], t_index[:kept], limit[:kept], pairs
