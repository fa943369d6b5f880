"""Score passes in linear space for the CPU backend (Numba): the last DP rows and best cells
that the Myers-Miller driver (:mod:`._linear`) asks for.

A pass keeps one row of H and F (``n + 1`` values) and one column of H and E per strip of rows:
``O(m + n)`` memory whatever the size. Many subproblems run side by side, one per core; a
large one (``config.ALIGN_CPU_WAVEFRONT_MIN_CELLS`` cells or more, while the call has fewer
of them than threads) runs alone on every core, cut into tiles of rows x columns that are
computed a diagonal of tiles at a time: tile (s, t) needs the bottom row of (s-1, t) (from the
row buffer) and the right column of (s, t-1) (from its strip's column buffer), both of the
previous diagonal.

Recurrences and ties are those of ``_cpu._fill``: E is a horizontal gap (``D``), F a vertical
one (``I``); the best cells of the ``SCOPE_*`` of :mod:`._linear`.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .. import config
from ._linear import (
    SCOPE_ANY,
    SCOPE_CORNER,
    SCOPE_LAST_ROW,
    SCOPE_START_EDGE,
    SCOPE_START_ROW,
    PairCodes,
    Problems,
)

_NEG = -(1 << 60)
#: Tiles per side of one large subproblem, per thread: enough that the diagonals of tiles
#: keep every thread busy but the first and last few.
_TILES_PER_THREAD = 8
#: Most columns of one tile: its stretch of the row buffers (16 bytes a column) stays in the
#: L1 cache while the tile's rows pass over it.
_TILE_COLUMNS = 2048


@njit(cache=True, nogil=True)
def _oriented(codes, offsets, index, start, end, reverse):
    """``codes`` of sequence ``index``, ``[start:end]``, reversed when ``reverse``: a copy."""
    first = offsets[index]
    if reverse:
        return codes[first + start:first + end][::-1].copy()
    return codes[first + start:first + end].copy()


@njit(cache=True, nogil=True)
def _strip_index(i, strip_rows):
    """Where row ``i``'s entry of the column buffers is: strip s holds rows ``s*R .. (s+1)*R``
    (``R + 1`` entries, the first row shared with the strip above) at ``s*(R+1) ..``; row i>0
    is in strip ``(i-1) // R``."""
    return i + ((i - 1) // strip_rows if i > 0 else 0)


@njit(cache=True, nogil=True)
def _borders(h, f, col_h, col_e, m, strip_rows, gap_open, gap_extend, top_excess, free_top,
             free_left):
    """Row 0 into the row buffers, column 0 into every strip's column buffers."""
    n = len(h) - 1
    excess = gap_open - gap_extend
    h[0] = 0
    f[0] = _NEG
    for j in range(1, n + 1):
        h[j] = 0 if free_top else -(excess + j * gap_extend)
        f[j] = _NEG
    strips = max(1, (m + strip_rows - 1) // strip_rows)
    for s in range(strips):
        for i in range(s * strip_rows, min(m, (s + 1) * strip_rows) + 1):
            col_h[i + s] = 0 if free_left or i == 0 else -(top_excess + i * gap_extend)
            col_e[i + s] = _NEG


@njit(cache=True, nogil=True)
def _tile(a, b, table, gap_open, gap_extend, floor_zero, track, r0, r1, c0, c1, strip, h, f,
          col_h, col_e, best, value_type):
    """Rows ``r0+1 .. r1`` x columns ``c0+1 .. c1``: the row buffers ``h``, ``f`` hold row r0
    on entry and row r1 on return; the strip's column buffers hold column c0 on entry and c1
    on return (row r0's entry too: the corner that the next tile starts from). With
    ``track``, ``best`` (score, row, column) keeps the best cell: the larger score, then the
    smaller column, then the smaller row. The work rows hold ``value_type`` (see
    :func:`_value_type`).

    A row takes three passes over the tile's columns (Farrar's "scan"). The first computes F and
    the best of the diagonal and F at every column, with no dependency between columns (the
    compiler vectorizes it; substitution scores come from a profile of the tile's target
    symbols). The second adds the horizontal gaps: ``E[k] = max(E[k-1] - gap_extend,
    T[k-1] - gap_open)`` with T the first pass's value (an E opened after an E never beats
    extending it), which plus ``k * gap_extend`` is a running maximum of candidates that the
    first pass prepares: one operation per cell on the chain of dependencies instead of the
    recurrence's four. The third takes the larger of the two."""
    width = c1 - c0
    profile = np.empty((table.shape[0], width + 1), dtype=value_type)
    for c in range(table.shape[0]):
        for k in range(1, width + 1):
            profile[c, k] = table[c, b[c0 + k - 1]]
    ramp = (np.arange(width + 2) * gap_extend).astype(value_type)
    above = np.empty(width + 1, dtype=value_type)  # H of the previous row, columns c0 .. c1
    here = np.empty(width + 1, dtype=value_type)
    partial = np.empty(width + 1, dtype=value_type)  # max(diagonal, F), floored
    # E[k] + k * gap_extend opened from column k - 1: partial[k - 1] - gap_open + ramp[k].
    opened = np.empty(width + 2, dtype=value_type)
    above[0] = col_h[r0 + strip]
    above[1:] = h[c0 + 1:c1 + 1]
    f_row = f[c0 + 1:c1 + 1]
    corner_next = h[c1]
    for i in range(r0 + 1, r1 + 1):
        scores = profile[a[i - 1]]
        for k in range(1, width + 1):
            fk = max(above[k] - gap_open, f_row[k - 1] - gap_extend)
            f_row[k - 1] = fk
            value = max(above[k - 1] + scores[k], fk)
            value = max(value, 0) if floor_zero else value
            partial[k] = value
            opened[k + 1] = value - gap_open + ramp[k + 1]
        left = col_h[i + strip]
        partial[0] = left
        opened[1] = left - gap_open + ramp[1]
        here[0] = left
        running = col_e[i + strip]  # E[k] + k * gap_extend, from E at column c0
        for k in range(1, width + 1):
            running = max(running, opened[k])
            here[k] = running
        e = running - ramp[width]
        # H in a pass of its own, which the compiler vectorizes (inside the scan it would not).
        for k in range(1, width + 1):
            here[k] = max(partial[k], here[k] - ramp[k])
        col_h[i + strip] = here[width]
        col_e[i + strip] = e
        if track:
            for k in range(1, width + 1):
                j = c0 + k
                if here[k] > best[0] or (here[k] == best[0] and (
                        j < best[2] or (j == best[2] and i < best[1]))):
                    best[0], best[1], best[2] = here[k], i, j
        above, here = here, above
    h[c0 + 1:c1 + 1] = above[1:]
    col_h[r0 + strip] = corner_next


@njit(cache=True, nogil=True)
def _finish(h, f, col_h, m, strip_rows, scope, gap_extend, top_excess, free_left, best):
    """Column 0 of the last row into the row buffers (``F[0] = H[0]``: a vertical gap); the
    best cell of ``scope``: ``(score, row, column)``."""
    n = len(h) - 1
    h[0] = 0 if free_left else -(top_excess + m * gap_extend)
    f[0] = _NEG if free_left else h[0]
    if scope == SCOPE_CORNER:
        return h[n], m, n
    if scope == SCOPE_ANY:
        top, row, column = 0, 0, 0
        for s in range(best.shape[0]):
            if best[s, 0] > top or (best[s, 0] == top and (
                    best[s, 2] < column or (best[s, 2] == column and best[s, 1] < row))):
                top, row, column = best[s, 0], best[s, 1], best[s, 2]
        return top, row, column
    first = 0 if scope == SCOPE_START_ROW or scope == SCOPE_START_EDGE else 1
    if scope == SCOPE_LAST_ROW or scope == SCOPE_START_ROW:
        top, column = _NEG, first
        for j in range(first, n + 1):
            if h[j] > top:
                top, column = h[j], j
        return top, m, column
    # The last column (first best row), then the last row before it, which wins ties.
    top, row = _NEG, first
    for i in range(first, m + 1):
        value = col_h[_strip_index(i, strip_rows)]
        if value > top:
            top, row = value, i
    row_top, column = _NEG, first
    for j in range(first, n):
        if h[j] > row_top:
            row_top, column = h[j], j
    if row_top >= top:
        return row_top, m, column
    return top, row, n


@njit(cache=True, parallel=True)
def _many(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, pair, a_start, a_end,
          b_start, b_end, reverse, top_excess, skip, table, gap_open, gap_extend, free_top,
          free_left, floor_zero, scope, tile_columns, value_type, row_offsets, out_h, out_f,
          score, i_end, j_end):
    """Subproblem ``k`` of ``pair`` .. ``top_excess`` on one core, for every ``k`` side by
    side but those to ``skip``: its last rows into ``out_h``/``out_f`` at ``row_offsets[k]``,
    its best cell into ``score``, ``i_end``, ``j_end``."""
    for k in prange(len(pair)):
        if skip[k]:
            continue
        p = pair[k]
        a = _oriented(q_codes, q_offsets, q_index[p], a_start[k], a_end[k], reverse[k])
        b = _oriented(t_codes, t_offsets, t_index[p], b_start[k], b_end[k], reverse[k])
        m, n = len(a), len(b)
        h = out_h[row_offsets[k]:row_offsets[k + 1]]
        f = out_f[row_offsets[k]:row_offsets[k + 1]]
        col_h = np.empty(m + 1, dtype=np.int64)
        col_e = np.empty(m + 1, dtype=np.int64)
        best = np.zeros((1, 3), dtype=np.int64)
        _borders(h, f, col_h, col_e, m, m, gap_open, gap_extend, top_excess[k], free_top,
                 free_left)
        for c0 in range(0, n, tile_columns):
            _tile(a, b, table, gap_open, gap_extend, floor_zero, scope == SCOPE_ANY, 0, m, c0,
                  min(n, c0 + tile_columns), 0, h, f, col_h, col_e, best[0], value_type)
        score[k], i_end[k], j_end[k] = _finish(h, f, col_h, m, m, scope, gap_extend,
                                               top_excess[k], free_left, best)


@njit(cache=True, parallel=True)
def _wavefront(a, b, table, gap_open, gap_extend, floor_zero, track, strip_rows, tile_columns,
               h, f, col_h, col_e, best, value_type):
    """One subproblem on every core: the tiles of each anti-diagonal side by side."""
    m, n = len(a), len(b)
    strips = (m + strip_rows - 1) // strip_rows
    tiles = (n + tile_columns - 1) // tile_columns
    for d in range(strips + tiles - 1):
        low, high = max(0, d - tiles + 1), min(strips - 1, d)
        for s in prange(low, high + 1):
            t = d - s
            _tile(a, b, table, gap_open, gap_extend, floor_zero, track, s * strip_rows,
                  min(m, (s + 1) * strip_rows), t * tile_columns,
                  min(n, (t + 1) * tile_columns), s, h, f, col_h, col_e, best[s], value_type)


def _value_type(problems: Problems, table: np.ndarray, gap_open: int, gap_extend: int,
                ) -> type:
    """The type of the tiles' work rows: int32 (twice the SIMD lanes of int64) when every
    value they hold fits with room to spare, else int64. No value of a subproblem lies
    further from 0 than its ``m + n`` steps of the largest substitution or gap cost; the scan's
    candidates add up to a tile's width of ``gap_extend``."""
    if len(problems) == 0:
        return np.int32
    steps = int(np.max(problems.a_end - problems.a_start + problems.b_end - problems.b_start))
    cost = int(np.abs(table).max()) + gap_open + gap_extend
    return np.int32 if cost * (steps + _TILE_COLUMNS + 4) < 1 << 30 else np.int64


def _alone(sequences: PairCodes, problems: Problems, k: int, table: np.ndarray, gap_open: int,
           gap_extend: int, free_top: bool, free_left: bool, floor_zero: bool, scope: int,
           h: np.ndarray, f: np.ndarray, value_type: type) -> tuple[int, int, int]:
    """Subproblem ``k`` on every core (:func:`_wavefront`): its last rows into ``h``, ``f``;
    its best cell."""
    p = problems.pair[k]
    a = _oriented(sequences.q_codes, sequences.q_offsets, sequences.q_index[p],
                  problems.a_start[k], problems.a_end[k], problems.reverse[k])
    b = _oriented(sequences.t_codes, sequences.t_offsets, sequences.t_index[p],
                  problems.b_start[k], problems.b_end[k], problems.reverse[k])
    m, n = len(a), len(b)
    side = _TILES_PER_THREAD * numba.get_num_threads()
    strip_rows = max(1, -(-m // side))
    tile_columns = min(_TILE_COLUMNS, max(1, -(-n // side)))
    strips = -(-m // strip_rows)
    col_h = np.empty(m + strips, dtype=np.int64)
    col_e = np.empty(m + strips, dtype=np.int64)
    best = np.zeros((strips, 3), dtype=np.int64)
    _borders(h, f, col_h, col_e, m, strip_rows, gap_open, gap_extend, problems.top_excess[k],
             free_top, free_left)
    _wavefront(a, b, table, gap_open, gap_extend, floor_zero, scope == SCOPE_ANY, strip_rows,
               tile_columns, h, f, col_h, col_e, best, value_type)
    return _finish(h, f, col_h, m, strip_rows, scope, gap_extend, problems.top_excess[k],
                   free_left, best)


def score_pass(sequences: PairCodes, problems: Problems, table: np.ndarray, gap_open: int,
               gap_extend: int, free_top: bool, free_left: bool, floor_zero: bool, scope: int,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The DP of every subproblem in linear space (both sides non-empty).

    Parameters
    ----------
    sequences : PairCodes
        The pairs that ``problems.pair`` indexes.
    problems : Problems
        The subproblems (see :mod:`._linear`).
    table : np.ndarray of int64
        Substitution scores, ``table[query code, target code]``.
    gap_open, gap_extend : int
        Gap costs: a gap of length L costs ``gap_open + (L-1)*gap_extend``.
    free_top, free_left : bool
        Row 0 / column 0 scores 0 (free start) rather than a gap.
    floor_zero : bool
        Cells are floored at 0 (Smith-Waterman).
    scope : int
        A ``SCOPE_*`` of :mod:`._linear`: which cells may end the alignment.

    Returns
    -------
    h, f : np.ndarray of int64
        The last rows (offsets ``problems.row_offsets()``).
    score, i_end, j_end : np.ndarray of int64
        The best cell of each subproblem.

    Examples
    --------
    >>> table = np.where(np.eye(5, dtype=bool), 2, -3)
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2, 3], np.uint8)],
    ...                              [np.array([3, 0, 1, 2, 2], np.uint8)])
    >>> whole = Problems.of(pair=[0], a_start=0, a_end=4, b_start=0, b_end=5, reverse=0,
    ...                     top_excess=3, bottom_excess=3)
    >>> h, f, score, i, j = score_pass(codes, whole, table, 5, 2, True, False, False,
    ...                                SCOPE_LAST_ROW)
    >>> h.tolist(), (int(score[0]), int(i[0]), int(j[0]))
    ([-11, -7, -7, -3, 1, 3], (3, 4, 5))
    """
    table = np.ascontiguousarray(table, dtype=np.int64)
    offsets = problems.row_offsets()
    h = np.empty(int(offsets[-1]), dtype=np.int64)
    f = np.empty_like(h)
    count = len(problems)
    score = np.empty(count, dtype=np.int64)
    i_end = np.empty(count, dtype=np.int64)
    j_end = np.empty(count, dtype=np.int64)
    cells = problems.cells()
    value_type = _value_type(problems, table, gap_open, gap_extend)
    large = np.flatnonzero(cells >= config.ALIGN_CPU_WAVEFRONT_MIN_CELLS)
    if len(large) >= numba.get_num_threads():
        large = large[:0]
    for k in large.tolist():
        score[k], i_end[k], j_end[k] = _alone(
            sequences, problems, k, table, gap_open, gap_extend, free_top, free_left,
            floor_zero, scope, h[offsets[k]:offsets[k + 1]], f[offsets[k]:offsets[k + 1]],
            value_type)
    alone = np.zeros(count, dtype=np.bool_)
    alone[large] = True
    _many(sequences.q_codes, sequences.q_offsets, sequences.t_codes, sequences.t_offsets,
          sequences.q_index, sequences.t_index, problems.pair, problems.a_start,
          problems.a_end, problems.b_start, problems.b_end, problems.reverse,
          problems.top_excess, alone, table, gap_open, gap_extend, free_top, free_left,
          floor_zero, scope, _TILE_COLUMNS, value_type, offsets, h, f, score, i_end, j_end)
    return h, f, score, i_end, j_end
