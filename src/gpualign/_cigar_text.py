"""CIGAR text written by compiled traceback loops: one byte buffer for a batch of pairs, each
pair with room for its text at an offset, decoded into Python strings in one pass."""

from __future__ import annotations

import numpy as np
from numba import njit

#: CIGAR letters of the operation codes 0-3 that every traceback writes.
OP_CHARS = np.frombuffer(b"=XID", dtype=np.uint8)


def text_offsets(max_ops: np.ndarray) -> np.ndarray:
    """Offsets of each pair's room in a batch's text buffer: a run of L operations takes at most
    L + 1 <= 2L characters, so ``2 * max_ops`` bytes a pair."""
    offsets = np.zeros(len(max_ops) + 1, dtype=np.int64)
    np.cumsum(2 * np.asarray(max_ops, dtype=np.int64), out=offsets[1:])
    return offsets


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
def _pack(text, offsets, lengths, packed_offsets, packed):
    """Copy each pair's written text (``lengths[p] >= 0`` bytes at ``offsets[p]``) to
    ``packed_offsets[p]`` in ``packed``."""
    for p in range(len(offsets)):
        for k in range(max(lengths[p], 0)):
            packed[packed_offsets[p] + k] = text[offsets[p] + k]


def decode_cigars(text: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> list[str | None]:
    """The CIGAR strings of a batch: pair ``p``'s text is ``text[offsets[p]:][:lengths[p]]``
    (None where ``lengths[p] < 0``)."""
    # The written text is packed first (the room left between pairs is most of the buffer),
    # then decoded once and cut with str slices: latin-1 maps every byte to one character.
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    packed_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.maximum(lengths, 0), out=packed_offsets[1:])
    text = np.asarray(text, dtype=np.uint8)
    if np.array_equal(offsets, packed_offsets[:-1]):  # packed already (the GPU gathers it)
        packed = text[:packed_offsets[-1]]
    else:
        packed = np.empty(int(packed_offsets[-1]), dtype=np.uint8)
        _pack(text, offsets, lengths, packed_offsets, packed)
    whole = packed.tobytes().decode("latin-1")
    return [None if n < 0 else whole[o:o + n]
            for o, n in zip(packed_offsets[:-1].tolist(), lengths.tolist(), strict=True)]
