"""The GPU side of the file formats (``kernels/formats.cu``): the FASTA parser and the MUMmer
text writer of :mod:`gpualign.io`, with the results of ``formats/_cpu.py``.

A block of FASTA goes to the device as it was read; its record starts are found there, one
thread per record measures it and a second launch copies sequences and names into place, and
only those come back. The MUMmer text is sized and written the same way, one thread a query.
"""

from __future__ import annotations

import numpy as np

from ..cuda import launch
from ..cuda.loader import get_kernel
from . import NAME_HASH_FACTOR, NAME_HASH_SEED

KERNEL_FILE = "formats/kernels/formats.cu"
_BLANKS = b" \t\r\n"


def _first_non_blank(raw: bytes) -> int:
    """Index of the first byte of ``raw`` that is not white space (``len(raw)`` if none)."""
    at = 0
    while at < len(raw):
        window = raw[at:at + 4096]
        rest = window.lstrip(_BLANKS)
        if rest:
            return at + len(window) - len(rest)
        at += len(window)
    return len(raw)


def parse_block(raw: bytes, final: bool, hash_names: bool = False,
                ) -> tuple[list[str], list[str], bytes, np.ndarray, int, bool,
                           np.ndarray | None]:
    """The complete records of ``raw`` (all of them when ``final``) as ``names, descriptions,
    sequences, lengths``, the bytes they take, whether parsing stopped at a record left to
    dnaio, and with ``hash_names`` the names' hashes, sorted on the device (as
    :func:`gpualign.formats._cpu.parse_block`)."""
    import cupy

    none = np.zeros(0, dtype=np.uint64) if hash_names else None
    empty = ([], [], b"", np.zeros(0, dtype=np.int64))
    first = _first_non_blank(raw)
    if first == len(raw):
        return *empty, len(raw), False, none
    if raw[first] != ord(">"):
        return *empty, first, True, none
    data = cupy.asarray(np.frombuffer(raw, dtype=np.uint8))
    # A record starts at the first '>' and at every '>' that opens a line after it; the last
    # record of a block that is not the file's last may go on in the next block.
    heads = cupy.flatnonzero((data[first + 1:] == ord(">")) & (data[first:-1] == ord("\n")))
    starts = cupy.concatenate((cupy.asarray([first], dtype=cupy.int64),
                               heads.astype(cupy.int64) + first + 1,
                               cupy.asarray([len(raw)], dtype=cupy.int64)))
    records = len(starts) - 1 - (not final)
    if records == 0:
        return *empty, first, False, none
    sequence_at = cupy.empty(records, dtype=cupy.int64)
    name_at = cupy.empty(records, dtype=cupy.int64)
    note_at = cupy.empty(records, dtype=cupy.int64)
    unusual = cupy.zeros(records, dtype=cupy.int32)
    name_hashes = cupy.empty(records, dtype=cupy.uint64)
    unused = cupy.zeros(1, dtype=cupy.uint8)
    hashing = (np.uint64(NAME_HASH_SEED), np.uint64(NAME_HASH_FACTOR))
    measure = get_kernel(KERNEL_FILE, "fasta_records<false>")
    measure(*launch.grid(measure, records),
            (data, starts, np.int64(records), sequence_at, name_at, note_at, unusual, unused,
             unused, unused, name_hashes, *hashing))
    flagged = cupy.flatnonzero(unusual)
    stopped = len(flagged) > 0
    if stopped:
        records = int(flagged[0])
    consumed = int(starts[records]) if stopped or not final else len(raw)
    if records == 0:
        return *empty, consumed, stopped, none
    lengths = sequence_at[:records].copy()
    sequence_ends = cupy.cumsum(lengths)
    name_ends = cupy.cumsum(name_at[:records])
    note_ends = cupy.cumsum(note_at[:records])
    sequences = cupy.empty(int(sequence_ends[-1]), dtype=cupy.uint8)
    names = cupy.empty(int(name_ends[-1]), dtype=cupy.uint8)
    notes = cupy.empty(int(note_ends[-1]), dtype=cupy.uint8)
    copy = get_kernel(KERNEL_FILE, "fasta_records<true>")
    copy(*launch.grid(copy, records),
         (data, starts, np.int64(records), sequence_ends - lengths, name_ends - name_at[:records],
          note_ends - note_at[:records], unusual, sequences, names, notes, name_hashes,
          *hashing))
    # Sorted here, where they are: the host gets them ready to compare.
    hashes = cupy.sort(name_hashes[:records]).get() if hash_names else None
    return (_lines(names), _lines(notes), sequences.get().tobytes(), lengths.get(), consumed,
            stopped, hashes)


def _lines(text) -> list[str]:
    """The lines of the ASCII text in the device array ``text``, each ended by a newline."""
    return text.get().tobytes().decode("ascii").split("\n")[:-1]


def mummer_text(names, name_offsets, query_lengths, bounds, forward, reverse, with_lengths,
                is_reverse, reference_index, reference_pos, query_pos, length, labels,
                label_offsets, forward_positions) -> np.ndarray:
    """The MUMmer text of :func:`gpualign.io.write_mummer` (its arguments prepared there) as
    host ``uint8``: every query's blocks sized, then written, one GPU thread a query."""
    import cupy

    queries = len(name_offsets) - 1
    if queries == 0:
        return np.zeros(0, dtype=np.uint8)
    device = [cupy.asarray(array) for array in (
        names, name_offsets, query_lengths, bounds, np.asarray(is_reverse, dtype=np.uint8),
        reference_index, reference_pos, query_pos, length, labels, label_offsets)]
    (names, name_offsets, query_lengths, bounds, is_reverse, reference_index, reference_pos,
     query_pos, length, labels, label_offsets) = device
    args = (names, name_offsets, np.int64(queries), query_lengths, bounds, np.int32(forward),
            np.int32(reverse), np.int32(with_lengths), is_reverse, reference_index,
            reference_pos, query_pos, length, labels, label_offsets,
            np.int32(forward_positions))
    sizes = cupy.empty(queries, dtype=cupy.int64)
    measure = get_kernel(KERNEL_FILE, "mummer_blocks<false>")
    measure(*launch.grid(measure, queries), (*args, sizes, cupy.zeros(1, dtype=cupy.uint8)))
    ends = cupy.cumsum(sizes)
    text = cupy.empty(int(ends[-1]), dtype=cupy.uint8)
    write = get_kernel(KERNEL_FILE, "mummer_blocks<true>")
    write(*launch.grid(write, queries), (*args, ends - sizes, text))
    return text.get()
