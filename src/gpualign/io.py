"""Sequence files in (FASTA/FASTQ through dnaio, compressed or not) and result tables out."""

from __future__ import annotations

import contextlib
import gzip
import lzma
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from typing import IO, Any

import dnaio
import numpy as np
from numba import njit, prange

__all__ = ["SequenceFileError", "read_records", "write_tsv"]


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
    names, name_offsets = _joined([f"> {name}" for name in mems.query_names])
    labels, label_offsets = _joined([f"  {name:<{width}}  " if four else ""
                                     for name in mems.reference_names])
    bounds = np.searchsorted(mems.query_index, np.arange(len(mems.query_names) + 1))
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
    if len(data) == sum(map(len, strings)):  # ASCII: characters are bytes
        np.cumsum([len(text) for text in strings], out=offsets[1:])
    else:
        np.cumsum([len(text.encode("utf-8")) for text in strings], out=offsets[1:])
    return np.frombuffer(data, dtype=np.uint8), offsets


#: Pieces of MUMmer's text, as arrays for the compiled writer.
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
