"""The CPU side of the file formats: the FASTA and FASTQ parsers and the MUMmer text writer,
compiled with Numba (``formats/_cuda.py`` parses FASTA and writes MUMmer text on the GPU, with
the same results).

Imported only when used, so that a CUDA run does not load Numba.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from . import NAME_HASH_FACTOR, NAME_HASH_SEED

#: Bytes of a block that one thread parses (blocks are cut at record starts).
CHUNK = 1 << 20
# What the compiled parsers report: every complete record of the block parsed, or a record
# they leave to dnaio (for FASTA: FASTQ, non-ASCII, white space inside a sequence line).
_PARSED, _UNUSUAL = 0, 1


def parse_block(raw: bytes, final: bool, hash_names: bool = False,
                ) -> tuple[list[str], list[str], bytes, np.ndarray, int, bool,
                           np.ndarray | None]:
    """The complete records of ``raw`` (all of them when ``final``) as ``names, descriptions,
    sequences, lengths``, the bytes they take, whether parsing stopped at a record left to
    dnaio, and with ``hash_names`` the hashes of the names (see
    :data:`gpualign.formats.NAME_HASH_SEED`), sorted (else None).

    The block is cut into chunks of about ``CHUNK`` bytes at record starts (a line that
    begins with ``>``), parsed on parallel threads (the parser releases the GIL); only the
    last chunk can end inside a record."""
    data = np.frombuffer(raw, dtype=np.uint8)
    cuts = [0]
    while len(data) - cuts[-1] > CHUNK:
        at = raw.find(b"\n>", cuts[-1] + CHUNK)
        if at < 0:
            break
        cuts.append(at + 1)
    cuts.append(len(data))
    # Chunk c writes from a + c (names, descriptions) and a // 2 + c (lengths, two bytes a
    # record at least): regions as large as the chunk's bytes allow, one after the other.
    sequences = np.empty(len(data), dtype=np.uint8)
    lengths = np.empty(len(data) // 2 + len(cuts), dtype=np.int64)
    hashes = np.empty(len(lengths), dtype=np.uint64)  # laid out as the lengths
    name_bytes = np.empty(len(data) + len(cuts), dtype=np.uint8)
    note_bytes = np.empty(len(data) + len(cuts), dtype=np.uint8)

    def parse(chunk: int) -> tuple:
        a, b = cuts[chunk], cuts[chunk + 1]
        return _parse_fasta(data[a:b], final or chunk < len(cuts) - 2, sequences[a:b],
                            lengths[a // 2 + chunk:b // 2 + chunk + 1],
                            hashes[a // 2 + chunk:b // 2 + chunk + 1],
                            name_bytes[a + chunk:b + chunk + 1],
                            note_bytes[a + chunk:b + chunk + 1],
                            np.uint64(NAME_HASH_SEED), np.uint64(NAME_HASH_FACTOR))

    # The first chunk on this thread: a process's first call loads the compiled parser, once,
    # rather than every thread of the pool waiting on that load.
    results = [parse(0), *_parsers().map(parse, range(1, len(cuts) - 1))]
    names, notes, parts, counts, record_hashes = [], [], [], [], []
    consumed, unusual = 0, False
    for chunk, (status, records, taken, used, name_used, note_used) in enumerate(results):
        a = cuts[chunk]
        names.append(name_bytes[a + chunk:a + chunk + name_used])
        notes.append(note_bytes[a + chunk:a + chunk + note_used])
        parts.append(sequences[a:a + used])
        counts.append(lengths[a // 2 + chunk:a // 2 + chunk + records])
        record_hashes.append(hashes[a // 2 + chunk:a // 2 + chunk + records])
        consumed = a + taken
        unusual = status == _UNUSUAL
        if unusual or taken < cuts[chunk + 1] - a:
            break
    return (_lines(names), _lines(notes), b"".join(part.data for part in parts),
            np.concatenate(counts), consumed, unusual,
            np.sort(np.concatenate(record_hashes)) if hash_names else None)


def parse_fastq_block(raw: bytes, final: bool, hash_names: bool = False,
                      ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, int, bool,
                                 np.ndarray | None]:
    """The complete FASTQ records of ``raw`` (all of them when ``final``) as ``names,
    sequences, lengths, qualities`` (sequences and qualities joined, each a uint8 array, at
    the same offsets: not copied to bytes), the bytes they take, whether parsing stopped at a
    record left to dnaio (:func:`_parse_fastq`), and with ``hash_names`` the hashes of the names,
    sorted (see :data:`gpualign.formats.NAME_HASH_SEED`; else None), as :func:`parse_block`
    gives FASTA's: one compiled pass over the block (it releases the GIL, so a reading thread
    leaves the others to work)."""
    data = np.frombuffer(raw, dtype=np.uint8)
    sequences = np.empty(len(data), dtype=np.uint8)
    qualities = np.empty(len(data), dtype=np.uint8)
    lengths = np.empty(len(data) // 4 + 1, dtype=np.int64)
    hashes = np.empty(len(lengths), dtype=np.uint64)
    name_bytes = np.empty(len(data) + 1, dtype=np.uint8)
    status, records, consumed, used, name_used = _parse_fastq(
        data, final, sequences, qualities, lengths, hashes, name_bytes,
        np.uint64(NAME_HASH_SEED), np.uint64(NAME_HASH_FACTOR))
    return (_lines([name_bytes[:name_used]]), sequences[:used], lengths[:records],
            qualities[:used], consumed, status == _UNUSUAL,
            np.sort(hashes[:records]) if hash_names else None)


def _lines(parts: list[np.ndarray]) -> list[str]:
    """The lines of ASCII text in ``parts``, each ended by a newline."""
    return b"".join(part.data for part in parts).decode("ascii").split("\n")[:-1]


@functools.cache
def _parsers() -> ThreadPoolExecutor:
    """Threads that parse the chunks of a block."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                              thread_name_prefix="gpualign-parse")


