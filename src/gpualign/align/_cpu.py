"""CPU backend of alignment: Gotoh's recurrences with Numba, parallel over pairs (scores alone
through parasail when it is installed, :mod:`._parasail`).

One row of the DP at a time (scores in int64): a score-only pass keeps two rows, a path pass
also keeps one byte of traceback per cell (``m * n`` bytes for the pair). The end cell, the
traceback preferences and the stop rules are those of ``tests/naive.py``'s oracle, so that
every backend reports the same coordinates:

- end cell: the best cell allowed by the mode (global: the last one; semi-global: the last
  row; overlap: the last row or column; local: any, or the empty alignment when no cell scores
  above 0), ties broken by the smaller target end, then the smaller query end;
- traceback: a diagonal step before a gap in the query (``D``) before a gap in the target
  (``I``), opening a gap before extending one; local alignments stop at the first zero.

Long pairs: a path whose traceback would exceed ``config.ALIGN_LINEAR_MIN_CELLS`` bytes is
found in linear space (Myers-Miller, :mod:`._linear`, with :class:`CpuEngine`: the score passes
of :mod:`._cpu_linear` and leaves through :func:`_fill` and :func:`_traceback`), with the same
score and end cell; its start and path are optimal, and differ from the traceback's only where
several are. Scores and ends of pairs of ``config.ALIGN_CPU_WAVEFRONT_MIN_CELLS`` cells or more
come from those score passes too, which run the long pairs on every core (those that one
core alone would still be computing after the others) and the rest one per core.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange

from .. import config
from .._cigar_text import path_runs, path_texts
from .._progress import Progress
from ..cigar import PackedCigars, offsets_of_counts, placed_cigars
from ..codes import (
    ALIGN_GLOBAL,
    ALIGN_LOCAL,
    ALIGN_OVERLAP,
    ALIGN_SEMI_GLOBAL,
    OP_DELETION,
    OP_INSERTION,
    OP_MATCH,
    OP_MISMATCH,
)
from ..sequences import SequenceSet
from . import _parasail
from ._cpu_linear import last_rows_kept, score_pass
from ._linear import SCOPE_CORNER, PairCodes, Problems, mode_ends, mode_paths, path_cigars

# Traceback byte: bits 0-1 where H came from, bit 2 E opened here, bit 3 F opened here.
_FROM_DIAGONAL, _FROM_E, _FROM_F, _STOP = 0, 1, 2, 3
_E_OPENED, _F_OPENED = 4, 8
_NEG = -(1 << 60)


@njit(cache=True, nogil=True, inline="always")
def _cell(left, e, up, f_up, diagonal, substitution, gap_open, gap_extend, floor_zero, traced):
    """One cell of Gotoh's recurrences, from H and E of the cell on its left, H and F of the
    one above and H of the diagonal one: ``(H, E, F, traceback byte)``. E is a gap in the
    query ending here (D), F one in the target (I); ``floor_zero`` (Smith-Waterman) raises H
    to 0, where the traceback stops. The byte says where H came from (the diagonal, then E,
    then F, on ties) and whether E and F open here (opening before extending on ties); 0
    unless ``traced``."""
    e_open = left - gap_open
    e_extend = e - gap_extend
    e = e_open if e_open >= e_extend else e_extend
    f_open = up - gap_open
    f_extend = f_up - gap_extend
    f = f_open if f_open >= f_extend else f_extend
    d = diagonal + substitution
    score = d
    if e > score:
        score = e
    if f > score:
        score = f
    if floor_zero and score <= 0:
        score = 0
    if not traced:
        return score, e, f, 0
    if floor_zero and score == 0:
        code = _STOP
    elif score == d:
        code = _FROM_DIAGONAL
    elif score == e:
        code = _FROM_E
    else:
        code = _FROM_F
    if e_open >= e_extend:
        code |= _E_OPENED
    if f_open >= f_extend:
        code |= _F_OPENED
    return score, e, f, code


@njit(cache=True, nogil=True)
def _fill(a, b, table, gap_open, gap_extend, mode, top_excess, bottom_excess, trace):
    """Fill the DP of one pair; return ``(score, query_end, target_end)``. ``trace`` (uint8,
    ``(m + 1) * (n + 1)``, or empty for score only) receives the traceback bytes.

    ``top_excess``, ``bottom_excess``: what opening a vertical gap costs beyond its
    ``gap_extend`` per symbol where it runs down column 0 from the top (global and
    semi-global) or ends at the bottom-right corner (global): ``gap_open - gap_extend`` for a
    whole pair, 0 for a piece of a linear-space alignment whose gap continues across that
    border (:mod:`._linear`)."""
    m, n = len(a), len(b)
    width = n + 1
    keep = len(trace) > 0
    h = np.empty(width, dtype=np.int64)  # H of the previous row, then of this row
    f = np.full(width, _NEG, dtype=np.int64)  # F of the previous row
    h[0] = 0
    for j in range(1, width):
        h[j] = -(gap_open + (j - 1) * gap_extend) if mode == ALIGN_GLOBAL else 0
    best, best_i, best_j = _NEG, m, n
    if mode == ALIGN_LOCAL:
        best, best_i, best_j = 0, 0, 0  # the empty alignment
    for i in range(1, m + 1):
        diagonal = h[0]
        if mode == ALIGN_GLOBAL or mode == ALIGN_SEMI_GLOBAL:
            h[0] = -(top_excess + i * gap_extend)
        else:
            h[0] = 0
        e = _NEG
        row = table[a[i - 1]]
        for j in range(1, width):
            score, e, f[j], code = _cell(h[j - 1], e, h[j], f[j], diagonal, row[b[j - 1]],
                                         gap_open, gap_extend, mode == ALIGN_LOCAL, keep)
            diagonal = h[j]
            h[j] = score
            if keep:
                trace[i * width + j] = code
            if mode == ALIGN_LOCAL:
                if score > best or (score == best and j < best_j):
                    best, best_i, best_j = score, i, j
            elif mode == ALIGN_OVERLAP and j == n and score > best:
                best, best_i, best_j = score, i, j  # last column: smaller query end first
    if mode == ALIGN_GLOBAL and m > 0 and n > 0:
        # A vertical gap ending in the corner, charged bottom_excess instead of its opening.
        ending_in_gap = f[n] + gap_open - gap_extend - bottom_excess
        if ending_in_gap > h[n]:
            h[n] = ending_in_gap
            if keep:
                trace[m * width + n] = (trace[m * width + n] & ~3) | _FROM_F
    if mode == ALIGN_GLOBAL or m == 0 or n == 0:
        if mode == ALIGN_LOCAL:
            return best, best_i, best_j
        return h[n], m, n
    if mode == ALIGN_SEMI_GLOBAL:
        best, best_j = _NEG, 1
        for j in range(1, width):
            if h[j] > best:
                best, best_j = h[j], j
        return best, m, best_j
    if mode == ALIGN_OVERLAP:
        # The last row before the last column: on a tie the smaller target end wins.
        row_best, row_j = _NEG, 1
        for j in range(1, n):
            if h[j] > row_best:
                row_best, row_j = h[j], j
        if row_best >= best:
            return row_best, m, row_j
        return best, best_i, best_j
    return best, best_i, best_j


@njit(cache=True, nogil=True)
def _traceback(a, b, trace, mode, end_i, end_j, match_codes, ops, low=0, band=0):
    """Walk the traceback bytes back from ``(end_i, end_j)``; write the operations (diagonal
    steps as ``=`` for equal codes that can match, else ``X``: N against N is ``X``) reversed
    into ``ops``; return ``(query_start, target_start, count, matches)``. ``trace`` holds a
    byte a cell, row after row of the whole DP, or with ``band`` (global and semi-global) the
    cells ``(i, j)`` of rows 1..m with ``low <= j - i < low + band`` (:func:`band_batch`):
    count is -1 where the walk would leave them."""
    # Cell (i, j) is trace[i * row_step + j + shift].
    row_step, shift = (len(b) + 1, 0) if band == 0 else (band - 1, -band - low)
    i, j, count, matched, state = end_i, end_j, 0, 0, 0  # state 0: H, 1: E (D run), 2: F (I)
    while True:
        if mode == ALIGN_GLOBAL:
            if i == 0 or j == 0:  # the rest is one gap along the border
                while j > 0:
                    ops[count] = OP_DELETION
                    count += 1
                    j -= 1
                while i > 0:
                    ops[count] = OP_INSERTION
                    count += 1
                    i -= 1
                break
        elif mode == ALIGN_SEMI_GLOBAL:
            if i == 0:
                break
            if j == 0:
                while i > 0:
                    ops[count] = OP_INSERTION
                    count += 1
                    i -= 1
                break
        elif i == 0 or j == 0:  # overlap: free ends; local: the border scores 0
            break
        if band and not 0 <= j - i - low < band:
            return i, j, -1, matched
        code = trace[i * row_step + j + shift]
        if state == 0:
            source = code & 3
            if source == _STOP:
                break
            if source == _FROM_DIAGONAL:
                equal = a[i - 1] == b[j - 1] and a[i - 1] < match_codes
                ops[count] = OP_MATCH if equal else OP_MISMATCH
                matched += equal
                count += 1
                i -= 1
                j -= 1
            elif source == _FROM_E:
                state = 1
            else:
                state = 2
        elif state == 1:
            ops[count] = OP_DELETION
            count += 1
            if code & _E_OPENED:
                state = 0
            j -= 1
        else:
            ops[count] = OP_INSERTION
            count += 1
            if code & _F_OPENED:
                state = 0
            i -= 1
    return i, j, count, matched


@njit(cache=True, parallel=True)
def align_batch(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, table, match_codes,
                gap_open, gap_extend, mode, want_path, path_room, path_ops):
    """Align pair ``p`` = (``q_index[p]``, ``t_index[p]``) for every ``p``.

    Returns int64 arrays ``score, query_start, query_end, target_start, target_end, matches,
    columns``; with ``want_path`` the traceback of pair ``p`` writes its ``columns[p]``
    operations, last first, into ``path_ops[path_room[p]:path_room[p + 1]]`` (starts are -1
    without)."""
    pairs = len(q_index)
    score = np.empty(pairs, dtype=np.int64)
    q_start = np.full(pairs, -1, dtype=np.int64)
    q_end = np.empty(pairs, dtype=np.int64)
    t_start = np.full(pairs, -1, dtype=np.int64)
    t_end = np.empty(pairs, dtype=np.int64)
    matches = np.zeros(pairs, dtype=np.int64)
    columns = np.zeros(pairs, dtype=np.int64)
    for p in prange(pairs):
        qi, ti = q_index[p], t_index[p]
        a = q_codes[q_offsets[qi]:q_offsets[qi + 1]]
        b = t_codes[t_offsets[ti]:t_offsets[ti + 1]]
        if want_path:
            trace = np.empty((len(a) + 1) * (len(b) + 1), dtype=np.uint8)
        else:
            trace = np.empty(0, dtype=np.uint8)
        s, ie, je = _fill(a, b, table, gap_open, gap_extend, mode, gap_open - gap_extend,
                          gap_open - gap_extend, trace)
        score[p], q_end[p], t_end[p] = s, ie, je
        if want_path:
            i0, j0, count, matched = _traceback(a, b, trace, mode, ie, je, match_codes,
                                                path_ops[path_room[p]:path_room[p + 1]])
            q_start[p], t_start[p], matches[p], columns[p] = i0, j0, matched, count
    return score, q_start, q_end, t_start, t_end, matches, columns


@njit(cache=True, parallel=True)
def band_batch(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, low, width, table,
               match_codes, gap_open, gap_extend, mode, path_room, path_ops):
    """Global or semi-global paths of the pairs ``p`` = (``q_index[p]``, ``t_index[p]``) in
    bands of diagonals (:mod:`._band`): only the cells ``(i, j)`` with ``low[p] <= j - i <
    low[p] + width[p]`` are computed, the others count as minus infinity. Recurrences, end
    cell, ties and traceback are :func:`_fill`'s and :func:`_traceback`'s; one traceback byte
    a cell of the band. Returns int64 arrays ``score, query_start, target_start, target_end,
    matches, columns``; pair ``p``'s ``columns[p]`` operations are written, last first, into
    ``path_ops[path_room[p]:]``, and ``columns[p]`` is -1 where its traceback would leave the
    band (no optimum lies in it)."""
    pairs = len(q_index)
    score = np.empty(pairs, dtype=np.int64)
    q_start = np.zeros(pairs, dtype=np.int64)
    t_start = np.zeros(pairs, dtype=np.int64)
    t_end = np.empty(pairs, dtype=np.int64)
    matches = np.zeros(pairs, dtype=np.int64)
    columns = np.full(pairs, -1, dtype=np.int64)
    top_excess = gap_open - gap_extend
    for p in prange(pairs):
        qi, ti = q_index[p], t_index[p]
        a = q_codes[q_offsets[qi]:q_offsets[qi + 1]]
        b = t_codes[t_offsets[ti]:t_offsets[ti + 1]]
        m, n, lo, w = len(a), len(b), low[p], width[p]
        # h[c], f[c]: H and F of the previous row's cell on diagonal lo + c, then this row's;
        # h[w] and f[w] stay minus infinity (the diagonal past the band).
        h = np.full(w + 1, _NEG, dtype=np.int64)
        f = np.full(w + 1, _NEG, dtype=np.int64)
        trace = np.empty(m * w, dtype=np.uint8)  # rows 1..m
        for c in range(w):
            j = lo + c
            if 0 <= j <= n:
                h[c] = 0 if mode == ALIGN_SEMI_GLOBAL or j == 0 else \
                    -(gap_open + (j - 1) * gap_extend)
        for i in range(1, m + 1):
            row = table[a[i - 1]]
            e = _NEG
            left = _NEG
            for c in range(w):
                j = i + lo + c
                code = 0
                if j < 0 or j > n:
                    value, fj, e = _NEG, _NEG, _NEG
                elif j == 0:
                    value, fj, e = -(top_excess + i * gap_extend), _NEG, _NEG
                else:
                    value, e, fj, code = _cell(left, e, h[c + 1], f[c + 1], h[c],
                                               row[b[j - 1]], gap_open, gap_extend, False, True)
                trace[(i - 1) * w + c] = code
                h[c] = value
                f[c] = fj
                left = value
        end_j = n
        if mode == ALIGN_SEMI_GLOBAL:  # the best of the last row, the smallest column on ties
            best = _NEG
            for c in range(w):
                j = m + lo + c
                if 1 <= j <= n and h[c] > best:
                    best, end_j = h[c], j
        score[p], t_end[p] = h[end_j - m - lo], end_j
        i, j, count, matched = _traceback(a, b, trace, mode, m, end_j, match_codes,
                                          path_ops[path_room[p]:path_room[p + 1]], lo, w)
        if count >= 0:
            q_start[p], t_start[p], matches[p], columns[p] = i, j, matched, count
    return score, q_start, t_start, t_end, matches, columns


def band_paths(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
               table: np.ndarray, gap_open: int, gap_extend: int, mode: int, low: np.ndarray,
               width: np.ndarray) -> tuple[np.ndarray, ...]:
    """Global or semi-global paths of index pairs in bands of diagonals (:func:`band_batch`),
    the contract of every backend's ``band_paths`` (:mod:`._band` checks and completes them):
    int64 arrays ``score, query_start, target_start, target_end, matches, columns`` (-1 where
    the traceback left the band) and the CIGARs (:class:`~gpualign.cigar.PackedCigars`; empty
    where the traceback left the band)."""
    room = offsets_of_counts(qset.lengths[q_index].astype(np.int64) + tset.lengths[t_index])
    ops = np.empty(int(room[-1]), dtype=np.uint8)
    found = band_batch(qset.codes, qset.offsets, tset.codes, tset.offsets, q_index, t_index,
                       np.asarray(low, dtype=np.int64), np.asarray(width, dtype=np.int64),
                       table.astype(np.int64), qset.alphabet.match_codes, gap_open, gap_extend,
                       mode, room, ops)
    return (*found, path_runs(ops, room[:-1], np.maximum(found[-1], 0)))


@njit(cache=True, parallel=True)
def _leaf_paths(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, pair, a_start, a_end,
                b_start, b_end, top_excess, bottom_excess, table, match_codes, gap_open,
                gap_extend, room, ops, count):
    """Global path of subproblem ``k`` (full DP and traceback), first operation first, into
    ``ops[room[k]:]``; its length into ``count[k]``."""
    for k in prange(len(pair)):
        q_first = q_offsets[q_index[pair[k]]]
        t_first = t_offsets[t_index[pair[k]]]
        a = q_codes[q_first + a_start[k]:q_first + a_end[k]]
        b = t_codes[t_first + b_start[k]:t_first + b_end[k]]
        trace = np.empty((len(a) + 1) * (len(b) + 1), dtype=np.uint8)
        _fill(a, b, table, gap_open, gap_extend, ALIGN_GLOBAL, top_excess[k], bottom_excess[k],
              trace)
        out = ops[room[k]:room[k + 1]]
        _, _, count[k], _ = _traceback(a, b, trace, ALIGN_GLOBAL, len(a), len(b), match_codes,
                                       out)
        out[:count[k]] = out[:count[k]][::-1].copy()


class CpuEngine:
    """The CPU engine of the linear-space driver (:class:`gpualign.align._linear.Engine`):
    score passes of :mod:`._cpu_linear`, leaves with the batch DP and traceback.

    Examples
    --------
    >>> table = np.where(np.eye(5, dtype=bool), 2, -3)
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2], np.uint8)],
    ...                              [np.array([0, 2], np.uint8)])
    >>> leaf = Problems.of(pair=[0], a_start=0, a_end=3, b_start=0, b_end=2, reverse=0,
    ...                    top_excess=3, bottom_excess=3)
    >>> ops, offsets = CpuEngine(table, 5, 2, 4).leaf_paths(codes, leaf)
    >>> ops.tolist()
    [0, 2, 0]
    """

    def __init__(self, table: np.ndarray, gap_open: int, gap_extend: int, match_codes: int):
        self.table = np.ascontiguousarray(table, dtype=np.int64)
        self.gap_open, self.gap_extend, self.match_codes = gap_open, gap_extend, match_codes

    def last_rows(self, sequences: PairCodes, problems: Problems,
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The last DP rows (H, F) of global alignments of the subproblems."""
        h, f, _, _, _ = score_pass(sequences, problems, self.table, self.gap_open,
                                   self.gap_extend, False, False, False, SCOPE_CORNER)
        return h, f

    def last_rows_kept(self, sequences: PairCodes, problems: Problems, near: np.ndarray,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`last_rows`, and rows of each subproblem near rows ``near[k, d]`` (where
        positive), which the driver splits the levels below at: ``(h, f, kept_h, kept_f,
        kept_at)`` (:func:`._cpu_linear.last_rows_kept`)."""
        return last_rows_kept(sequences, problems, self.table, self.gap_open, self.gap_extend,
                              near)

    def leaf_paths(self, sequences: PairCodes, problems: Problems,
                   scores: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Optimal global paths of small subproblems: ``(ops, offsets)``. ``scores`` is left
        as it is: the driver scores these paths itself."""
        room = offsets_of_counts(problems.a_length() + problems.b_length())
        ops = np.empty(int(room[-1]), dtype=np.uint8)
        count = np.empty(len(problems), dtype=np.int64)
        _leaf_paths(sequences.q_codes, sequences.q_offsets, sequences.t_codes,
                    sequences.t_offsets, sequences.q_index, sequences.t_index, problems.pair,
                    problems.a_start, problems.a_end, problems.b_start, problems.b_end,
                    problems.top_excess, problems.bottom_excess, self.table, self.match_codes,
                    self.gap_open, self.gap_extend, room, ops, count)
        offsets = offsets_of_counts(count)
        used = np.arange(int(offsets[-1])) + np.repeat(room[:-1] - offsets[:-1], count)
        return ops[used], offsets

    def best_cells(self, sequences: PairCodes, problems: Problems, start_free_top: bool,
                   start_free_left: bool, floor_zero: bool, end_scope: int,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Score and end cell of each subproblem in ``end_scope``."""
        _, _, score, i_end, j_end = score_pass(sequences, problems, self.table, self.gap_open,
                                               self.gap_extend, start_free_top,
                                               start_free_left, floor_zero, end_scope)
        return score, i_end, j_end


#: Bytes of work arrays per symbol of a pair aligned in linear space (rows of H and F of both
#: halves and the split's temporaries, column buffers, oriented copies, operations, CIGAR
#: text), with room to spare: the check that runs before any work ...
_LINEAR_BYTES_PER_SYMBOL = 160
#: ... and per column of the target and row that a pass keeps (``config.ALIGN_LINEAR_KEPT_ROWS``):
#: the kept rows of both halves and the pool the next level takes its given rows from (about
#: 48 measured at the peak).
_KEPT_ROW_BYTES_PER_COLUMN = 64


def _available_memory() -> int:
    """Bytes of physical memory available now (Linux), or no limit where unknown."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _check_linear_memory(q_length: np.ndarray, t_length: np.ndarray,
                         index: np.ndarray) -> None:
    """Raise ValueError before any work when the linear-space work arrays of the pairs
    ``index`` (all levels run together) and one leaf per thread do not fit in memory."""
    need = _LINEAR_BYTES_PER_SYMBOL * (q_length[index] + t_length[index] + 1) + \
        _KEPT_ROW_BYTES_PER_COLUMN * max(config.ALIGN_LINEAR_KEPT_ROWS, 0) * (t_length[index] + 1)
    total = int(need.sum()) + numba.get_num_threads() * 2 * config.ALIGN_LINEAR_LEAF_CELLS
    available = _available_memory()
    if total > available:
        worst = int(index[np.argmax(need)])
        raise ValueError(
            f"align: {len(index)} pairs aligned in linear space need {total / 2**30:.1f} GiB of "
            f"work arrays, {available / 2**30:.1f} GiB of memory is available (largest: pair "
            f"{worst}, query {int(q_length[worst])} x target {int(t_length[worst])} symbols)")


def _linear_results(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
                    t_index: np.ndarray, table: np.ndarray, gap_open: int, gap_extend: int,
                    mode: int, task: str, progress: Progress | None, packed: bool) -> tuple:
    """:func:`align_pairs`' results for long pairs: paths in linear space
    (:func:`._linear.mode_paths`), or scores and ends from score passes on every core
    (:func:`._linear.mode_ends`)."""
    sequences = PairCodes(qset.codes, qset.offsets, tset.codes, tset.offsets, q_index, t_index)
    engine = CpuEngine(table, gap_open, gap_extend, qset.alphabet.match_codes)
    missing = np.full(len(q_index), -1, dtype=np.int64)
    report = progress.cells_done if progress is not None else None
    if task != "path":
        score, q_end, t_end = mode_ends(sequences, gap_open, gap_extend, mode, engine, report)
        if task == "score":
            q_end, t_end = missing.copy(), missing.copy()
        return score, missing, q_end, missing.copy(), t_end, None, None
    found = mode_paths(sequences, gap_open, gap_extend, mode, engine,
                       config.ALIGN_LINEAR_LEAF_CELLS, report)
    matches, columns = found.matches(), found.columns()
    identity = np.zeros(len(q_index), dtype=np.float64)
    np.divide(matches, columns, out=identity, where=columns > 0)
    cigar = path_cigars(found.ops, packed)
    return (found.score, found.query_start, found.query_end, found.target_start,
            found.target_end, cigar, identity)


def _linear_pairs(q_length: np.ndarray, t_length: np.ndarray, task: str) -> np.ndarray:
    """Which pairs run in linear space: with ``task="path"``, those whose traceback would
    exceed ``config.ALIGN_LINEAR_MIN_CELLS`` bytes; for scores and ends, those of at least
    ``config.ALIGN_CPU_WAVEFRONT_MIN_CELLS`` cells (the score passes of :mod:`._cpu_linear`,
    which run long pairs on every core)."""
    cells = q_length * t_length
    if task == "path":
        large = (q_length + 1) * (t_length + 1) > config.ALIGN_LINEAR_MIN_CELLS
    else:
        large = cells >= config.ALIGN_CPU_WAVEFRONT_MIN_CELLS
    return large & (cells > 0)


def align_pairs(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
                table: np.ndarray, gap_open: int, gap_extend: int, mode: int, task: str,
                progress: Progress | None = None, packed: bool = False,
                known_scores: np.ndarray | None = None,
                meanwhile: Callable[[], None] | None = None,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                           list[str | None] | PackedCigars | None, np.ndarray | None]:
    """Align index pairs on the CPU: the contract of every alignment backend.

    Parameters
    ----------
    qset, tset : SequenceSet
        Queries and targets.
    q_index, t_index : np.ndarray of int64
        Pair ``p`` is query ``q_index[p]`` with target ``t_index[p]``.
    table : np.ndarray
        Substitution scores, ``table[query code, target code]``.
    gap_open, gap_extend : int
        Gap costs: a gap of length L costs ``gap_open + (L-1)*gap_extend``.
    mode : int
        An ``ALIGN_*`` code of :mod:`gpualign.codes`.
    task : {"score", "end", "path"}
    progress : Progress, optional
        Moved by the pairs' cells as they are done: the batch's pairs when it ends, the long
        pairs' passes as they end (:mod:`._linear`).
    packed : bool
        ``task="path"``: return the CIGARs as a :class:`~gpualign.cigar.PackedCigars`, built
        without a string per pair (every backend).
    known_scores : np.ndarray of int64, optional
        The pairs' exact local scores where the caller already has them (a search's hits): a
        hint that lets the CUDA fill of a local path stop early (a score below a pair's would
        end its path at the first cell that reaches it); the results are the same, and this
        backend does not need it.
    meanwhile : callable, optional
        The caller's own work, which a backend may run while the device computes (once at
        most: the CUDA backend's paths call it once their launches are queued); this backend
        never calls it, and the caller runs it after if no backend did
        (:func:`gpualign.align.api.align_encoded`).

    Returns
    -------
    score, query_start, query_end, target_start, target_end : np.ndarray of int64
        -1 where ``task`` reports no such value (ends: "end" and "path"; starts: "path").
    cigar : list of str, PackedCigars, or None
        The CIGARs (``task="path"``): strings, or runs with ``packed``.
    identity : np.ndarray of float64 or None
        Matches / alignment columns (``task="path"``).

    Notes
    -----
    Scores alone come from parasail's SIMD kernels when ``config.ALIGN_CPU_SCORES`` is
    ``"parasail"`` and it can take the alphabet (identical scores; not for the long pairs
    below), else from the DP of :func:`align_batch`, which also gives the ends and paths.
    Paths whose traceback would exceed ``config.ALIGN_LINEAR_MIN_CELLS`` bytes are found in
    linear space (:mod:`._linear`, same scores and ends; a ValueError before any work when
    even their linear work arrays do not fit in memory); scores and ends of pairs of
    ``config.ALIGN_CPU_WAVEFRONT_MIN_CELLS`` cells or more come from score passes that run
    long pairs on every core.
    """
    q_length, t_length = qset.lengths[q_index], tset.lengths[t_index]
    linear = _linear_pairs(q_length, t_length, task)
    if task == "score" and config.ALIGN_CPU_SCORES == "parasail" and \
            _parasail.available(qset.alphabet.name):
        # parasail scores a pair on one core; the long ones go to the score passes, which
        # run long pairs on every core (and faster per core).
        score = np.empty(len(q_index), dtype=np.int64)
        short = np.flatnonzero(~linear)
        score[short] = _parasail.scores(qset, tset, q_index[short], t_index[short], table,
                                        gap_open, gap_extend, mode)
        if progress is not None:
            progress.pairs_done(q_length[short].astype(np.int64) * t_length[short])
        if linear.any():
            long = np.flatnonzero(linear)
            _check_linear_memory(q_length, t_length, long)
            score[long] = _linear_results(qset, tset, q_index[long], t_index[long], table,
                                          gap_open, gap_extend, mode, task, progress, False)[0]
        missing = np.full(len(score), -1, dtype=np.int64)
        return score, missing, missing.copy(), missing.copy(), missing.copy(), None, None
    if linear.any():
        _check_linear_memory(q_length, t_length, np.flatnonzero(linear))
    if not linear.any():
        return _batch_results(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode,
                              task, progress, packed)
    parts = [(np.flatnonzero(~linear), _batch_results), (np.flatnonzero(linear), _linear_results)]
    merged: list = [None] * 7
    cigars: list = []  # (positions, CIGARs) of the parts
    for index, compute in parts:
        if not len(index):
            continue
        values = compute(qset, tset, q_index[index], t_index[index], table, gap_open, gap_extend,
                         mode, task, progress, packed)
        for k, value in enumerate(values):
            if value is None:
                continue
            if k == 5:
                cigars.append((index, value))
                continue
            if merged[k] is None:
                merged[k] = np.empty(len(q_index), dtype=value.dtype)
            merged[k][index] = value
    if cigars:
        merged[5] = placed_cigars(cigars, len(q_index), packed)
    return tuple(merged)


def _batch_results(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
                   t_index: np.ndarray, table: np.ndarray, gap_open: int, gap_extend: int,
                   mode: int, task: str, progress: Progress | None, packed: bool) -> tuple:
    """:func:`align_pairs`' results from :func:`align_batch` (a full traceback per pair),
    the CIGARs of ``packed`` ones as runs."""
    want_path = task == "path"
    room = np.zeros(len(q_index) + 1, dtype=np.int64)  # a path has at most m + n operations
    if want_path:
        np.cumsum(qset.lengths[q_index].astype(np.int64) + tset.lengths[t_index],
                  out=room[1:])
    ops = np.empty(int(room[-1]), dtype=np.uint8)
    score, q_start, q_end, t_start, t_end, matches, columns = align_batch(
        qset.codes, qset.offsets, tset.codes, tset.offsets, q_index, t_index,
        table.astype(np.int64), qset.alphabet.match_codes, gap_open, gap_extend, mode,
        want_path, room, ops)
    if progress is not None:
        progress.pairs_done(qset.lengths[q_index].astype(np.int64) * tset.lengths[t_index])
    if not want_path:
        if task == "score":
            q_end[:] = -1
            t_end[:] = -1
        return score, q_start, q_end, t_start, t_end, None, None
    identity = np.zeros(len(q_index), dtype=np.float64)
    np.divide(matches, columns, out=identity, where=columns > 0)
    cigar = (path_runs if packed else path_texts)(ops, room[:-1], columns)
    return score, q_start, q_end, t_start, t_end, cigar, identity
