"""Numba kernels of the linear-space driver (``_linear.py``): for engines that return their
rows to the host (the CPU engine's), the search of the best join of each split in its two
halves' rows and the gather of kept rows into the pool the next level takes them from; for
every engine, the paths written from their pieces, their operations counted and their scores
computed.

Apart from ``_linear.py`` so that the driver loads Numba only where it runs these.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..codes import OP_DELETION, OP_MISMATCH

__all__ = ["best_joins", "copy_rows", "count_op", "score_paths", "write_pieces"]


@njit(cache=True, parallel=True)
def best_joins(h, f, given_h, given_f, top_start, bottom_start, length, excess, column,
               through_gap, score):
    """The search of ``_linear._joins``, one split a thread: the first column of the best
    join (its score, whether through a vertical gap)."""
    computed = len(h)
    for k in prange(len(top_start)):
        top, bottom = top_start[k], bottom_start[k] + length[k] - 1
        top_h, top_f = (h, f) if top < computed else (given_h, given_f)
        bottom_h, bottom_f = (h, f) if bottom < computed else (given_h, given_f)
        if top >= computed:
            top -= computed
        if bottom >= computed:
            bottom -= computed
        best, best_column, best_gap = -(1 << 62), 0, False
        for j in range(length[k]):
            cell = top_h[top + j] + bottom_h[bottom - j]
            gap = top_f[top + j] + bottom_f[bottom - j] + excess
            value = cell if cell >= gap else gap
            if value > best:
                best, best_column, best_gap = value, j, cell < gap
        column[k], through_gap[k], score[k] = best_column, best_gap, best


@njit(cache=True, parallel=True)
def copy_rows(h, f, more_h, more_f, start, length, to, out_h, out_f):
    """The copies of ``_linear._gather``, one row a thread."""
    for k in prange(len(start)):
        first = start[k]
        from_h, from_f = (h, f) if first < len(h) else (more_h, more_f)
        if first >= len(h):
            first -= len(h)
        out_h[to[k]:to[k] + length[k]] = from_h[first:first + length[k]]
        out_f[to[k]:to[k] + length[k]] = from_f[first:first + length[k]]


@njit(cache=True, parallel=True)
def write_pieces(paths, at, length, op, source, leaf_ops):
    """The pieces of ``_linear._assemble``, one a thread (they do not overlap): piece k's
    ``length[k]`` operations at ``paths[at[k]]``, each ``op[k]`` (a gap) or, where ``op[k]``
    is -1, ``leaf_ops`` from ``source[k]`` on."""
    for k in prange(len(length)):
        start, size = at[k], length[k]
        if op[k] >= 0:
            paths[start:start + size] = op[k]
        else:
            paths[start:start + size] = leaf_ops[source[k]:source[k] + size]


@njit(cache=True, parallel=True)
def count_op(ops, offsets, op):
    """How many operations of each path ``ops[offsets[k]:offsets[k + 1]]`` are ``op``, one
    path a thread."""
    counts = np.zeros(len(offsets) - 1, dtype=np.int64)
    for k in prange(len(counts)):
        count = 0
        for at in range(offsets[k], offsets[k + 1]):
            count += ops[at] == op
        counts[k] = count
    return counts


@njit(cache=True, parallel=True)
def score_paths(ops, offsets, which, a_codes, a_first, b_codes, b_first, table, gap_open,
                gap_extend):
    """The score of each path ``ops[offsets[p]:offsets[p + 1]]``, ``p = which[k]``, over the
    query codes from ``a_codes[a_first[k]]`` and the target codes from ``b_codes[b_first[k]]``,
    one path a thread: ``table`` for each match or mismatch, ``gap_open`` for the first
    operation of a run of insertions or deletions and ``gap_extend`` for each later one."""
    scores = np.zeros(len(which), dtype=np.int64)
    for k in prange(len(which)):
        i, j, score, previous = a_first[k], b_first[k], 0, -1
        for at in range(offsets[which[k]], offsets[which[k] + 1]):
            op = ops[at]
            if op <= OP_MISMATCH:
                score += table[a_codes[i], b_codes[j]]
                i += 1
                j += 1
            else:
                score -= gap_extend if op == previous else gap_open
                if op == OP_DELETION:
                    j += 1
                else:
                    i += 1
            previous = op
        scores[k] = score
    return scores
