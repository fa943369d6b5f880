"""Score passes in linear space for the CPU backend (Numba): the last DP rows and best cells
that the Myers-Miller driver (:mod:`._linear`) asks for.

A pass keeps one row of H and F (``n + 1`` values), one more for each row the linear-space
driver will split at (:func:`last_rows_kept`), and one column of H and E per strip of
rows: ``O(m + n)`` memory whatever the size. The large subproblems of a pass (those of
``config.ALIGN_CPU_WAVEFRONT_MIN_CELLS`` cells or more that one core would still compute after
the others had shared out the rest: :func:`_on_every_core`) run together on every core, each
cut into tiles of rows x columns (about equal in cells) that are computed a diagonal of tiles
at a time, the diagonals of all of them side by side: tile (s, t) needs the bottom row of
(s-1, t) (from the row buffer) and the right column of (s, t-1) (from its strip's column
buffer), both of the previous diagonal. The others then run one per core, dealt out before
they start, the largest first, each to the core with the least work (:func:`_deal`). Inside a
tile, the cells of a row are computed 16 at a time in SIMD registers (Farrar's striped
layout, :func:`_tile`).

Recurrences and ties are those of ``_cpu._fill``: E is a horizontal gap (``D``), F a vertical
one (``I``); the best cells of the ``SCOPE_*`` of :mod:`._linear`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, models, register_model

from .. import config
from ..cigar import offsets_of_counts
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
#: Tiles side by side on the longest diagonal of the subproblems that run on every core
#: together, per thread: enough that the diagonals of tiles keep every thread busy but the first
#: and last few.
_TILES_PER_THREAD = 8
#: Most columns of one tile: its stretch of the row buffers (16 bytes a column) stays in the
#: L1 cache while the tile's rows pass over it.
_TILE_COLUMNS = 2048
#: Lanes of the striped vectors of the tiles (:func:`_tile`): one AVX-512 register of int32.
_LANES = 16
#: The time of cells on every core in tiles (:func:`_together`) against the same cells one
#: subproblem per core, where those keep every core busy: the first and last diagonals leave
#: cores idle (on 16 Xeon cores, 36-38 GCUPS against 40-44 in a 100 kb pair's CIGAR).
_WAVEFRONT_COST = 1.25


class _Lanes(types.Type):
    """``_LANES`` integers of one type as one value, an LLVM vector: the compiler keeps it in
    SIMD registers (AVX-512: one of int32; AVX2: two) where arrays of lanes would stay in
    memory, and no aliasing between arrays stops it from using them."""

    def __init__(self, dtype: types.Integer) -> None:
        self.dtype = dtype
        super().__init__(name=f"Lanes({dtype})")


@register_model(_Lanes)
class _LanesModel(models.PrimitiveModel):
    """A :class:`_Lanes` is an LLVM vector of its integer type."""

    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.VectorType(ir.IntType(fe_type.dtype.bitwidth), _LANES))


def _vector_pointer(context, builder, array_type, array, index):
    data = context.make_array(array_type)(context, builder, array).data
    lanes = ir.VectorType(context.get_value_type(array_type.dtype), _LANES)
    return builder.bitcast(builder.gep(data, [index]), lanes.as_pointer())


@intrinsic
def _load(typingctx, array, index):
    """The lanes ``array[index:index + _LANES]`` of a 1-D array."""
    def codegen(context, builder, signature, args):
        pointer = _vector_pointer(context, builder, signature.args[0], *args)
        return builder.load(pointer, align=signature.args[0].dtype.bitwidth // 8)
    return _Lanes(array.dtype)(array, index), codegen


@intrinsic
def _store(typingctx, array, index, lanes):
    """``array[index:index + _LANES] = lanes``."""
    def codegen(context, builder, signature, args):
        pointer = _vector_pointer(context, builder, signature.args[0], *args[:2])
        builder.store(args[2], pointer, align=signature.args[0].dtype.bitwidth // 8)
    return types.none(array, index, lanes), codegen


@intrinsic
def _splat(typingctx, value):
    """``value`` in every lane."""
    def codegen(context, builder, signature, args):
        lanes = context.get_value_type(signature.return_type)
        one = builder.insert_element(ir.Constant(lanes, None), args[0], ir.IntType(32)(0))
        return builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32),
                                                                          _LANES), None))
    return _Lanes(value)(value), codegen


@intrinsic
def _lane(typingctx, lanes, index):
    """Lane ``index`` of ``lanes``."""
    def codegen(context, builder, signature, args):
        return builder.extract_element(*args)
    return lanes.dtype(lanes, index), codegen


@intrinsic
def _with_lane(typingctx, lanes, index, value):
    """``lanes`` with ``value`` in lane ``index``."""
    def codegen(context, builder, signature, args):
        return builder.insert_element(args[0], args[2], args[1])
    return lanes(lanes, index, value), codegen


def _lanewise(operation):
    """An intrinsic ``f(x, y)`` of two ``_Lanes`` of one type, lane by lane."""
    @intrinsic
    def lanewise(typingctx, x, y):
        if not (isinstance(x, _Lanes) and x == y):
            return None
        return x(x, y), lambda context, builder, signature, args: operation(builder, *args)
    return lanewise


_add = _lanewise(lambda builder, x, y: builder.add(x, y))
_sub = _lanewise(lambda builder, x, y: builder.sub(x, y))
_max = _lanewise(lambda builder, x, y: builder.select(builder.icmp_signed(">", x, y), x, y))


@intrinsic
def _where_greater(typingctx, x, y, then, otherwise):
    """Lane by lane, ``then`` where ``x > y``, else ``otherwise``."""
    def codegen(context, builder, signature, args):
        return builder.select(builder.icmp_signed(">", args[0], args[1]), args[2], args[3])
    return then(x, y, then, otherwise), codegen


@intrinsic
def _shifted(typingctx, lanes, by, fill):
    """``lanes`` moved up ``by`` lanes (a constant), the lanes of ``fill`` below them."""
    if not (isinstance(by, types.IntegerLiteral) and lanes == fill):
        return None
    source = [lane - by.literal_value if lane >= by.literal_value else _LANES + lane
              for lane in range(_LANES)]

    def codegen(context, builder, signature, args):
        mask = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), source)
        return builder.shuffle_vector(args[0], args[2], mask)
    return lanes(lanes, by, fill), codegen


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
def _keep_best(column_best, at, value, row):
    """Vector ``value`` of row ``row`` into the best of its columns at ``at``."""
    top = _load(column_best, at)
    _store(column_best, at, _max(value, top))
    _store(column_best, at + _LANES, _where_greater(value, top, row,
                                                    _load(column_best, at + _LANES)))


@njit(cache=True, nogil=True)
def _tile(a, b, table, gap_open, gap_extend, floor_zero, track, r0, r1, c0, c1, strip, h, f,
          col_h, col_e, best, value_type, keep_rows, kept_h, kept_f):
    """Rows ``r0+1 .. r1`` x columns ``c0+1 .. c1``: the row buffers ``h``, ``f`` hold row r0
    on entry and row r1 on return; the strip's column buffers hold column c0 on entry and c1
    on return (row r0's entry too: the corner that the next tile starts from). With
    ``track``, ``best`` (score, row, column) keeps the best cell: the larger score, then the
    smaller column, then the smaller row. The work rows hold ``value_type`` (see
    :func:`_value_type`). Row ``keep_rows[d]``, where the tile computes it, is copied into
    ``kept_h[d]``, ``kept_f[d]`` (columns ``c0+1 .. c1``, at the row buffers' offsets).

    Farrar's striped layout: column ``c0 + 1 + lane * segments + t`` of a row is lane ``lane``
    of vector ``t`` (a :class:`_Lanes`, one SIMD register), so that the lanes of a vector never
    depend on one another. A row is one pass over its vectors that computes F, H and, in each
    lane, the horizontal gaps (E) carried from vector to vector: exact but for the E that
    enters a lane from the lanes before it. After it, a prefix maximum over the lanes gives
    the E entering each lane: the E leaving the lane before it, its own from the pass or the
    one that entered it extended across its ``segments`` columns. The next row's pass raises
    each cell of this one to that entering E extended to it as it reads it (a cell so raised
    holds that E, and opens no gap better than extending it); a last pass raises the tile's
    last row. Unlike Farrar's lazy-F loop, whose rounds depend on the data (global
    alignments far from the diagonal take all of them), this costs the same on every input.

    The E of column c1, which the next tile starts from, is the larger of the E the pass gave
    its cell and the entering E extended to it. The columns that pad the last vectors score 0
    against every symbol and are never read back: nothing flows from a column to an earlier
    one. With ``track``, every column keeps its best score and the first row of it; the
    tile's best cell is chosen from those at the end."""
    width = c1 - c0
    segments = -(-width // _LANES)
    rows = np.empty(2 * _LANES * segments, dtype=value_type)  # vector t: H at 2t, F at 2t + 1
    # Below every value a work row holds (see _value_type), with room to subtract from.
    low = -(1 << 30) if rows.itemsize == 4 else -(1 << 60)
    profile = np.zeros(table.shape[0] * segments * _LANES, dtype=value_type)
    for t in range(segments):
        for lane in range(_LANES):
            k = lane * segments + t + 1
            at = 2 * _LANES * t + lane
            if k <= width:
                for c in range(table.shape[0]):
                    profile[(c * segments + t) * _LANES + lane] = table[c, b[c0 + k - 1]]
                rows[at], rows[at + _LANES] = h[c0 + k], max(f[c0 + k], low)
            else:
                rows[at], rows[at + _LANES] = 0, low
    # Each column's best cell: score at 2t, row at 2t + 1.
    column_best = np.full(2 * _LANES * segments, low, dtype=value_type)
    snapshot = np.empty(2 * _LANES * segments, dtype=value_type)  # a kept row, raised
    lowest = _splat(value_type(low))
    go = _splat(value_type(gap_open))
    ge = _splat(value_type(gap_extend))
    zero = _splat(value_type(0))
    # E carried across 1, 2, 4 and 8 lanes of ``segments`` columns.
    across = _splat(value_type(segments * gap_extend))
    across_2 = _add(across, across)
    across_4 = _add(across_2, across_2)
    across_8 = _add(across_4, across_4)
    last_t, last_lane = (width - 1) % segments, (width - 1) // segments
    corner_next = h[c1]
    above_left = col_h[r0 + strip]
    tail_extension = _splat(value_type((segments - 1) * gap_extend))
    # The E that the cells of the row before are still to be raised to: rows[H] holds them as
    # the first pass left them, and the next row's first pass raises them as it reads them.
    entering = lowest
    for i in range(r0 + 1, r1 + 1):
        scores = a[i - 1] * segments * _LANES
        left = col_h[i + strip]
        tail = _max(_load(rows, 2 * _LANES * (segments - 1)), _sub(entering, tail_extension))
        diagonal = _shifted(tail, 1, _splat(value_type(above_left)))
        e = _with_lane(lowest, 0, value_type(max(col_e[i + strip] - gap_extend,
                                                 left - gap_open)))
        track_above = track and i > r0 + 1
        row_above = _splat(value_type(i - 1))
        # Vectors up to column c1's, then the rest: the E that column c1 starts with is kept.
        e_last = e
        for start, stop in ((0, last_t), (last_t, segments)):
            if start == last_t:
                e_last = e
            for t in range(start, stop):
                at = 2 * _LANES * t
                above = _max(_load(rows, at), entering)
                entering = _sub(entering, ge)
                if track_above:
                    _keep_best(column_best, at, above, row_above)
                vertical = _max(_sub(above, go), _sub(_load(rows, at + _LANES), ge))
                _store(rows, at + _LANES, vertical)
                value = _max(_max(_add(diagonal, _load(profile, scores + t * _LANES)),
                                  vertical), e)
                if floor_zero:
                    value = _max(value, zero)
                _store(rows, at, value)
                e = _max(_sub(e, ge), _sub(value, go))
                diagonal = above
        # E entering each lane from the lanes before it: the best over the lanes k before it
        # of E leaving lane k on its own (the pass above), extended across the lanes between:
        # a prefix maximum in four steps of 1, 2, 4 and 8 lanes.
        entering = _shifted(e, 1, lowest)
        entering = _max(entering, _sub(_shifted(entering, 1, lowest), across))
        entering = _max(entering, _sub(_shifted(entering, 2, lowest), across_2))
        entering = _max(entering, _sub(_shifted(entering, 4, lowest), across_4))
        entering = _max(entering, _sub(_shifted(entering, 8, lowest), across_8))
        raise_last = _lane(entering, last_lane) - last_t * gap_extend
        col_e[i + strip] = max(_lane(e_last, last_lane), raise_last)
        col_h[i + strip] = max(rows[2 * _LANES * last_t + last_lane], raise_last)
        above_left = left
        for d in range(len(keep_rows)):
            if keep_rows[d] == i:  # row i as the next row's pass will read it
                raised = entering
                for t in range(segments):
                    at = 2 * _LANES * t
                    _store(snapshot, at, _max(_load(rows, at), raised))
                    raised = _sub(raised, ge)
                for k in range(1, width + 1):
                    at = 2 * _LANES * ((k - 1) % segments) + (k - 1) // segments
                    kept_h[d, c0 + k], kept_f[d, c0 + k] = snapshot[at], rows[at + _LANES]
    row_last = _splat(value_type(r1))
    for t in range(segments):
        at = 2 * _LANES * t
        value = _max(_load(rows, at), entering)
        _store(rows, at, value)
        entering = _sub(entering, ge)
        if track:
            _keep_best(column_best, at, value, row_last)
    for k in range(1, width + 1):
        at = 2 * _LANES * ((k - 1) % segments) + (k - 1) // segments
        h[c0 + k], f[c0 + k] = rows[at], rows[at + _LANES]
        if track:
            value, i, j = column_best[at], column_best[at + _LANES], c0 + k
            if value > best[0] or (value == best[0] and (
                    j < best[2] or (j == best[2] and i < best[1]))):
                best[0], best[1], best[2] = value, i, j
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
          b_start, b_end, reverse, top_excess, table, gap_open, gap_extend, free_top, free_left,
          floor_zero, scope, tile_columns, value_type, row_offsets, out_h, out_f, thread_start,
          dealt, score, i_end, j_end, keep, kept_h, kept_f):
    """Subproblems of ``pair`` .. ``top_excess`` on one core each: thread w computes
    ``dealt[thread_start[w]:thread_start[w + 1]]`` (indices), one after the other (one
    iteration of the loop a thread, whatever Numba's threading layer), subproblem k's last
    rows into ``out_h``/``out_f`` at ``row_offsets[k]``, its best cell into ``score``,
    ``i_end``, ``j_end``, and where ``keep[k, d] > 0`` its row ``keep[k, d]`` into
    ``kept_h[d]``, ``kept_f[d]`` (same offsets)."""
    for w in prange(len(thread_start) - 1):
        for x in range(thread_start[w], thread_start[w + 1]):
            _one(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, pair, a_start,
                 a_end, b_start, b_end, reverse, top_excess, table, gap_open, gap_extend,
                 free_top, free_left, floor_zero, scope, tile_columns, value_type, row_offsets,
                 out_h, out_f, dealt[x], score, i_end, j_end, keep, kept_h, kept_f)


@njit(cache=True, nogil=True)
def _one(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, pair, a_start, a_end,
         b_start, b_end, reverse, top_excess, table, gap_open, gap_extend, free_top, free_left,
         floor_zero, scope, tile_columns, value_type, row_offsets, out_h, out_f, k, score,
         i_end, j_end, keep, kept_h, kept_f):
    """Subproblem ``k`` of :func:`_many` on this core: one strip of all its rows, its rows
    ``keep[k]`` copied out as the tiles compute them."""
    p = pair[k]
    a = _oriented(q_codes, q_offsets, q_index[p], a_start[k], a_end[k], reverse[k])
    b = _oriented(t_codes, t_offsets, t_index[p], b_start[k], b_end[k], reverse[k])
    m, n = len(a), len(b)
    lo, hi = row_offsets[k], row_offsets[k + 1]
    h, f = out_h[lo:hi], out_f[lo:hi]
    col_h = np.empty(m + 1, dtype=np.int64)
    col_e = np.empty(m + 1, dtype=np.int64)
    best = np.zeros((1, 3), dtype=np.int64)
    _borders(h, f, col_h, col_e, m, m, gap_open, gap_extend, top_excess[k], free_top,
             free_left)
    kept_rows_h, kept_rows_f = kept_h[:, lo:hi], kept_f[:, lo:hi]
    for c0 in range(0, n, tile_columns):
        c1 = min(n, c0 + tile_columns)
        _tile(a, b, table, gap_open, gap_extend, floor_zero, scope == SCOPE_ANY, 0, m, c0, c1,
              0, h, f, col_h, col_e, best[0], value_type, keep[k], kept_rows_h, kept_rows_f)
    score[k], i_end[k], j_end[k] = _finish(h, f, col_h, m, m, scope, gap_extend,
                                           top_excess[k], free_left, best)


@njit(cache=True, parallel=True)
def _wavefronts(a_codes, a_offsets, b_codes, b_offsets, table, gap_open, gap_extend,
                floor_zero, track, strip_rows, tile_columns, row_start, row_stop, column_start,
                best_start, h, f, col_h, col_e, best, value_type, tile_problem, tile_strip,
                tile_column, diagonal_start, keep, kept_h, kept_f):
    """Subproblems on every core together: the tiles of each anti-diagonal of all of them side
    by side (tile ``x`` is strip ``tile_strip[x]``, tile column ``tile_column[x]`` of
    subproblem ``tile_problem[x]``; diagonal d's tiles are ``diagonal_start[d] ..
    diagonal_start[d + 1]``). Subproblem k: its codes ``a_codes[a_offsets[k]:a_offsets[k +
    1]]`` (already oriented) and likewise b, its row buffers ``h``, ``f`` from
    ``row_start[k]`` to ``row_stop[k]``, its strips' column buffers from ``column_start[k]``,
    their best cells from row ``best_start[k]`` of ``best``, its rows ``keep[k]`` into
    ``kept_h``, ``kept_f`` (at ``row_start[k]``) as the tiles compute them."""
    for d in range(len(diagonal_start) - 1):
        for x in prange(diagonal_start[d], diagonal_start[d + 1]):
            k, s, t = tile_problem[x], tile_strip[x], tile_column[x]
            a = a_codes[a_offsets[k]:a_offsets[k + 1]]
            b = b_codes[b_offsets[k]:b_offsets[k + 1]]
            rows, columns = strip_rows[k], tile_columns[k]
            c0, c1 = t * columns, min(len(b), (t + 1) * columns)
            _tile(a, b, table, gap_open, gap_extend, floor_zero, track, s * rows,
                  min(len(a), (s + 1) * rows), c0, c1, s,
                  h[row_start[k]:row_stop[k]], f[row_start[k]:row_stop[k]],
                  col_h[column_start[k]:column_start[k + 1]],
                  col_e[column_start[k]:column_start[k + 1]], best[best_start[k] + s],
                  value_type, keep[k], kept_h[:, row_start[k]:row_stop[k]],
                  kept_f[:, row_start[k]:row_stop[k]])


def _value_type(problems: Problems, table: np.ndarray, gap_open: int, gap_extend: int,
                ) -> type:
    """The type of the tiles' work rows: int32 (twice the SIMD lanes of int64) when every
    value they hold fits with room to spare, else int64. No value of a subproblem lies
    further from 0 than its ``m + n`` steps of the largest substitution or gap cost, and the
    tiles' floor below every value (``-(1 << 30)`` in int32) takes off up to a tile's width of
    ``gap_extend`` without wrapping."""
    if len(problems) == 0:
        return np.int32
    steps = int(np.max(problems.a_end - problems.a_start + problems.b_end - problems.b_start))
    cost = int(np.abs(table).max()) + gap_open + gap_extend
    return np.int32 if cost * (steps + _TILE_COLUMNS + 4) < 1 << 30 else np.int64


def _together(sequences: PairCodes, problems: Problems, chosen: np.ndarray, table: np.ndarray,
              gap_open: int, gap_extend: int, free_top: bool, free_left: bool,
              floor_zero: bool, scope: int, h: np.ndarray, f: np.ndarray, value_type: type,
              score: np.ndarray, i_end: np.ndarray, j_end: np.ndarray, kept: _Kept) -> None:
    """The subproblems ``chosen`` (indices) on every core together (:func:`_wavefronts`): their
    last rows into ``h``, ``f`` (at ``problems.row_offsets()``), their best cells into
    ``score``, ``i_end``, ``j_end``, the rows that ``kept`` asks for into it. Subproblem k is
    cut into ``side[k]`` strips and as many tile columns (at most ``_TILE_COLUMNS`` wide),
    ``side`` in proportion to the square root of its cells, so that its tiles hold about as
    many cells as the others' and their longest diagonals together hold ``_TILES_PER_THREAD``
    tiles a thread; a diagonal's tiles are dealt to the threads strip by strip, the
    subproblems' tiles interleaved."""
    offsets = problems.row_offsets()
    a = [_oriented(sequences.q_codes, sequences.q_offsets, sequences.q_index[problems.pair[k]],
                   problems.a_start[k], problems.a_end[k], problems.reverse[k])
         for k in chosen.tolist()]
    b = [_oriented(sequences.t_codes, sequences.t_offsets, sequences.t_index[problems.pair[k]],
                   problems.b_start[k], problems.b_end[k], problems.reverse[k])
         for k in chosen.tolist()]
    m = np.array([len(x) for x in a], dtype=np.int64)
    n = np.array([len(x) for x in b], dtype=np.int64)
    root = np.sqrt((m * n).astype(np.float64))
    side = np.maximum(1, np.round(_TILES_PER_THREAD * numba.get_num_threads() * root
                                  / root.sum())).astype(np.int64)
    strip_rows = np.maximum(1, -(-m // side))
    tile_columns = np.minimum(_TILE_COLUMNS, np.maximum(1, -(-n // side)))
    strips, tiles = -(-m // strip_rows), -(-n // tile_columns)
    column_start, best_start = offsets_of_counts(m + strips), offsets_of_counts(strips)
    col_h = np.empty(int(column_start[-1]), dtype=np.int64)
    col_e = np.empty_like(col_h)
    best = np.zeros((int(best_start[-1]), 3), dtype=np.int64)
    row_start, row_stop = offsets[chosen], offsets[chosen + 1]
    for k in range(len(chosen)):
        _borders(h[row_start[k]:row_stop[k]], f[row_start[k]:row_stop[k]],
                 col_h[column_start[k]:column_start[k + 1]],
                 col_e[column_start[k]:column_start[k + 1]], m[k], strip_rows[k], gap_open,
                 gap_extend, problems.top_excess[chosen[k]], free_top, free_left)
    # Every tile (problem, strip, tile column), by anti-diagonal.
    tile_problem = np.repeat(np.arange(len(chosen)), strips * tiles)
    first = np.repeat(offsets_of_counts(strips * tiles)[:-1], strips * tiles)
    place = np.arange(len(tile_problem)) - first
    tile_strip, tile_column = place // tiles[tile_problem], place % tiles[tile_problem]
    by_diagonal = np.lexsort((tile_problem, tile_strip, tile_strip + tile_column))
    diagonal_start = offsets_of_counts(np.bincount(tile_strip + tile_column,
                                                   minlength=int((strips + tiles).max()) - 1))
    _wavefronts(np.concatenate(a), offsets_of_counts(m), np.concatenate(b), offsets_of_counts(n),
                table, gap_open, gap_extend, floor_zero, scope == SCOPE_ANY, strip_rows,
                tile_columns, row_start, row_stop, column_start, best_start, h, f, col_h, col_e,
                best, value_type, tile_problem[by_diagonal], tile_strip[by_diagonal],
                tile_column[by_diagonal], diagonal_start, kept.at[chosen], kept.h, kept.f)
    for k in range(len(chosen)):
        place = chosen[k]
        score[place], i_end[place], j_end[place] = _finish(
            h[row_start[k]:row_stop[k]], f[row_start[k]:row_stop[k]],
            col_h[column_start[k]:column_start[k + 1]], m[k], strip_rows[k], scope, gap_extend,
            problems.top_excess[place], free_left, best[best_start[k]:best_start[k + 1]])


@dataclass
class _Kept:
    """Rows kept besides the last ones: ``at[k, d]`` a row of subproblem k (strictly inside
    it; 0: none), ``h[d]``, ``f[d]`` its H and F at ``problems.row_offsets()`` (empty when
    none is kept)."""

    at: np.ndarray
    h: np.ndarray
    f: np.ndarray

    @classmethod
    def asked(cls, near: np.ndarray | None, rows: np.ndarray, cells: int) -> _Kept:
        """The rows of ``near`` (``(len(rows), d)``, or None: none) that lie inside subproblems
        of ``rows`` rows, with room for ``cells`` entries of each where any is kept."""
        if near is None:
            near = np.zeros((len(rows), 1), dtype=np.int64)
        at = np.where((near > 0) & (near < rows[:, None]), near, 0)
        size = cells if at.any() else 0  # no row kept: no kept rows allocated
        return cls(at, np.empty((at.shape[1], size), dtype=np.int64),
                   np.empty((at.shape[1], size), dtype=np.int64))


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
    return _pass(sequences, problems, table, gap_open, gap_extend, free_top, free_left,
                 floor_zero, scope, None)[:5]


def last_rows_kept(sequences: PairCodes, problems: Problems, table: np.ndarray,
                   gap_open: int, gap_extend: int, near: np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(h, f, kept_h, kept_f, kept_at)``: the last rows of global alignments of
    ``problems`` (as ``score_pass`` gives them) and, where ``near[k, d] > 0`` (``near`` of
    shape ``(len(problems), rows)``, or one row each), one more row of subproblem k near row
    ``near[k, d]`` itself (``kept_at[k, d]``; 0 where it does not lie strictly inside), in
    ``kept_h[d]``, ``kept_f[d]`` at the same offsets, ``F[0] = H[0]``.

    Examples
    --------
    >>> pair = PairCodes.from_lists([np.arange(4, dtype=np.uint8)],
    ...                             [np.array([3, 0, 1, 2, 2], np.uint8)])
    >>> both = Problems.of(pair=[0], a_start=0, a_end=4, b_start=0, b_end=5, reverse=[0],
    ...                    top_excess=3, bottom_excess=3)
    >>> found = last_rows_kept(pair, both, np.where(np.eye(5, dtype=bool), 2, -3), 5, 2, [2])
    >>> int(found[4][0, 0]), found[2][0].tolist()  # row 2 kept: H
    (2, [-7, -8, -6, -1, -6, -8])
    """
    near = np.asarray(near, dtype=np.int64)
    if near.ndim == 1:  # one row each
        near = near[:, None]
    h, f, _, _, _, kept = _pass(sequences, problems, table, gap_open, gap_extend, False, False,
                                False, SCOPE_CORNER, near)
    return h, f, kept.h, kept.f, kept.at


def _pass(sequences: PairCodes, problems: Problems, table: np.ndarray, gap_open: int,
          gap_extend: int, free_top: bool, free_left: bool, floor_zero: bool, scope: int,
          near: np.ndarray | None):
    """:func:`score_pass`, and the rows ``near`` asks for (see :func:`last_rows_kept`)."""
    table = np.ascontiguousarray(table, dtype=np.int64)
    offsets = problems.row_offsets()
    h = np.empty(int(offsets[-1]), dtype=np.int64)
    f = np.empty_like(h)
    count = len(problems)
    kept = _Kept.asked(near, problems.a_length(), int(offsets[-1]))
    score = np.empty(count, dtype=np.int64)
    i_end = np.empty(count, dtype=np.int64)
    j_end = np.empty(count, dtype=np.int64)
    cells = problems.cells()
    value_type = _value_type(problems, table, gap_open, gap_extend)
    threads = numba.get_num_threads()
    large = _on_every_core(cells, threads)
    if large.any():
        _together(sequences, problems, np.flatnonzero(large), table, gap_open, gap_extend,
                  free_top, free_left, floor_zero, scope, h, f, value_type, score, i_end, j_end,
                  kept)
    # The others one per core, dealt out beforehand (their sizes differ: a level's splits cut
    # the columns wherever the path crosses, and an even count a core, as the loop's own
    # schedule gives, leaves cores idle behind the one with the largest).
    others = np.flatnonzero(~large)
    if len(others):
        thread_start, dealt = _deal(cells[others], threads)
        _many(sequences.q_codes, sequences.q_offsets, sequences.t_codes, sequences.t_offsets,
              sequences.q_index, sequences.t_index, problems.pair, problems.a_start,
              problems.a_end, problems.b_start, problems.b_end, problems.reverse,
              problems.top_excess, table, gap_open, gap_extend, free_top, free_left,
              floor_zero, scope, _TILE_COLUMNS, value_type, offsets, h, f, thread_start,
              others[dealt], score, i_end, j_end, kept.at, kept.h, kept.f)
    for d in range(kept.at.shape[1]):  # column 0 of a kept row: the gap down to it (F[0] = H[0])
        held = np.flatnonzero(kept.at[:, d])
        kept.h[d, offsets[held]] = kept.f[d, offsets[held]] = -(
            problems.top_excess[held] + kept.at[held, d] * gap_extend)
    return h, f, score, i_end, j_end, kept


def _on_every_core(cells: np.ndarray, threads: int) -> np.ndarray:
    """Which subproblems of a pass run together on every core (:func:`_together`) before the
    others run one per core (:func:`_deal`): the largest, one by one, while the next has at
    least ``config.ALIGN_CPU_WAVEFRONT_MIN_CELLS`` cells and more than ``_WAVEFRONT_COST``
    times an even share of it and the smaller ones (on one core it would still be computing
    when the other cores were done, longer than the wavefront would take).

    Examples
    --------
    >>> _on_every_core(np.array([1 << 30, 1 << 30]), 2).tolist()  # two halves, a core each
    [False, False]
    >>> _on_every_core(np.array([1 << 30]), 2).tolist()  # one, on both cores
    [True]
    >>> _on_every_core(np.array([1 << 30] * 15 + [3 << 30]), 16).tolist()[-2:]
    [False, True]
    >>> bool(_on_every_core(np.array([1 << 30] * 11), 16).all())  # else 5 cores idle
    True
    >>> _on_every_core(np.array([10 ** 10, 36 * 10 ** 8, 9 * 10 ** 8]), 16).tolist()
    [True, True, True]
    """
    cells = np.asarray(cells, dtype=np.int64)
    order = np.argsort(-cells, kind="stable")
    rest = np.cumsum(cells[order][::-1])[::-1]  # each one's cells and the smaller ones'
    big = (cells[order] >= config.ALIGN_CPU_WAVEFRONT_MIN_CELLS) & \
        (cells[order] * max(threads, 1) > _WAVEFRONT_COST * rest)
    chosen = np.zeros(len(cells), dtype=bool)
    chosen[order[:int(np.argmin(big)) if not big.all() else len(big)]] = True
    return chosen


def _deal(cells: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """``(thread_start, dealt)``: subproblems of ``cells`` (indices into it) dealt to
    ``threads`` threads before they start, the largest first, each to the thread with the
    least cells so far; thread w takes ``dealt[thread_start[w]:thread_start[w + 1]]``.

    Examples
    --------
    >>> start, dealt = _deal(np.array([5, 1, 4, 4]), 2)
    >>> [dealt[start[w]:start[w + 1]].tolist() for w in range(2)]
    [[0, 1], [2, 3]]
    """
    threads = max(1, min(threads, len(cells)))
    load = [(0, w) for w in range(threads)]
    owner = np.empty(len(cells), dtype=np.int64)
    for k in np.argsort(-np.asarray(cells), kind="stable").tolist():
        total, w = heapq.heappop(load)
        owner[k] = w
        heapq.heappush(load, (total + int(cells[k]), w))
    return offsets_of_counts(np.bincount(owner, minlength=threads)), \
        np.argsort(owner, kind="stable")
