"""Sequence files in (FASTA/FASTQ, compressed or not: compiled parsers where the records are
plain, dnaio for the rest) and result tables out."""

from __future__ import annotations

import contextlib
import gzip
import itertools
import lzma
import os
import sys
import warnings
import zlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import dnaio
import numpy as np

from .cigar import count_ops, offsets_of_counts
from .formats import name_hashes

__all__ = ["DuplicateNameError", "DuplicateNameWarning", "SequenceFileError", "joined_utf8",
           "open_text", "read_packed", "read_records", "write_tsv"]


class SequenceFileError(ValueError):
    """A sequence file is missing, truncated, corrupt or not FASTA/FASTQ."""


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


#: What the fast gzip decompressors raise on damaged data (the readers of this module and the
#: alphabet sampling of :mod:`gpualign.sequences` catch them).
DECOMPRESSION_ERRORS = _decompression_errors()


class DuplicateNameError(SequenceFileError):
    """Two records of one file have the same name."""


class DuplicateNameWarning(UserWarning):
    """Records of a file were renamed to make their names unique."""


#: What the reading functions do about records of one file with the same name (see
#: :data:`gpualign.config.DUPLICATE_NAMES`).
DUPLICATES = ("keep", "error", "rename")


class _Names:
    """The names of a file's records, settled as they are read: an empty name becomes the
    record's 0-based number in the file; a name met before is kept, refused or renamed
    (``duplicates``: see :data:`gpualign.config.DUPLICATE_NAMES`; None takes that setting).

    A renamed record gets ``NAME.N``, the smallest N >= 2 that no record read before it has:
    names stay unique even where a file holds ``NAME.2`` itself (a later such record is renamed
    in turn), and the same file is renamed the same way however it is read.

    Names that come in batches are checked by their 64-bit hashes (:meth:`batch`), sorted:
    no two equal, no name to compare. Names read one at a time are checked with a set, and so
    are, from there on, those of a file with a batch that holds an empty name or two equal
    hashes (a repeated name, or rarely two names with one hash: the set tells them apart)."""

    def __init__(self, path: str, duplicates: str | None) -> None:
        if duplicates is None:
            from . import config

            duplicates = config.DUPLICATE_NAMES
        if duplicates not in DUPLICATES:
            raise ValueError(f"duplicates={duplicates!r}: expected one of "
                             f"{', '.join(map(repr, DUPLICATES))}")
        self.path, self.duplicates = path, duplicates
        self.checks = duplicates != "keep"
        # With checks: the names given so far in record order (for the messages, the number
        # of a record named before) ...
        self.order: list[str] = []
        # ... and, while batches settle, runs of their hashes sorted: a few runs, each at
        # most half the size of the one before, so a batch is looked up in few of them ...
        self.runs: list[np.ndarray] = []
        # ... or, once names are settled one at a time, a set of them.
        self.seen: set[str] | None = None
        self.suffixes: dict[str, int] = {}  # name -> the next N to try for it
        self.count = 0
        self.warned = False

    def batch(self, names: list[str], hashes: np.ndarray | None = None) -> list[str]:
        """The names of the next ``len(names)`` records. ``hashes``: their hashes (see
        :func:`gpualign.formats.name_hashes`), sorted, as the compiled parsers return them;
        computed here when None."""
        if "" not in names and self.seen is None:  # the common case: no empty name ...
            if not self.checks:
                self.count += len(names)
                return names
            if hashes is None:
                hashes = np.sort(name_hashes(*joined_utf8(names)))
            if not self._hash_met(hashes):  # ... and no name met before
                self._add_run(hashes)
                self.order.extend(names)
                self.count += len(names)
                return names
        return [self.next(name) for name in names]

    def _hash_met(self, hashes: np.ndarray) -> bool:
        """Whether one of the sorted ``hashes`` is met twice, or in the runs."""
        if np.any(hashes[1:] == hashes[:-1]):
            return True
        for run in self.runs:
            at = np.minimum(np.searchsorted(run, hashes), len(run) - 1)
            if np.any(run[at] == hashes):
                return True
        return False

    def _add_run(self, hashes: np.ndarray) -> None:
        """Add the sorted hashes of a batch, merging runs of similar sizes."""
        if not len(hashes):
            return
        self.runs.append(hashes)
        while len(self.runs) > 1 and len(self.runs[-2]) <= 2 * len(self.runs[-1]):
            newer, older = self.runs.pop(), self.runs.pop()
            # Timsort finds the two sorted runs and merges them in one pass.
            self.runs.append(np.sort(np.concatenate((older, newer)), kind="stable"))

    def next(self, name: str) -> str:
        """The name of the next record, whose header gives ``name``."""
        number = self.count
        self.count += 1
        name = name or str(number)
        if not self.checks:
            return name
        if self.seen is None:  # names one at a time from here on
            self.seen, self.runs = set(self.order), []
        if name not in self.seen:
            self.seen.add(name)
            self.order.append(name)
            return name
        if self.duplicates == "error":
            raise DuplicateNameError(
                f"{self.path}: records #{self.order.index(name)} and #{number} have the same "
                f"name {name!r}; names must be unique (use duplicates='rename')")
        suffix = self.suffixes.get(name, 2)
        while f"{name}.{suffix}" in self.seen:
            suffix += 1
        self.suffixes[name] = suffix + 1
        renamed = f"{name}.{suffix}"
        self.seen.add(renamed)
        self.order.append(renamed)
        if not self.warned:
            self.warned = True
            warnings.warn(f"{self.path}: records #{self.order.index(name)} and #{number} have "
                          f"the same name {name!r}: #{number} renamed {renamed!r}; later "
                          "repeats of any name are renamed likewise (NAME.N)",
                          DuplicateNameWarning, stacklevel=2)
        return renamed


