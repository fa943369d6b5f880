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

__all__ = ["CIGAR_OPS", "cigar_edit_cost", "cigar_lengths", "count_ops", "op_counts",
           "parse_cigar"]

_RUN = re.compile(r"([0-9]+)([=XID])")
_WHOLE = re.compile(r"(?:[0-9]+[=XID])*")


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


def op_counts(cigars: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Columns and runs of every operation of many CIGARs at once.

    The array form of :func:`count_ops` for the CIGARs of a whole result (identities,
    mismatches and gap openings of every reported hit): the texts are scanned as one byte array,
    with no Python work per run. As with :func:`count_ops`, the CIGARs are not checked.

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
    columns = np.zeros((len(cigars), len(CIGAR_OPS)), dtype=np.int64)
    runs = np.zeros_like(columns)
    if not len(cigars):
        return columns, runs
    text = np.frombuffer(("\n".join(cigars) + "\n").encode("latin-1"), dtype=np.uint8)
    op_of_byte = np.full(256, -1, dtype=np.int64)
    op_of_byte[np.frombuffer(CIGAR_OPS.encode(), dtype=np.uint8)] = np.arange(len(CIGAR_OPS))
    ends = np.flatnonzero(op_of_byte[text] >= 0)  # the operation letter that ends each run
    owner = np.cumsum(text == ord("\n"))[ends]  # CIGAR k's runs come before newline k
    is_digit = (text >= ord("0")) & (text <= ord("9"))
    digit = text.astype(np.int64) - ord("0")
    length = np.zeros(len(ends), dtype=np.int64)
    place = np.ones(len(ends), dtype=np.int64)
    more = np.ones(len(ends), dtype=bool)
    back = 1
    while more.any():  # the run lengths' digits, last first
        position = ends - back
        more &= position >= 0
        more[more] = is_digit[position[more]]
        length += np.where(more, digit[np.maximum(position, 0)] * place, 0)
        place *= 10
        back += 1
    op = op_of_byte[text[ends]]
    flat = owner * len(CIGAR_OPS) + op
    columns.ravel()[:] = np.bincount(flat, weights=length, minlength=columns.size)
    runs.ravel()[:] = np.bincount(flat, minlength=runs.size)
    return columns, runs


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
