"""CIGARs written by compiled traceback loops: for a batch of pairs, each pair with room at an
offset, either text in one byte buffer, decoded into Python strings in one pass, or runs
(operation and length), packed into a :class:`~gpualign.cigar.PackedCigars`; or, from the
operations that the tracebacks of a batch left in one buffer, either of them
(:func:`path_texts`, :func:`path_runs`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import config
from .cigar import PackedCigars, offsets_of_counts
from .codes import CIGAR_OPS

#: CIGAR letters of the operation codes (``codes.OP_*``) that every traceback writes.
OP_CHARS = np.frombuffer(CIGAR_OPS.encode("ascii"), dtype=np.uint8)


def text_offsets(max_ops: np.ndarray) -> np.ndarray:
    """Offsets of each pair's room in a batch's text buffer: a run of L operations takes at most
    L + 1 <= 2L characters, so ``2 * max_ops`` bytes a pair."""
    return offsets_of_counts(2 * np.asarray(max_ops, dtype=np.int64))


@njit(cache=True, nogil=True)
def write_cigar(ops, count, out):
    """Run-length encode ``ops[count-1] .. ops[0]`` (a traceback's operations, last first) as
    extended CIGAR text into ``out``; return the characters written."""
    written = 0
    p = count - 1
    digits = np.empty(20, dtype=np.uint8)
    while p >= 0:
        op = ops[p]
        run = 0
        while p >= 0 and ops[p] == op:
            run += 1
            p -= 1
        nd = 0
        while run > 0:
            digits[nd] = 48 + run % 10
            run //= 10
            nd += 1
        for d in range(nd - 1, -1, -1):
            out[written] = digits[d]
            written += 1
        out[written] = OP_CHARS[op]
        written += 1
    return written


@njit(cache=True, nogil=True)
def _pack(text, offsets, lengths, packed):
    """Copy each pair's written text (``max(lengths[p], 0)`` bytes at ``offsets[p]``) to
    ``packed``, back to back, each followed by a newline."""
    at = 0
    for p in range(len(offsets)):
        for k in range(max(lengths[p], 0)):
            packed[at] = text[offsets[p] + k]
            at += 1
        packed[at] = 10
        at += 1


def decode_cigars(text: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> list[str | None]:
    """The CIGAR strings of a batch: pair ``p``'s text is ``text[offsets[p]:][:lengths[p]]``
    (None where ``lengths[p] < 0``)."""
    # The written text is packed with a newline after each pair (the room left between pairs
    # is most of the buffer; CIGARs hold no newline), decoded once (latin-1 maps every byte to
    # one character) and split in C, which is twice as fast as slicing in a Python loop.
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        return []
    packed = np.empty(int(np.maximum(lengths, 0).sum()) + len(lengths), dtype=np.uint8)
    _pack(np.asarray(text, dtype=np.uint8), offsets, lengths, packed)
    cigars: list[str | None] = packed[:-1].tobytes().decode("latin-1").split("\n")
    for p in np.flatnonzero(lengths < 0).tolist():
        cigars[p] = None
    return cigars


@njit(cache=True, nogil=True)
def write_runs(ops, count, run_ops, run_lengths):
    """Run-length encode ``ops[count-1] .. ops[0]`` (a traceback's operations, last first) into
    ``run_ops`` and ``run_lengths``, first run first; return the runs written, or -1 when they
    do not fit (nothing past the arrays' ends is written)."""
    runs = 0
    p = count - 1
    while p >= 0:
        if runs == run_ops.shape[0]:
            return -1
        op = ops[p]
        run = 0
        while p >= 0 and ops[p] == op:
            run += 1
            p -= 1
        run_ops[runs] = op
        run_lengths[runs] = run
        runs += 1
    return runs


@njit(cache=True, nogil=True)
def _gather_runs(run_ops, run_lengths, room, counts, offsets, ops, lengths):
    """Copy pair ``p``'s ``counts[p]`` runs from ``room[p]`` to ``offsets[p]``."""
    for p in range(counts.shape[0]):
        for r in range(offsets[p + 1] - offsets[p]):
            ops[offsets[p] + r] = run_ops[room[p] + r]
            lengths[offsets[p] + r] = run_lengths[room[p] + r]


def pack_runs(run_ops: np.ndarray, run_lengths: np.ndarray, room: np.ndarray,
              counts: np.ndarray) -> PackedCigars:
    """The :class:`~gpualign.cigar.PackedCigars` of a batch whose pair ``p`` wrote
    ``counts[p]`` runs from ``room[p]`` (None where ``counts[p] < 0``, no alignment).

    Examples
    --------
    >>> pack_runs(np.array([0, 1, 9, 2, 9], dtype=np.uint8), np.array([5, 1, 0, 3, 0]),
    ...           np.array([0, 3, 5]), np.array([2, 1, -1])).tolist()
    ['5=1X', '3I', None]
    """
    counts = np.asarray(counts, dtype=np.int64)
    offsets = offsets_of_counts(np.maximum(counts, 0))
    ops = np.empty(offsets[-1], dtype=np.uint8)
    lengths = np.empty(offsets[-1], dtype=np.int64)
    _gather_runs(run_ops, np.asarray(run_lengths, dtype=np.int64),
                 np.asarray(room, dtype=np.int64), counts, offsets, ops, lengths)
    return PackedCigars(ops, lengths, offsets, counts >= 0)


@njit(cache=True, parallel=True)
def _write_path_texts(ops, room, counts, text_offsets, text):
    """:func:`write_cigar` of every pair's ``counts[p]`` operations at ``room[p]``, into its
    room of ``text``; returns the characters written."""
    written = np.zeros(len(counts), dtype=np.int64)
    for p in prange(len(counts)):
        written[p] = write_cigar(ops[room[p]:], counts[p],
                                 text[text_offsets[p]:text_offsets[p + 1]])
    return written


def path_texts(ops: np.ndarray, room: np.ndarray, counts: np.ndarray) -> list[str | None]:
    """The CIGAR strings of a batch whose pair ``p``'s traceback wrote ``counts[p]``
    operations (``codes.OP_*``), last first, from ``ops[room[p]]``.

    Examples
    --------
    >>> path_texts(np.array([1, 0, 0, 9, 3], dtype=np.uint8), np.array([0, 4, 5]),
    ...            np.array([3, 1, 0]))
    ['2=1X', '1D', '']
    """
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts) < config.HOST_SERIAL_PATHS:  # a few: a path at a time on this thread
        texts = []
        for start, count in zip(np.asarray(room).tolist(), counts.tolist(), strict=True):
            text = np.empty(2 * count, dtype=np.uint8)
            texts.append(text[:write_cigar(ops[start:], count, text)].tobytes().decode("ascii"))
        return texts
    offsets = text_offsets(counts)
    text = np.empty(int(offsets[-1]), dtype=np.uint8)
    written = _write_path_texts(ops, np.asarray(room, dtype=np.int64), counts, offsets, text)
    return decode_cigars(text, offsets[:-1], written)


@njit(cache=True, parallel=True)
def _path_run_counts(ops, room, counts):
    """The runs of every pair's ``counts[p]`` operations at ``room[p]``."""
    runs = np.zeros(len(counts), dtype=np.int64)
    for p in prange(len(counts)):
        for k in range(counts[p]):
            if k == 0 or ops[room[p] + k] != ops[room[p] + k - 1]:
                runs[p] += 1
    return runs


@njit(cache=True, parallel=True)
def _write_path_runs(ops, room, counts, offsets, run_ops, run_lengths):
    """:func:`write_runs` of every pair's operations into its runs ``offsets[p]`` on."""
    for p in prange(len(counts)):
        write_runs(ops[room[p]:], counts[p], run_ops[offsets[p]:offsets[p + 1]],
                   run_lengths[offsets[p]:offsets[p + 1]])


def path_runs(ops: np.ndarray, room: np.ndarray, counts: np.ndarray) -> PackedCigars:
    """:func:`path_texts` as a :class:`~gpualign.cigar.PackedCigars`, with no text: the runs
    of each pair counted, then written, in two compiled passes.

    Examples
    --------
    >>> path_runs(np.array([1, 0, 0, 9, 3], dtype=np.uint8), np.array([0, 4, 5]),
    ...           np.array([3, 1, 0])).tolist()
    ['2=1X', '1D', '']
    """
    counts = np.asarray(counts, dtype=np.int64)
    room = np.asarray(room, dtype=np.int64)
    offsets = offsets_of_counts(_path_run_counts(ops, room, counts))
    run_ops = np.empty(offsets[-1], dtype=np.uint8)
    run_lengths = np.empty(offsets[-1], dtype=np.int64)
    _write_path_runs(ops, room, counts, offsets, run_ops, run_lengths)
    return PackedCigars(run_ops, run_lengths, offsets)
