"""CPU backend of edit distance: Myers' bit-vector algorithm (Hyyrö's block form) in Numba.

The query is cut into 64-row blocks. Each block keeps its vertical delta vectors (``pv``/``mv``:
rows where the score goes up/down by one from the row above) and passes the horizontal delta of
its bottom row (``hout`` in {-1, 0, +1}) to the block below. Information only flows from low
bits to high bits, so the junk in the unused high bits of the last block never reaches a used
bit. Pairs run in parallel over all cores (``prange``); long pairs
(``config.LONG_EDIT_MIN_CELLS``) one at a time, each over all cores (:func:`_wavefront_row`).
CIGARs come from a full traceback, or in linear space (:func:`linear_cigars`) for long pairs and
those whose traceback would exceed ``config.PATH_MAX_BYTES_PER_PAIR``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from .. import config
from .._bitvectors import ALL, ONE, ZERO, match_table
from .._cigar_text import pack_runs, write_runs
from .._progress import Progress, pass_credits
from ..cigar import PackedCigars, op_counts
from ..codes import (
    EDIT_GLOBAL,
    EDIT_INFIX,
    EDIT_PREFIX,
    OP_DELETION,
    OP_INSERTION,
    OP_MATCH,
    OP_MISMATCH,
)
from ._linear import NO_OP, hirschberg, packed_of_buffer
from ._shared import needs_linear

if TYPE_CHECKING:
    from ..sequences import SequenceSet

_HIGH = np.uint64(1 << 63)


@njit(inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(inline="always")
def _block_deltas(pv, mv, eq, hin, high):
    """Advance one 64-row block by one target column; return (pv, mv, hout, ph, mh): ``ph``
    and ``mh`` hold the column's horizontal deltas of the block's rows (bit ``r``: the row's
    value is one above / below its value in the column before)."""
    hin_neg = ONE if hin < 0 else ZERO
    hin_pos = ONE if hin > 0 else ZERO
    xv = eq | mv
    eq = eq | hin_neg  # a negative carry in acts like a match in the row above the block
    xh = (((eq & pv) + pv) ^ pv) | eq
    ph = mv | ~(xh | pv)
    mh = pv & xh
    hout = 0
    if ph & high:
        hout = 1
    elif mh & high:
        hout = -1
    shifted_ph = (ph << ONE) | hin_pos
    shifted_mh = (mh << ONE) | hin_neg
    return shifted_mh | ~(xv | shifted_ph), shifted_ph & xv, hout, ph, mh


@njit(inline="always")
def _block(pv, mv, eq, hin, high):
    """Advance one 64-row block by one target column; return (pv, mv, hout)."""
    pv, mv, hout, _, _ = _block_deltas(pv, mv, eq, hin, high)
    return pv, mv, hout


@njit(cache=True, nogil=True)
def _scan(table, m, target, top_delta, tie_last):
    """Run the query (as ``table``) over ``target``.

    Returns ``(score, best, best_end)``: the last-row score after the whole target, the minimum
    last-row score over columns 0..n and the first (or with ``tie_last`` the last) column where
    it occurs. ``top_delta`` is the horizontal delta of row 0 (1 prefix, 0 infix).
    """
    words = table.shape[1]
    n = target.shape[0]
    pv = np.full(words, ALL, dtype=np.uint64)
    mv = np.zeros(words, dtype=np.uint64)
    last_bit = ONE << np.uint64((m - 1) & 63)
    score = m
    best = m
    best_end = 0
    for j in range(n):
        c = target[j]
        hin = top_delta
        for w in range(words):
            high = last_bit if w == words - 1 else _HIGH
            pv[w], mv[w], hin = _block(pv[w], mv[w], table[c, w], hin, high)
        score += hin
        if score < best or (tie_last and score == best):
            best = score
            best_end = j + 1
    return score, best, best_end


@njit(cache=True, nogil=True)
def _global_distance(table, m, target, k):
    """The global edit distance of the query (as ``table``, ``m`` rows) and ``target`` when it
    is at most ``k``, else ``k + 1``; the caller has checked ``|m - n| <= k``."""
    return _banded_sweep(table, m, target, k, False, np.empty(0, dtype=np.int64))


@njit(cache=True, nogil=True)
def _banded_sweep(table, m, target, k, reverse, row):
    """Global alignment of the query (as ``table``, ``m`` rows) with ``target`` (read backwards
    with ``reverse``) in the diagonal band ``|i - j| <= k``; returns the distance when it is
    at most ``k``, else ``k + 1``. A non-empty ``row`` (``n + 1`` entries) receives the last
    row, exact where it is at most ``k`` and never below the true value elsewhere (``m + n``
    before the band reaches the last row).

    Only the 64-row blocks that meet the band are computed (Ukkonen's band): a cell with D <= k
    lies in it, and so does every cell of an optimal path to it (D never decreases along a
    path). Outside the band the values are overestimated (a row above the band grows by 1 a
    column, a block entering at the bottom starts at 1 a row below the block above), so the
    band's cells with D <= k come out exact and the others stay above k. Within the band, as
    edlib does, a block at either end whose cells all exceed k (its last row more than 64
    above k) is dropped, and a block enters below the last one only once the last one's
    bottom cell is at most k: a cell below with D <= k is reached from that cell, since the
    cells to its left, outside the computed blocks, all exceed k.
    """
    words = table.shape[1]
    n = target.shape[0]
    pv = np.full(words, ALL, dtype=np.uint64)
    mv = np.zeros(words, dtype=np.uint64)
    bottom = np.zeros(words, dtype=np.int64)  # D at each computed block's last row
    last_bit = ONE << np.uint64((m - 1) & 63)
    want_row = row.shape[0] > 0
    if want_row:
        row[0] = m
    # Diagonals j - i from -below to above: for the distance alone only those that a path of
    # cost k to (m, n) can take, |j - i| + |(n - m) - (j - i)| <= k (as edlib does); the row
    # needs every cell of D <= k, |j - i| <= k.
    above = k if want_row else (k + n - m) // 2
    below = k if want_row else (k - (n - m)) // 2
    first, last = 0, -1
    for j in range(n):
        column = j + 1
        while last < min(words - 1, (column + below - 1) // 64) and (last < 0
                                                                   or bottom[last] <= k):
            last += 1  # enters in column j with +1 steps below the block above
            pv[last] = ALL
            mv[last] = ZERO
            bottom[last] = (bottom[last - 1] if last > 0 else 0) + min(64, m - 64 * last)
        if column - above - 1 >= 0:
            first = max(first, (column - above - 1) // 64)
        c = target[n - 1 - j] if reverse else target[j]
        hin = 1
        for w in range(first, last + 1):
            high = last_bit if w == words - 1 else _HIGH
            pv[w], mv[w], hin = _block(pv[w], mv[w], table[c, w], hin, high)
            bottom[w] += hin
        while last > first and bottom[last] - 64 > k:
            last -= 1
        while first < last and bottom[first] - 64 > k:
            first += 1
        if want_row:
            row[column] = bottom[words - 1] if last == words - 1 else m + n
        elif bottom[last] - 64 > k or (last == words - 1 and bottom[last] - (n - column) > k):
            # Every cell of the column exceeds k; or every remaining column lowers the last
            # row by at most 1.
            return k + 1
    return min(bottom[words - 1], k + 1) if last == words - 1 else k + 1


@njit(cache=True, nogil=True)
def _pair(query, target, mode, k, want_start, n_codes, match_codes):
    """Distance, target start and end (half-open) of one pair; -1s when over ``k``."""
    m = query.shape[0]
    n = target.shape[0]
    if m == 0:
        distance, start, end = (n, 0, n) if mode == EDIT_GLOBAL else (0, 0, 0)
    elif n == 0:
        distance, start, end = m, 0, 0
    elif mode == EDIT_GLOBAL:
        if k >= 0 and abs(m - n) > k:
            return -1, -1, -1
        table = match_table(query, n_codes, match_codes)
        distance = _global_distance(table, m, target, k if k >= 0 else max(m, n))
        start, end = 0, n
    else:
        table = match_table(query, n_codes, match_codes)
        _, distance, end = _scan(table, m, target, 1 if mode == EDIT_PREFIX else 0, False)
        start = 0 if mode == EDIT_PREFIX else -1
        if mode == EDIT_INFIX and want_start and (k < 0 or distance <= k):
            # The leftmost start of an optimal alignment ending at ``end``: the longest reversed
            # target prefix that the reversed query matches at the same cost (as edlib does).
            reversed_table = match_table(query[::-1].copy(), n_codes, match_codes)
            _, _, length = _scan(reversed_table, m, target[:end][::-1].copy(), 1, True)
            start = end - length
    if k >= 0 and distance > k:
        return -1, -1, -1
    return distance, start, end


@njit(cache=True, parallel=True, nogil=True)
def _distance_batch(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, mode, k,
                    want_start, n_codes, match_codes, distance, start, end):
    for p in prange(q_index.shape[0]):
        qi = q_index[p]
        ti = t_index[p]
        distance[p], start[p], end[p] = _pair(
            q_codes[q_offsets[qi]:q_offsets[qi + 1]], t_codes[t_offsets[ti]:t_offsets[ti + 1]],
            mode, k, want_start, n_codes, match_codes)


@njit(cache=True, parallel=True, nogil=True)
def _wavefront_row(table, m, target, reverse, top_delta, band_words, tile_columns, row):
    """Write into ``row`` the last row of the query (as ``table``, ``m`` rows) against every
    prefix of ``target`` (read backwards with ``reverse``), ``top_delta`` the horizontal delta
    of row 0 (1: ``D[0][j] = j``, 0: free start), on all cores: the query is cut into bands of
    ``band_words`` words and the target into tiles of ``tile_columns`` columns, and the tiles of
    one anti-diagonal run in parallel (band ``b`` on tile ``d - b``), each band taking the
    horizontal deltas that the band above left for the same tile on the diagonal before
    (two slots, by the diagonal's parity)."""
    words = table.shape[1]
    n = target.shape[0]
    bands = (words + band_words - 1) // band_words
    tiles = (n + tile_columns - 1) // tile_columns
    pv = np.full(words, ALL, dtype=np.uint64)
    mv = np.zeros(words, dtype=np.uint64)
    carries = np.zeros((2, bands, tile_columns), dtype=np.int8)
    last_bit = ONE << np.uint64((m - 1) & 63)
    row[0] = m
    for diagonal in range(bands + tiles - 1):
        for band in prange(max(0, diagonal - tiles + 1), min(bands, diagonal + 1)):
            tile = diagonal - band
            first = tile * tile_columns
            for j in range(first, min(n, first + tile_columns)):
                hin = top_delta if band == 0 else \
                    carries[(diagonal - 1) & 1, band - 1, j - first]
                c = target[n - 1 - j] if reverse else target[j]
                for w in range(band * band_words, min(words, (band + 1) * band_words)):
                    high = last_bit if w == words - 1 else _HIGH
                    pv[w], mv[w], hin = _block(pv[w], mv[w], table[c, w], hin, high)
                if band == bands - 1:
                    row[j + 1] = hin
                else:
                    carries[diagonal & 1, band, j - first] = hin
    for j in range(n):
        row[j + 1] += row[j]


#: Words (64 query rows each) of a band and target columns of a tile of :func:`_wavefront_row`
#: for long pairs: a tile is a few milliseconds of one core's work, far more than the cost of
#: starting a diagonal's parallel loop.
WAVEFRONT_BAND_WORDS = 16
WAVEFRONT_TILE_COLUMNS = 1 << 14


def _whole_row(query, target, reverse, top_delta, n_codes, match_codes):
    """:func:`_wavefront_row` of ``query`` against ``target`` with the long-pair tiles."""
    row = np.empty(len(target) + 1, dtype=np.int64)
    table = match_table(query, n_codes, match_codes)
    _wavefront_row(table, len(query), target, reverse, top_delta, WAVEFRONT_BAND_WORDS,
                   WAVEFRONT_TILE_COLUMNS, row)
    return row


def _long_pair(query, target, mode, k, want_start, n_codes, match_codes):
    """Distance, target start and end (half-open) of one long pair (both sides non-empty) on
    all cores; -1s when over ``k``. A global distance comes from bands around the diagonal that
    double from 64, as edlib does (similar pairs cost a band about twice their distance wide),
    until a band would cover half the target: then the whole matrix, tiled over the cores, is
    cheaper than the bands still to try. The free-end modes read the whole last row."""
    m, n = len(query), len(target)
    if mode == EDIT_GLOBAL:
        if k >= 0 and abs(m - n) > k:
            return -1, -1, -1
        table = match_table(query, n_codes, match_codes)
        bound = max(64, abs(m - n))
        distance = -1
        while 4 * bound < max(m, n) and (k < 0 or bound < k):
            found = _global_distance(table, m, target, bound)
            if found <= bound:
                distance = found
                break
            bound *= 2
        if distance < 0:
            distance = (_global_distance(table, m, target, k) if k >= 0 else
                        int(_whole_row(query, target, False, 1, n_codes, match_codes)[n]))
        start, end = 0, n
    else:
        row = _whole_row(query, target, False, 1 if mode == EDIT_PREFIX else 0, n_codes,
                         match_codes)
        end = int(np.argmin(row))
        distance = int(row[end])
        start = 0 if mode == EDIT_PREFIX else -1
        if mode == EDIT_INFIX and want_start and (k < 0 or distance <= k):
            # As in _pair: the longest reversed target[:end] prefix that the reversed query
            # matches at the same cost (the last column where the row is smallest).
            backwards = _whole_row(query[::-1].copy(), target[:end], True, 1, n_codes,
                                   match_codes)
            length = end - int(np.argmin(backwards[::-1]))
            start = end - length
    if k >= 0 and distance > k:
        return -1, -1, -1
    return distance, start, end


@njit(cache=True, nogil=True)
def _column_value(pvs, mvs, j, i):
    """D[i][j] of a global alignment from the stored vertical deltas of column ``j``."""
    value = j
    full = i >> 6
    for w in range(full):
        value += _popcount(pvs[j, w]) - _popcount(mvs[j, w])
    rest = i & 63
    if rest:
        mask = (ONE << np.uint64(rest)) - ONE
        value += _popcount(pvs[j, full] & mask) - _popcount(mvs[j, full] & mask)
    return value


@njit(inline="always")
def _delta(plus, minus, j, i):
    """The delta of row ``i`` (>= 1) in column ``j`` whose +1 rows are the bits of ``plus[j]``
    and -1 rows those of ``minus[j]``."""
    bit = ONE << np.uint64((i - 1) & 63)
    w = (i - 1) >> 6
    if plus[j, w] & bit:
        return 1
    if minus[j, w] & bit:
        return -1
    return 0


@njit(cache=True, nogil=True)
def _global_ops(query, target, n_codes, match_codes, ops):
    """Write the operations of an optimal global alignment into ``ops`` (last operation first)
    and return their number. Stores every column's vertical and horizontal delta vectors, then
    walks back from (m, n) preferring diagonal moves, then insertions (query only), then
    deletions (target only), each step reading the deltas of the cells around it."""
    m = query.shape[0]
    n = target.shape[0]
    count = 0
    table = match_table(query, n_codes, match_codes)
    words = table.shape[1]
    # Column j's vertical deltas (D[i][j] - D[i-1][j]) and horizontal ones (D[i][j] -
    # D[i][j-1]) of rows 1..m, as +1 and -1 bits.
    pvs = np.empty((n + 1, words), dtype=np.uint64)
    mvs = np.empty((n + 1, words), dtype=np.uint64)
    phs = np.empty((n + 1, words), dtype=np.uint64)
    mhs = np.empty((n + 1, words), dtype=np.uint64)
    pvs[0, :] = ALL
    mvs[0, :] = ZERO
    for j in range(n):
        c = target[j]
        hin = 1
        for w in range(words):
            pvs[j + 1, w], mvs[j + 1, w], hin, phs[j + 1, w], mhs[j + 1, w] = _block_deltas(
                pvs[j, w], mvs[j, w], table[c, w], hin, _HIGH)
    i = m
    j = n
    current = _column_value(pvs, mvs, j, i)
    while i > 0 and j > 0:
        left = current - _delta(phs, mhs, j, i)  # D[i][j-1]
        diagonal = left - _delta(pvs, mvs, j - 1, i)
        same = query[i - 1] == target[j - 1] and query[i - 1] < match_codes
        if current == diagonal + (0 if same else 1):
            ops[count] = OP_MATCH if same else OP_MISMATCH
            i -= 1
            j -= 1
            current = diagonal
        elif _delta(pvs, mvs, j, i) == 1:  # D[i-1][j] + 1
            ops[count] = OP_INSERTION
            i -= 1
            current -= 1
        else:  # in a consistent matrix current == left + 1 here
            ops[count] = OP_DELETION
            j -= 1
            current = left
        count += 1
    # One side is used up: the rest of the other is deletions (row 0) or insertions (column 0).
    for _ in range(j):
        ops[count] = OP_DELETION
        count += 1
    for _ in range(i):
        ops[count] = OP_INSERTION
        count += 1
    return count


@njit(cache=True, parallel=True, nogil=True)
def _cigar_batch(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, start, end,
                 n_codes, match_codes, room, run_ops, run_lengths, run_counts):
    """Trace the pairs with ``start[p] >= 0`` in full, each writing its runs from ``room[p]``
    (:func:`.._cigar_text.write_runs`; -2: they did not fit); -1 runs for the others."""
    for p in prange(q_index.shape[0]):
        if start[p] < 0:
            run_counts[p] = -1
            continue
        qi = q_index[p]
        ti = t_index[p]
        query = q_codes[q_offsets[qi]:q_offsets[qi + 1]]
        target = t_codes[t_offsets[ti] + start[p]:t_offsets[ti] + end[p]]
        ops = np.empty(query.shape[0] + target.shape[0], dtype=np.uint8)
        count = _global_ops(query, target, n_codes, match_codes, ops)
        runs = write_runs(ops, count, run_ops[room[p]:room[p + 1]],
                          run_lengths[room[p]:room[p + 1]])
        run_counts[p] = runs if runs >= 0 else -2


@njit(cache=True, parallel=True, nogil=True)
def _split_columns(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, t_start, pair, qa,
                   mid, qb, ta, tb, cost, n_codes, match_codes, row_at, rows, cut, halves):
    """The splits of :func:`gpualign.edit._linear.hirschberg` for subproblems of the pairs
    ``(q_index[p], t_index[p])`` whose target ranges start at ``t_start[p]``: the columns into
    ``cut``, the two halves' distances into ``halves[s, 0]`` and ``halves[s, 1]``. Both rows of
    every subproblem run side by side (two tasks a subproblem, so even the first level keeps
    two cores busy), into ``rows[row_at[task]:]``, in the band of the subproblem's distance
    ``cost[s]``: on an optimal path neither half's cost exceeds it, so where the two rows add
    up to ``cost[s]`` both are exact, and elsewhere they only overestimate."""
    count = pair.shape[0]
    for task in prange(2 * count):
        s = task >> 1
        p = pair[s]
        query = q_codes[q_offsets[q_index[p]]:q_offsets[q_index[p] + 1]]
        first = t_offsets[t_index[p]] + t_start[p]
        target = t_codes[first + ta[s]:first + tb[s]]
        row = rows[row_at[task]:row_at[task + 1]]
        if task & 1:
            half = query[mid[s]:qb[s]][::-1].copy()
        else:
            half = query[qa[s]:mid[s]]
        _banded_sweep(match_table(half, n_codes, match_codes), half.shape[0], target, cost[s],
                      (task & 1) == 1, row)
    for s in prange(count):
        above = rows[row_at[2 * s]:row_at[2 * s + 1]]
        below = rows[row_at[2 * s + 1]:row_at[2 * s + 2]]
        n = above.shape[0] - 1
        at = 0
        for j in range(1, n + 1):
            if above[j] + below[n - j] < above[at] + below[n - at]:
                at = j
        cut[s] = ta[s] + at
        halves[s, 0] = above[at]
        halves[s, 1] = below[n - at]


@njit(cache=True, parallel=True, nogil=True)
def _trace_leaves(q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, t_start, pair, qa,
                  qb, ta, tb, n_codes, match_codes, base, buffer):
    """Trace the leaves of :func:`gpualign.edit._linear.hirschberg` in full, each into its
    pair's operation buffer ``buffer[base[p]:]`` from position ``qa + ta``, first operation
    first."""
    for s in prange(pair.shape[0]):
        p = pair[s]
        query = q_codes[q_offsets[q_index[p]]:q_offsets[q_index[p] + 1]][qa[s]:qb[s]]
        first = t_offsets[t_index[p]] + t_start[p]
        target = t_codes[first + ta[s]:first + tb[s]]
        ops = np.empty(query.shape[0] + target.shape[0], dtype=np.uint8)
        count = _global_ops(query, target, n_codes, match_codes, ops)
        at = base[p] + qa[s] + ta[s]
        for o in range(count):
            buffer[at + o] = ops[count - 1 - o]


def linear_cigars(queries, targets, q_index, t_index, start, end, distance,
                  progress: Progress | None = None, share: int = 0) -> PackedCigars:
    """Extended CIGARs of the global alignments of queries with their target ranges ``[start,
    end)``, whose distances are ``distance``, in linear space (:mod:`._linear`), all cores on
    each level's subproblems; ``progress`` moves by ``share`` cells over the levels."""
    q_len = queries.lengths[q_index].astype(np.int64)
    t_start = np.asarray(start, dtype=np.int64)
    span = np.asarray(end, dtype=np.int64) - t_start
    base = np.zeros(len(q_index) + 1, dtype=np.int64)
    np.cumsum(q_len + span, out=base[1:])
    buffer = np.full(int(base[-1]), NO_OP, dtype=np.uint8)
    sequences = (queries.codes, queries.offsets, targets.codes, targets.offsets, q_index, t_index,
                 t_start)
    codes = (queries.alphabet.size, queries.alphabet.match_codes)

    def split_columns(pair, qa, mid, qb, ta, tb, cost):
        row_at = np.zeros(2 * len(pair) + 1, dtype=np.int64)
        np.cumsum(np.repeat(tb - ta + 1, 2), out=row_at[1:])
        rows = np.empty(int(row_at[-1]), dtype=np.int64)
        cut = np.empty(len(pair), dtype=np.int64)
        halves = np.empty((len(pair), 2), dtype=np.int64)
        _split_columns(*sequences, pair, qa, mid, qb, ta, tb, cost, *codes, row_at, rows, cut,
                       halves)
        return cut, halves[:, 0], halves[:, 1]

    def trace_leaves(pair, qa, qb, ta, tb):
        _trace_leaves(*sequences, pair, qa, qb, ta, tb, *codes, base, buffer)

    hirschberg(q_len, span, np.asarray(distance, dtype=np.int64),
               lambda rows, columns: ~needs_linear(rows, columns), split_columns, trace_leaves,
               progress.cells_done if progress is not None else None, share)
    return packed_of_buffer(buffer, base)


def _batches(count: int) -> Iterator[slice]:
    """Consecutive slices of ``config.CPU_BATCH_PAIRS`` of ``count`` pairs: each compiled call
    gets a bounded share of the pairs, so a progress bar moves and temporaries stay small."""
    step = max(1, config.CPU_BATCH_PAIRS)
    for lo in range(0, count, step):
        yield slice(lo, min(count, lo + step))


def distance_batch(queries, targets, q_index, t_index, mode, k, want_start, progress: Progress,
                   credit: np.ndarray):
    """Distances and (half-open) target ranges of pairs ``(queries[q_index[p]],
    targets[t_index[p]])`` on the CPU; -1s for pairs over ``k`` (``k < 0``: no cutoff).
    ``progress`` moves by ``credit[p]`` cells as pair ``p`` is done."""
    count = len(q_index)
    distance = np.empty(count, dtype=np.int32)
    start = np.empty(count, dtype=np.int32)
    end = np.empty(count, dtype=np.int32)
    cells = queries.lengths[q_index].astype(np.int64) * targets.lengths[t_index]
    long = np.flatnonzero(cells >= max(1, config.LONG_EDIT_MIN_CELLS))
    short = np.flatnonzero(cells < max(1, config.LONG_EDIT_MIN_CELLS))
    codes = (queries.alphabet.size, queries.alphabet.match_codes)
    for part in _batches(len(short)):
        pairs = short[part]
        found = [np.empty(len(pairs), dtype=np.int32) for _ in range(3)]
        _distance_batch(queries.codes, queries.offsets, targets.codes, targets.offsets,
                        q_index[pairs], t_index[pairs], mode, k, want_start, *codes, *found)
        for values, out in zip(found, (distance, start, end), strict=True):
            out[pairs] = values
        progress.pairs_done(credit[pairs])
    # Long pairs one at a time, each on all cores.
    for p in long.tolist():
        distance[p], start[p], end[p] = _long_pair(
            queries.codes_of(q_index[p]), targets.codes_of(t_index[p]), mode, k,
            want_start, *codes)
        progress.pairs_done(credit[p:p + 1])
    return distance, start, end


def cigar_batch(queries, targets, q_index, t_index, start, end, distance, progress: Progress,
                credit: np.ndarray) -> PackedCigars:
    """Extended CIGARs of the global alignments of queries with their target ranges (None where
    ``start < 0``), whose distances are ``distance`` (-1: not known yet, allowed for the pairs
    traced in full); CPU threads, so it can overlap GPU work of the next batch. Pairs that
    :func:`._shared.needs_linear` picks are traced in linear space (:func:`linear_cigars`), the
    others in full. ``progress`` moves by ``credit[p]`` cells as pair ``p``'s CIGAR is done
    (the linear ones level by level)."""
    q_len = queries.lengths[q_index]
    span = np.where(start >= 0, end - start, 0)
    linear = np.flatnonzero((start >= 0) & needs_linear(q_len, span))
    traced_start = start.copy()
    traced_start[linear] = -1  # left out of the full tracebacks
    # An optimal alignment of cost d has at most d runs of edits and d + 1 of matches (an
    # unknown distance, -1: one run an operation).
    room = np.where(traced_start < 0, 0, np.where(
        distance < 0, q_len + span, np.minimum(q_len + span, 2 * distance.astype(np.int64) + 1)))
    parts = []
    for part in _batches(len(q_index)):
        room_at = np.zeros(part.stop - part.start + 1, dtype=np.int64)
        np.cumsum(room[part], out=room_at[1:])
        run_ops = np.empty(int(room_at[-1]), dtype=np.uint8)
        run_lengths = np.empty(int(room_at[-1]), dtype=np.int64)
        run_counts = np.empty(part.stop - part.start, dtype=np.int64)
        _cigar_batch(queries.codes, queries.offsets, targets.codes, targets.offsets,
                     q_index[part], t_index[part], traced_start[part], end[part],
                     queries.alphabet.size, queries.alphabet.match_codes, room_at, run_ops,
                     run_lengths, run_counts)
        if (run_counts == -2).any():
            overflow = part.start + int(np.flatnonzero(run_counts == -2)[0])
            raise RuntimeError(f"pair #{overflow}: its traceback has more runs than an "
                               f"alignment of its distance {int(distance[overflow])} can have")
        parts.append(pack_runs(run_ops, run_lengths, room_at[:-1], run_counts))
        progress.cells_done(int(credit[part][traced_start[part] >= 0].sum()))
    progress.cells_done(int(credit[start < 0].sum()))  # no CIGAR to trace
    cigars = PackedCigars.concatenate(parts)
    if len(linear):
        cigars = cigars.replaced(linear, linear_cigars(
            queries, targets, q_index[linear], t_index[linear], start[linear], end[linear],
            distance[linear], progress, int(credit[linear].sum())))
    return cigars


def edit_pairs(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
               mode: int, k: int, task: str, progress: Progress | None = None,
               positional: bool = False,
               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None,
                          PackedCigars | None]:
    """Edit distance of the pairs ``(qset[q_index[p]], tset[t_index[p]])`` on the CPU (the
    contract of every backend).

    Parameters
    ----------
    qset, tset : SequenceSet
        Queries and targets, encoded with one alphabet.
    q_index, t_index : np.ndarray of int64
        The pairs.
    mode : int
        An edit mode code (:func:`gpualign.codes.edit_mode`).
    k : int
        Cutoff, or -1 for none.
    task : {"distance", "locations", "path"}
    progress : Progress, optional
        Moved as pairs are done: by their cells (see :func:`gpualign._progress.pass_credits`),
        or one a pair.
    positional : bool
        The pairs are ``queries[i]`` with ``targets[i]``; the CPU reads the index arrays anyway.

    Returns
    -------
    distance : np.ndarray of int32
        -1 for pairs over ``k``.
    start, end : np.ndarray of int32 or None
        The target range (half-open; -1s for pairs over ``k``), None for ``task="distance"``.
    cigar : PackedCigars or None
        The CIGARs for ``task="path"`` (None for pairs over ``k``), else None.
    """
    want_start = task != "distance"
    progress = Progress.silent() if progress is None else progress
    q_len, t_len = qset.lengths[q_index], tset.lengths[t_index]
    first, second = pass_credits(q_len, t_len, task == "path")
    if task == "path" and mode == EDIT_GLOBAL and k < 0:
        # Global CIGARs without a cutoff that are traced in full need no distance pass: they
        # span the whole target, and their edits are the distances (as on the GPU for long
        # pairs).
        direct = ~needs_linear(q_len, t_len)
    else:
        direct = np.zeros(len(q_index), dtype=bool)
    measured = np.flatnonzero(~direct)
    distance = np.full(len(q_index), -1, dtype=np.int32)  # -1 where still unknown
    start = np.where(direct, 0, -1).astype(np.int32)
    end = np.where(direct, t_len, -1).astype(np.int32)
    distance[measured], start[measured], end[measured] = distance_batch(
        qset, tset, q_index[measured], t_index[measured], mode, k, want_start, progress,
        first[measured])
    if not want_start:
        return distance, None, None, None
    cigar = None
    if task == "path":
        cigar = cigar_batch(qset, tset, q_index, t_index, start, end, distance, progress, second)
        if direct.any():
            columns, _ = op_counts(cigar.take(direct))  # in the order "=XID"
            distance[direct] = columns[:, 1:].sum(axis=1)
            progress.pairs_done(first[direct])
    return distance, start, end, cigar
