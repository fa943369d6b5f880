"""The SAM lines of a batch's records, compiled: every field written straight into one byte
buffer from the packed arrays (:func:`gpualign.map.sam.write_records` writes it at once), a
record an iteration on every core; a first pass counts each line's bytes, a second writes them
at their offsets.

Imported when SAM lines are written, not with the package: importing Numba is left to the runs
that need it (see README "Architecture").
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_TAB, _NEWLINE, _STAR, _EQUALS, _MINUS = (ord(c) for c in "\t\n*=-")
_SLASH, _ONE, _TWO = (ord(c) for c in "/12")
#: The tags' beginnings, each after the field before it.
_NM, _AS, _XS, _SA = (np.frombuffer(text, dtype=np.uint8).copy()
                      for text in (b"\tNM:i:", b"\tAS:i:", b"\tXS:i:", b"\tSA:Z:"))
#: 10 to the power of each index: a number below ``_POWERS[d]`` has at most ``d`` digits.
_POWERS = 10 ** np.arange(19, dtype=np.int64)
#: Each byte itself: the table of texts copied as they are (qualities).
_SAME = np.arange(256, dtype=np.uint8)


@njit(cache=True, nogil=True)
def _put_byte(out, at, byte):
    """``byte`` at ``at`` when ``out`` has room (else only counted); returns where it ends."""
    if len(out):
        out[at] = byte
    return at + 1


@njit(cache=True, nogil=True)
def _put_text(out, at, text, lo, hi):
    """``text[lo:hi]`` from ``at`` when ``out`` has room; returns where it ends."""
    if len(out):
        out[at:at + hi - lo] = text[lo:hi]
    return at + hi - lo


@njit(cache=True, nogil=True)
def _put_int(out, at, value):
    """The decimal digits of ``value`` (a ``-`` first when negative) from ``at`` when ``out``
    has room; returns where they end."""
    value = np.int64(value)
    if value < 0:
        at = _put_byte(out, at, _MINUS)
        value = -value
    digits = 1
    while digits < len(_POWERS) and value >= _POWERS[digits]:
        digits += 1
    if len(out):
        for p in range(at + digits - 1, at - 1, -1):
            out[p] = 48 + value % 10
            value //= 10
    return at + digits


@njit(cache=True, nogil=True)
def _put_oriented(out, at, text, lo, hi, start, stop, table, reverse):
    """Bytes ``start .. stop - 1`` of ``text[lo:hi]`` read forwards, or backwards where
    ``reverse``, each through ``table`` (``*`` for none), from ``at`` when ``out`` has room;
    returns where they end."""
    if stop == start:
        return _put_byte(out, at, _STAR)
    if len(out):  # two loops: no test of the direction a byte
        if reverse:
            for p in range(start, stop):
                out[at + p - start] = table[text[hi - 1 - p]]
        else:
            for p in range(start, stop):
                out[at + p - start] = table[text[lo + p]]
    return at + stop - start


@njit(cache=True, nogil=True)
def _put_name(out, at, names, name_offsets, index):
    """Name ``index`` of ``names`` (``*`` for -1) and a tab."""
    if index < 0:
        at = _put_byte(out, at, _STAR)
    else:
        at = _put_text(out, at, names, name_offsets[index], name_offsets[index + 1])
    return _put_byte(out, at, _TAB)


@njit(cache=True, nogil=True)
def _put_cigar(out, at, ops, lengths, first, end, letters):
    """The CIGAR of the runs ``first .. end - 1`` (``*`` for none) and a tab."""
    if first == end:
        at = _put_byte(out, at, _STAR)
    for r in range(first, end):
        at = _put_int(out, at, lengths[r])
        at = _put_byte(out, at, letters[ops[r]])
    return _put_byte(out, at, _TAB)


@njit(cache=True, nogil=True)
def _hard_clips(ops, lengths, first, end, hard_clip):
    """The read bases that the runs ``first .. end - 1`` clip as ``hard_clip`` before their
    first other run and after their last one (a lone clip run counts as the left one)."""
    left = right = 0
    if end > first and ops[first] == hard_clip:
        left = lengths[first]
    if end - 1 > first and ops[end - 1] == hard_clip:
        right = lengths[end - 1]
    return left, right


# Inlined into both passes of sam_lines (Numba's IR inlining): a call a record would pass its
# dozens of arrays each time (benchmarks/results/map-sam-writer-amd-epyc-2026-11-25.md).
@njit(cache=True, nogil=True, inline="always")
def _line(record, source, flags, bits, places, scores, no_score, cigars, letters, hard_clip,
          reads, template, tables, references, sa_slot, sa, out, at):
    """The SAM line (newline included) of ``record``, whose read is ``source`` of ``reads``,
    from ``at`` when ``out`` has room (else only counted); returns where it ends. The
    arguments are :func:`sam_lines`' (``sa_slot`` this record's)."""
    contig, pos, mapq, mate_contig, mate_pos, tlen = places
    nm, score, xs = scores
    ops, lengths, cigar_offsets, present = cigars
    names, name_offsets, codes, code_offsets, qualities, quality_offsets = reads
    forward, backward = tables
    reference_names, reference_offsets = references
    sa_text, sa_offsets = sa
    reverse_bit, supplementary_bit, unmapped_bit = bits
    flag = flags[record]

    lo, hi = name_offsets[source], name_offsets[source + 1]
    if template and hi - lo >= 2 and names[hi - 2] == _SLASH and (
            names[hi - 1] == _ONE or names[hi - 1] == _TWO):
        hi -= 2  # mates share a QNAME
    at = _put_text(out, at, names, lo, hi)
    at = _put_byte(out, at, _TAB)
    at = _put_int(out, at, flag)
    at = _put_byte(out, at, _TAB)
    at = _put_name(out, at, reference_names, reference_offsets, contig[record])
    at = _put_int(out, at, pos[record] + 1)
    at = _put_byte(out, at, _TAB)
    at = _put_int(out, at, mapq[record])
    at = _put_byte(out, at, _TAB)
    first, end = cigar_offsets[record], cigar_offsets[record + 1]
    if not present[record]:
        end = first
    at = _put_cigar(out, at, ops, lengths, first, end, letters)
    if mate_contig[record] >= 0 and mate_contig[record] == contig[record]:
        at = _put_byte(out, at, _EQUALS)
        at = _put_byte(out, at, _TAB)
    else:
        at = _put_name(out, at, reference_names, reference_offsets, mate_contig[record])
    at = _put_int(out, at, mate_pos[record] + 1)
    at = _put_byte(out, at, _TAB)
    at = _put_int(out, at, tlen[record])
    at = _put_byte(out, at, _TAB)

    # SEQ and QUAL in the record's orientation; a supplementary record's without the bases
    # its hard clips drop (a QUAL of another length than SEQ cut at the same places).
    left = right = 0
    if flag & supplementary_bit:
        left, right = _hard_clips(ops, lengths, first, end, hard_clip)
    reverse = flag & reverse_bit != 0
    lo, hi = code_offsets[source], code_offsets[source + 1]
    start = min(left, hi - lo)
    stop = max(start, hi - lo - right)
    at = _put_oriented(out, at, codes, lo, hi, start, stop, backward if reverse else forward,
                       reverse)
    at = _put_byte(out, at, _TAB)
    bases = hi - lo
    lo, hi = quality_offsets[source], quality_offsets[source + 1]
    start = min(left, hi - lo)
    stop = max(start, min(hi - lo, bases - right))
    at = _put_oriented(out, at, qualities, lo, hi, start, stop, _SAME, reverse)

    if not flag & unmapped_bit:
        at = _put_text(out, at, _NM, 0, len(_NM))
        at = _put_int(out, at, nm[record])
        at = _put_text(out, at, _AS, 0, len(_AS))
        at = _put_int(out, at, score[record])
        if xs[record] != no_score:
            at = _put_text(out, at, _XS, 0, len(_XS))
            at = _put_int(out, at, xs[record])
        if sa_slot >= 0:
            at = _put_text(out, at, _SA, 0, len(_SA))
            at = _put_text(out, at, sa_text, sa_offsets[sa_slot], sa_offsets[sa_slot + 1])
    return _put_byte(out, at, _NEWLINE)


# Without the GIL: the thread reading the next batch goes on while the lines are written.
@njit(parallel=True, cache=True, nogil=True)
def sam_lines(records, sources, flags, bits, places, scores, no_score, cigars, letters, hard_clip,
              reads, template, tables, references, sa_slots, sa):
    """The SAM lines of ``records`` (indices into the per-record arrays), one after the other,
    as one byte buffer (UTF-8 where the texts given are).

    Record ``records[i]``'s read is ``sources[i]`` of ``reads`` (names, name offsets, sequence
    codes, code offsets, qualities, quality offsets: texts as bytes, a read's at its offsets;
    no qualities, QUAL ``*``); its name loses a ``/1`` or ``/2`` ending where ``template``.
    ``flags`` holds the SAM flags (``bits``: those of a reverse, a supplementary and an
    unmapped record); ``places`` the contig, 0-based position, MAPQ, mate's
    contig, mate's position and TLEN; ``scores`` NM, AS and XS (left out where ``no_score``);
    ``cigars`` the ops, lengths, offsets and presence of the runs (codes of ``letters``; a
    supplementary record's SEQ and QUAL lose the read bases of its runs of ``hard_clip`` at
    either end). ``tables`` give the byte of each code and of its complement (reverse
    placements: the read reverse complemented, its qualities reversed); ``references`` the
    reference names and their offsets (contig -1: ``*``); ``sa`` the ``SA:Z`` texts and their
    offsets, ``sa_slots[i]`` record ``records[i]``'s (-1: none).
    """
    count = len(records)
    nothing = np.empty(0, dtype=np.uint8)
    ends = np.zeros(count + 1, dtype=np.int64)
    for i in prange(count):
        ends[i + 1] = _line(records[i], sources[i], flags, bits, places, scores, no_score, cigars,
                            letters, hard_clip, reads, template, tables, references,
                            sa_slots[i], sa, nothing, 0)
    offsets = np.cumsum(ends)
    text = np.empty(offsets[-1], dtype=np.uint8)
    for i in prange(count):
        _line(records[i], sources[i], flags, bits, places, scores, no_score, cigars, letters,
              hard_clip, reads, template, tables, references, sa_slots[i], sa, text,
              offsets[i])
    return text
