"""Textbook oracles for the tests: full dynamic-programming matrices in plain Python/NumPy.

These are deliberately a different algorithm from every fast path (the bit-vector code): the
Wagner-Fischer recurrence over every cell, one row at a time,

    D[i][j] = min(D[i-1][j-1] + cost(q[i-1], t[j-1]), D[i-1][j] + 1, D[i][j-1] + 1)

with the first row ``D[0][j] = j`` (global, prefix) or ``0`` (infix: the query may start
anywhere), the first column ``D[i][0] = i``, and the answer read from the last row: the last
cell (global) or the row's minimum (prefix, infix: the target end is free).

Sequences are lists (or arrays) of int codes. Codes ``>= match_codes`` match nothing, not even
themselves (DNA's ``N`` is code 4 with ``match_codes=4``); ``match_codes=None`` lets every
equal pair match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from gpualign.cigar import parse_cigar

GLOBAL_MODES = ("global", "nw")
PREFIX_MODES = ("prefix", "shw")
INFIX_MODES = ("infix", "hw")

DNA_MATCH_CODES = 4


def _mode(mode: str) -> str:
    mode = mode.lower()
    if mode in GLOBAL_MODES:
        return "global"
    if mode in PREFIX_MODES:
        return "prefix"
    if mode in INFIX_MODES:
        return "infix"
    raise ValueError(mode)


def symbols_match(a: int, b: int, match_codes: int | None = DNA_MATCH_CODES) -> bool:
    """Whether two codes match (equal, and below ``match_codes``)."""
    return a == b and (match_codes is None or a < match_codes)


def dp_matrix(query: Sequence[int], target: Sequence[int], mode: str = "global",
              match_codes: int | None = DNA_MATCH_CODES) -> list[list[int]]:
    """The whole ``(m+1) x (n+1)`` matrix with three nested Python loops (small inputs only)."""
    mode = _mode(mode)
    m, n = len(query), len(target)
    d = [[0] * (n + 1) for _ in range(m + 1)]
    for j in range(n + 1):
        d[0][j] = 0 if mode == "infix" else j
    for i in range(1, m + 1):
        d[i][0] = i
        for j in range(1, n + 1):
            cost = 0 if symbols_match(query[i - 1], target[j - 1], match_codes) else 1
            d[i][j] = min(d[i - 1][j - 1] + cost, d[i - 1][j] + 1, d[i][j - 1] + 1)
    return d


def last_row(query: Sequence[int], target: Sequence[int], mode: str = "global",
             match_codes: int | None = DNA_MATCH_CODES) -> np.ndarray:
    """Row ``m`` of the DP matrix, computed row by row with NumPy (fast enough for 4000 x 4000).

    Within a row the only left-to-right dependency is ``D[i][j-1] + 1``; it is resolved as
    ``D[i][j] = min_{j' <= j} (T[j'] + j - j')`` where ``T`` holds the diagonal and vertical
    candidates, i.e. a running minimum of ``T - j``.
    """
    mode = _mode(mode)
    q = np.asarray(query, dtype=np.int64)
    t = np.asarray(target, dtype=np.int64)
    n = len(t)
    columns = np.arange(n + 1, dtype=np.int64)
    row = np.zeros(n + 1, dtype=np.int64) if mode == "infix" else columns.copy()
    for i in range(1, len(q) + 1):
        c = q[i - 1]
        matchable = match_codes is None or c < match_codes
        cost = (t != c) if matchable else np.ones(n, dtype=bool)
        candidates = np.empty(n + 1, dtype=np.int64)
        candidates[0] = i
        candidates[1:] = np.minimum(row[:-1] + cost, row[1:] + 1)
        row = np.minimum.accumulate(candidates - columns) + columns
    return row


class NaiveResult(NamedTuple):
    """Distance of an optimal alignment and every target end (half-open) that reaches it."""

    distance: int
    ends: tuple[int, ...]

    @property
    def end(self) -> int:
        """The leftmost optimal end."""
        return self.ends[0]


def edit_distance_naive(query: Sequence[int], target: Sequence[int], mode: str = "global",
                        match_codes: int | None = DNA_MATCH_CODES) -> NaiveResult:
    """Edit distance of ``query`` and ``target`` in ``mode`` (global/NW, prefix/SHW, infix/HW).

    ``ends`` lists the half-open target ends of optimal alignments in increasing order; for
    global mode it is ``(len(target),)``.
    """
    mode = _mode(mode)
    row = last_row(query, target, mode, match_codes)
    if mode == "global":
        return NaiveResult(int(row[-1]), (len(target),))
    best = int(row.min())
    return NaiveResult(best, tuple(int(e) for e in np.flatnonzero(row == best)))


def global_distance(query: Sequence[int], target: Sequence[int],
                    match_codes: int | None = DNA_MATCH_CODES) -> int:
    """Levenshtein distance of the whole query with the whole target."""
    return int(last_row(query, target, "global", match_codes)[-1])


def infix_starts(query: Sequence[int], target: Sequence[int], end: int,
                 match_codes: int | None = DNA_MATCH_CODES) -> tuple[int, tuple[int, ...]]:
    """For alignments of the whole query ending at target column ``end`` (half-open), return
    ``(best, starts)``: the smallest ``global(query, target[s:end])`` over all ``s`` and every
    start ``s`` that reaches it, in increasing order.

    Computed from the last row of the reversed query against the reversed ``target[:end]``
    with a fixed start: its column ``L`` is ``global(query, target[end-L:end])``.
    """
    reversed_query = list(query)[::-1]
    reversed_target = list(target[:end])[::-1]
    row = last_row(reversed_query, reversed_target, "global", match_codes)
    best = int(row.min())
    return best, tuple(sorted(end - int(length) for length in np.flatnonzero(row == best)))


def apply_cigar(query: Sequence[int], target: Sequence[int],
                cigar: str) -> list[tuple[int | None, int | None, str]]:
    """Lay the alignment out as columns ``(query symbol or None, target symbol or None, op)``.

    A plain character loop (independent of :mod:`gpualign.cigar`). Raises ``ValueError`` if
    the CIGAR does not consume both sequences exactly.
    """
    columns: list[tuple[int | None, int | None, str]] = []
    i = j = 0
    number = ""
    for char in cigar:
        if char.isdigit():
            number += char
            continue
        if not number or char not in "=XID":
            raise ValueError(f"bad CIGAR {cigar!r}")
        for _ in range(int(number)):
            if char in "=X":
                columns.append((query[i], target[j], char))
                i += 1
                j += 1
            elif char == "I":
                columns.append((query[i], None, char))
                i += 1
            else:
                columns.append((None, target[j], char))
                j += 1
        number = ""
    if number or i != len(query) or j != len(target):
        raise ValueError(f"CIGAR {cigar!r} does not span {len(query)} x {len(target)}")
    return columns


def rescore_cigar(query: Sequence[int], target: Sequence[int], cigar: str,
                  match_codes: int | None = DNA_MATCH_CODES) -> int:
    """Cost of the alignment a CIGAR describes, counted from its columns; the ``=``/``X``
    labels are ignored and recomputed from the symbols (so a mislabelled CIGAR still scores
    what it aligns)."""
    cost = 0
    for a, b, _ in apply_cigar(query, target, cigar):
        if a is None or b is None or not symbols_match(a, b, match_codes):
            cost += 1
    return cost


def cigar_labels_correct(query: Sequence[int], target: Sequence[int], cigar: str,
                         match_codes: int | None = DNA_MATCH_CODES) -> bool:
    """Whether every ``=`` column is a match and every ``X`` column a mismatch."""
    for a, b, op in apply_cigar(query, target, cigar):
        if op in "=X" and symbols_match(a, b, match_codes) != (op == "="):
            return False
    return True


# --- longest common subsequence --------------------------------------------------------------
#
# The textbook recurrence over every cell (Wagner-Fischer / Hirschberg 1975),
#
#     L[i][j] = L[i-1][j-1] + 1                if q[i-1] and t[j-1] match
#             = max(L[i-1][j], L[i][j-1])      otherwise
#
# with ``L[0][j] = L[i][0] = 0`` and the answer ``L[m][n]``. The fast paths are bit-vector
# algorithms (Hyyrö); nothing here shares code or ideas with them.


def lcs_matrix(a: Sequence[int], b: Sequence[int],
               match_codes: int | None = DNA_MATCH_CODES) -> list[list[int]]:
    """The whole ``(m+1) x (n+1)`` LCS matrix with nested Python loops (small inputs only)."""
    m, n = len(a), len(b)
    table = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if symbols_match(a[i - 1], b[j - 1], match_codes):
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    return table


def lcs_length_naive(a: Sequence[int], b: Sequence[int],
                     match_codes: int | None = DNA_MATCH_CODES) -> int:
    """LCS length of ``a`` and ``b``: the same recurrence over every cell, one row at a time
    with NumPy (fast enough for 4096 x 4096).

    Within a row the only left-to-right dependency is ``L[i][j-1]``; since
    ``L[i][j] = max(C[j], L[i][j-1])`` with ``C[j] = max(L[i-1][j], L[i-1][j-1] + match)``,
    a row is the running maximum of ``C``. Codes ``>= match_codes`` match nothing;
    ``match_codes=None`` lets every equal pair match.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if len(a) > len(b):  # LCS is symmetric: rows over the shorter sequence
        a, b = b, a
    row = np.zeros(len(b) + 1, dtype=np.int64)
    matchable_b = np.ones(len(b), dtype=bool) if match_codes is None else b < match_codes
    for c in a.tolist():
        if match_codes is not None and c >= match_codes:
            continue  # a row that matches nothing equals the row above
        hit = (b == c) & matchable_b
        candidates = row.copy()
        candidates[1:] = np.maximum(row[1:], row[:-1] + hit)
        row = np.maximum.accumulate(candidates)
    return int(row[-1])