def _split_header(header: str) -> tuple[str, str]:
    """The ID (the header up to its first white space) and the description (the rest, white
    space around it dropped) of a header line."""
    parts = header.split(None, 1)
    if len(parts) < 2:
        return (parts[0] if parts else ""), ""
    return parts[0], parts[1].rstrip()


def _records(path: str, qualities: bool = False) -> Iterator[tuple[Any, ...]]:
    """``(id, description, sequence)`` of every record of the FASTA or FASTQ file ``path``
    (checked by :func:`_checked`), as dnaio reads it (names not settled: see :class:`_Names`);
    with ``qualities``, the record's FASTQ quality string last (None in FASTA). One record at
    a time: each is handed over before the next is read."""
    for record in _dnaio_records(path):
        # dnaio's id ends at a space or tab; printable, it has no other white space either,
        # so it and the comment are the split below, at a fraction of the cost.
        name = record.id
        if name and name.isprintable():
            comment = record.comment
            fields = (name, comment.strip() if comment else "", record.sequence)
        else:
            fields = (*_split_header(record.name), record.sequence)
        yield (*fields, record.qualities) if qualities else fields


#: Records that the readers take from dnaio at once, after the compiled parsers'
#: (:func:`_dnaio_chunks_after`).
_CHUNK_RECORDS = 4096


def _dnaio_records(path: str) -> Iterator[Any]:
    """dnaio's records of the FASTA or FASTQ file ``path`` (checked by :func:`_checked`);
    what goes wrong reading it is a :class:`SequenceFileError` naming the last record read."""
    done = 0  # records handed over
    try:
        with dnaio.open(path) as reader:
            for record in reader:
                yield record
                done += 1
    except dnaio.UnknownFileFormat:
        raise SequenceFileError(f"{path}: not a FASTA/FASTQ file (a FASTA record starts with "
                                "'>', a FASTQ record with '@')") from None
    except (dnaio.FileFormatError, EOFError, OSError, gzip.BadGzipFile, zlib.error,
            lzma.LZMAError, UnicodeDecodeError, *DECOMPRESSION_ERRORS) as exc:
        where = f"after record #{done - 1}" if done else "before the first record"
        raise SequenceFileError(f"{path}: cannot read {where}: {_reason(exc)}") from exc