@njit(cache=True, nogil=True)
def translate(data: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[data]`` for the uint8 arrays ``data`` and ``table`` (256 entries), compiled and
    without the GIL: ``bytes.translate`` holds it, about 2 ms a million bytes, which a reading
    thread takes from the mapper.

    Examples
    --------
    >>> translate(np.frombuffer(b"ACGT", np.uint8), np.arange(256, dtype=np.uint8)[::-1]).tolist()
    [190, 188, 184, 171]
    """
    out = np.empty(len(data), dtype=np.uint8)
    for k in range(len(data)):
        out[k] = table[data[k]]
    return out


@njit(cache=True, nogil=True)
def _blank(byte):
    """Space, tab or carriage return: the white space a FASTA line of the parser may hold."""
    return byte == 32 or byte == 9 or byte == 13


@njit(cache=True, nogil=True)
def _copy_name(data, at, end, name_bytes, name_used, seed, factor):
    """Copy the name of the header ``data[at:end]`` (from its first byte that is not
    :func:`_blank` to the next that is) into ``name_bytes`` from ``name_used``, a newline
    after it. Returns the bytes of ``name_bytes`` used, the name's hash (``seed``,
    ``factor``: see :data:`gpualign.formats.NAME_HASH_SEED`) and where the name ends."""
    while at < end and _blank(data[at]):
        at += 1
    name_hash = seed
    while at < end and not _blank(data[at]):
        name_bytes[name_used] = data[at]
        name_hash = name_hash * factor + data[at]
        name_used += 1
        at += 1
    name_bytes[name_used] = 10
    return name_used + 1, name_hash, at


@njit(cache=True, nogil=True)
def _line_end(data, at):
    """Where the line from ``at`` ends: its newline, or the end of ``data``."""
    while at < len(data) and data[at] != 10:
        at += 1
    return at


@njit(cache=True, nogil=True, inline="always")
def _copy_printable(data, at, length, out, used):
    """Copy ``data[at:at + length]`` to ``out[used:]``; whether every byte was printable ASCII
    other than a space (``!`` to ``~``, as a FASTQ sequence or quality). One loop without an
    exit, on bytes alone (``byte - 33`` wraps below ``!``; its quotient by 94 is 0 inside the
    range), which the compiler vectorizes: three times as fast as with a flag of booleans."""
    outside = np.uint8(0)
    for k in range(length):
        byte = data[at + k]
        out[used + k] = byte
        outside |= np.uint8(byte - np.uint8(33)) // np.uint8(94)
    return outside == 0


@njit(cache=True, nogil=True)
def _parse_fastq(data, final, sequences, qualities, lengths, hashes, name_bytes, seed, factor):
    """Parse the complete FASTQ records of ``data`` (all of them when ``final``): four lines
    each, ``@`` and a header, the sequence, ``+`` alone, the qualities (as many, ``!`` to
    ``~``). Returns ``status, records, consumed bytes, sequence bytes, name bytes``:
    sequences concatenated into ``sequences``, lengths into ``lengths``, names (the header up
    to its first white space) into ``name_bytes`` (each followed by a newline) and their
    hashes into ``hashes``, the qualities concatenated into ``qualities`` (as the sequences:
    the same offsets). A record of any other shape, a carriage return, a byte outside
    printable ASCII (a tab in a header aside) or white space in a sequence is left to dnaio
    (status ``_UNUSUAL``): it reads the rest, or says what is wrong.

    A sequence line is first tried at the length of the one before (reads of a run mostly
    share it): its bytes all printable and a newline after them make it that line, so that
    only headers are scanned for their ends."""
    n = len(data)
    at = records = used = name_used = 0
    guess = 0
    while at < n:
        start, start_used, start_name = at, used, name_used
        header_end = _line_end(data, at)
        if header_end >= n and not final:  # the block may end inside this record
            return _PARSED, records, start, start_used, start_name
        if data[at] != 64:
            return _UNUSUAL, records, start, start_used, start_name
        for position in range(at + 1, header_end):
            byte = data[position]
            if (byte < 32 and byte != 9) or byte >= 127:
                return _UNUSUAL, records, start, start_used, start_name
        sequence_at = header_end + 1
        printable = False
        if sequence_at + guess < n and data[sequence_at + guess] == 10:
            printable = _copy_printable(data, sequence_at, guess, sequences, used)
        length = guess
        if not printable:
            length = _line_end(data, sequence_at) - sequence_at
            if sequence_at + length >= n and not final:
                return _PARSED, records, start, start_used, start_name
            if not _copy_printable(data, sequence_at, length, sequences, used):
                return _UNUSUAL, records, start, start_used, start_name
        # The "+" line, then as many qualities and a newline (or the end of the data).
        plus = sequence_at + length + 1
        quality_at = plus + 2
        quality_end = quality_at + length
        if quality_end >= n and not final:
            return _PARSED, records, start, start_used, start_name
        # (At the end of the data, a record needs its quality line, empty or not: dnaio
        # reports a file that stops after "+" as cut short.)
        if quality_at >= n or data[plus] != 43 or data[plus + 1] != 10 or quality_end > n or \
                (quality_end < n and data[quality_end] != 10):
            return _UNUSUAL, records, start, start_used, start_name
        # A statement of its own: inside the condition above, its loop was not vectorized.
        if not _copy_printable(data, quality_at, length, qualities, used):
            return _UNUSUAL, records, start, start_used, start_name
        name_used, name_hash, _ = _copy_name(data, at + 1, header_end, name_bytes, name_used,
                                             seed, factor)
        used += length
        lengths[records] = length
        hashes[records] = name_hash
        records += 1
        guess = length
        at = quality_end + 1
    return _PARSED, records, min(at, n), used, name_used


@njit(cache=True, nogil=True)
def _parse_fasta(data, final, sequences, lengths, hashes, name_bytes, note_bytes, seed,
                 factor):
    """Parse the complete FASTA records of ``data`` (all of them when ``final``). Returns
    ``status, records, consumed bytes, sequence bytes, name bytes, description bytes``:
    sequences concatenated into ``sequences``, lengths into ``lengths``, names (the header up
    to its first white space) into ``name_bytes`` and their hashes (``seed``, ``factor``: see
    :data:`gpualign.formats.NAME_HASH_SEED`) into ``hashes``, descriptions (the rest, white
    space around it dropped) into ``note_bytes``, each followed by a newline."""
    n = len(data)
    at = records = used = name_used = note_used = 0
    while at < n and (data[at] == 10 or _blank(data[at])):
        at += 1  # blank lines before the first record
    while at < n:
        start, start_used, start_name, start_note = at, used, name_used, note_used
        if data[at] != 62:  # '>'
            return _UNUSUAL, records, start, start_used, start_name, start_note
        end = at + 1
        while end < n and data[end] != 10:
            end += 1
        if end == n and not final:
            return _PARSED, records, start, start_used, start_name, start_note
        for position in range(at + 1, end):
            # Other white space, or not ASCII (dnaio and str.split differ); a carriage return
            # before the line's end (dnaio ends the line there).
            byte = data[position]
            if (byte >= 128 or byte == 11 or byte == 12 or 28 <= byte <= 31 or
                    (byte == 13 and position < end - 1)):
                return _UNUSUAL, records, start, start_used, start_name, start_note
        name_used, name_hash, name = _copy_name(data, at + 1, end, name_bytes, name_used, seed,
                                                factor)
        while name < end and _blank(data[name]):
            name += 1
        last = end
        while last > name and _blank(data[last - 1]):
            last -= 1
        for position in range(name, last):
            note_bytes[note_used] = data[position]
            note_used += 1
        note_bytes[note_used] = 10
        note_used += 1
        at = end + 1
        complete = True
        while at < n and data[at] != 62:  # sequence lines up to the next header
            end = at
            while end < n and data[end] != 10:
                end += 1
            if end == n and not final:
                complete = False
                break
            last = end  # trailing white space (and a carriage return) is dropped, as dnaio
            while last > at and _blank(data[last - 1]):
                last -= 1
            for position in range(at, last):
                byte = data[position]
                if byte <= 32 or byte >= 127:
                    return _UNUSUAL, records, start, start_used, start_name, start_note
                sequences[used] = byte
                used += 1
            at = end + 1
        if not complete or (at >= n and not final):
            return _PARSED, records, start, start_used, start_name, start_note
        lengths[records] = used - start_used
        hashes[records] = name_hash
        records += 1
    return _PARSED, records, min(at, n), used, name_used, note_used


def mummer_text(names, name_offsets, query_lengths, bounds, forward, reverse, with_lengths,
                is_reverse, reference_index, reference_pos, query_pos, length, labels,
                label_offsets, forward_positions) -> np.ndarray:
    """The MUMmer text of :func:`gpualign.io.write_mummer` (its arguments prepared there) as
    ``uint8``: every query's blocks sized, then written, in parallel."""
    args = (names, name_offsets, query_lengths, bounds, forward, reverse, with_lengths,
            is_reverse, reference_index, reference_pos, query_pos, length, labels,
            label_offsets, forward_positions)
    sizes = np.zeros(len(name_offsets) - 1, dtype=np.int64)
    _mummer_blocks(*args, False, sizes, np.zeros(0, dtype=np.uint8))
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    text = np.empty(int(starts[-1]), dtype=np.uint8)
    _mummer_blocks(*args, True, starts, text)
    return text