def is_subsequence(s: Sequence, t: Sequence) -> bool:
    """Whether ``s`` is a subsequence of ``t`` (greedy left-to-right scan)."""
    position = 0
    for symbol in t:
        if position == len(s):
            break
        if symbol == s[position]:
            position += 1
    return position == len(s)


def top_n_naive(lengths: Sequence[int], n: int) -> list[int]:
    """Indices of the ``n`` best subjects: longer LCS first, then the lower index."""
    return sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))[:n]


# --- alignment with a scoring scheme (Gotoh) ----------------------------------------------------

ALIGN_MODES = ("global", "local", "semi-global", "overlap")


class Alignment(NamedTuple):
    score: int
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    cigar: str


def align_naive(query: Sequence[int], target: Sequence[int], table, gap_open: int,
                gap_extend: int, mode: str = "global",
                match_codes: int | None = DNA_MATCH_CODES) -> Alignment:
    """Gotoh's three full matrices (H: best, E: ending in a gap in the query, i.e. ``D``;
    F: ending in a gap in the target, ``I``), a gap of length L costing
    ``gap_open + (L-1)*gap_extend``, then the traceback.

    Modes: ``global`` (all ends fixed), ``local`` (Smith-Waterman), ``semi-global`` (the
    query end to end, target ends free), ``overlap`` (all four ends free). The end cell is the
    best one allowed by the mode (as parasail: semi-global in the last row, overlap in the last
    row or column, never in row or column 0 unless a sequence is empty), ties broken by the
    smaller target end, then the smaller query end (local alignments: the empty one when no
    cell scores above 0). The traceback prefers a diagonal step, then a gap in the query, then
    a gap in the target, and opening a gap over extending one; local alignments stop at the
    first zero.
    ``=`` is a pair of equal codes below ``match_codes`` (other pairs are ``X``).
    """
    m, n = len(query), len(target)
    neg = -(1 << 40)
    cost = lambda length: gap_open + (length - 1) * gap_extend  # noqa: E731
    H = [[0] * (n + 1) for _ in range(m + 1)]
    E = [[neg] * (n + 1) for _ in range(m + 1)]
    F = [[neg] * (n + 1) for _ in range(m + 1)]
    for j in range(1, n + 1):
        if mode == "global":
            H[0][j] = E[0][j] = -cost(j)
    for i in range(1, m + 1):
        if mode in ("global", "semi-global"):
            H[i][0] = F[i][0] = -cost(i)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i][j] = max(E[i][j - 1] - gap_extend, H[i][j - 1] - gap_open)
            F[i][j] = max(F[i - 1][j] - gap_extend, H[i - 1][j] - gap_open)
            best = max(H[i - 1][j - 1] + int(table[query[i - 1]][target[j - 1]]),
                       E[i][j], F[i][j])
            H[i][j] = max(best, 0) if mode == "local" else best
    if mode == "global" or (mode != "local" and not (m and n)):
        cells = [(m, n)]
    elif mode == "semi-global":
        cells = [(m, j) for j in range(1, n + 1)]
    elif mode == "overlap":
        cells = [(m, j) for j in range(1, n + 1)] + [(i, n) for i in range(1, m)]
    else:
        cells = [(i, j) for i in range(m + 1) for j in range(n + 1)]
    i, j = min(cells, key=lambda c: (-H[c[0]][c[1]], c[1], c[0]))
    score, query_end, target_end = H[i][j], i, j
    ops, state = [], "H"
    while True:
        if mode == "local" and state == "H" and H[i][j] == 0:
            break
        if (mode == "global" and i == 0 and j == 0) or (mode == "semi-global" and i == 0) \
                or (mode == "overlap" and (i == 0 or j == 0)):
            break
        if state == "H":
            if i > 0 and j > 0 and H[i][j] == H[i - 1][j - 1] + int(
                    table[query[i - 1]][target[j - 1]]):
                same = query[i - 1] == target[j - 1] and (match_codes is None
                                                          or query[i - 1] < match_codes)
                ops.append("=" if same else "X")
                i, j = i - 1, j - 1
            elif j > 0 and H[i][j] == E[i][j]:
                state = "E"
            else:
                state = "F"
        elif state == "E":
            ops.append("D")
            if H[i][j - 1] - gap_open == E[i][j]:
                state = "H"
            j -= 1
        else:
            ops.append("I")
            if H[i - 1][j] - gap_open == F[i][j]:
                state = "H"
            i -= 1
    ops.reverse()
    runs, cigar = [], ""
    for op in ops:
        if runs and runs[-1][1] == op:
            runs[-1][0] += 1
        else:
            runs.append([1, op])
    cigar = "".join(f"{count}{op}" for count, op in runs)
    return Alignment(score, i, query_end, j, target_end, cigar)


