"""Extended CIGAR strings (``=``, ``X``, ``I``, ``D``): parse, count, measure and re-score.

The one CIGAR parser of the library, its tests and its benchmarks. SAM convention: ``=`` and
``X`` consume one query and one target symbol, ``I`` consumes a query symbol only (an insertion
into the reference), ``D`` a target symbol only. Alignments are re-scored by walking the CIGAR
rather than by comparing CIGAR strings, because optimal alignments tie. Pure Python (no Numba):
a CUDA run imports it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .codes import CIGAR_OPS

__all__ = ["CIGAR_OPS", "cigar_edit_cost", "cigar_lengths", "cigar_runs", "count_ops",
           "op_counts", "parse_cigar"]

_RUN = re.compile(r"([0-9]+)([=XID])")
_WHOLE = re.compile(r"(?:[0-9]+[=XID])*")
_OP_OF_BYTE = np.full(256, -1, dtype=np.int64)  # a byte's index in CIGAR_OPS, or -1
_OP_OF_BYTE[np.frombuffer(CIGAR_OPS.encode(), np.uint8)] = np.arange(len(CIGAR_OPS))


def parse_cigar(text: str) -> list[tuple[int, str]]:
    """Split an extended CIGAR into ``(length, op)`` runs.

    Parameters
    ----------
    text : str
        Runs of a positive decimal length followed by one of ``=XID``; the empty string is the
        alignment of two empty sequences.

    Returns
    -------
    list of (int, str)

    Raises
    ------
    ValueError
        If ``text`` is not a well-formed extended CIGAR (unknown operation, missing or zero
        length, stray characters).

    Examples
    --------
    >>> parse_cigar("3=1X2I10D")
    [(3, '='), (1, 'X'), (2, 'I'), (10, 'D')]
    >>> parse_cigar("")
    []
    """
    if not isinstance(text, str):
        raise TypeError(f"a CIGAR is a str, not {type(text).__name__}")
    if _WHOLE.fullmatch(text) is None:
        raise ValueError(f"malformed CIGAR {text!r}: expected runs of <length><op> with op in "
                         f"{CIGAR_OPS!r}")
    runs = [(int(length), op) for length, op in _RUN.findall(text)]
    for position, (length, op) in enumerate(runs):
        if length == 0:
            raise ValueError(f"malformed CIGAR {text!r}: run #{position} ({length}{op}) has "
                             "length 0")
    return runs


@functools.lru_cache(maxsize=32)
def _run_lengths(ops: str) -> Callable[[str], list[str]]:
    """The ``findall`` of a pattern compiled once per ``ops``: the length texts of a CIGAR's
    runs of those operations."""
    if not isinstance(ops, str) or not ops or not set(ops) <= set(CIGAR_OPS):
        raise ValueError(f"ops={ops!r}: expected one or more of {CIGAR_OPS!r}")
    return re.compile(f"([0-9]+)[{ops}]").findall


def count_ops(cigar: str, ops: str = CIGAR_OPS) -> int:
    """The number of columns of ``cigar`` whose operation is one of ``ops``.

    Made for the hundreds of thousands of CIGARs the backends write (one precompiled regular
    expression per ``ops``), so ``cigar`` is not checked: runs of other operations and stray
    characters are skipped. Check a CIGAR from elsewhere with :func:`parse_cigar` first.

    Parameters
    ----------
    cigar : str
        Extended CIGAR (``=XID``).
    ops : str, default ``"=XID"``
        The operations to count, e.g. ``"="`` (matches) or ``"XID"`` (edits, SAM's ``NM``);
        the default counts every column.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``ops`` is empty or holds a letter other than ``=``, ``X``, ``I`` and ``D``.

    Examples
    --------
    >>> count_ops("3=1X2I10D", "=")
    3
    >>> count_ops("3=1X2I10D", "XID")
    13
    >>> count_ops("3=1X2I10D")
    16
    >>> count_ops("", "=")
    0
    """
    return sum(map(int, _run_lengths(ops)(cigar)))


def cigar_runs(cigars: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of many extended CIGARs (``=``, ``X``, ``I``, ``D``) as arrays, parsed at once
    from their joined text with no Python work per run: the CIGAR each run belongs to, its
    length and its operation (the index in ``"=XID"``). Raises ValueError on any other
    character, a CIGAR that ends in digits or an operation without a length; zero lengths are
    not checked (see :func:`parse_cigar`).

    Examples
    --------
    >>> owner, length, op = cigar_runs(["12=1X3=", "", "2I140="])
    >>> owner.tolist(), length.tolist(), op.tolist()
    ([0, 0, 0, 2, 2], [12, 1, 3, 2, 140], [0, 1, 0, 2, 0])
    """
    # A newline after each CIGAR: every run then ends in an operation or a newline.
    text = np.frombuffer("".join(f"{c}\n" for c in cigars).encode("ascii"), dtype=np.uint8)
    digit = (text >= ord("0")) & (text <= ord("9"))
    newline = text == ord("\n")
    op_at = np.flatnonzero(~digit & ~newline)
    owner = np.cumsum(newline)[op_at] if len(op_at) else np.zeros(0, np.int64)
    op = _OP_OF_BYTE[text[op_at]]
    ends = np.flatnonzero(newline)
    if (op < 0).any() or len(ends) != len(cigars):
        raise ValueError("cigar_runs takes extended CIGARs: runs of a length and one of "
                         f"{CIGAR_OPS!r}, no other character")
    if (ends > 0).any() and digit[ends[ends > 0] - 1].any():
        raise ValueError("malformed CIGAR: it ends in a length without an operation")
    if not ((op_at > 0).all() and digit[op_at - 1].all()):
        raise ValueError("malformed CIGAR: an operation without a length")
    # Each run's length is the digits between the previous operation (or newline) and its own,
    # read from the last digit back, one decimal place per pass.
    stops = np.flatnonzero(~digit)
    rank = np.searchsorted(stops, op_at)
    previous = np.where(rank > 0, stops[np.maximum(rank - 1, 0)], -1)
    length = np.zeros(len(op_at), dtype=np.int64)
    at, place = op_at - 1, 1
    while (inside := at > previous).any():
        length += np.where(inside, text[np.maximum(at, 0)].astype(np.int64) - ord("0"), 0) * place
        at, place = at - 1, place * 10
    return owner.astype(np.int64), length, op


def op_counts(cigars: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Columns and runs of every operation of many CIGARs at once (:func:`cigar_runs`).

    The array form of :func:`count_ops` for the CIGARs of a whole result (identities,
    mismatches and gap openings of every reported hit).

    Parameters
    ----------
    cigars : sequence of str
        Extended CIGARs (``=XID``).

    Returns
    -------
    columns, runs : numpy.ndarray
        int64 arrays of shape ``(len(cigars), 4)``: per CIGAR and operation (in the order
        ``=XID``), the columns of that operation and the number of its runs (the runs of ``I``
        and ``D`` are the gap openings).

    Examples
    --------
    >>> columns, runs = op_counts(["3=1X2I10D1I", "", "12="])
    >>> columns.tolist()
    [[3, 1, 3, 10], [0, 0, 0, 0], [12, 0, 0, 0]]
    >>> runs[0].tolist()
    [1, 1, 2, 1]
    """
    owner, length, op = cigar_runs(cigars)
    flat = owner * len(CIGAR_OPS) + op
    size = len(cigars) * len(CIGAR_OPS)
    columns = np.bincount(flat, weights=length, minlength=size).astype(np.int64)
    runs = np.bincount(flat, minlength=size).astype(np.int64)
    return columns.reshape(-1, len(CIGAR_OPS)), runs.reshape(-1, len(CIGAR_OPS))


def _runs(cigar: str | Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    if isinstance(cigar, str):
        return parse_cigar(cigar)
    runs = [(int(length), str(op)) for length, op in cigar]
    for length, op in runs:
        if length <= 0 or op not in CIGAR_OPS or len(op) != 1:
            raise ValueError(f"malformed CIGAR run ({length}, {op!r})")
    return runs


def cigar_lengths(cigar: str | Sequence[tuple[int, str]]) -> tuple[int, int]:
    """Return ``(query_length, target_length)``: the symbols a CIGAR consumes on each side.

    Examples
    --------
    >>> cigar_lengths("3=1X2I10D")
    (6, 14)
    """
    query_length = target_length = 0
    for length, op in _runs(cigar):
        if op in "=XI":
            query_length += length
        if op in "=XD":
            target_length += length
    return query_length, target_length


def _as_codes(sequence: Any) -> Sequence[int]:
    if isinstance(sequence, str):
        return [ord(c) for c in sequence]
    if isinstance(sequence, (bytes, bytearray, memoryview)):
        return list(bytes(sequence))
    return [int(c) for c in sequence]


def cigar_edit_cost(query_codes: Any, target_codes: Any,
                    cigar: str | Sequence[tuple[int, str]],
                    match_codes: int | None = None) -> int:
    """Check an alignment of ``query_codes`` with ``target_codes`` and return its edit cost.

    Walks the CIGAR column by column: every ``=`` must pair equal symbols that can match,
    every ``X`` symbols that do not match, and the CIGAR must consume the query and the target
    exactly (pass the aligned target range, e.g. ``target[start:end]``).

    Parameters
    ----------
    query_codes, target_codes : sequence of int (list, NumPy array), or str/bytes
        Encoded symbols (str and bytes are compared by code point/byte value).
    cigar : str or list of (length, op)
        Extended CIGAR, SAM convention: ``I`` consumes the query, ``D`` the target.
    match_codes : int, optional
        Codes from ``match_codes`` up match nothing, not even themselves (DNA's ``N`` is code 4
        with ``match_codes=4``). None: equal codes always match.

    Returns
    -------
    int
        The number of ``X``, ``I`` and ``D`` columns.

    Raises
    ------
    ValueError
        If the CIGAR is malformed, claims a match that is not one (or a mismatch that is a
        match) at some column, or does not consume both sequences exactly.

    Examples
    --------
    >>> cigar_edit_cost([0, 1, 2, 3], [0, 2, 3], "1=1I2=")
    1
    >>> cigar_edit_cost("ACGT", "ACCT", "2=1X1=")
    1
    >>> cigar_edit_cost([4], [4], "1=", match_codes=4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: CIGAR column 0 (query position 0, target position 0): '=' pairs 4 with 4, ...
    """
    query = _as_codes(query_codes)
    target = _as_codes(target_codes)
    i = j = column = cost = 0
    for length, op in _runs(cigar):
        if op in "=XI" and i + length > len(query):
            raise ValueError(f"CIGAR {op!r} run at column {column} goes past the end of the "
                             f"query (length {len(query)})")
        if op in "=XD" and j + length > len(target):
            raise ValueError(f"CIGAR {op!r} run at column {column} goes past the end of the "
                             f"target range (length {len(target)})")
        if op in "=X":
            for _ in range(length):
                a, b = query[i], target[j]
                matches = a == b and (match_codes is None or a < match_codes)
                if matches != (op == "="):
                    what = "do not match" if op == "=" else "match"
                    raise ValueError(f"CIGAR column {column} (query position {i}, target "
                                     f"position {j}): {op!r} pairs {a} with {b}, which {what}")
                i += 1
                j += 1
                column += 1
            if op == "X":
                cost += length
        else:
            if op == "I":
                i += length
            else:
                j += length
            column += length
            cost += length
    if i != len(query) or j != len(target):
        raise ValueError(f"CIGAR consumes {i} of {len(query)} query symbols and {j} of "
                         f"{len(target)} target symbols")
    return cost
