"""SAM text of read placements (:class:`~gpualign.map.api.MappingResult`).

The header holds ``@HD VN:1.6 SO:unsorted``, one ``@SQ SN LN`` per reference record and
``@PG ID:gpualign PN:gpualign VN CL``. Each record has the read's name, flag, RNAME, POS
(1-based), MAPQ, CIGAR with ``M`` for matches and mismatches (as minimap2 and bwa print it;
the edit path's ``=``/``X`` merged), RNEXT (``=`` for the same record), PNEXT, TLEN, SEQ and
QUAL (reverse complemented and reversed for reverse placements; QUAL ``*`` without FASTQ
qualities) and the tags ``NM:i`` (edit distance), ``AS:i`` (aligned read bases - 5 x NM) and
``XS:i`` (the same of the best placement elsewhere, when there is one). The mates of a pair share a
QNAME: a name's ``/1`` or ``/2`` suffix is dropped, as bwa and minimap2 do. A split read's
records (the primary and the supplementary, flag 0x800) each name the other in an ``SA:Z``
tag; the supplementary one's clipped ends are hard clips (``H``), its SEQ and QUAL the aligned
part only, as minimap2 writes them. The CIGARs of a batch's records are held as runs
(:class:`SamCigars`); a batch's lines are written from the packed arrays by one compiled pass
(:func:`write_records`).
"""

from __future__ import annotations

import io
import itertools
import operator
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from .. import __version__
from ..cigar import PackedCigars, check_letters, offsets_of_counts
from ..codes import CIGAR_OPS
from ._reads import ReadBatch

__all__ = ["NO_SCORE", "SUPPLEMENTARY", "SamCigars", "merged_cigars", "sam_cigars",
           "sam_header", "write_records"]

#: SAM flag bits.
PAIRED, PROPER_PAIR, UNMAPPED, MATE_UNMAPPED = 0x1, 0x2, 0x4, 0x8
REVERSE, MATE_REVERSE, FIRST, SECOND = 0x10, 0x20, 0x40, 0x80
SUPPLEMENTARY = 0x800

#: ``AS``/``XS`` of a read without such a placement (the tag is left out).
NO_SCORE = np.iinfo(np.int32).min

_COMPLEMENT = str.maketrans("ACGTN", "TGCAN")
#: How texts become bytes and back: any ``str`` round trips (lone surrogates included).
_ERRORS = "surrogatepass"


class SamCigars(PackedCigars):
    """SAM CIGARs of many records as arrays of runs: a :class:`~gpualign.cigar.PackedCigars`
    whose operation codes are BAM's (``M`` 0, ``I`` 1, ``D`` 2, ``N`` 3, ``S`` 4, ``H`` 5,
    ``P`` 6, ``=`` 7, ``X`` 8), read as a sequence of ``str`` (None: an unmapped record):
    what :attr:`gpualign.map.api.MappingResult.cigar` holds.

    Examples
    --------
    >>> cigars = SamCigars([4, 0, 1, 0], [3, 90, 2, 55], [0, 4, 4], present=[True, False])
    >>> cigars[0], cigars.tolist()
    ('3S90M2I55M', ['3S90M2I55M', None])
    >>> SamCigars.from_strings(["5H10M", None]) == ["5H10M", None]
    True
    """

    letters = "MIDNSHP=X"


#: BAM's codes of soft and hard clips.
_CLIP_CODES = {"S": 4, "H": 5}


def sam_cigars(cigars: PackedCigars, clip_left: np.ndarray, clip_right: np.ndarray,
               clip: str = "S") -> SamCigars:
    """The SAM CIGARs of extended ones: ``=`` and ``X`` runs that meet merged into ``M``,
    ``clip_left`` and ``clip_right`` read bases clipped before and after them as ``clip``
    (``"S"`` soft, ``"H"`` hard); None where ``cigars`` has none. In two compiled passes over
    the runs (:func:`gpualign.map._host.sam_runs`), no text.

    Examples
    --------
    >>> sam_cigars(PackedCigars.from_strings(["3=1X2=1I4=", None]), np.array([2, 9]),
    ...            np.array([0, 9]), "H").tolist()
    ['2H6M1I4M', None]
    """
    from ._host import sam_runs  # Numba: loaded by the runs that map

    if clip not in _CLIP_CODES:
        raise ValueError(f"clip={clip!r}: expected 'S' or 'H'")
    check_letters(cigars, CIGAR_OPS, "sam_cigars")
    ops, lengths, offsets = sam_runs(cigars.ops, cigars.lengths, cigars.offsets, cigars.present,
                                     np.asarray(clip_left, dtype=np.int64),
                                     np.asarray(clip_right, dtype=np.int64), _CLIP_CODES[clip])
    return SamCigars(ops, lengths, offsets, cigars.present)


