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
                yield record.name.split(None, 1)[0] if record.name else "", record.sequence
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
    ``lengths`` (``-L``): ``Len = N`` on the headers."""
    four = len(mems.reference_names) > 1 if four_columns is None else four_columns
    width = max((len(name) for name in mems.reference_names), default=0)
    blocks = {"forward": (False,), "reverse": (True,), "both": (False, True)}[strands]
    bounds = np.searchsorted(mems.query_index, np.arange(len(mems.query_names) + 1))
    for number, name in enumerate(mems.query_names):
        lo, hi = bounds[number], bounds[number + 1]
        size = int(mems.query_lengths[number])
        for reverse in blocks:
            header = f"> {name}{' Reverse' if reverse else ''}"
            out.write(header + (f"  Len = {size}" if lengths else "") + "\n")
            for j in range(lo, hi):
                if bool(mems.reverse[j]) != reverse:
                    continue
                q_pos = int(mems.query_pos[j])
                q_pos = size - q_pos if (reverse and forward_positions) else q_pos + 1
                numbers = (f"{int(mems.reference_pos[j]) + 1:>8}  {q_pos:>8}  "
                           f"{int(mems.length[j]):>8}")
                if four:
                    ref = mems.reference_names[int(mems.reference_index[j])]
                    out.write(f"  {ref:<{width}}  {numbers}\n")
                else:
                    out.write(numbers + "\n")