def read_record_batches(path: str | os.PathLike, size: int, *, duplicates: str | None = None,
                        ) -> Iterator[tuple[list[str], np.ndarray, np.ndarray, np.ndarray | None]]:
    r"""``(names, sequences, offsets, qualities)`` of every ``size`` records of a FASTA or
    FASTQ file in turn (fewer at the end): the names as :func:`read_records` gives them, the
    sequences' bytes concatenated in a uint8 array (``offsets`` delimit them, as
    :func:`read_packed`'s) and the FASTQ qualities likewise, at the same offsets (None in
    FASTA). The compiled parsers read the records block by block (:func:`_fastq_blocks`,
    :func:`_blocks`), with no Python work per record (many short reads), dnaio the records
    they leave (from the first one on). A batch is a view of the block it lies in, or, across
    blocks, one copy of its records: no Python strings a read and few copies, which a reading
    thread would make while holding the GIL.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> reads = pathlib.Path(tempfile.mkdtemp(), "r.fq")
    >>> _ = reads.write_text("@a/1 x\nACGT\n+\nIIII\n@\nGG\n+\nII\n")
    >>> names, sequences, offsets, qualities = next(read_record_batches(reads, 10))
    >>> names, sequences.tobytes(), offsets.tolist(), qualities.tobytes()
    (['a/1', '1'], b'ACGTGG', [0, 4, 6], b'IIIIII')
    """
    path = _checked(path)
    names = _Names(path, duplicates)
    blocks = _fastq_blocks(path, names.checks) if _is_fastq(path) else \
        ((block[0], block[2], block[3], None, block[4])
         for block in _blocks(path, "cpu", hash_names=names.checks))
    held: list[_ReadBlock] = []  # records read, not yet handed out, block by block
    count = 0
    for block_names, sequences, lengths, qualities, hashes in blocks:
        held.append(_ReadBlock(names.batch(block_names, hashes), _byte_array(sequences),
                               offsets_of_counts(lengths), _byte_array(qualities)))
        count += len(block_names)
        while count >= size:
            yield _first_records(held, size)
            count -= size
    if count:
        yield _first_records(held, count)


@dataclass
class _ReadBlock:
    """Records read from a file: names, sequences joined (uint8), their offsets and the
    qualities joined likewise (None in FASTA), of which those from ``first`` on are not yet
    handed out."""

    names: list[str]
    sequences: np.ndarray
    offsets: np.ndarray
    qualities: np.ndarray | None
    first: int = 0

    def take(self, count: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray | None]:
        """The next ``count`` records (views), offsets from 0; they are handed out."""
        lo, hi = self.first, self.first + count
        self.first = hi
        a, b = self.offsets[lo], self.offsets[hi]
        return (self.names[lo:hi], self.sequences[a:b], self.offsets[lo:hi + 1] - a,
                None if self.qualities is None else self.qualities[a:b])

    def __len__(self) -> int:
        return len(self.names) - self.first


def _first_records(held: list[_ReadBlock], count: int,
                   ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray | None]:
    """The first ``count`` records of the blocks ``held`` (which hold as many), taken from
    them (emptied blocks dropped): views of one block, else the parts joined."""
    parts = []
    while count:
        part = held[0].take(min(count, len(held[0])))
        parts.append(part)
        count -= len(part[0])
        if not len(held[0]):
            held.pop(0)
    if len(parts) == 1:
        return parts[0]
    shifts = offsets_of_counts(np.array([len(part[1]) for part in parts]))
    return ([name for part in parts for name in part[0]],
            np.concatenate([part[1] for part in parts]),
            np.concatenate([parts[0][2][:1]] + [part[2][1:] + shift for part, shift
                                               in zip(parts, shifts[:-1], strict=True)]),
            None if parts[0][3] is None else np.concatenate([part[3] for part in parts]))


def _byte_array(data: bytes | np.ndarray | None) -> np.ndarray | None:
    """``data`` as a uint8 array (bytes not copied); None for None."""
    if data is None or isinstance(data, np.ndarray):
        return data
    return np.frombuffer(data, dtype=np.uint8)


def _is_fastq(path: str) -> bool:
    """Whether dnaio reads ``path`` as FASTQ (by its name, else by its first record), so that
    the compiled parser reads what dnaio would; False where dnaio cannot open it (it then
    says why, as :func:`read_records` does)."""
    try:
        with dnaio.open(path) as reader:
            return isinstance(reader, dnaio.FastqReader)
    except dnaio.exceptions.FastqFormatError:
        return True  # a FASTQ reader that met a bad first record
    except (dnaio.UnknownFileFormat, dnaio.FileFormatError, EOFError, OSError, ValueError,
            zlib.error, lzma.LZMAError, *DECOMPRESSION_ERRORS):
        return False