def rescore_alignment(query: Sequence[int], target: Sequence[int], query_start: int,
                      target_start: int, cigar: str, table, gap_open: int, gap_extend: int,
                      match_codes: int | None = DNA_MATCH_CODES) -> tuple[int, int, int]:
    """Apply ``cigar`` from ``(query_start, target_start)``: return ``(score, query_end,
    target_end)``; raise AssertionError when an ``=``/``X`` label is wrong or the CIGAR runs
    past a sequence."""
    i, j, score, previous = query_start, target_start, 0, ""
    for count, op in parse_cigar(cigar):
        if op in "=X":
            for _ in range(count):
                assert i < len(query) and j < len(target), "CIGAR runs past a sequence"
                same = query[i] == target[j] and (match_codes is None or query[i] < match_codes)
                assert same == (op == "="), f"{op} at query {i}, target {j}"
                score += int(table[query[i]][target[j]])
                i, j = i + 1, j + 1
        else:
            # A run directly after a run of the same kind continues that gap.
            score -= (gap_extend * count) if previous == op else \
                gap_open + (count - 1) * gap_extend
            if op == "I":
                i += count
            else:
                j += count
            assert i <= len(query) and j <= len(target), "CIGAR runs past a sequence"
        previous = op
    return score, i, j


# --- maximal exact matches ---------------------------------------------------------------------