#: Pieces of MUMmer's text, as arrays for the compiled writer.
_HEADER_TAG = np.frombuffer(b"> ", dtype=np.uint8)
_REVERSE_TAG = np.frombuffer(b" Reverse", dtype=np.uint8)
_LENGTH_TAG = np.frombuffer(b"  Len = ", dtype=np.uint8)
_GAP = np.frombuffer(b"  ", dtype=np.uint8)
_NEWLINE = np.frombuffer(b"\n", dtype=np.uint8)


@njit(cache=True, nogil=True)
def _put_bytes(text, at, source, lo, hi, write):
    if write:
        text[at:at + hi - lo] = source[lo:hi]
    return at + hi - lo


@njit(cache=True, nogil=True)
def _put_number(text, at, value, width, write):
    """``value`` (>= 0) right-aligned in ``width`` characters (more when it has more digits)."""
    digits, rest = 1, value // 10
    while rest:
        digits, rest = digits + 1, rest // 10
    end = at + max(width, digits)
    if write:
        text[at:end - digits] = 32  # spaces
        for position in range(end - 1, end - digits - 1, -1):
            text[position] = 48 + value % 10
            value //= 10
    return end


@njit(cache=True, parallel=True)
def _mummer_blocks(names, name_offsets, query_lengths, bounds, forward, reverse, with_lengths,
                   is_reverse, reference_index, reference_pos, query_pos, length, labels,
                   label_offsets, forward_positions, write, starts, text):
    """Without ``write``: the size of every query's blocks into ``starts[query]``; with it:
    the blocks written into ``text`` from ``starts[query]``."""
    for number in prange(len(name_offsets) - 1):
        at = starts[number] if write else 0
        for block in range(2):
            if (block == 0 and not forward) or (block == 1 and not reverse):
                continue
            at = _put_bytes(text, at, _HEADER_TAG, 0, len(_HEADER_TAG), write)
            at = _put_bytes(text, at, names, name_offsets[number], name_offsets[number + 1],
                            write)
            if block == 1:
                at = _put_bytes(text, at, _REVERSE_TAG, 0, len(_REVERSE_TAG), write)
            if with_lengths:
                at = _put_bytes(text, at, _LENGTH_TAG, 0, len(_LENGTH_TAG), write)
                at = _put_number(text, at, query_lengths[number], 0, write)
            at = _put_bytes(text, at, _NEWLINE, 0, 1, write)
            for j in range(bounds[number], bounds[number + 1]):
                if is_reverse[j] != (block == 1):
                    continue
                record = reference_index[j]
                at = _put_bytes(text, at, labels, label_offsets[record],
                                label_offsets[record + 1], write)
                position = query_pos[j] + 1
                if block == 1 and forward_positions:
                    position = query_lengths[number] - query_pos[j]
                at = _put_number(text, at, reference_pos[j] + 1, 8, write)
                at = _put_bytes(text, at, _GAP, 0, 2, write)
                at = _put_number(text, at, position, 8, write)
                at = _put_bytes(text, at, _GAP, 0, 2, write)
                at = _put_number(text, at, length[j], 8, write)
                at = _put_bytes(text, at, _NEWLINE, 0, 1, write)
        if not write:
            starts[number] = at