def _fastq_blocks(path: str, hash_names: bool,
                  ) -> Iterator[tuple[list[str], np.ndarray | bytes, np.ndarray,
                                      np.ndarray | bytes, np.ndarray | None]]:
    """Blocks of consecutive records of a FASTQ file: names (not settled), sequences (joined:
    a uint8 array from the compiled parser, bytes from dnaio), lengths, qualities (joined as
    the sequences) and, with ``hash_names``, the names' hashes
    sorted (else None); from the compiled FASTQ parser (:func:`_parsed_blocks`), then, from the
    first record it leaves (or a block that does not read), from dnaio, a few thousand records
    at a time."""
    from .formats import _cpu as formats

    parsed: list[int] = []
    if (yield from _parsed_blocks(
            path, parsed, lambda data, final: formats.parse_fastq_block(data, final, hash_names))):
        return
    for columns, sequences, lengths in _dnaio_chunks_after(path, sum(parsed), qualities=True):
        yield (columns[0], sequences, lengths,
               "".join(columns[3]).encode("latin-1", errors="replace"),
               np.sort(name_hashes(*joined_utf8(columns[0]))) if hash_names else None)


def _dnaio_chunks_after(path: str, parsed: int, qualities: bool = False,
                        ) -> Iterator[tuple[list[list[Any]], bytes, np.ndarray]]:
    """The records of ``path`` after its first ``parsed`` (those a compiled parser took), as
    dnaio reads them (:func:`_records`), ``_CHUNK_RECORDS`` at a time: their fields as
    columns, and the sequences joined into bytes with their lengths."""
    records = itertools.islice(_records(path, qualities), parsed, None)
    for chunk in iter(lambda: list(itertools.islice(records, _CHUNK_RECORDS)), []):
        columns = [list(column) for column in zip(*chunk, strict=True)]
        sequences = columns[2]
        yield (columns, "".join(sequences).encode("latin-1", errors="replace"),
               np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences)))


def _reason(exc: Exception) -> str:
    """Why reading failed, in words: an OSError's text repeats the path the message starts with,
    a decoding error's gives an offset into a buffer of dnaio's."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return f"not FASTA/FASTQ text (byte {exc.object[exc.start]:#04x} is not UTF-8)"
    return str(exc)


#: The first bytes of a search database file (``gpualign makedb``; see
#: :mod:`gpualign.search.database`), which no FASTA/FASTQ reader should take for one.
DATABASE_MAGIC = b"GPUALIGN-DB\x00"

#: Compressed formats that xopen reads, by file name extension: an empty file with one of
#: these names is a truncated download or copy, not an empty set of records.
_COMPRESSED = {".gz": "gzip", ".bgz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "Zstandard"}


def _checked(path: str | os.PathLike) -> str:
    """``path`` as a string, once it is known to be a file that opens and none of the formats
    that dnaio would read or misreport: BAM (dnaio reads unaligned BAM, which gpualign does
    not promise), CRAM, a zip archive (such as a gpualign MEM or map index), a search
    database, or an empty file named as compressed (xopen reads an empty .gz as no records)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SequenceFileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise SequenceFileError(f"{path}: is a directory, not a FASTA/FASTQ file")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(DATABASE_MAGIC))
    except OSError as exc:
        raise SequenceFileError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    extension = os.path.splitext(path)[1].lower()
    if not head and extension in _COMPRESSED:
        raise SequenceFileError(f"{path}: empty file, not {_COMPRESSED[extension]} data "
                                "(truncated?)")
    if head.startswith(b"\x1f\x8b"):  # gzip, or BGZF (BAM is BGZF-compressed)
        with contextlib.suppress(OSError, EOFError, zlib.error), gzip.open(path) as payload:
            head = payload.read(4)  # a damaged gzip stream is reported by dnaio
    if head.startswith((b"BAM\x01", b"CRAM")):
        raise SequenceFileError(f"{path}: BAM/CRAM is not supported: convert with "
                                "samtools fasta")
    if head == DATABASE_MAGIC:
        raise SequenceFileError(f"{path}: a gpualign search database (gpualign makedb), not "
                                "a FASTA/FASTQ file")
    if head.startswith(b"PK\x03\x04"):
        raise SequenceFileError(f"{path}: a zip archive (a gpualign MEM index or map "
                                "index?), not a FASTA/FASTQ file")
    return path


