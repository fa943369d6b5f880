"""Extended CIGAR strings (``=``, ``X``, ``I``, ``D``): parse, count, measure and re-score, and
:class:`PackedCigars`, the CIGARs of many pairs held as arrays of runs.

The one CIGAR parser of the library, its tests and its benchmarks. SAM convention: ``=`` and
``X`` consume one query and one target symbol, ``I`` consumes a query symbol only (an insertion
into the reference), ``D`` a target symbol only. Alignments are re-scored by walking the CIGAR
rather than by comparing CIGAR strings, because optimal alignments tie. Pure Python (no Numba):
a CUDA run imports it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from .codes import CIGAR_OPS

__all__ = ["CIGAR_OPS", "PackedCigars", "cigar_edit_cost", "cigar_lengths", "cigar_runs",
           "count_ops", "op_counts", "parse_cigar"]

_RUN = re.compile(r"([0-9]+)([=XID])")
_WHOLE = re.compile(r"(?:[0-9]+[=XID])*")


@functools.lru_cache(maxsize=8)
def _letter_tables(letters: str) -> tuple[np.ndarray, np.ndarray]:
    """For operations named by ``letters`` (their codes: the indices): each byte's operation
    code (-1 for no operation) and each code's byte."""
    byte_of_op = np.frombuffer(letters.encode("ascii"), np.uint8)
    op_of_byte = np.full(256, -1, dtype=np.int64)
    op_of_byte[byte_of_op] = np.arange(len(letters))
    return op_of_byte, byte_of_op


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