def merged_cigars(cigars: Sequence[str]) -> list[str]:
    """Extended CIGARs with their ``=`` and ``X`` runs merged into ``M`` (:func:`sam_cigars`
    without clips).

    Examples
    --------
    >>> merged_cigars(["3=1X2=1I4=2D1=", "5="])
    ['6M1I4M2D1M', '5M']
    """
    none = np.zeros(len(cigars), dtype=np.int64)
    return sam_cigars(PackedCigars.from_strings(cigars), none, none).to_text()


def sam_header(names: Sequence[str], lengths: np.ndarray, command_line: str | None) -> str:
    """The header lines: ``@HD``, ``@SQ`` for each reference record, ``@PG``.

    Examples
    --------
    >>> print(sam_header(["chr1"], np.array([100]), "gpualign map ref.fa reads.fq"), end="")
    ... # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    @HD VN:1.6 SO:unsorted
    @SQ SN:chr1 LN:100
    @PG ID:gpualign PN:gpualign VN:... CL:gpualign map ref.fa reads.fq
    """
    lines = ["@HD\tVN:1.6\tSO:unsorted"]
    lines += [f"@SQ\tSN:{name}\tLN:{max(1, int(length))}"
              for name, length in zip(names, lengths.tolist(), strict=True)]
    program = f"@PG\tID:gpualign\tPN:gpualign\tVN:{__version__}"
    lines.append(program + (f"\tCL:{command_line}" if command_line else ""))
    return "\n".join(lines) + "\n"


def write_records(out: IO[Any], result: Any, records: np.ndarray, reads: ReadBatch,
                  mates: ReadBatch | None, reference_names: Sequence[str]) -> None:
    """Write the SAM lines of ``result``'s ``records`` (indices), whose reads are in ``reads``
    (first reads of pairs) and ``mates`` (second reads), with one ``out.write``: text, or bytes
    (UTF-8) where ``out`` is a binary stream.

    The lines are written by one compiled pass over the records into one byte buffer
    (:func:`gpualign.map._sam_lines.sam_lines`); the batch's names, qualities, reference names
    and ``SA`` texts are joined into byte texts once, the CIGARs read from their runs.

    Examples
    --------
    >>> import sys
    >>> from gpualign.map import map_reads
    >>> from gpualign.map._reads import read_batches
    >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    >>> result = map_reads([genome], [genome[1000:1030]], backend="cpu")
    >>> batch = next(read_batches([genome[1000:1030]], 10))
    >>> write_records(sys.stdout, result, np.arange(1), batch, None, ["chr"])
    ... # doctest: +NORMALIZE_WHITESPACE
    0 0 chr 1001 27 30M * 0 0 TCCTCTACTTGCTCGGCAGCGGTTGAAGGT * NM:i:0 AS:i:30
    """
    from ._sam_lines import sam_lines  # Numba: loaded by the runs that write SAM

    records = np.arange(len(result))[np.asarray(records, dtype=np.int64)]  # negatives counted
    batches = [reads] if mates is None else [reads, mates]
    # Record i's read: its place among the reads, then the mates, of the batches.
    sources = result.read[records] - reads.start
    if mates is not None:
        second = result.mate[records] == 2
        sources[second] += len(reads) + reads.start - mates.start
    # The compiled pass reads what these index without bounds checks: checked here.
    held = len(reads) + (len(mates) if mates is not None else 0)
    if len(sources) and (sources.min() < 0 or sources.max() >= held):
        raise ValueError("write_records: a record's read is not in the batches given")
    places = np.concatenate((result.contig[records], result.mate_contig[records]))
    if len(places) and (places.min() < -1 or places.max() >= len(reference_names)):
        raise ValueError(f"write_records: a record's contig is not one of the "
                         f"{len(reference_names)} reference names")
    names = _stacked([_joined(batch.sequences.names) for batch in batches])
    codes = _stacked([(batch.sequences.codes, batch.sequences.offsets) for batch in batches])
    qualities = _stacked([_qualities(batch) for batch in batches])
    symbols = reads.sequences.alphabet.symbols.decode("latin-1")
    tables = (np.frombuffer(symbols.encode("latin-1"), dtype=np.uint8),
              np.frombuffer(symbols.translate(_COMPLEMENT).encode("latin-1"), dtype=np.uint8))
    sa = _of_records(result.sa, records)
    tagged = np.fromiter(map(operator.is_not, sa, itertools.repeat(None)), dtype=bool,
                         count=len(sa))
    sa_slots = np.full(len(records), -1, dtype=np.int64)
    sa_slots[tagged] = np.arange(int(tagged.sum()))
    cigars = result.cigar
    text = sam_lines(
        records, sources, result.flag, (REVERSE, SUPPLEMENTARY, UNMAPPED),
        (result.contig, result.pos, result.mapq, result.mate_contig, result.mate_pos,
         result.tlen), (result.nm, result.score, result.xs), NO_SCORE,
        (cigars.ops, cigars.lengths, cigars.offsets, cigars.present),
        np.frombuffer(cigars.letters.encode("ascii"), dtype=np.uint8),
        cigars.letters.index("H"), (*names, *codes, *qualities), mates is not None, tables,
        _joined_reference(reference_names), sa_slots,
        _joined([sa[i] for i in np.flatnonzero(tagged).tolist()]))
    if isinstance(out, io.TextIOBase) or not (
            isinstance(out, (io.RawIOBase, io.BufferedIOBase)) or "b" in getattr(out, "mode", "")):
        out.write(str(text, "utf-8", _ERRORS))
        return
    # A raw stream may take part of the bytes a call.
    left = memoryview(text)
    while len(left):
        written = out.write(left)
        if written is None:
            raise BlockingIOError(f"write_records: {out!r} would block")
        left = left[written:]


