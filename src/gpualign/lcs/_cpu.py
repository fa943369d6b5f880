"""CPU backend of LCS: Hyyrö's bit-vector LCS (after Allison-Dix and Crochemore et al.) in Numba.

The query is the bit-vector side. ``V`` starts with all query rows set; for each subject symbol
``c`` with match mask ``M`` of the query, ``V = (V + (V & M)) | (V & ~M)``, the addition carried
from low words to high words. After ``j`` subject symbols the zero bits among the first ``i``
rows of ``V`` count ``LCS(query[:i], subject[:j])``, so one pass gives a whole DP column; the
LCS strings use that in Hirschberg's linear-space divide and conquer. Subjects run in parallel
over all cores (``prange``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from .. import config
from .._bitvectors import ALL, ONE, match_table
from ..sequences import Alphabet
from ..streaming import Batch, iter_batches

#: Subproblems with at most this many DP cells are traced back from a full matrix.
_BASE_CELLS = 4096


@njit(cache=True, nogil=True)
def _advance(v, table, subject):
    """Run the bit-vector ``v`` (in place) over every symbol of ``subject``."""
    words = v.shape[0]
    for j in range(subject.shape[0]):
        row = table[subject[j]]
        carry = np.uint64(0)
        for w in range(words):
            old = v[w]
            m = row[w]
            total = old + (old & m)
            carry_out = np.uint64(1) if total < old else np.uint64(0)
            total2 = total + carry
            if total2 < total:
                carry_out = np.uint64(1)
            v[w] = total2 | (old & ~m)
            carry = carry_out


@njit(cache=True, nogil=True)
def _zeros(v, rows):
    """Number of zero bits of ``v`` among its first ``rows`` bits."""
    count = 0
    for w in range(v.shape[0]):
        low = w * 64
        if low >= rows:
            break
        x = ~v[w]
        if rows - low < 64:
            x &= (ONE << np.uint64(rows - low)) - ONE
        while x:
            x &= x - ONE
            count += 1
    return count


@njit(cache=True, nogil=True, parallel=True)
def lengths(query, n_codes, match_codes, codes, offsets):
    """LCS length of ``query`` with every sequence of the packed set (``codes``, ``offsets``)."""
    count = offsets.shape[0] - 1
    out = np.zeros(count, dtype=np.int32)
    m = query.shape[0]
    if m == 0:
        return out
    table = match_table(query, n_codes, match_codes)
    for s in prange(count):
        v = np.full(table.shape[1], ALL, dtype=np.uint64)
        _advance(v, table, codes[offsets[s]:offsets[s + 1]])
        out[s] = _zeros(v, m)
    return out


def run(queries: list[np.ndarray], alphabet: Alphabet, subjects: Any, invalid: str,
        consume: Callable[[Batch, np.ndarray], None], devices: Sequence[int] | None) -> None:
    """Compute the LCS lengths of ``queries`` with every subject, in batches of
    ``config.LCS_CPU_BATCH_RESIDUES`` symbols; ``consume(batch, lengths)`` is called once per
    batch, in order, ``lengths`` of shape ``(len(queries), len(batch))``. ``devices`` must be
    None (GPUs only)."""
    if devices is not None:
        raise ValueError("devices= applies to the CUDA backend only")
    for batch in iter_batches(subjects, alphabet, invalid=invalid,
                              batch_residues=config.LCS_CPU_BATCH_RESIDUES):
        sequences = batch.sequences
        rows = np.empty((len(queries), len(sequences)), dtype=np.int32)
        for row, query in enumerate(queries):
            rows[row] = lengths(query, alphabet.size, alphabet.match_codes, sequences.codes,
                                sequences.offsets)
        consume(batch, rows)


@njit(cache=True, nogil=True)
def _column(query, subject, n_codes, match_codes):
    """``column[i] = LCS(query[:i], subject)`` for ``i = 0 .. len(query)``."""
    m = query.shape[0]
    column = np.zeros(m + 1, dtype=np.int64)
    if m == 0:
        return column
    table = match_table(query, n_codes, match_codes)
    v = np.full(table.shape[1], ALL, dtype=np.uint64)
    _advance(v, table, subject)
    for i in range(m):
        column[i + 1] = column[i] + (0 if (v[i >> 6] >> np.uint64(i & 63)) & ONE else 1)
    return column


@njit(cache=True, nogil=True)
def _traced(a, b, match_codes, out, filled):
    """Append an LCS of the small ``a`` and ``b`` (full-matrix DP) to ``out``; return the new
    fill."""
    m, n = a.shape[0], b.shape[0]
    score = np.zeros((m + 1, n + 1), dtype=np.int32)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if a[i - 1] == b[j - 1] and a[i - 1] < match_codes:
                score[i, j] = score[i - 1, j - 1] + 1
            else:
                score[i, j] = max(score[i - 1, j], score[i, j - 1])
    length = score[m, n]
    i, j, k = m, n, filled + length
    while i > 0 and j > 0:
        diagonal = a[i - 1] == b[j - 1] and a[i - 1] < match_codes
        if diagonal and score[i, j] == score[i - 1, j - 1] + 1:
            k -= 1
            out[k] = a[i - 1]
            i -= 1
            j -= 1
        elif score[i - 1, j] >= score[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return filled + length


@njit(cache=True, nogil=True)
def lcs_codes(query, subject, n_codes, match_codes):
    """One longest common subsequence of ``query`` and ``subject`` (codes), in linear space.

    Hirschberg's scheme on the subject: the forward column of the left half and the backward
    column of the right half (both from bit-vector passes) give the query row where an optimal
    path crosses the middle; the two sub-problems are solved the same way, leftmost first, so
    the pieces come out in order. The result is deterministic (first best split).
    """
    out = np.empty(min(query.shape[0], subject.shape[0]), dtype=np.uint8)
    filled = 0
    # Pending sub-problems (query_lo, query_hi, subject_lo, subject_hi); the top is leftmost.
    stack = np.empty((64 + 2 * 64, 4), dtype=np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, query.shape[0], 0, subject.shape[0]
    depth = 1
    while depth:
        depth -= 1
        qa, qb, sa, sb = stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3]
        if qa == qb or sa == sb:
            continue
        if (qb - qa) * (sb - sa) <= _BASE_CELLS or sb - sa == 1:
            filled = _traced(query[qa:qb], subject[sa:sb], match_codes, out, filled)
            continue
        mid = (sa + sb) // 2
        forward = _column(query[qa:qb], subject[sa:mid], n_codes, match_codes)
        backward = _column(query[qa:qb][::-1].copy(), subject[mid:sb][::-1].copy(), n_codes,
                           match_codes)
        rows = qb - qa
        split, best = 0, -1
        for i in range(rows + 1):
            total = forward[i] + backward[rows - i]
            if total > best:
                best, split = total, i
        if depth + 2 > stack.shape[0]:
            grown = np.empty((2 * stack.shape[0], 4), dtype=np.int64)
            grown[:depth] = stack[:depth]
            stack = grown
        stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = qa + split, qb, mid, sb
        stack[depth + 1, 0], stack[depth + 1, 1] = qa, qa + split
        stack[depth + 1, 2], stack[depth + 1, 3] = sa, mid
        depth += 2
    return out[:filled]
