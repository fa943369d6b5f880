"""Paths in bands of diagonals, with the full DP's answer: :func:`align`'s ``band``.

A pair of ``m`` query and ``n`` target symbols, aligned globally or semi-globally with a band
of ``B``, has only the cells ``(i, j)`` of the diagonals ``k = j - i`` that every end-to-end
placement uses, widened by ``B`` on each side, computed: ``-B .. n - m + B`` (semi-global: the
query end to end, anywhere in the target), ``min(0, n - m) - B .. max(0, n - m) + B``
(global). A path that leaves that band scores at most :func:`best_outside`:
- semi-global: it starts at a diagonal of at least 0 and ends at one of at most ``n - m``, so
  it has at least ``B + 1`` insertions: at most ``min(m - B - 1, n)`` aligned pairs at the
  table's best score, less a gap of ``B + 1``;
- global: it starts at diagonal 0 and ends at ``n - m``, so it has at least ``max(0, m - n) +
  B + 1`` insertions and ``max(0, n - m) + B + 1`` deletions: at most ``min(m, n) - B - 1``
  aligned pairs, less two gaps of ``|n - m| + 2B + 2`` symbols in all.
Where the band's optimum scores more than that, every optimal path lies in the band, so do
the cells on them (equal to the full DP's) and every predecessor that reaches their values:
the band's end cell, ties and traceback are the full DP's, and so is the answer. The backends'
``band_paths`` compute the bands; the pairs whose band's optimum is not above the bound (or
whose band cannot hold their ends) are aligned in full (:func:`band_results`).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from .. import config
from .._progress import Progress
from ..cigar import PackedCigars
from ..codes import ALIGN_GLOBAL
from ..sequences import SequenceSet

#: Below any score a path can have: where no path leaves a band.
_NONE_OUTSIDE = np.iinfo(np.int64).min


def band_diagonals(m: np.ndarray, n: np.ndarray, band: np.ndarray, mode: int,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band of each pair of ``m`` x ``n`` symbols: its lowest diagonal ``j - i``, its
    width in diagonals (those of the matrix only), and whether it is worth computing: it holds
    the pair's end cells, is narrower than the pair's columns (else the pair is aligned in
    full at the same cost) and its traceback, a byte a cell, stays within
    ``config.ALIGN_LINEAR_MIN_CELLS`` (a larger one is aligned in full, in linear space).

    Examples
    --------
    >>> from gpualign.codes import ALIGN_SEMI_GLOBAL
    >>> low, width, usable = band_diagonals(np.array([100, 100]), np.array([110, 90]),
    ...                                     np.array([3, 3]), ALIGN_SEMI_GLOBAL)
    >>> low.tolist(), width.tolist(), usable.tolist()
    ([-3, -3], [17, 0], [True, False])
    """
    m, n, band = (np.asarray(v, dtype=np.int64) for v in (m, n, band))
    if mode == ALIGN_GLOBAL:
        low, high = np.minimum(0, n - m) - band, np.maximum(0, n - m) + band
    else:
        low, high = -band, n - m + band
    low, high = np.maximum(low, -m), np.minimum(high, n)
    width = np.maximum(high - low + 1, 0)
    usable = (m > 0) & (n > 0) & (low <= n - m) & (high >= n - m) & (width <= n) & \
        (m * width <= config.ALIGN_LINEAR_MIN_CELLS)
    return low, width, usable


def best_outside(m: np.ndarray, n: np.ndarray, band: np.ndarray, mode: int, table: np.ndarray,
                 gap_open: int, gap_extend: int) -> np.ndarray:
    """The most that a path outside each pair's band can score (see the module's text);
    the lowest int64 where no path leaves it.

    Examples
    --------
    >>> from gpualign.codes import ALIGN_SEMI_GLOBAL
    >>> table = np.where(np.eye(4, dtype=bool), 2, -8)
    >>> best_outside(np.array([150, 150]), np.array([160, 160]), np.array([5, 200]),
    ...              ALIGN_SEMI_GLOBAL, table, 14, 2).tolist()
    [264, -9223372036854775808]
    """
    m, n, band = (np.asarray(v, dtype=np.int64) for v in (m, n, band))
    top = max(int(table.max()), 0)
    if mode == ALIGN_GLOBAL:
        aligned = np.minimum(m, n) - band - 1
        gaps = 2 * gap_open + (np.abs(n - m) + 2 * band) * gap_extend
    else:
        aligned = np.minimum(m - band - 1, n)
        gaps = gap_open + band * gap_extend  # a gap of band + 1 symbols
    # Fewer than band + 1 symbols to leave the band with: no path leaves it.
    return np.where(aligned >= 0, top * aligned - gaps, _NONE_OUTSIDE)


