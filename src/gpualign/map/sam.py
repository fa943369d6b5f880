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
(:class:`SamCigars`) and written as text at once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from .. import __version__
from ..cigar import PackedCigars, check_letters
from ..codes import CIGAR_OPS
from ._reads import ReadBatch, template_name

__all__ = ["NO_SCORE", "SUPPLEMENTARY", "SamCigars", "merged_cigars", "sam_cigars",
           "sam_header", "write_records"]

#: SAM flag bits.
PAIRED, PROPER_PAIR, UNMAPPED, MATE_UNMAPPED = 0x1, 0x2, 0x4, 0x8
REVERSE, MATE_REVERSE, FIRST, SECOND = 0x10, 0x20, 0x40, 0x80
SUPPLEMENTARY = 0x800

#: ``AS``/``XS`` of a read without such a placement (the tag is left out).
NO_SCORE = np.iinfo(np.int32).min

_COMPLEMENT = str.maketrans("ACGTN", "TGCAN")
_HARD_CLIPS = re.compile(r"^(?:([0-9]+)H)?.*?(?:([0-9]+)H)?$")


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


def write_records(out: IO[str], result: Any, records: np.ndarray, reads: ReadBatch,
                  mates: ReadBatch | None, reference_names: Sequence[str]) -> None:
    """Write the SAM lines of ``result``'s ``records`` (indices), whose reads are in ``reads``
    (first reads of pairs) and ``mates`` (second reads)."""
    lines = []
    flags, reads_of, mates_of = (result.flag[records].tolist(), result.read[records].tolist(),
                                 result.mate[records].tolist())
    contig, pos, mapq = (result.contig[records].tolist(), result.pos[records].tolist(),
                         result.mapq[records].tolist())
    mate_contig, mate_pos, tlen = (result.mate_contig[records].tolist(),
                                   result.mate_pos[records].tolist(),
                                   result.tlen[records].tolist())
    nm, score, xs = (result.nm[records].tolist(), result.score[records].tolist(),
                     result.xs[records].tolist())
    cigars = result.cigar.take(records).to_text()
    # Each batch's sequences decoded at once, and reverse complemented at once: read i's
    # reverse complement is the mirror slice of the whole text's.
    texts = {id(batch): _texts(batch) for batch in (reads, mates) if batch is not None}
    for slot, record in enumerate(records.tolist()):
        batch = mates if mates_of[slot] == 2 else reads
        number = reads_of[slot] - batch.start
        name = batch.sequences.names[number]
        if mates is not None:
            name = template_name(name)  # mates share a QNAME
        forward, backward, offsets = texts[id(batch)]
        lo, hi = offsets[number], offsets[number + 1]
        quality = batch.qualities[number] if batch.qualities is not None else None
        if flags[slot] & REVERSE:
            sequence = backward[len(backward) - hi:len(backward) - lo]
            quality = quality[::-1] if quality else quality
        else:
            sequence = forward[lo:hi]
        if flags[slot] & SUPPLEMENTARY:
            sequence, quality = _hard_clipped(cigars[slot], sequence, quality)
        rname = reference_names[contig[slot]] if contig[slot] >= 0 else "*"
        if mate_contig[slot] < 0:
            rnext = "*"
        elif mate_contig[slot] == contig[slot]:
            rnext = "="
        else:
            rnext = reference_names[mate_contig[slot]]
        tags = ""
        if not flags[slot] & UNMAPPED:
            tags = f"\tNM:i:{nm[slot]}\tAS:i:{score[slot]}"
            if xs[slot] != NO_SCORE:
                tags += f"\tXS:i:{xs[slot]}"
            if result.sa[record] is not None:
                tags += f"\tSA:Z:{result.sa[record]}"
        lines.append(f"{name}\t{flags[slot]}\t{rname}\t{pos[slot] + 1}\t{mapq[slot]}\t"
                     f"{cigars[slot] or '*'}\t{rnext}\t{mate_pos[slot] + 1}\t"
                     f"{tlen[slot]}\t{sequence or '*'}\t{quality or '*'}{tags}\n")
    out.write("".join(lines))


def _hard_clipped(cigar: str, sequence: str, quality: str | None) -> tuple[str, str | None]:
    """``sequence`` and ``quality`` (in the record's orientation) without the bases that
    ``cigar``'s hard clips drop."""
    left, right = (int(n or 0) for n in _HARD_CLIPS.match(cigar).groups())
    end = len(sequence) - right
    return sequence[left:end], quality[left:end] if quality else quality


def _texts(batch: ReadBatch) -> tuple[str, str, list[int]]:
    """The batch's sequences as one text, that text reverse complemented, and the offsets of
    the sequences in the first."""
    text = batch.sequences.alphabet.decode(batch.sequences.codes)
    return text, text.translate(_COMPLEMENT)[::-1], batch.sequences.offsets.tolist()