def cigar_runs(cigars: Sequence[str] | PackedCigars,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of many extended CIGARs (``=``, ``X``, ``I``, ``D``) as arrays, parsed at once
    from their joined text with no Python work per run: the CIGAR each run belongs to, its
    length and its operation (the index in ``"=XID"``), all int64. Raises ValueError on any
    other character, a CIGAR that ends in digits or an operation without a length; zero lengths
    are not checked (see :func:`parse_cigar`). A :class:`PackedCigars` gives its arrays, with
    no text to parse (its pairs without an alignment have no runs); one of other operations
    than ``"=XID"`` (a subclass's :attr:`~PackedCigars.letters`) is refused.

    Examples
    --------
    >>> owner, length, op = cigar_runs(["12=1X3=", "", "2I140="])
    >>> owner.tolist(), length.tolist(), op.tolist()
    ([0, 0, 0, 2, 2], [12, 1, 3, 2, 140], [0, 1, 0, 2, 0])
    >>> [a.tolist() for a in cigar_runs(PackedCigars.from_strings(["12=1X3=", "", "2I140="]))]
    [[0, 0, 0, 2, 2], [12, 1, 3, 2, 140], [0, 1, 0, 2, 0]]
    """
    if isinstance(cigars, PackedCigars):
        check_letters(cigars, CIGAR_OPS, "cigar_runs")
        return cigars.run_owner(), cigars.lengths.copy(), cigars.ops.astype(np.int64)
    return _text_runs(cigars, CIGAR_OPS)


def check_letters(cigars: PackedCigars, letters: str, reader: str) -> None:
    """Raise ValueError unless the runs of ``cigars`` name the operations ``letters`` (whose
    indices ``reader``, a name for the message, takes their codes for).

    Examples
    --------
    >>> check_letters(PackedCigars.from_strings(["3="]), "=XID", "clip_ends")
    """
    if cigars.letters != letters:
        raise ValueError(f"{reader} reads CIGARs of {letters!r}, not of {cigars.letters!r}")


def _text_runs(cigars: Sequence[str], letters: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`cigar_runs` of CIGAR texts whose operations are ``letters`` (codes: indices)."""
    # A newline after each CIGAR: every run then ends in an operation or a newline.
    text = np.frombuffer("".join(f"{c}\n" for c in cigars).encode("ascii"), dtype=np.uint8)
    digit = (text >= ord("0")) & (text <= ord("9"))
    # Every byte that is no digit ends a run (an operation) or a CIGAR (a newline); what stands
    # before a stop, back to the stop before it, is its run's length.
    stops = np.flatnonzero(~digit)
    is_newline = text[stops] == ord("\n")
    op_at = stops[~is_newline]
    owner = np.cumsum(is_newline)[~is_newline]
    op = _letter_tables(letters)[0][text[op_at]]
    ends = stops[is_newline]
    if (op < 0).any() or len(ends) != len(cigars):
        kind = "extended CIGARs" if letters == CIGAR_OPS else "CIGARs"
        raise ValueError(f"malformed CIGAR: {kind} are runs of a length and one of "
                         f"{letters!r}, no other character")
    if (ends > 0).any() and digit[ends[ends > 0] - 1].any():
        raise ValueError("malformed CIGAR: it ends in a length without an operation")
    if not ((op_at > 0).all() and digit[op_at - 1].all()):
        raise ValueError("malformed CIGAR: an operation without a length")
    # Each run's length is the digits between the previous stop and its own, read from the
    # last digit back, one decimal place per pass.
    previous = np.concatenate(([-1], stops[:-1]))[~is_newline]
    length = np.zeros(len(op_at), dtype=np.int64)
    at, place = op_at - 1, 1
    while (inside := at > previous).any():
        length += np.where(inside, text[np.maximum(at, 0)].astype(np.int64) - ord("0"), 0) * place
        at, place = at - 1, place * 10
    return owner.astype(np.int64), length, op


def op_counts(cigars: Sequence[str] | PackedCigars) -> tuple[np.ndarray, np.ndarray]:
    """Columns and runs of every operation of many CIGARs at once (:func:`cigar_runs`).

    The array form of :func:`count_ops` for the CIGARs of a whole result (identities,
    mismatches and gap openings of every reported hit).

    Parameters
    ----------
    cigars : sequence of str, or PackedCigars
        Extended CIGARs (``=XID``); a :class:`PackedCigars` is counted from its arrays (its
        pairs without an alignment count zeros), or gives the counts it was made with.

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
    >>> op_counts(PackedCigars.from_strings(["3=1X2I10D1I", None]))[0].tolist()
    [[3, 1, 3, 10], [0, 0, 0, 0]]
    """
    if isinstance(cigars, PackedCigars):  # its arrays as they are: no copies of them
        check_letters(cigars, CIGAR_OPS, "op_counts")
        if cigars.counts is not None:  # counted where the runs were made
            return cigars.counts[0].copy(), cigars.counts[1].copy()
        length = cigars.lengths
        flat = np.repeat(np.arange(0, len(cigars) * len(CIGAR_OPS), len(CIGAR_OPS)),
                         np.diff(cigars.offsets)) + cigars.ops
    else:
        owner, length, op = cigar_runs(cigars)
        flat = owner * len(CIGAR_OPS) + op
    size = len(cigars) * len(CIGAR_OPS)
    columns = np.bincount(flat, weights=length, minlength=size).astype(np.int64)
    runs = np.bincount(flat, minlength=size).astype(np.int64)
    return columns.reshape(-1, len(CIGAR_OPS)), runs.reshape(-1, len(CIGAR_OPS))


class PackedCigars(Sequence[str | None]):
    """The extended CIGARs of many pairs as arrays of runs, turned into text only when asked.

    What ``edit_distance(..., task="path")`` returns as :attr:`gpualign.EditResult.cigar`:
    pair ``p``'s runs are ``ops[offsets[p]:offsets[p + 1]]`` (operation codes, the index in
    ``"=XID"``) with lengths ``lengths[offsets[p]:offsets[p + 1]]``, in alignment order; a pair
    without an alignment (over the cutoff) has no runs and ``present[p]`` False. It reads as a
    read-only sequence of ``str`` (None for the pairs without an alignment): ``len``, indexing
    (one pair's text, built on demand), iteration and comparison with a list (the text of every
    pair, built at once). :func:`op_counts` and :func:`cigar_runs` read the arrays directly
    (of ``"=XID"`` only).

    A subclass may name other operations (:attr:`letters`, the codes their indices: SAM's
    ``M``, ``S`` and ``H`` in :class:`gpualign.map.sam.SamCigars`); the methods keep the
    class.

    Parameters
    ----------
    ops : np.ndarray
        Operation code of every run (the index in :attr:`letters`, ``"=XID"`` here), stored
        as uint8.
    lengths : np.ndarray
        Length of every run (positive), stored as int64.
    offsets : np.ndarray
        ``len(pairs) + 1`` non-decreasing run indices from 0 to ``len(ops)``.
    present : np.ndarray of bool, optional
        Which pairs have an alignment (default: all); the others must have no runs.
    counts : (np.ndarray, np.ndarray), optional
        The columns and the runs of every operation of every pair (int64, shape
        ``(len(pairs), len(letters))``), where the producer counted them as it made the runs
        (the GPU's walk back does): :func:`op_counts` then returns them without reading the
        runs. Unchecked against the runs; :meth:`take` and :meth:`concatenate` keep them.

    Raises
    ------
    ValueError
        If the arrays disagree in size, an operation code is not an index of :attr:`letters`,
        a run length is not positive, or a pair without an alignment has runs.

    Examples
    --------
    >>> cigars = PackedCigars([0, 1, 0, 2], [12, 1, 3, 2], [0, 3, 3, 4],
    ...                       present=[True, False, True])
    >>> len(cigars), cigars[0], cigars[1], cigars[2]
    (3, '12=1X3=', None, '2I')
    >>> cigars == ["12=1X3=", None, "2I"]
    True
    >>> PackedCigars.from_strings(["3=1D", None, ""]).tolist()
    ['3=1D', None, '']
    """

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so not hashable

    #: The operations' letters: code ``c`` is ``letters[c]``.
    letters: str = CIGAR_OPS

    def __init__(self, ops: Any, lengths: Any, offsets: Any, present: Any = None,
                 counts: tuple[Any, Any] | None = None) -> None:
        self.ops = np.ascontiguousarray(ops, dtype=np.uint8)
        self.lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        count = len(self.offsets) - 1
        self.present = (np.ones(max(count, 0), dtype=bool) if present is None
                        else np.ascontiguousarray(present, dtype=bool))
        if (self.ops.ndim != 1 or self.lengths.shape != self.ops.shape or self.offsets.ndim != 1
                or count < 0 or self.present.shape != (count,)):
            raise ValueError("PackedCigars takes equally long ops and lengths, offsets of one more "
                             "than the pairs and one present flag a pair")
        runs = np.diff(self.offsets)
        if self.offsets[0] != 0 or self.offsets[-1] != len(self.ops) or (runs < 0).any():
            raise ValueError("PackedCigars offsets: non-decreasing from 0 to the number of runs")
        if (self.ops >= len(self.letters)).any() or (self.lengths <= 0).any():
            raise ValueError(f"{type(self).__name__} runs: operation codes of "
                             f"{self.letters!r} (0 to {len(self.letters) - 1}) and positive "
                             "lengths")
        if runs[~self.present].any():
            raise ValueError("PackedCigars: a pair without an alignment has runs")
        self.counts = self._checked_counts(counts, count)

    @classmethod
    def from_strings(cls, cigars: Sequence[str | None]) -> PackedCigars:
        """Pack extended CIGAR strings (None: no alignment), parsed at once (:func:`cigar_runs`).

        Raises
        ------
        ValueError
            If a CIGAR is malformed (see :func:`cigar_runs`) or has a run of length 0.

        Examples
        --------
        >>> packed = PackedCigars.from_strings(["2=1X", None])
        >>> packed.ops.tolist(), packed.lengths.tolist(), packed.offsets.tolist()
        ([0, 1], [2, 1], [0, 2, 2])
        """
        present = np.array([text is not None for text in cigars], dtype=bool)
        owner, length, op = _text_runs(["" if text is None else text for text in cigars],
                                       cls.letters)
        if (length == 0).any():
            raise ValueError("malformed CIGAR: a run of length 0")
        return cls(op, length, offsets_of_counts(np.bincount(owner, minlength=len(present))),
                   present)

    @classmethod
    def from_ops(cls, ops: Any, offsets: Any, present: Any = None) -> PackedCigars:
        """Pack operation streams: pair ``p``'s alignment is ``ops[offsets[p]:offsets[p + 1]]``,
        one code (the index in ``"=XID"``) a column, in alignment order; its runs are found at
        once for all pairs.

        Examples
        --------
        >>> PackedCigars.from_ops([0, 0, 2, 0, 3, 3, 1], [0, 6, 6, 7]).tolist()
        ['2=1I1=2D', '', '1X']
        """
        ops = np.asarray(ops, dtype=np.uint8)
        offsets = np.asarray(offsets, dtype=np.int64)
        owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        first = np.ones(len(ops), dtype=bool)  # a run begins a pair or changes the operation
        first[1:] = (ops[1:] != ops[:-1]) | (owner[1:] != owner[:-1])
        starts = np.flatnonzero(first)
        lengths = np.diff(np.append(starts, len(ops)))
        counts = np.bincount(owner[starts], minlength=len(offsets) - 1)
        return cls(ops[starts], lengths, offsets_of_counts(counts), present)

    @classmethod
    def from_words(cls, words: np.ndarray, runs: np.ndarray,
                   counts: tuple[Any, Any] | None = None) -> PackedCigars:
        """Unpack runs written a 32-bit word each, the length above two bits of operation (the
        index in ``"=XID"``), as the GPU writes them: pair ``p`` has the next ``runs[p]``
        words. Each array is made in one pass, and only what the words could hold wrong is
        checked (a run of length 0); ``counts`` as in the constructor.

        Examples
        --------
        >>> words = np.array([3 << 2 | 0, 12 << 2 | 1, 1 << 2 | 3], dtype=np.uint32)
        >>> PackedCigars.from_words(words, np.array([1, 0, 2])).tolist()
        ['3=', '', '12X1D']
        """
        check_letters(cls.nones(0), CIGAR_OPS, f"{cls.__name__}.from_words")
        words = np.asarray(words, dtype=np.uint32)
        ops = np.bitwise_and(words, 3, out=np.empty(len(words), dtype=np.uint8),
                             casting="unsafe")
        lengths = np.right_shift(words, 2, out=np.empty(len(words), dtype=np.int64),
                                 casting="unsafe")
        offsets = offsets_of_counts(np.asarray(runs, dtype=np.int64))
        if (runs := np.asarray(runs)).size and runs.min() < 0 or offsets[-1] != len(words):
            raise ValueError("PackedCigars.from_words: run counts that add up to the words")
        if len(lengths) and lengths.min() == 0:
            raise ValueError("PackedCigars.from_words: a run of length 0")
        cigars = cls.__new__(cls)
        cigars.ops, cigars.lengths, cigars.offsets = ops, lengths, offsets
        cigars.present = np.ones(len(offsets) - 1, dtype=bool)
        cigars.counts = cls._checked_counts(counts, len(offsets) - 1)
        return cigars

    @classmethod
    def _checked_counts(cls, counts: tuple[Any, Any] | None, pairs: int,
                        ) -> tuple[np.ndarray, np.ndarray] | None:
        """The constructor's ``counts`` as int64 arrays of ``pairs`` rows, or a ValueError."""
        if counts is None:
            return None
        checked = tuple(np.asarray(part, dtype=np.int64) for part in counts)
        if len(checked) != 2 or any(part.shape != (pairs, len(cls.letters)) for part in checked):
            raise ValueError("PackedCigars counts: columns and runs, a row a pair and a column an "
                             "operation")
        return checked  # type: ignore[return-value]

    @classmethod
    def nones(cls, count: int) -> PackedCigars:
        """``count`` pairs without an alignment.

        Examples
        --------
        >>> PackedCigars.nones(2).tolist()
        [None, None]
        """
        return cls(np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(count + 1, np.int64),
                   np.zeros(count, dtype=bool))

    @classmethod
    def concatenate(cls, parts: Sequence[PackedCigars]) -> PackedCigars:
        """The pairs of ``parts``, one after the other.

        Examples
        --------
        >>> PackedCigars.concatenate([PackedCigars.from_strings(["1=", None]),
        ...                           PackedCigars.from_strings(["2X"])]).tolist()
        ['1=', None, '2X']
        """
        for part in parts:
            check_letters(part, cls.letters, f"{cls.__name__}.concatenate")
        if len(parts) == 1 and type(parts[0]) is cls:
            return parts[0]  # read-only: shared, not copied
        if not parts:
            return cls.nones(0)
        shifts = np.cumsum([0] + [len(part.ops) for part in parts[:-1]])
        offsets = np.concatenate([[0]] + [part.offsets[1:] + shift
                                          for part, shift in zip(parts, shifts, strict=True)])
        counts = None
        if all(part.counts is not None for part in parts):
            counts = tuple(np.concatenate([part.counts[k] for part in parts]) for k in (0, 1))
        return cls(np.concatenate([part.ops for part in parts]),
                   np.concatenate([part.lengths for part in parts]), offsets,
                   np.concatenate([part.present for part in parts]), counts)

    def take(self, indices: Any) -> PackedCigars:
        """The pairs at ``indices`` (integers, or a boolean mask of the pairs), in that order.

        Examples
        --------
        >>> PackedCigars.from_strings(["1=", "2X", None]).take([2, 0, 0]).tolist()
        [None, '1=', '1=']
        """
        indices = np.asarray(indices)
        if indices.dtype == bool:
            if indices.shape != (len(self),):
                raise IndexError(f"a mask of {len(self)} pairs, not of shape {indices.shape}")
            indices = np.flatnonzero(indices)
        indices = np.arange(len(self))[indices.astype(np.int64)]  # checked, negatives counted
        taken = self._gathered(self.offsets[indices], self.offsets[indices + 1],
                               self.present[indices])
        if self.counts is not None:
            taken.counts = (self.counts[0][indices], self.counts[1][indices])
        return taken

    def cut(self, first: Any, end: Any) -> PackedCigars:
        """Each pair ``p`` with only its runs ``first[p]`` to ``end[p] - 1`` (indices into
        :attr:`ops`, inside the pair's own runs; ``first[p] == end[p]`` leaves none).

        Examples
        --------
        >>> PackedCigars.from_strings(["1=2X3=", "4I"]).cut([1, 3], [2, 3]).tolist()
        ['2X', '']
        """
        first = np.asarray(first, dtype=np.int64)
        end = np.asarray(end, dtype=np.int64)
        if (first.shape != (len(self),) or end.shape != first.shape
                or (first < self.offsets[:-1]).any() or (end < first).any()
                or (end > self.offsets[1:]).any()):
            raise ValueError("cut takes a first and an end run of each pair, within its runs")
        return self._gathered(first, end, self.present)

    def _gathered(self, first: np.ndarray, end: np.ndarray, present: np.ndarray,
                  ) -> PackedCigars:
        """Pairs whose runs are ``first[i]`` to ``end[i] - 1`` of these runs."""
        counts = end - first
        offsets = offsets_of_counts(counts)
        source = (np.repeat(first - offsets[:-1], counts)
                  + np.arange(offsets[-1], dtype=np.int64))
        return type(self)(self.ops[source], self.lengths[source], offsets, present)

    @classmethod
    def joined(cls, parts: Sequence[PackedCigars]) -> PackedCigars:
        """Pair ``p``'s runs are those of ``parts[0]``'s pair ``p``, then of ``parts[1]``'s,
        and so on (runs of one operation that meet stay two); it has an alignment where one
        of the parts' pairs has.

        Examples
        --------
        >>> PackedCigars.joined([PackedCigars.from_strings(["2=", None, ""]),
        ...                      PackedCigars.from_strings(["1X", "3I", None])]).tolist()
        ['2=1X', '3I', '']
        """
        if not parts or len({len(part) for part in parts}) != 1:
            raise ValueError("joined takes one or more PackedCigars of as many pairs")
        for part in parts:
            check_letters(part, cls.letters, f"{cls.__name__}.joined")
        counts = [np.diff(part.offsets) for part in parts]
        offsets = offsets_of_counts(np.sum(counts, axis=0))
        ops = np.empty(offsets[-1], dtype=np.uint8)
        lengths = np.empty(offsets[-1], dtype=np.int64)
        before = offsets[:-1].copy()  # where each pair's runs of the next part go
        for part, count in zip(parts, counts, strict=True):
            owner = part.run_owner()
            at = before[owner] + np.arange(len(part.ops), dtype=np.int64) - part.offsets[owner]
            ops[at], lengths[at] = part.ops, part.lengths
            before += count
        return cls(ops, lengths, offsets, np.logical_or.reduce([part.present for part in parts]))

    def replaced(self, positions: Any, other: PackedCigars) -> PackedCigars:
        """These pairs with pair ``positions[i]`` (distinct) replaced by ``other``'s pair ``i``.

        The runs of the pairs left as they are move in one pass (a few pairs replaced in a
        large batch cost a copy of it, no gather).

        Examples
        --------
        >>> PackedCigars.nones(3).replaced([2, 0], PackedCigars.from_strings(["1I", "4="])).tolist()
        ['4=', None, '1I']
        """
        check_letters(other, self.letters, f"{type(self).__name__}.replaced")
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) != len(other):
            raise ValueError(f"{len(positions)} positions for {len(other)} replacing pairs")
        positions = np.arange(len(self))[positions]  # checked, negatives counted
        order = np.argsort(positions, kind="stable")
        positions = positions[order]
        if (np.diff(positions) == 0).any():
            raise ValueError("a pair replaced twice")
        if (np.diff(order) < 0).any():
            other = other.take(order)
        counts = np.diff(self.offsets)
        replacing = np.diff(other.offsets)
        ops, lengths = self.ops, self.lengths
        if counts[positions].any():  # drop the replaced pairs' runs
            kept = np.ones(len(self), dtype=bool)
            kept[positions] = False
            kept_runs = np.repeat(kept, counts)
            ops, lengths = ops[kept_runs], lengths[kept_runs]
        counts = counts.copy()
        counts[positions] = 0
        # Each replacing run goes in before the kept runs of the pairs after its own.
        at = np.repeat(offsets_of_counts(counts)[positions], replacing)
        counts[positions] = replacing
        present = self.present.copy()
        present[positions] = other.present
        return type(self)(np.insert(ops, at, other.ops), np.insert(lengths, at, other.lengths),
                          offsets_of_counts(counts), present)

    def run_owner(self) -> np.ndarray:
        """The pair of every run (int64).

        Examples
        --------
        >>> PackedCigars.from_strings(["1=1X", "", "3D"]).run_owner().tolist()
        [0, 0, 2]
        """
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))

    def to_text(self) -> list[str | None]:
        """The CIGAR text of every pair (None without an alignment), written at once: every
        run's digits and letter into one byte buffer, a newline after each pair, then decoded
        and split.

        Examples
        --------
        >>> PackedCigars.from_ops([0] * 12 + [3, 1], [0, 0, 14]).to_text()
        ['', '12=1D1X']
        """
        count = len(self)
        if not count:
            return []
        digits = np.ones(len(self.lengths), dtype=np.int64)
        power = 10
        while (wide := self.lengths >= power).any():
            digits += wide
            power *= 10
        # Run r starts after the characters of the runs before it and the newlines of the
        # pairs before its own.
        before = np.zeros(len(digits) + 1, dtype=np.int64)
        np.cumsum(digits + 1, out=before[1:])
        at = before[:-1] + self.run_owner()
        text = np.empty(int(before[-1]) + count, dtype=np.uint8)
        text[before[self.offsets[1:]] + np.arange(count)] = ord("\n")
        text[at + digits] = _letter_tables(self.letters)[1][self.ops]
        # The digits from the last one back, each pass over the runs with digits left.
        at, value = at + digits - 1, self.lengths
        while len(value):
            text[at] = ord("0") + value % 10
            value = value // 10
            left = np.flatnonzero(value)
            at, value = at[left] - 1, value[left]
        cigars: list[str | None] = text[:-1].tobytes().decode("latin-1").split("\n")
        for p in np.flatnonzero(~self.present).tolist():
            cigars[p] = None
        return cigars

    def tolist(self) -> list[str | None]:
        """The CIGAR text of every pair, as :meth:`to_text` writes it (the name NumPy arrays
        give the same conversion).

        Examples
        --------
        >>> PackedCigars.from_strings(["5=", None]).tolist()
        ['5=', None]
        """
        return self.to_text()

    def __len__(self) -> int:
        return len(self.present)

    @overload
    def __getitem__(self, index: int) -> str | None: ...

    @overload
    def __getitem__(self, index: slice) -> PackedCigars: ...

    def __getitem__(self, index: Any) -> Any:
        """One pair's CIGAR (an integer index), or the pairs of a slice, index array or mask as
        a :class:`PackedCigars`."""
        if isinstance(index, (int, np.integer)):
            p = int(index) + (len(self) if index < 0 else 0)
            if not 0 <= p < len(self):
                raise IndexError(f"pair {int(index)} of {len(self)}")
            if not self.present[p]:
                return None
            runs = slice(self.offsets[p], self.offsets[p + 1])
            return "".join(f"{length}{self.letters[op]}" for length, op in
                           zip(self.lengths[runs].tolist(), self.ops[runs].tolist(), strict=True))
        if isinstance(index, slice):
            return self.take(np.arange(len(self))[index])
        return self.take(index)

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.to_text())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedCigars):
            return (self.letters == other.letters
                    and np.array_equal(self.present, other.present)
                    and np.array_equal(self.offsets, other.offsets)
                    and np.array_equal(self.ops, other.ops)
                    and np.array_equal(self.lengths, other.lengths))
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and self.to_text() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} pairs, {len(self.ops)} runs)"