def _qualities(batch: ReadBatch) -> tuple[np.ndarray, np.ndarray]:
    """The batch's FASTQ qualities as one byte text and each read's offsets in it: every read's
    empty (QUAL ``*``) where the batch has none. The one reader of ``ReadBatch.qualities``."""
    if batch.qualities is None:
        return np.zeros(0, dtype=np.uint8), np.zeros(len(batch) + 1, dtype=np.int64)
    offsets = batch.sequences.offsets
    return batch.qualities, offsets - offsets[0]


#: The reference names last joined, as a list, and their :func:`_joined` texts: every batch of a
#: run writes against the same names, which a reference of many contigs would join again and
#: again (a list compares equal to its copy at a pointer a name when the names are the same).
_LAST_REFERENCE: tuple[list[str], tuple[np.ndarray, np.ndarray]] | None = None


def _joined_reference(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_joined` of the reference ``names``, kept for the next batch."""
    global _LAST_REFERENCE
    last = _LAST_REFERENCE  # one read: another thread may replace it meanwhile
    if last is None or last[0] != list(names):
        last = (list(names), _joined(names))
        _LAST_REFERENCE = last
    return last[1]


def _joined(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` as one UTF-8 byte text and each one's offsets in it (``len(texts) + 1``)."""
    whole = "".join(texts)
    data = np.frombuffer(whole.encode("utf-8", _ERRORS), dtype=np.uint8)
    if len(data) == len(whole):  # ASCII: one byte a character
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    else:
        lengths = np.fromiter((len(text.encode("utf-8", _ERRORS)) for text in texts),
                              dtype=np.int64, count=len(texts))
    return data, offsets_of_counts(lengths)


def _stacked(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Texts with offsets (from 0 to the text's length) one after the other: the items of the
    first, then of the second."""
    if len(parts) == 1:
        return parts[0]
    texts = [text for text, _ in parts]
    shifts = offsets_of_counts(np.array([len(text) for text in texts]))
    offsets = [np.zeros(1, dtype=np.int64)]
    offsets += [part_offsets[1:] + shift for (_, part_offsets), shift
                in zip(parts, shifts[:-1], strict=True)]
    return np.concatenate(texts), np.concatenate(offsets)


def _of_records(values: list, records: np.ndarray) -> list:
    """``values[r]`` of each of ``records``: a slice where they are a range (a batch's)."""
    if len(records) and records[-1] - records[0] + 1 == len(records) \
            and (np.diff(records) == 1).all():
        return values[records[0]:records[-1] + 1]
    return list(map(values.__getitem__, records.tolist()))