def read_records(path: str | os.PathLike, *, descriptions: bool = False,
                 duplicates: str | None = None,
                 qualities: bool = False) -> Iterator[tuple[Any, ...]]:
    """Yield ``(name, sequence)`` for every record of a FASTA or FASTQ file, or ``(name,
    description, sequence)`` with ``descriptions``; ``qualities`` appends the record's FASTQ
    quality string (None for FASTA records).

    The format and compression (.gz, .bz2, .xz) are detected from the content; records are
    streamed, so memory does not grow with the file. As in samtools and BLAST, the name (the
    record's ID) is the header up to the first white space, and the description the rest
    (white space around it dropped; ``""`` when none). A record without a name is named by its
    0-based number in the file (``"2"``), in every output. ``duplicates`` says what to do
    about names that repeat: "keep", "error" (:class:`DuplicateNameError`) or "rename"
    (``NAME.2``, ``NAME.3`` ...; :class:`DuplicateNameWarning`); None (the default) takes
    :data:`gpualign.config.DUPLICATE_NAMES`, "keep" unless changed. A file that is missing,
    unreadable, truncated, corrupt or not FASTA/FASTQ raises :class:`SequenceFileError` naming
    it.
    """
    path = _checked(path)
    names = _Names(path, duplicates)
    for name, description, *rest in _records(path, qualities):
        name = names.next(name)
        yield (name, description, *rest) if descriptions else (name, *rest)


#: Bytes read from a file per block by :func:`read_packed`, each parsed at once (on the GPU)
#: or in chunks on parallel threads (on the CPU).
_BLOCK = 1 << 25
#: Mean record size in the first block from which :func:`read_packed` leaves a file to dnaio:
#: on long records (genomes) dnaio is as fast, and the compiled parser's first call in a
#: process (loading Numba's machinery or compiling a kernel) would cost more than reading them.
_LONG_RECORD = 1 << 16


def _formats(backend: str) -> Any:
    """The compiled parts of the file formats for ``backend`` ("cpu" or "cuda"): imported on
    first use, so that a CUDA run never loads Numba."""
    if backend == "cuda":
        from .formats import _cuda

        return _cuda
    if backend == "cpu":
        from .formats import _cpu

        return _cpu
    raise ValueError(f"unknown file-format backend {backend!r}: expected 'cpu' or 'cuda'")


def read_packed(path: str | os.PathLike, batch_residues: int, backend: str = "cpu", *,
                descriptions: bool = False, duplicates: str | None = None,
                ) -> Iterator[tuple[Any, ...]]:
    """Records of a FASTA or FASTQ file in batches: ``(names, sequences, offsets)``, or
    ``(names, descriptions, sequences, offsets)`` with ``descriptions``; the sequences' bytes
    concatenated as ``bytes`` with ``int64`` offsets; names (``duplicates`` included),
    descriptions and sequences as :func:`read_records` gives them. A batch closes at the
    record that brings it to ``batch_residues`` symbols.

    Plain ASCII FASTA of short records, the common case for large read sets, is parsed a
    block at a time in compiled code (``backend`` "cpu": Numba on all cores; "cuda": a
    kernel, one thread a record), several times faster than record by record; from the
    first record it does not recognize (FASTQ, other bytes, white space inside a sequence
    line) on, dnaio reads the rest, so results and errors are those of :func:`read_records`.
    dnaio reads files of long records (genomes) from the start.
    """
    settled = _Names(os.fspath(path), duplicates)
    names: list[str] = []
    notes: list[str] = []
    parts: list[bytes] = []
    lengths: list[np.ndarray] = []
    residues = 0
    for block_names, block_notes, sequences, block_lengths, hashes in _blocks(
            path, backend, settled.checks):
        block_names = settled.batch(block_names, hashes)
        ends = np.cumsum(block_lengths)
        first = 0
        while first < len(block_names):
            base = int(ends[first - 1]) if first else 0
            # The record that brings the batch to batch_residues, if this block has it.
            last = int(np.searchsorted(ends, base + batch_residues - residues, side="left"))
            stop = min(last + 1, len(block_names))
            names.extend(block_names[first:stop])
            notes.extend(block_notes[first:stop])
            parts.append(memoryview(sequences)[base:int(ends[stop - 1])])
            lengths.append(block_lengths[first:stop])
            residues += int(ends[stop - 1]) - base
            first = stop
            if last < len(block_names):
                yield _packed(names, notes, parts, lengths, descriptions)
                names, notes, parts, lengths, residues = [], [], [], [], 0
    if names:
        yield _packed(names, notes, parts, lengths, descriptions)


def _packed(names: list[str], notes: list[str], parts: list[memoryview],
            lengths: list[np.ndarray], descriptions: bool) -> tuple:
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    sequences = b"".join(parts)
    return (names, notes, sequences, offsets) if descriptions else (names, sequences, offsets)


