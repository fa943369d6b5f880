"""What both edit-distance backends share without Numba: the results of pairs that need no
dynamic programming, and which CIGARs need linear space.

The CUDA backend takes its pairs with an empty side (or, in global mode, a length difference
over ``k``) from here, so that a CUDA run never loads the CPU backend; the results are exactly
those of the CPU backend's dynamic programming (``tests/test_edit.py`` checks every mode, task
and cutoff).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import config
from ..cigar import PackedCigars
from ..codes import EDIT_GLOBAL, OP_DELETION, OP_INSERTION

__all__ = ["needs_linear", "traceback_bytes", "trivial_cigars", "trivial_results"]


def trivial_results(q_len: np.ndarray, t_len: np.ndarray, mode: int, k: int,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distance, target start and end (half-open) of pairs that need no dynamic programming:
    an empty query or target, or in global mode ``|m - n| > k``; -1s for pairs over ``k``
    (``k < 0``: no cutoff).

    Parameters
    ----------
    q_len, t_len : np.ndarray
        Query and target lengths of the pairs (every pair one of the kinds above).
    mode : int
        An edit mode code (:func:`gpualign.codes.edit_mode`).
    k : int
        The cutoff, or -1.

    Returns
    -------
    distance, start, end : np.ndarray of int32

    Notes
    -----
    In global mode such a pair's distance is ``|m - n|``: with an empty side the alignment is
    the other side's insertions or deletions over the whole target, and otherwise ``|m - n|``
    is over ``k`` and the pair reports -1s. With a free target end an empty query aligns with
    the empty range at 0 at no cost, and a query against an empty target costs its length.

    Examples
    --------
    >>> [a.tolist() for a in trivial_results(np.array([0, 3]), np.array([2, 0]), 0, -1)]
    [[2, 3], [0, 0], [2, 0]]
    """
    q_len = np.asarray(q_len, dtype=np.int64)
    t_len = np.asarray(t_len, dtype=np.int64)
    if mode == EDIT_GLOBAL:
        distance, end = np.abs(q_len - t_len), t_len
    else:
        distance, end = q_len, np.zeros_like(q_len)
    over = (distance > k) if k >= 0 else np.zeros(len(distance), dtype=bool)
    distance, start, end = (np.where(over, -1, values).astype(np.int32)
                            for values in (distance, np.zeros_like(q_len), end))
    return distance, start, end


def trivial_cigars(q_len: np.ndarray, start: np.ndarray, end: np.ndarray) -> PackedCigars:
    """The CIGARs of the pairs of :func:`trivial_results` from their query lengths and target
    ranges: the query's insertions, then the range's deletions (no runs for an empty pair,
    None where ``start < 0``), as a traceback writes them.

    Examples
    --------
    >>> trivial_cigars(np.array([0, 3, 0, 2]), np.array([0, 0, 0, -1]),
    ...                np.array([2, 0, 0, -1])).tolist()
    ['2D', '3I', '', None]
    """
    present = np.asarray(start) >= 0
    runs = np.stack((np.where(present, q_len, 0), np.where(present, np.asarray(end) - start, 0)),
                    axis=1).astype(np.int64)
    ops = np.broadcast_to(np.array([OP_INSERTION, OP_DELETION], dtype=np.uint8), runs.shape)
    kept = runs > 0  # row by row: a pair's insertions, then its deletions
    offsets = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum(kept.sum(axis=1), out=offsets[1:])
    return PackedCigars(ops[kept], runs[kept], offsets, present)


def traceback_bytes(q_len: Any, span: Any) -> Any:
    """Bytes of the delta vectors that a full traceback stores for a query of ``q_len`` against
    a target range of ``span`` (arrays of NumPy or CuPy): two 64-row words a row block, for
    every column of the range and the one before it, as the GPU stores them. The CPU's
    traceback keeps the horizontal deltas too (four words, twice these bytes), so that its walk
    reads single bits; the rule stays the GPU's, the same on both backends, so that a pair
    gets its CIGAR the same way on each.

    Examples
    --------
    >>> traceback_bytes(np.array([200]), np.array([300])).tolist()
    [19264]
    """
    return (span + 1) * ((q_len + 63) // 64) * 16


def needs_linear(q_len: Any, span: Any) -> Any:
    """Which pairs (a query of ``q_len`` against a target range of ``span``, NumPy or CuPy
    arrays) get their CIGAR in linear space (:mod:`._linear`) rather than from a full
    traceback: those of at least ``config.LONG_EDIT_MIN_CELLS`` cells, which a full traceback
    would run on one thread, and those whose stored delta vectors would exceed
    ``config.PATH_MAX_BYTES_PER_PAIR`` (the same rule on every backend).

    Examples
    --------
    >>> from gpualign import config
    >>> with config.override(LONG_EDIT_MIN_CELLS=100, PATH_MAX_BYTES_PER_PAIR=1 << 30):
    ...     needs_linear(np.array([5, 10, 20]), np.array([5, 10, 2])).tolist()
    [False, True, False]
    """
    cells = q_len.astype(np.int64) * span
    return (cells >= config.LONG_EDIT_MIN_CELLS) | (
        traceback_bytes(q_len, span) > config.PATH_MAX_BYTES_PER_PAIR)
