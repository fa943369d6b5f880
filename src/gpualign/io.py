"""Sequence files in (FASTA/FASTQ through dnaio, compressed or not) and result tables out."""

from __future__ import annotations

import contextlib
import functools
import gzip
import itertools
import lzma
import os
import re
import zlib
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

import dnaio
import numpy as np
from numba import njit, prange

__all__ = ["SequenceFileError", "read_packed", "read_records", "write_tsv"]


class SequenceFileError(ValueError):
    """A sequence file is missing, truncated, corrupt or not FASTA/FASTQ."""


_CIGAR_RUN = re.compile(r"(\d+)([=XID])")


def _decompression_errors() -> tuple[type[Exception], ...]:
    """Errors of the fast gzip decompressors that dnaio (through xopen) may use; they derive
    from Exception only, not from zlib.error or OSError."""
    errors: list[type[Exception]] = []
    with contextlib.suppress(ImportError):
        from isal.isal_zlib import error as isal_error

        errors.append(isal_error)
    with contextlib.suppress(ImportError):
        from zlib_ng.zlib_ng import error as zlib_ng_error

        errors.append(zlib_ng_error)
    return tuple(errors)


_DECOMPRESSION_ERRORS = _decompression_errors()


def read_records(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """Yield ``(name, sequence)`` for every record of a FASTA or FASTQ file.

    The format and compression (.gz, .bz2, .xz) are detected from the content; records are
    streamed, so memory does not grow with the file. The name is the header up to the first
    white space, as in SAM and MUMmer output.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SequenceFileError(f"{path}: no such file")
    index = -1
    try:
        with dnaio.open(path) as reader:
            for index, record in enumerate(reader):  # noqa: B007 (read in the handler)
                # dnaio's id ends at a space or tab; printable, it has no other white space
                # either, so it is the split below, at a fraction of the cost.
                name = record.id
                if not (name and name.isprintable()):
                    name = record.name.split(None, 1)[0] if record.name.strip() else ""
                yield name, record.sequence
    except (dnaio.FileFormatError, EOFError, OSError, gzip.BadGzipFile, zlib.error,
            lzma.LZMAError, UnicodeDecodeError, *_DECOMPRESSION_ERRORS) as exc:
        where = f"after record #{index}" if index >= 0 else "before the first record"
        raise SequenceFileError(f"{path}: cannot read {where}: {exc}") from exc


#: Bytes read from a file per block by :func:`read_packed`, parsed in chunks of about
#: ``_CHUNK`` bytes on parallel threads.
_BLOCK = 1 << 25
_CHUNK = 1 << 20
#: Mean record size in the first block from which :func:`read_packed` leaves a file to dnaio:
#: on long records (genomes) dnaio is as fast, and the compiled parser's first call in a
#: process (loading Numba's machinery) would cost more than reading them.
_LONG_RECORD = 1 << 16
# What the compiled FASTA parser reports: every complete record of the block parsed, or a
# record it leaves to dnaio (FASTQ, non-ASCII, white space inside a sequence line).
_PARSED, _UNUSUAL = 0, 1


def read_packed(path: str | os.PathLike, batch_residues: int,
                ) -> Iterator[tuple[list[str], bytes, np.ndarray]]:
    """Records of a FASTA or FASTQ file in batches: ``(names, sequences, offsets)``, the
    sequences' bytes concatenated as ``bytes`` with ``int64`` offsets; names and sequences as
    :func:`read_records` gives them. A batch closes at the record that brings it to
    ``batch_residues`` symbols.

    Plain ASCII FASTA of short records, the common case for large read sets, is parsed a
    block at a time in compiled code, several times faster than record by record; from the
    first record it does not recognize (FASTQ, other bytes, white space inside a sequence
    line) on, dnaio reads the rest, so results and errors are those of :func:`read_records`.
    dnaio reads files of long records (genomes) from the start.
    """
    names: list[str] = []
    parts: list[bytes] = []
    lengths: list[np.ndarray] = []
    residues = 0
    for block_names, sequences, block_lengths in _blocks(path):
        ends = np.cumsum(block_lengths)
        first = 0
        while first < len(block_names):
            base = int(ends[first - 1]) if first else 0
            # The record that brings the batch to batch_residues, if this block has it.
            last = int(np.searchsorted(ends, base + batch_residues - residues, side="left"))
            stop = min(last + 1, len(block_names))
            names.extend(block_names[first:stop])
            parts.append(memoryview(sequences)[base:int(ends[stop - 1])])
            lengths.append(block_lengths[first:stop])
            residues += int(ends[stop - 1]) - base
            first = stop
            if last < len(block_names):
                yield _packed(names, parts, lengths)
                names, parts, lengths, residues = [], [], [], 0
    if names:
        yield _packed(names, parts, lengths)


def _packed(names: list[str], parts: list[memoryview], lengths: list[np.ndarray]) -> tuple:
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return names, b"".join(parts), offsets


def _blocks(path: str | os.PathLike) -> Iterator[tuple[list[str], bytes, np.ndarray]]:
    """``(names, sequences, lengths)`` of consecutive records of the file: from the compiled
    FASTA parser, then from dnaio for the rest, a few thousand records at a time."""
    parsed: list[int] = []
    if (yield from _fasta_blocks(path, parsed)):
        return
    records = itertools.islice(read_records(path), sum(parsed), None)
    for chunk in iter(lambda: list(itertools.islice(records, 4096)), []):
        sequences = [sequence for _, sequence in chunk]
        yield ([name for name, _ in chunk],
               "".join(sequences).encode("latin-1", errors="replace"),
               np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences)))


def _fasta_blocks(path: str | os.PathLike, parsed: list[int],
                  ) -> Generator[tuple[list[str], bytes, np.ndarray], None, bool]:
    """``(names, sequences, lengths)`` of consecutive records parsed by the compiled FASTA
    parser, their counts appended to ``parsed``, up to the end (returns True) or to the first
    record it leaves to dnaio (False). Nothing for a file that is missing, not FASTA, or
    unreadable (dnaio then reports why)."""
    import xopen

    if not os.path.isfile(path):
        return False
    try:
        handle = xopen.xopen(path, "rb", threads=0)
    except (OSError, ValueError, *_DECOMPRESSION_ERRORS):
        return False
    with handle:
        carry = b""
        first, final = True, False
        while not final:
            try:
                block = handle.read(_BLOCK)
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError,
                    *_DECOMPRESSION_ERRORS):
                return False  # read_records reports it
            final = not block
            joined = carry + block
            if first and joined and (not _starts_fasta(joined) or
                                     block.count(b">") * _LONG_RECORD < len(block)):
                return False
            first = False
            names, sequences, lengths, consumed, unusual = _parse_block(joined, final)
            if len(names):
                parsed.append(len(names))
                yield names, sequences, lengths
            if unusual:
                return False
            carry = joined[consumed:]
    return True


def _parse_block(raw: bytes, final: bool) -> tuple[list[str], bytes, np.ndarray, int, bool]:
    """The complete records of ``raw`` (all of them when ``final``) as ``names, sequences,
    lengths``, the bytes they take, and whether parsing stopped at a record left to dnaio.

    The block is cut into chunks of about ``_CHUNK`` bytes at record starts (a line that
    begins with ``>``), parsed on parallel threads (the parser releases the GIL); only the
    last chunk can end inside a record."""
    data = np.frombuffer(raw, dtype=np.uint8)
    cuts = [0]
    while len(data) - cuts[-1] > _CHUNK:
        at = raw.find(b"\n>", cuts[-1] + _CHUNK)
        if at < 0:
            break
        cuts.append(at + 1)
    cuts.append(len(data))
    # Chunk c writes from a + c (names) and a // 2 + c (lengths, two bytes a record at least):
    # regions as large as the chunk's bytes allow, one after the other.
    sequences = np.empty(len(data), dtype=np.uint8)
    lengths = np.empty(len(data) // 2 + len(cuts), dtype=np.int64)
    name_bytes = np.empty(len(data) + len(cuts), dtype=np.uint8)

    def parse(chunk: int) -> tuple:
        a, b = cuts[chunk], cuts[chunk + 1]
        return _parse_fasta(data[a:b], final or chunk < len(cuts) - 2, sequences[a:b],
                            lengths[a // 2 + chunk:b // 2 + chunk + 1],
                            name_bytes[a + chunk:b + chunk + 1])

    # The first chunk on this thread: a process's first call loads the compiled parser, once,
    # rather than every thread of the pool waiting on that load.
    results = [parse(0), *_parsers().map(parse, range(1, len(cuts) - 1))]
    names, parts, counts = [], [], []
    consumed, unusual = 0, False
    for chunk, (status, records, taken, used, name_used) in enumerate(results):
        a = cuts[chunk]
        names.append(name_bytes[a + chunk:a + chunk + name_used])
        parts.append(sequences[a:a + used])
        counts.append(lengths[a // 2 + chunk:a // 2 + chunk + records])
        consumed = a + taken
        unusual = status == _UNUSUAL
        if unusual or taken < cuts[chunk + 1] - a:
            break
    text = b"".join(part.data for part in names).decode("ascii")
    return (text.split("\n")[:-1], b"".join(part.data for part in parts),
            np.concatenate(counts), consumed, unusual)


@functools.cache
def _parsers() -> ThreadPoolExecutor:
    """Threads that parse the chunks of a block."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                              thread_name_prefix="gpualign-parse")


def _starts_fasta(data: bytes) -> bool:
    """Whether the first byte that is not white space is ``>``."""
    for byte in data[:4096]:
        if byte not in b" \t\r\n":
            return byte == ord(">")
    return False


@njit(cache=True, nogil=True)
def _parse_fasta(data, final, sequences, lengths, name_bytes):
    """Parse the complete FASTA records of ``data`` (all of them when ``final``). Returns
    ``status, records, consumed bytes, sequence bytes, name bytes``: sequences concatenated
    into ``sequences``, lengths into ``lengths``, names (the header up to its first white
    space) into ``name_bytes``, each followed by a newline."""
    n = len(data)
    at = records = used = name_used = 0
    while at < n and (data[at] == 10 or data[at] == 13 or data[at] == 32 or data[at] == 9):
        at += 1  # blank lines before the first record
    while at < n:
        start, start_used, start_name = at, used, name_used
        if data[at] != 62:  # '>'
            return _UNUSUAL, records, start, start_used, start_name
        end = at + 1
        while end < n and data[end] != 10:
            end += 1
        if end == n and not final:
            return _PARSED, records, start, start_used, start_name
        for position in range(at + 1, end):
            byte = data[position]  # other white space, or not ASCII: dnaio and str.split
            if byte >= 128 or byte == 11 or byte == 12 or 28 <= byte <= 31:
                return _UNUSUAL, records, start, start_used, start_name
        name = at + 1
        while name < end and (data[name] == 32 or data[name] == 9):
            name += 1
        while name < end and data[name] != 32 and data[name] != 9 and data[name] != 13:
            name_bytes[name_used] = data[name]
            name_used += 1
            name += 1
        name_bytes[name_used] = 10
        name_used += 1
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
            while last > at and (data[last - 1] == 32 or data[last - 1] == 9 or
                                 data[last - 1] == 13):
                last -= 1
            for position in range(at, last):
                byte = data[position]
                if byte <= 32 or byte >= 127:
                    return _UNUSUAL, records, start, start_used, start_name
                sequences[used] = byte
                used += 1
            at = end + 1
        if not complete or (at >= n and not final):
            return _PARSED, records, start, start_used, start_name
        lengths[records] = used - start_used
        records += 1
    return _PARSED, records, min(at, n), used, name_used


def write_tsv(out: IO[str], header: Sequence[str], columns: Sequence[Any]) -> None:
    """Write a header and rows taken column-wise (NumPy arrays or lists of equal length).

    ``None`` and the empty string are written as ``*`` (SAM's "not available").
    """
    out.write("\t".join(header) + "\n")
    if not columns:
        return
    text_columns = []
    for column in columns:
        values = column.tolist() if isinstance(column, np.ndarray) else column
        text_columns.append(["*" if v is None or v == "" else str(v) for v in values])
    for row in zip(*text_columns, strict=True):
        out.write("\t".join(row) + "\n")


def write_sam(out: IO[str], queries: Any, targets: Any, query_index: np.ndarray,
              target_index: np.ndarray, result: Any, program: str) -> int:
    """Write alignments as SAM: targets are the reference sequences (``@SQ``), queries the
    reads; ``result`` is an :class:`~gpualign.AlignResult` with ``task="path"``.

    POS is 1-based; the CIGAR is the alignment's (``=``/``X``/``I``/``D``), with the query's
    unaligned ends soft-clipped (``S``; local and overlap alignments); ``AS:i`` is the score,
    ``NM:i`` the edit count (``X``, ``I`` and ``D`` symbols). Returns the number of records."""
    out.write("@HD\tVN:1.6\tSO:unsorted\n")
    for number, name in enumerate(targets.names):
        out.write(f"@SQ\tSN:{name or number}\tLN:{max(int(targets.lengths[number]), 1)}\n")
    out.write(f"@PG\tID:gpualign\tPN:gpualign\tCL:{program}\n")
    for p, (q, t) in enumerate(zip(query_index.tolist(), target_index.tolist(), strict=True)):
        length = int(queries.lengths[q])
        cigar = result.cigar[p]
        head, tail = int(result.query_start[p]), length - int(result.query_end[p])
        if cigar:
            full = (f"{head}S" if head else "") + cigar + (f"{tail}S" if tail else "")
            flag, position = 0, int(result.target_start[p]) + 1
            rname = targets.names[t] or str(t)
        else:  # nothing aligned (an empty local alignment): unmapped
            full, flag, position, rname = "*", 4, 0, "*"
        edits = sum(int(n) for n, op in _CIGAR_RUN.findall(cigar) if op in "XID")
        sequence = queries[q] or "*"
        out.write(f"{queries.names[q] or q}\t{flag}\t{rname}\t{position}\t255\t{full}\t*\t0\t0"
                  f"\t{sequence}\t*\tAS:i:{int(result.score[p])}\tNM:i:{edits}\n")
    return len(query_index)


def write_mummer(out: IO[str], mems: Any, strands: str, *, four_columns: bool | None = None,
                 forward_positions: bool = False, lengths: bool = False) -> None:
    """Write :class:`~gpualign.Mems` in MUMmer's text format (``mummer -maxmatch``).

    One block per query and strand searched (``> name``, ``> name Reverse``), in query order,
    each line ``ref_id ref_pos query_pos length`` (1-based), ``ref_id`` only when the reference
    has several records or ``four_columns``; lines in the order of ``mems`` (query position,
    then reference record and position). ``forward_positions`` (``-c``): reverse matches give
    the query position on the forward query (its last base of the match, read backwards);
    ``lengths`` (``-L``): ``Len = N`` on the headers. The text is formatted in compiled code,
    all queries in parallel, and written at once."""
    four = len(mems.reference_names) > 1 if four_columns is None else four_columns
    width = max((len(name) for name in mems.reference_names), default=0)
    names, name_offsets = _joined(mems.query_names)
    labels, label_offsets = _joined([f"  {name:<{width}}  " if four else ""
                                     for name in mems.reference_names])
    bounds = np.zeros(len(mems.query_names) + 1, dtype=np.int64)  # MEMs are in query order
    np.cumsum(np.bincount(mems.query_index, minlength=len(mems.query_names)), out=bounds[1:])
    args = (names, name_offsets, np.asarray(mems.query_lengths, dtype=np.int64), bounds,
            strands in ("forward", "both"), strands in ("reverse", "both"), lengths,
            np.asarray(mems.reverse, dtype=np.bool_), mems.reference_index, mems.reference_pos,
            mems.query_pos, mems.length, labels, label_offsets, forward_positions)
    sizes = np.zeros(len(mems.query_names), dtype=np.int64)
    _mummer_blocks(*args, False, sizes, np.zeros(0, dtype=np.uint8))
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    text = np.empty(int(starts[-1]), dtype=np.uint8)
    _mummer_blocks(*args, True, starts, text)
    buffer = getattr(out, "buffer", None)
    if buffer is not None:  # a text file or standard output: its bytes directly
        out.flush()
        buffer.write(text.data)
    else:
        out.write(text.tobytes().decode("utf-8"))


def _joined(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of ``strings`` concatenated, and their ``int64`` offsets."""
    data = "".join(strings).encode("utf-8")
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    if len(data) != lengths.sum():  # not ASCII: characters are not bytes
        lengths = np.fromiter((len(text.encode("utf-8")) for text in strings), dtype=np.int64,
                              count=len(strings))
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(data, dtype=np.uint8), offsets


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