#: A block of records: names (not settled), descriptions, sequences, lengths, and the names'
#: hashes sorted (see :meth:`_Names.batch`; None when not asked for).
_Block = tuple[list[str], list[str], bytes, np.ndarray, np.ndarray | None]


def _blocks(path: str | os.PathLike, backend: str, hash_names: bool = False,
            ) -> Iterator[_Block]:
    """Blocks of consecutive records of the file: from the compiled FASTA parser, then from
    dnaio for the rest, a few thousand records at a time."""
    path = _checked(path)
    parsed: list[int] = []
    if (yield from _fasta_blocks(path, parsed, backend, hash_names)):
        return
    for columns, sequences, lengths in _dnaio_chunks_after(path, sum(parsed)):
        yield (columns[0], columns[1], sequences, lengths,
               np.sort(name_hashes(*joined_utf8(columns[0]))) if hash_names else None)


def _fasta_blocks(path: str | os.PathLike, parsed: list[int], backend: str = "cpu",
                  hash_names: bool = False) -> Generator[_Block, None, bool]:
    """Blocks of consecutive records parsed by the compiled FASTA parser (hashes of their
    names with ``hash_names``), their counts appended to ``parsed``, up to the end (returns
    True) or to the first record it leaves to dnaio (False). Nothing for a file that is
    missing, not FASTA, or unreadable (dnaio then reports why)."""
    def looks_fasta(data: bytearray) -> bool:  # and not of genome-sized records
        return _starts_fasta(data) and data.count(b">") * _LONG_RECORD >= len(data)

    return (yield from _parsed_blocks(
        path, parsed,
        lambda data, final: _formats(backend).parse_block(data, final, hash_names), looks_fasta))


def _parsed_blocks(path: str | os.PathLike, parsed: list[int],
                   parse: Callable[[bytearray, bool], tuple],
                   accept: Callable[[bytearray], bool] | None = None,
                   ) -> Generator[tuple, None, bool]:
    """The blocks of records that a compiled parser takes from the file, :data:`_BLOCK` bytes
    read at a time (a record cut by a block's end carried to the next): ``parse(data,
    final)`` returns four columns of the records (names first), the bytes they take, whether
    it stopped at a record it leaves to dnaio, and the names' hashes; each block's columns and
    hashes are yielded, their counts appended to ``parsed``. Returns True at the end of the
    file, False at the first record left to dnaio, where ``accept(first block)`` refuses the
    file, or where it is missing or does not open or read (dnaio then reports why)."""
    import xopen

    if not os.path.isfile(path):
        return False
    try:
        handle = xopen.xopen(path, "rb", threads=0)
    except (OSError, ValueError, *DECOMPRESSION_ERRORS):
        return False
    with handle:
        # One buffer for every block, the record the last block cut kept at its start and the
        # next block read in after it: no block-sized copy and allocation a block (a reading
        # thread holds the GIL while it copies). The first block, and one after a short read
        # (the file's end, as a rule), is read as the file gives it, so that a small file
        # costs no block-sized buffer.
        data = bytearray()
        kept, full = 0, False
        first, final = True, False
        while not final:
            want = kept + _BLOCK
            try:
                if full:
                    if len(data) < want:  # grows by the carry: a copy once, then room to spare
                        data.extend(bytes(want - len(data)))
                    with memoryview(data)[kept:want] as view:
                        got = handle.readinto(view)
                    del data[kept + got:]
                else:
                    block = handle.read(_BLOCK)
                    got = len(block)
                    data[kept:] = block
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError,
                    *DECOMPRESSION_ERRORS):
                return False
            final, full = not got, got == _BLOCK
            if first and data and accept is not None and not accept(data):
                return False
            first = False
            *columns, consumed, unusual, hashes = parse(data, final)
            if len(columns[0]):
                parsed.append(len(columns[0]))
                yield (*columns, hashes)
            if unusual:
                return False
            data[:len(data) - consumed] = data[consumed:]
            kept = len(data) - consumed
    return True


def _starts_fasta(data: bytes) -> bool:
    """Whether the first byte that is not white space is ``>``."""
    for byte in data[:4096]:
        if byte not in b" \t\r\n":
            return byte == ord(">")
    return False