def mems_naive(references: Sequence[Sequence[int]], query: Sequence[int],
               min_length: int) -> list[tuple[int, int, int, int]]:
    """Every MEM as ``(query_pos, record, record_pos, length)``, sorted: for every query
    position and reference position whose symbols match (codes < 4; N matches nothing), not
    extendable to the left (a start, or different symbols before), the run of matches to the
    right, kept when at least ``min_length`` long."""
    found = []
    for record, reference in enumerate(references):
        for i in range(len(query)):
            for p in range(len(reference)):
                if i > 0 and p > 0 and query[i - 1] < 4 and query[i - 1] == reference[p - 1]:
                    continue
                length = 0
                while (i + length < len(query) and p + length < len(reference)
                       and query[i + length] < 4 and query[i + length] == reference[p + length]):
                    length += 1
                if length >= min_length:
                    found.append((i, record, p, length))
    return sorted(found)


# --- minimizers ----------------------------------------------------------------------------------


def minimizer_hash_naive(code: int, k: int) -> int:
    """minimap2's ``hash64`` of a 2k-bit k-mer code, in Python integers (as in its sketch.c)."""
    mask = (1 << (2 * k)) - 1
    key = (~code + (code << 21)) & mask
    key = key ^ (key >> 24)
    key = (key + (key << 3) + (key << 8)) & mask
    key = key ^ (key >> 14)
    key = (key + (key << 2) + (key << 4)) & mask
    key = key ^ (key >> 28)
    return (key + (key << 31)) & mask


def minimizers_naive(sequences: Sequence[Sequence[int]], k: int,
                     w: int) -> list[tuple[int, int, int, bool]]:
    """Every (w, k)-minimizer as ``(sequence, position, hash, reverse)``, sorted: the k-mers of
    codes 0-3 only (A0 C1 G2 T3; an N breaks them), each read as the smaller of its code and
    its reverse complement's (``reverse`` when that is the reverse complement's); the runs of
    consecutive k-mers cut into every window of ``w`` consecutive ones (a run of fewer is one
    window), and in each window every k-mer of the smallest hash."""
    found = set()
    for number, sequence in enumerate(sequences):
        kmers: list[tuple[int, int, bool] | None] = []
        for i in range(len(sequence) - k + 1):
            word = sequence[i:i + k]
            if any(code > 3 for code in word):
                kmers.append(None)
                continue
            forward = sum(code << (2 * (k - 1 - j)) for j, code in enumerate(word))
            backward = sum((3 - code) << (2 * j) for j, code in enumerate(word))
            kmers.append((i, minimizer_hash_naive(min(forward, backward), k), backward < forward))
        runs, run = [], []
        for kmer in [*kmers, None]:
            if kmer is None:
                if run:
                    runs.append(run)
                run = []
            else:
                run.append(kmer)
        for run in runs:
            windows = [run] if len(run) < w else [run[s:s + w] for s in range(len(run) - w + 1)]
            for window in windows:
                smallest = min(h for _, h, _ in window)
                found.update((number, i, h, rev) for i, h, rev in window if h == smallest)
    return sorted(found)
