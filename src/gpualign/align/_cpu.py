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
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import config
from .._cigar_text import decode_cigars, text_offsets, write_cigar
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

# Traceback byte: bits 0-1 where H came from, bit 2 E opened here, bit 3 F opened here.
_FROM_DIAGONAL, _FROM_E, _FROM_F, _STOP = 0, 1, 2, 3
_E_OPENED, _F_OPENED = 4, 8
_NEG = -(1 << 60)


@njit(cache=True, nogil=True)
def _fill(a, b, table, gap_open, gap_extend, mode, trace):
    """Fill the DP of one pair; return ``(score, query_end, target_end)``. ``trace`` (uint8,
    ``(m + 1) * (n + 1)``, or empty for score only) receives the traceback bytes."""
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
            h[0] = -(gap_open + (i - 1) * gap_extend)
        else:
            h[0] = 0
        e = _NEG
        row = table[a[i - 1]]
        for j in range(1, width):
            # E: a gap in the query ending here (D); F: a gap in the target (I).
            e_open = h[j - 1] - gap_open
            e_extend = e - gap_extend
            e = e_open if e_open >= e_extend else e_extend
            f_open = h[j] - gap_open
            f_extend = f[j] - gap_extend
            fj = f_open if f_open >= f_extend else f_extend
            f[j] = fj
            d = diagonal + row[b[j - 1]]
            score = d
            if e > score:
                score = e
            if fj > score:
                score = fj
            if mode == ALIGN_LOCAL and score <= 0:
                score = 0
            diagonal = h[j]
            h[j] = score
            if keep:
                if mode == ALIGN_LOCAL and score == 0:
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
                trace[i * width + j] = code
            if mode == ALIGN_LOCAL:
                if score > best or (score == best and j < best_j):
                    best, best_i, best_j = score, i, j
            elif mode == ALIGN_OVERLAP and j == n and score > best:
                best, best_i, best_j = score, i, j  # last column: smaller query end first
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
def _traceback(a, b, trace, mode, end_i, end_j, match_codes, ops):
    """Walk the traceback bytes back from ``(end_i, end_j)``; write the operations (diagonal
    steps as ``=`` for equal codes that can match, else ``X``: N against N is ``X``) reversed
    into ``ops``; return ``(query_start, target_start, count, matches)``."""
    width = len(b) + 1
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
        code = trace[i * width + j]
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
                gap_open, gap_extend, mode, want_path, text_offsets, text):
    """Align pair ``p`` = (``q_index[p]``, ``t_index[p]``) for every ``p``.

    Returns int64 arrays ``score, query_start, query_end, target_start, target_end,
    text_length, matches, columns``; with ``want_path`` the CIGAR of pair ``p`` fills
    ``text[text_offsets[p]:][:text_length[p]]`` (starts are -1 without)."""
    pairs = len(q_index)
    score = np.empty(pairs, dtype=np.int64)
    q_start = np.full(pairs, -1, dtype=np.int64)
    q_end = np.empty(pairs, dtype=np.int64)
    t_start = np.full(pairs, -1, dtype=np.int64)
    t_end = np.empty(pairs, dtype=np.int64)
    text_length = np.zeros(pairs, dtype=np.int64)
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
        s, ie, je = _fill(a, b, table, gap_open, gap_extend, mode, trace)
        score[p], q_end[p], t_end[p] = s, ie, je
        if want_path:
            ops = np.empty(len(a) + len(b), dtype=np.uint8)
            i0, j0, count, matched = _traceback(a, b, trace, mode, ie, je, match_codes, ops)
            q_start[p], t_start[p], matches[p], columns[p] = i0, j0, matched, count
            text_length[p] = write_cigar(ops, count,
                                         text[text_offsets[p]:text_offsets[p + 1]])
    return score, q_start, q_end, t_start, t_end, text_length, matches, columns


def align_pairs(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
                table: np.ndarray, gap_open: int, gap_extend: int, mode: int, task: str,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                           list[str | None] | None, np.ndarray | None]:
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

    Returns
    -------
    score, query_start, query_end, target_start, target_end : np.ndarray of int64
        -1 where ``task`` reports no such value (ends: "end" and "path"; starts: "path").
    cigar : list of str or None
        The CIGAR strings (``task="path"``).
    identity : np.ndarray of float64 or None
        Matches / alignment columns (``task="path"``).

    Notes
    -----
    Scores alone come from parasail's SIMD kernels when ``config.ALIGN_CPU_SCORES`` is
    ``"parasail"`` and it can take the alphabet (identical scores), else from the DP of
    :func:`align_batch`, which also gives the ends and paths.
    """
    if task == "score" and config.ALIGN_CPU_SCORES == "parasail" and \
            _parasail.available(qset.alphabet.name):
        score = _parasail.scores(qset, tset, q_index, t_index, table, gap_open, gap_extend,
                                 mode)
        missing = np.full(len(score), -1, dtype=np.int64)
        return score, missing, missing.copy(), missing.copy(), missing.copy(), None, None
    want_path = task == "path"
    if want_path:
        offsets = text_offsets(qset.lengths[q_index] + tset.lengths[t_index])
    else:
        offsets = np.zeros(len(q_index) + 1, dtype=np.int64)
    text = np.empty(int(offsets[-1]), dtype=np.uint8)
    score, q_start, q_end, t_start, t_end, length, matches, columns = align_batch(
        qset.codes, qset.offsets, tset.codes, tset.offsets, q_index, t_index,
        table.astype(np.int64), qset.alphabet.match_codes, gap_open, gap_extend, mode,
        want_path, offsets, text)
    if not want_path:
        if task == "score":
            q_end[:] = -1
            t_end[:] = -1
        return score, q_start, q_end, t_start, t_end, None, None
    identity = np.zeros(len(q_index), dtype=np.float64)
    np.divide(matches, columns, out=identity, where=columns > 0)
    return (score, q_start, q_end, t_start, t_end, decode_cigars(text, offsets[:-1], length),
            identity)