@contextlib.contextmanager
def open_text(out: str | os.PathLike | IO[str]) -> Iterator[IO[str]]:
    """Where a writer's text goes: ``out`` itself when it is a stream, standard output for
    ``-``, else the file it names, opened for writing (UTF-8, ``\\n`` line ends).

    Examples
    --------
    >>> with open_text("-") as out:
    ...     _ = out.write("query\\n")
    query
    """
    if hasattr(out, "write"):
        yield out  # type: ignore[misc]
    elif os.fspath(out) == "-":
        yield sys.stdout
        sys.stdout.flush()
    else:
        with open(out, "w", encoding="utf-8", newline="\n") as handle:
            yield handle


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
    ``NM:i`` the edit count (``X``, ``I`` and ``D`` symbols). Returns the number of records.
    Names are written as they are: read from files, they are never empty (a record without
    one is named by its number) and, read as the command line reads them, unique."""
    out.write("@HD\tVN:1.6\tSO:unsorted\n")
    for number, name in enumerate(targets.names):
        out.write(f"@SQ\tSN:{name}\tLN:{max(int(targets.lengths[number]), 1)}\n")
    out.write(f"@PG\tID:gpualign\tPN:gpualign\tCL:{program}\n")
    for p, (q, t) in enumerate(zip(query_index.tolist(), target_index.tolist(), strict=True)):
        length = int(queries.lengths[q])
        cigar = result.cigar[p]
        head, tail = int(result.query_start[p]), length - int(result.query_end[p])
        if cigar:
            full = (f"{head}S" if head else "") + cigar + (f"{tail}S" if tail else "")
            flag, position = 0, int(result.target_start[p]) + 1
            rname = targets.names[t]
        else:  # nothing aligned (an empty local alignment): unmapped
            full, flag, position, rname = "*", 4, 0, "*"
        edits = count_ops(cigar, "XID")
        sequence = queries[q] or "*"
        out.write(f"{queries.names[q]}\t{flag}\t{rname}\t{position}\t255\t{full}\t*\t0\t0"
                  f"\t{sequence}\t*\tAS:i:{int(result.score[p])}\tNM:i:{edits}\n")
    return len(query_index)


def write_mummer(out: IO[str], mems: Any, strands: str, *, four_columns: bool | None = None,
                 forward_positions: bool = False, lengths: bool = False,
                 backend: str = "cpu") -> None:
    """Write :class:`~gpualign.Mems` in MUMmer's text format (``mummer -maxmatch``).

    One block per query and strand searched (``> name``, ``> name Reverse``), in query order,
    each line ``ref_id ref_pos query_pos length`` (1-based), ``ref_id`` only when the reference
    has several records or ``four_columns``; lines in the order of ``mems`` (query position,
    then reference record and position). ``forward_positions`` (``-c``): reverse matches give
    the query position on the forward query (its last base of the match, read backwards);
    ``lengths`` (``-L``): ``Len = N`` on the headers. The text is formatted in compiled code,
    all queries in parallel (``backend`` "cpu": Numba threads; "cuda": one GPU thread a
    query), and written at once."""
    four = len(mems.reference_names) > 1 if four_columns is None else four_columns
    width = max((len(name) for name in mems.reference_names), default=0)
    names, name_offsets = joined_utf8(mems.query_names)
    labels, label_offsets = joined_utf8([f"  {name:<{width}}  " if four else ""
                                     for name in mems.reference_names])
    bounds = np.zeros(len(mems.query_names) + 1, dtype=np.int64)  # MEMs are in query order
    np.cumsum(np.bincount(mems.query_index, minlength=len(mems.query_names)), out=bounds[1:])
    text = _formats(backend).mummer_text(
        names, name_offsets, np.asarray(mems.query_lengths, dtype=np.int64), bounds,
        strands in ("forward", "both"), strands in ("reverse", "both"), lengths,
        np.asarray(mems.reverse, dtype=np.bool_), mems.reference_index, mems.reference_pos,
        mems.query_pos, mems.length, labels, label_offsets, forward_positions)
    buffer = getattr(out, "buffer", None)
    if buffer is not None:  # a text file or standard output: its bytes directly
        out.flush()
        buffer.write(text.data)
    else:
        out.write(text.tobytes().decode("utf-8"))


def joined_utf8(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of ``strings`` concatenated, and their ``int64`` offsets."""
    data = "".join(strings).encode("utf-8")
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    if len(data) != lengths.sum():  # not ASCII: characters are not bytes
        lengths = np.fromiter((len(text.encode("utf-8")) for text in strings), dtype=np.int64,
                              count=len(strings))
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(data, dtype=np.uint8), offsets