def band_for_edits(m: np.ndarray, edits: np.ndarray, table: np.ndarray, gap_open: int,
                   gap_extend: int) -> np.ndarray:
    """A band for each query of ``m`` symbols that a path of ``edits`` edits (a placement's
    edit distance) aligns: wide enough that such a path, in the band, proves the band's
    optimum (:func:`best_outside`), each edit costing at most a substitution's or an
    insertion's loss against the table's best score. A guess that the check confirms: a pair
    whose band falls short is aligned in full.

    Examples
    --------
    >>> table = np.where(np.eye(4, dtype=bool), 2, -8)
    >>> band_for_edits(np.full(4, 150), np.array([0, 1, 2, 3]), table, 14, 2).tolist()
    [0, 1, 5, 9]
    """
    m, edits = np.asarray(m, dtype=np.int64), np.asarray(edits, dtype=np.int64)
    top = max(int(table.max()), 0)
    loss = max(top - int(table.min()), gap_open + top)  # the most an edit costs
    # top * m - loss * edits > top * (m - band - 1) - gap_open - band * gap_extend
    need = (loss * edits - top - gap_open) // max(top + gap_extend, 1) + 1
    return np.minimum(np.maximum(np.maximum(need, edits), 0), m)


def band_results(engine: ModuleType, qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
                 t_index: np.ndarray, table: np.ndarray, gap_open: int, gap_extend: int,
                 mode: int, band: np.ndarray, progress: Progress | None, packed: bool,
                 ) -> tuple:
    """``engine.align_pairs``' results for ``task="path"`` (``mode`` global or semi-global)
    from bands of ``band`` diagonals on each side (``engine.band_paths``), each pair's band
    checked against :func:`best_outside`; the pairs it does not settle are aligned in full."""
    count = len(q_index)
    m = qset.lengths[q_index].astype(np.int64)
    n = tset.lengths[t_index].astype(np.int64)
    band = np.broadcast_to(np.asarray(band, dtype=np.int64), (count,))
    low, width, usable = band_diagonals(m, n, band, mode)
    chosen = np.flatnonzero(usable)
    results = [np.zeros(count, dtype=np.int64) for _ in range(5)]
    identity = np.zeros(count, dtype=np.float64)
    # The CIGARs of every pair: the bands' (in place when every pair has one), then those
    # aligned in full replacing theirs (a copy of the batch, no gather).
    cigars = PackedCigars.nones(count)
    done = chosen[:0]
    if len(chosen):
        score, q_start, t_start, t_end, matches, columns, band_cigars = engine.band_paths(
            qset, tset, q_index[chosen], t_index[chosen], table, gap_open, gap_extend, mode,
            low[chosen], width[chosen])
        exact = (columns >= 0) & (score > best_outside(m[chosen], n[chosen], band[chosen],
                                                       mode, table, gap_open, gap_extend))
        done = chosen[exact]
        for values, part in zip(results, (score, q_start, m[chosen], t_start, t_end),
                                strict=True):
            values[done] = part[exact]
        identity[done] = np.divide(matches[exact], columns[exact],
                                   out=np.zeros(len(done)), where=columns[exact] > 0)
        cigars = band_cigars if len(chosen) == count else cigars.replaced(chosen, band_cigars)
        if progress is not None:
            progress.pairs_done(m[done] * n[done])
    settled = np.zeros(count, dtype=bool)
    settled[done] = True
    rest = np.flatnonzero(~settled)
    if len(rest):
        *values, rest_cigars, rest_identity = engine.align_pairs(
            qset, tset, q_index[rest], t_index[rest], table, gap_open, gap_extend, mode, "path",
            progress, packed=True)
        for whole, part in zip(results, values, strict=True):
            whole[rest] = part
        identity[rest] = rest_identity
        # (All of them aligned in full: their CIGARs as they come, with what they count.)
        cigars = rest_cigars if len(rest) == count else cigars.replaced(rest, rest_cigars)
    return (*results, cigars if packed else cigars.to_text(), identity)