def placed_cigars(pieces: Sequence[tuple[np.ndarray, Any]], count: int,
                  packed: bool) -> PackedCigars | list[str | None]:
    """The CIGARs of ``count`` pairs from ``pieces`` of ``(positions, CIGARs at those
    positions)`` that cover every pair once (the parts of a backend's call, each computed
    apart): a :class:`PackedCigars` when ``packed`` (the pieces' are), else a list of str.

    Examples
    --------
    >>> placed_cigars([(np.array([2, 0]), ["1=", "2X"]), (np.array([1]), ["3D"])], 3, False)
    ['2X', '3D', '1=']
    """
    where = np.concatenate([positions for positions, _ in pieces]) if pieces else \
        np.zeros(0, dtype=np.int64)
    if len(where) != count or (np.bincount(where, minlength=count) != 1).any():
        raise RuntimeError("the pieces of a call's CIGARs must cover its pairs once each")
    if packed:
        joined = PackedCigars.concatenate([cigars for _, cigars in pieces])
        in_order = bool((where == np.arange(count)).all())  # one piece, or pieces in turn
        return joined if in_order else joined.take(np.argsort(where))
    placed: list[str | None] = [None] * count
    for positions, cigars in pieces:
        for p, text in zip(positions.tolist(), cigars, strict=True):
            placed[p] = text
    return placed


def offsets_of_counts(counts: np.ndarray) -> np.ndarray:
    """``[0, c0, c0 + c1, ...]`` (int64): offsets of consecutive groups of ``counts`` items.

    Examples
    --------
    >>> offsets_of_counts(np.array([2, 0, 3])).tolist()
    [0, 2, 2, 5]
    """
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


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
