"""CIGARs in linear space: Hirschberg's divide and conquer over Myers' bit-vector rows, shared
by both edit-distance backends (NumPy only, so a CUDA run loads no Numba).

A subproblem is a query range ``[qa, qb)`` against a target range ``[ta, tb)`` of one pair,
aligned globally. One that is too large to trace in full is cut at its middle query row
``mid``: the last row of ``query[qa:mid]`` against every target prefix, and the last row of
the reversed ``query[mid:qb]`` against every reversed target suffix, give the cost of passing
row ``mid`` at each target column; an optimal alignment passes where their sum is smallest, so
the two halves on either side of that column are aligned on their own. The subproblems of a
level are independent: each level is one batch for the backend (one prange or one launch of
every subproblem), and the memory is that of the rows, ``O(m + n)`` per pair.

Every pair has a buffer of ``m + n`` operation bytes filled with :data:`NO_OP`. A leaf from
query row ``qa`` and target column ``ta`` writes its operations (first first) from position
``qa + ta``: it makes at most ``(qb - qa) + (tb - ta)`` of them, and the next leaf on the path
starts at ``qb + tb``, so leaves never overlap and the positions that are not :data:`NO_OP`,
read in order, are the pair's alignment.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._progress import Portion
from ..cigar import PackedCigars
from ..codes import OP_MATCH

__all__ = ["NO_OP", "edits_of_buffer", "hirschberg", "packed_of_buffer"]

#: Filler of the operation buffers: no operation written there.
NO_OP = 255


def hirschberg(q_len: np.ndarray, t_len: np.ndarray, distance: np.ndarray,
               is_leaf: Callable[[np.ndarray, np.ndarray], np.ndarray],
               split_columns: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]],
               trace_leaves: Callable[..., None], progress: Callable[[int], object] | None = None,
               share: int | None = None) -> int:
    """Drive the levels of Hirschberg's recursion for pairs of ``q_len`` x ``t_len`` symbols.

    Parameters
    ----------
    q_len, t_len : np.ndarray of int64
        Query and target lengths of the pairs (global alignments).
    distance : np.ndarray of int64
        Their edit distances: a subproblem's rows need only the diagonal band of its distance
        (Ukkonen), and the distances of its halves come with its split.
    is_leaf : callable
        ``is_leaf(rows, columns)``: which subproblems of these sizes to trace in full
        (subproblems of at most one row are leaves anyway: they cannot be cut).
    split_columns : callable
        ``split_columns(pair, qa, mid, qb, ta, tb, distance)``: for each subproblem (arrays,
        ``distance`` its edit distance), a target column ``j`` in ``[ta, tb]`` where an
        optimal alignment passes from query row ``mid - 1`` to row ``mid``: one that minimizes
        ``D(query[qa:mid], target[ta:j]) + D(query[mid:qb], target[j:tb])``; and those two
        distances (three arrays).
    trace_leaves : callable
        ``trace_leaves(pair, qa, qb, ta, tb)``: write each subproblem's operations into its
        pair's buffer from position ``qa + ta`` (see the module's description).
    progress : callable, optional
        Called with a number of cells after each level: ``share`` in all, in proportion to
        the cells of the levels' subproblems (about twice the pairs' cells).
    share : int, optional
        What ``progress`` receives in all (default: the pairs' cells).

    Returns
    -------
    int
        The number of levels.

    Examples
    --------
    >>> leaves = []
    >>> def halves(pair, qa, mid, qb, ta, tb, distance):  # a stand-in that cuts in the middle
    ...     return (ta + tb) // 2, distance // 2, distance - distance // 2
    >>> hirschberg(np.array([4]), np.array([3]), np.array([1]),
    ...            lambda rows, columns: rows * columns <= 2, halves,
    ...            lambda *leaf: leaves.extend(zip(*(a.tolist() for a in leaf))))
    3
    >>> leaves  # (pair, qa, qb, ta, tb): the path's pieces, cut at row 2, then at row 3
    [(0, 0, 2, 0, 1), (0, 2, 3, 1, 2), (0, 3, 4, 2, 3)]
    """
    pair = np.arange(len(q_len), dtype=np.int64)
    qa = np.zeros(len(q_len), dtype=np.int64)
    ta = np.zeros(len(q_len), dtype=np.int64)
    qb = np.asarray(q_len, dtype=np.int64).copy()
    tb = np.asarray(t_len, dtype=np.int64).copy()
    cost = np.asarray(distance, dtype=np.int64).copy()
    cells = int((qb * tb).sum())
    # A level's splits compute both halves of each subproblem, and the levels halve them.
    portion = Portion(progress, cells if share is None else share, 2 * cells)
    levels, level_cells = 0, 0
    while len(pair):
        portion.advance(level_cells)  # the level before this one is done (the last: finish)
        levels += 1
        rows, columns = qb - qa, tb - ta
        level_cells = int((rows * columns).sum())
        leaf = (rows <= 1) | np.asarray(is_leaf(rows, columns), dtype=bool)
        if leaf.any():
            trace_leaves(pair[leaf], qa[leaf], qb[leaf], ta[leaf], tb[leaf])
        pair, qa, qb, ta, tb, cost = (a[~leaf] for a in (pair, qa, qb, ta, tb, cost))
        if not len(pair):
            break
        mid = (qa + qb) // 2
        cut, top, bottom = (np.asarray(a, dtype=np.int64)
                            for a in split_columns(pair, qa, mid, qb, ta, tb, cost))
        # The two halves, the top one first; a half with neither rows nor columns has no
        # operations.
        pair, qa, qb, ta, tb, cost = (np.stack(halves, axis=1).ravel() for halves in (
            (pair, pair), (qa, mid), (mid, qb), (ta, cut), (cut, tb), (top, bottom)))
        keep = (qb > qa) | (tb > ta)
        pair, qa, qb, ta, tb, cost = (a[keep] for a in (pair, qa, qb, ta, tb, cost))
    portion.finish()
    return levels


def packed_of_buffer(buffer: np.ndarray, base: np.ndarray) -> PackedCigars:
    """The CIGAR of each pair from the operation buffers of :func:`hirschberg`: pair ``p``'s
    buffer is ``buffer[base[p]:base[p + 1]]``.

    Examples
    --------
    >>> buffer = np.array([0, 255, 3, 1, 255], dtype=np.uint8)
    >>> packed_of_buffer(buffer, np.array([0, 3, 5])).tolist()
    ['1=1D', '1X']
    """
    written = buffer != NO_OP
    counts = np.zeros(len(buffer) + 1, dtype=np.int64)
    np.cumsum(written, out=counts[1:])
    return PackedCigars.from_ops(buffer[written], counts[np.asarray(base, dtype=np.int64)])


def edits_of_buffer(buffer: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The edits (operations other than ``=``) of each pair's alignment in the operation
    buffers of :func:`hirschberg`: its edit distance, the alignment being optimal.

    Examples
    --------
    >>> edits_of_buffer(np.array([0, 255, 3, 1, 255], dtype=np.uint8), np.array([0, 3, 5]))
    array([1, 1])
    """
    counts = np.zeros(len(buffer) + 1, dtype=np.int64)
    np.cumsum((buffer != OP_MATCH) & (buffer != NO_OP), out=counts[1:])
    base = np.asarray(base, dtype=np.int64)
    return counts[base[1:]] - counts[base[:-1]]
