"""Read mapping: candidate windows from the index, verified by edit distance on the chosen
backend (Myers' bit-vectors: the GPU kernels on CUDA), best and second-best placements, MAPQ,
the primary's CIGAR from an affine realignment of the read in its window (or its edit path:
:data:`gpualign.config.MAP_PRIMARY_CIGAR`) with its ends soft-clipped where that scores better
(:mod:`gpualign.map.segments`), reads without an end-to-end placement placed by their best
local alignment, chimeric reads split into a primary and a supplementary record, and for
pairs an insert-size model, proper pairs and mate rescue.

A batch of reads takes a fixed number of calls whatever its size: the index's candidates, one
``edit_distance(..., mode="infix", task="locations")`` over every candidate window of the batch
(both strands), at most one more over the rescue windows of its pairs, one with
``task="path"`` for the chosen placements (or, with :data:`gpualign.config.MAP_PRIMARY_CIGAR`
``"affine"``, one semi-global affine alignment of them), and at most one local alignment
(:func:`gpualign.align`, ``mode="local"``) over the candidate windows of the reads left
unmapped or clipped by :data:`gpualign.config.MAP_MIN_SEGMENT` bases or more. Everything
between them is NumPy over whole arrays (the split reads' records are built one by one), but
for the loops over reads and windows compiled in :mod:`gpualign.map._host` (candidates,
reverse complements, the windows' bases), which run on every core whatever the backend.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from .. import config
from .._checks import integer
from .._progress import progress_bar
from ..align import align
from ..align._band import band_for_edits
from ..backend import BACKENDS, resolve_backend
from ..cigar import PackedCigars, offsets_of_counts
from ..codes import OP_INSERTION
from ..edit import edit_distance
from ..io import open_text
from ..scoring import Scoring
from ..sequences import ALPHABETS, SequenceSet
from ..streaming import reading_ahead
from ._reads import ReadBatch, mate_names_differ, read_batches
from .distributed import cluster_mappings
from .sam import (
    FIRST,
    MATE_REVERSE,
    MATE_UNMAPPED,
    NO_SCORE,
    PAIRED,
    PROPER_PAIR,
    REVERSE,
    SECOND,
    SUPPLEMENTARY,
    UNMAPPED,
    SamCigars,
    sam_cigars,
    sam_header,
    write_records,
)
from .segments import (
    AFFINE_ENDS,
    AFFINE_SCORING,
    EDIT_ENDS,
    EDIT_SCORE,
    END_BONUS,
    cigar_edits,
    clip_ends,
)

__all__ = ["NO_SCORE", "MappingResult", "ReadsAhead", "iter_mappings", "map_reads"]

#: MAPQ of the surest placement (minimap2's and bwa's cap).
MAX_MAPQ = 60

#: The most a proper pair raises the MAPQ of a read it moved off the read's best placement
#: (bwa mem's bound): the pair vouches for the move, the read's own placement stays doubtful.
PAIR_MAPQ_LIFT = 40

#: Bases a mate needs to be searched for next to its partner (rescue): a shorter one matches
#: by chance somewhere in a window of an insert size within its cutoff of edits.
MIN_RESCUE_LENGTH = 20

#: The local alignments of reads left unmapped or clipped (split reads) with edit-path
#: primaries: the mapper's score (:mod:`gpualign.map.segments`), +1 a match, a mismatch and
#: every base of a gap an edit. One gap cost serves both gap kinds, so an inserted read base
#: costs 5 here where AS and the clipping charge it 4 (+1 for the base, -5 for the edit): the
#: local path leans slightly against insertions.
_LOCAL_SCORING = Scoring(match=1, mismatch=1 - EDIT_SCORE, gap_open=EDIT_SCORE,
                         gap_extend=EDIT_SCORE)

#: Complements of the DNA codes A, C, G, T, N.
_COMPLEMENT = np.array([3, 2, 1, 0, 4], dtype=np.uint8)


@dataclass
class MappingResult:
    """Placements of mapped reads: one primary record per read (single-end) or per read of a
    pair (mates next to each other, first then second), in input order, a split read's
    supplementary record right after its primary; packed arrays, turned into SAM text only by
    :meth:`write_sam`.

    Attributes
    ----------
    read : np.ndarray of int64
        The read's (or the pair's) 0-based index in the input.
    mate : np.ndarray of int8
        0 for single-end reads, 1 or 2 for the first or second read of a pair.
    flag : np.ndarray of uint16
        SAM flag: 0x1 paired, 0x2 proper pair, 0x4 unmapped, 0x8 mate unmapped, 0x10 reverse
        strand, 0x20 mate on the reverse strand, 0x40 first, 0x80 second of the pair, 0x800
        supplementary (the other segment of a split read). No secondary records (0x100):
        minimap2 ``-ax sr`` prints none either; a repeat shows as MAPQ 0 and ``XS``.
    contig, pos : np.ndarray of int64
        Reference record and 0-based leftmost position (-1 when unmapped; an unmapped read
        whose mate maps takes its mate's, as SAM recommends).
    mapq : np.ndarray of uint8
        Mapping quality (see :func:`mapping_quality`); 0 when unmapped.
    cigar : SamCigars
        SAM CIGAR (``M``/``I``/``D``: matches and mismatches merged, as minimap2 and bwa
        print them) of the read, or of its reverse complement for a reverse placement; None
        when unmapped. Clipped ends are ``S``, but ``H`` in a supplementary record (whose SEQ
        is the aligned part only), as minimap2 prints them. Held as arrays of runs
        (:class:`~gpualign.map.sam.SamCigars`), read as a sequence of ``str``: ``cigar[i]``,
        ``cigar.tolist()``, iteration, comparison with a list; read-only (``tolist()`` gives
        a list to change, extend or serialize).
    nm : np.ndarray of int32
        Mismatches and gap bases of the aligned part's CIGAR (-1 when unmapped): its edit
        distance with edit-path CIGARs; an affine path may hold more.
    score, xs : np.ndarray of int32
        ``AS``: aligned read bases - 5 x NM (:data:`~gpualign.map.segments.EDIT_SCORE`), and
        ``XS``: the same of the best placement elsewhere; :data:`NO_SCORE` where there is
        none.
    mate_contig, mate_pos, tlen : np.ndarray of int64
        The mate's reference record and position (-1: none) and the signed template length
        (0 unless both mates map to one record; 0 in supplementary records).
    sa : list of str or None
        The ``SA:Z`` tag's text of a split read's records (the other record's reference name,
        1-based position, strand, CIGAR with soft clips, MAPQ and NM); None for the others.
    reference_names : list of str
        The reference records, for SAM's ``@SQ`` lines (with ``reference_lengths``).
    insert_size : (int, int) or None
        Insert sizes accepted for proper pairs (estimated or given); None for single-end.
    stage_seconds : dict
        Seconds spent in each stage: ``read``, ``candidates``, ``verify``, ``pair``, ``cigar``.
    """

    read: np.ndarray
    mate: np.ndarray
    flag: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    mapq: np.ndarray
    cigar: SamCigars
    nm: np.ndarray
    score: np.ndarray
    xs: np.ndarray
    mate_contig: np.ndarray
    mate_pos: np.ndarray
    tlen: np.ndarray
    sa: list[str | None]
    reference_names: list[str] = field(default_factory=list, repr=False)
    reference_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64),
                                          repr=False)
    insert_size: tuple[int, int] | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.flag)

    @property
    def mapped(self) -> np.ndarray:
        """Whether each record is mapped (flag 0x4 clear)."""
        return (self.flag & UNMAPPED) == 0

    @property
    def primary(self) -> np.ndarray:
        """Whether each record is its read's primary one (flag 0x800 clear): one per read."""
        return (self.flag & SUPPLEMENTARY) == 0

    def write_sam(self, out: str | os.PathLike | IO[str], reads: Any, mates: Any = None,
                  command_line: str | None = None) -> None:
        """Write the placements as SAM: a header (``@HD``, ``@SQ`` per reference record,
        ``@PG``) and one line per record, with the reads' names, sequences (reverse
        complemented for reverse placements) and FASTQ qualities (reversed likewise; ``*``
        for FASTA and reads given in memory) taken from ``reads`` and ``mates``, the inputs
        that were mapped (files are read again). See :mod:`gpualign.map.sam`.

        Raises
        ------
        ValueError
            When ``reads`` (and ``mates``) are not as many as the result's records, or mates
            are given for a single-end result or missing for pairs.

        Examples
        --------
        >>> import sys
        >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
        >>> reads = [genome[1000:1060], "ACGT" * 10]
        >>> result = map_reads([genome], reads, backend="cpu")
        >>> result.write_sam(sys.stdout, reads)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        @HD VN:1.6 SO:unsorted
        @SQ SN:0 LN:5000
        @PG ID:gpualign PN:gpualign VN:...
        0 0 0 1001 60 60M * 0 0 TCCTCTACTT... * NM:i:0 AS:i:60
        1 4 * 0 0 * * 0 0 ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGT *
        """
        paired = mates is not None
        if len(self) and paired != bool((self.mate > 0).any()):
            raise ValueError("write_sam needs mates exactly when the result is of pairs: "
                             f"the result is {'paired' if not paired else 'single-end'}, "
                             f"mates were {'not ' if not paired else ''}given")
        batch = config.MAP_BATCH_READS
        given = written = 0
        with open_text(out) as handle:
            handle.write(sam_header(self.reference_names, self.reference_lengths,
                                    command_line))
            mate_batches = read_batches(mates, batch, "mates") if paired else iter(())
            for chunk in read_batches(reads, batch):
                mate_chunk = next(mate_batches, None)
                if paired and (mate_chunk is None or len(mate_chunk) != len(chunk)):
                    raise ValueError("write_sam: the mates given are fewer or more than the "
                                     f"reads (from read {chunk.start + 1} on); pass the "
                                     "mates that were mapped")
                records = np.flatnonzero((self.read >= chunk.start)
                                         & (self.read < chunk.start + len(chunk)))
                write_records(handle, self, records, chunk, mate_chunk, self.reference_names)
                given += len(chunk) * (2 if paired else 1)
                written += int(self.primary[records].sum())
            if next(mate_batches, None) is not None:
                raise ValueError("write_sam: the mates given are more than the reads; pass "
                                 "the mates that were mapped")
        primaries = int(self.primary.sum())
        if given != primaries or written != primaries:
            raise ValueError(f"write_sam: the result holds {primaries} records, the reads "
                             f"given make {given} of which {written} are in the result; pass "
                             "the reads (and mates) that were mapped")


def mapping_quality(score: np.ndarray, second: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """MAPQ from the best placement's score, the best score elsewhere (:data:`NO_SCORE`:
    none) and the seeds (votes) behind the best: minimap2's formula,
    ``40 * (1 - second / score) * min(1, votes / 10) * ln(score)``, capped at 60; 0 where the
    score is not positive or the second is as good.

    Examples
    --------
    >>> mapping_quality(np.array([150, 146, 146]), np.array([NO_SCORE, 131, 146]),
    ...                 np.array([20, 20, 20])).tolist()
    [60, 20, 0]
    """
    s1 = np.maximum(score.astype(np.float64), 1.0)
    s2 = np.where(second == NO_SCORE, 0.0, np.maximum(second, 0).astype(np.float64))
    quality = 40.0 * (1.0 - s2 / s1) * np.minimum(1.0, votes / 10.0) * np.log(s1)
    quality = np.where((score <= 0) | (second >= score), 0.0, quality)
    return np.clip(quality, 0, MAX_MAPQ).astype(np.uint8)


# --------------------------------------------------------------------------- sequences


def reverse_complement(reads: SequenceSet) -> SequenceSet:
    """The reverse complements of DNA ``reads`` (N stays N), names kept.

    Examples
    --------
    >>> reverse_complement(SequenceSet.from_sequences(["AACGN", "GT"]))[0]
    'NCGTT'
    """
    from ._host import reverse_complements  # Numba: loaded by the runs that map

    return SequenceSet(reverse_complements(reads.codes, reads.offsets, _COMPLEMENT),
                       reads.offsets, reads.names, "dna")


def _both_strands(reads: SequenceSet) -> SequenceSet:
    """``reads`` then their reverse complements: read ``i`` on the reverse strand is ``n + i``."""
    rc = reverse_complement(reads)
    offsets = np.concatenate((reads.offsets, reads.offsets[1:] + reads.offsets[-1]))
    return SequenceSet(np.concatenate((reads.codes, rc.codes)), offsets,
                       reads.names + rc.names, "dna")


def _windows(reference: SequenceSet, contig: np.ndarray, start: np.ndarray,
             end: np.ndarray) -> SequenceSet:
    """The reference ranges ``contig[i]: start[i] .. end[i]`` as a set (gathered at once)."""
    lengths = (end - start).astype(np.int64)
    offsets = offsets_of_counts(lengths)
    from ._host import gather  # Numba: loaded by the runs that map

    codes = gather(reference.codes, (reference.offsets[contig] + start).astype(np.int64), offsets)
    return SequenceSet(codes, offsets, [""] * len(lengths), "dna")


# --------------------------------------------------------------------------- verification


@dataclass
class _Hits:
    """Verified placements of the reads of a batch, grouped by read, best first (fewest
    edits, then most votes, then reference order)."""

    read: np.ndarray
    reverse: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    end: np.ndarray
    dist: np.ndarray
    votes: np.ndarray

    def take(self, keep: np.ndarray) -> _Hits:
        return _Hits(*(getattr(self, name)[keep] for name in _HIT_FIELDS))


_HIT_FIELDS = ("read", "reverse", "contig", "pos", "end", "dist", "votes")


def _ranked(hits: _Hits) -> _Hits:
    """``hits`` (grouped by read, as the candidates are) without repeats of one placement
    (overlapping windows find it twice: the fewest edits kept, the first of equal ones), best
    first in each read (:func:`gpualign.map._host.ranked_hits`)."""
    from ._host import ranked_hits  # Numba: loaded by the runs that map

    bounds = np.append(np.flatnonzero(np.diff(hits.read, prepend=-1)), len(hits.read))
    order = ranked_hits(bounds, hits.reverse, hits.contig, hits.pos, hits.dist, hits.votes)
    return hits.take(order[order >= 0])


def _verify(index: Any, reads: SequenceSet, strands: SequenceSet, cutoff: np.ndarray,
            max_candidates: int, backend: str, seconds: dict[str, float]) -> tuple[_Hits, _Hits]:
    """The candidates of ``reads`` that the read (or its reverse complement: ``strands``, see
    :func:`_both_strands`) matches with at most ``cutoff`` edits, ranked; and every candidate
    window (``pos`` to ``end``), for the local alignments of :func:`_split`."""
    began = time.perf_counter()
    candidates = index.candidates(reads, max_candidates=max_candidates)
    _add(seconds, "candidates", began)
    began = time.perf_counter()
    count = len(candidates.read)
    hits = _Hits(candidates.read, candidates.reverse.astype(bool), candidates.contig,
                 candidates.start, candidates.end, np.zeros(count, np.int32),
                 candidates.votes.astype(np.int32))
    every_window = hits.take(slice(None))  # the verified hits' fields are replaced below
    if count:
        windows = _windows(index.reference, candidates.contig, candidates.start, candidates.end)
        queries = candidates.read + len(reads) * candidates.reverse.astype(np.int64)
        found = edit_distance(strands, windows, mode="infix",
                              k=int(cutoff.max()), task="locations", backend=backend,
                              pairs=(queries, np.arange(count, dtype=np.int64)))
        hits.pos = candidates.start + found.target_start
        hits.end = candidates.start + found.target_end
        hits.dist = found.distance
        within = (found.distance >= 0) & (found.distance <= cutoff[candidates.read])
        hits = _ranked(hits.take(within))
    _add(seconds, "verify", began)
    return hits, every_window


def _add(seconds: dict[str, float], stage: str, began: float) -> None:
    seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - began


# --------------------------------------------------------------------------- choices


@dataclass
class _Placements:
    """One chosen placement per read (``hit`` -1: unmapped) and what SAM reports of it."""

    hit: np.ndarray
    mapq: np.ndarray
    xs: np.ndarray
    proper: np.ndarray


def _distinct(hits: _Hits, i: np.ndarray, j: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether placements ``i`` and ``j`` (of one read) are different places, not two
    alignments of one: another record or strand, or starts at least half the read apart."""
    return ((hits.contig[i] != hits.contig[j]) | (hits.reverse[i] != hits.reverse[j])
            | (np.abs(hits.pos[i] - hits.pos[j]) >= np.maximum(1, lengths[hits.read[i]] // 2)))


def _scores(lengths: np.ndarray, dist: np.ndarray) -> np.ndarray:
    return (lengths - EDIT_SCORE * dist.astype(np.int64)).astype(np.int32)


def _other_scores(hits: _Hits, lengths: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """XS of each read: the score of its best placement elsewhere than its ``chosen`` one (the
    read's best included when pairing or rescue chose another); :data:`NO_SCORE` where there
    is none or the read is unmapped (``chosen`` -1)."""
    mapped = chosen[hits.read] >= 0
    elsewhere = np.flatnonzero(mapped)
    elsewhere = elsewhere[_distinct(hits, elsewhere, chosen[hits.read[elsewhere]], lengths)]
    second = np.full(len(lengths), np.iinfo(np.int32).max, dtype=np.int32)
    np.minimum.at(second, hits.read[elsewhere], hits.dist[elsewhere])
    xs = np.full(len(lengths), NO_SCORE, dtype=np.int32)
    has_second = second < np.iinfo(np.int32).max
    xs[has_second] = _scores(lengths[has_second], second[has_second])
    return xs


def _single(hits: _Hits, lengths: np.ndarray) -> _Placements:
    """The best placement of each read, XS and MAPQ from the best one elsewhere."""
    count = len(lengths)
    best = np.full(count, -1, dtype=np.int64)
    first = np.ones(len(hits.read), dtype=bool)
    first[1:] = hits.read[1:] != hits.read[:-1]
    best[hits.read[first]] = np.flatnonzero(first)
    mapped = best >= 0
    xs = _other_scores(hits, lengths, best)
    mapq = np.zeros(count, dtype=np.uint8)
    chosen = best[mapped]
    mapq[mapped] = mapping_quality(_scores(lengths[mapped], hits.dist[chosen]), xs[mapped],
                                   hits.votes[chosen])
    return _Placements(best, mapq, xs, np.zeros(count, dtype=bool))


def _template(hits: _Hits, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Insert size of placements ``a`` and ``b`` as a pair facing each other (the forward one's
    start to the reverse one's end), or -1 where they are not such a pair."""
    forward = np.where(hits.reverse[a], b, a)
    backward = np.where(hits.reverse[a], a, b)
    facing = (hits.contig[a] == hits.contig[b]) & (hits.reverse[a] != hits.reverse[b])
    return np.where(facing, hits.end[backward] - hits.pos[forward], -1)


def estimate_insert(sizes: np.ndarray) -> tuple[int, int] | None:
    """Insert sizes accepted for proper pairs, from those of confidently mapped pairs: bwa-mem's
    bounds, the quartiles widened by three inter-quartile ranges; None with fewer than
    :data:`gpualign.config.MAP_INSERT_MIN_PAIRS` pairs.

    Examples
    --------
    >>> from gpualign import config
    >>> with config.override(MAP_INSERT_MIN_PAIRS=4):
    ...     estimate_insert(np.array([290, 300, 300, 310, 320]))
    (270, 340)
    """
    if len(sizes) < max(1, config.MAP_INSERT_MIN_PAIRS):
        return None
    q25, q75 = np.percentile(sizes, [25, 75])
    spread = q75 - q25
    return max(0, int(math.floor(q25 - 3 * spread))), int(math.ceil(q75 + 3 * spread))


def insert_bounds(insert_size: Any) -> tuple[int, int] | None:
    """``insert_size`` as accepted insert sizes ``(lo, hi)``: None stays None, else two
    integers with ``0 <= lo <= hi`` (ValueError otherwise; TypeError for a non-integer).

    Examples
    --------
    >>> insert_bounds([200, np.int64(600)])
    (200, 600)
    >>> insert_bounds((600, 200))
    Traceback (most recent call last):
    ...
    ValueError: insert_size's upper bound must be >= 600 (got 200)
    """
    if insert_size is None:
        return None
    try:
        lo, hi = insert_size
    except (TypeError, ValueError):
        raise ValueError(f"insert_size must be two integers (lo, hi), got {insert_size!r}"
                         ) from None
    lo = integer(lo, "insert_size's lower bound", 0)
    return lo, integer(hi, "insert_size's upper bound", lo)


def _paired(hits: _Hits, lengths: np.ndarray, single: _Placements,
            insert: tuple[int, int]) -> _Placements:
    """Pairs' placements: reads ``i`` and ``n + i`` are the two of pair ``i``. The pair of
    placements facing each other within the insert bounds with the fewest edits is taken when
    it costs at most :data:`gpualign.config.MAP_UNPAIRED_PENALTY` edits more than the two
    reads' best placements (proper pair). A read kept on its best gets the better of its own
    MAPQ and the pair's; a read moved elsewhere reports its best other placement (the one it
    left) as XS, and its own MAPQ against it lifted by the pair's by at most
    :data:`PAIR_MAPQ_LIFT`."""
    n = len(lengths) // 2
    # Only a placement within the penalty of its read's best can be part of a pair that is
    # taken: the others are left out of the pairs (which bounds them on repeats).
    eligible = np.flatnonzero(hits.dist.astype(np.int64) <= hits.dist[single.hit[hits.read]]
                              + config.MAP_UNPAIRED_PENALTY)
    counts = np.bincount(hits.read[eligible], minlength=2 * n)
    group = np.zeros(2 * n + 1, dtype=np.int64)
    np.cumsum(counts, out=group[1:])
    across = counts[:n] * counts[n:]  # every placement of read 1 with every one of read 2
    rows = int(across.sum())
    pair = np.repeat(np.arange(n, dtype=np.int64), across)
    row_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(across, out=row_start[1:])
    rank = np.arange(rows, dtype=np.int64) - row_start[pair]
    width = counts[n:][pair]
    a = eligible[group[pair] + rank // np.maximum(width, 1)]
    b = eligible[group[n + pair] + rank % np.maximum(width, 1)]
    size = _template(hits, a, b)
    ok = (size >= insert[0]) & (size <= insert[1])
    pair, a, b = pair[ok], a[ok], b[ok]
    combined = hits.dist[a].astype(np.int64) + hits.dist[b]
    order = np.lexsort((-(hits.votes[a] + hits.votes[b]), combined, pair))
    pair, a, b, combined = pair[order], a[order], b[order], combined[order]
    first = np.ones(len(pair), dtype=bool)
    first[1:] = pair[1:] != pair[:-1]
    best1, best2 = single.hit[:n], single.hit[n:]
    alone = hits.dist[best1[pair]].astype(np.int64) + hits.dist[best2[pair]]
    take = first & (combined <= alone + config.MAP_UNPAIRED_PENALTY)
    chosen = np.full(n, -1, dtype=np.int64)
    chosen[pair[take]] = np.flatnonzero(take)
    # The best other pair: one whose placement of either read is elsewhere.
    row_of = chosen[pair]
    has = row_of >= 0
    other = has & (_distinct(hits, a, a[np.maximum(row_of, 0)], lengths)
                   | _distinct(hits, b, b[np.maximum(row_of, 0)], lengths))
    second = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(second, pair[other], combined[other])
    proper = np.flatnonzero(chosen >= 0)
    rows_taken = chosen[proper]
    pair_length = lengths[proper] + lengths[n + proper]
    has_second = second[proper] < np.iinfo(np.int64).max
    pair_xs = np.where(has_second, _scores(pair_length, np.where(has_second, second[proper], 0)),
                       NO_SCORE)
    pair_mapq = mapping_quality(_scores(pair_length, combined[rows_taken]), pair_xs,
                                np.minimum(hits.votes[a[rows_taken]], hits.votes[b[rows_taken]]))
    hit = single.hit.copy()
    hit[proper], hit[n + proper] = a[rows_taken], b[rows_taken]
    result = _Placements(hit, single.mapq.copy(), _other_scores(hits, lengths, hit),
                         np.zeros(2 * n, dtype=bool))
    for mate in (proper, n + proper):
        # A read the pair moved off its best is as sure as its own placement against the best
        # it left (its XS now), lifted by the pair by at most PAIR_MAPQ_LIFT: bwa mem's rule.
        own = mapping_quality(_scores(lengths[mate], hits.dist[hit[mate]]), result.xs[mate],
                              hits.votes[hit[mate]]).astype(np.int64)
        moved = np.maximum(own, np.minimum(pair_mapq, own + PAIR_MAPQ_LIFT))
        result.mapq[mate] = np.where(single.hit[mate] == hit[mate],
                                     np.maximum(single.mapq[mate], pair_mapq), moved)
        result.proper[mate] = True
    return result


def _rescue(index: Any, reads: SequenceSet, strands: SequenceSet, hits: _Hits,
            placements: _Placements, cutoff: np.ndarray, insert: tuple[int, int],
            backend: str) -> _Hits:
    """Search for the mate of each pair without a proper pair next to its mapped read (the
    better one): over the reference range where the insert bounds put it, on the strand
    facing it. Found placements are appended to ``hits`` (and become the mate's, a proper
    pair, in ``placements``) when the mate had none or one at most
    :data:`gpualign.config.MAP_UNPAIRED_PENALTY` edits better. Mates shorter than
    :data:`MIN_RESCUE_LENGTH` are not searched for. A rescued mate's MAPQ is its own, not its
    partner's: the single-end formula (:func:`mapping_quality`) with one vote and, as the
    second placement, the mate's best other than the rescued one (the window was searched for
    its best only), at most the partner's MAPQ (a placement found from the partner's is no
    surer than that)."""
    n = len(reads) // 2
    hit1, hit2 = placements.hit[:n], placements.hit[n:]
    lonely = ~placements.proper[:n] & ((hit1 >= 0) | (hit2 >= 0))
    first_anchors = lonely & (hit1 >= 0) & ((hit2 < 0) | (placements.mapq[:n]
                                                          >= placements.mapq[n:]))
    pairs = np.flatnonzero(lonely)
    anchor = np.where(first_anchors[pairs], pairs, n + pairs)
    mate = np.where(first_anchors[pairs], n + pairs, pairs)
    if not len(pairs):
        return hits
    placed = placements.hit[anchor]
    contig = hits.contig[placed]
    length = index.reference.lengths[contig]
    forward = ~hits.reverse[placed]
    # A forward anchor's mate ends at most insert[1] past the anchor's start; a reverse
    # anchor's mate starts at most insert[1] before the anchor's end.
    start = np.where(forward, hits.pos[placed], np.maximum(0, hits.end[placed] - insert[1]))
    end = np.where(forward, np.minimum(length, hits.pos[placed] + insert[1]), hits.end[placed])
    wide = (end - start >= reads.lengths[mate]) & (reads.lengths[mate] >= MIN_RESCUE_LENGTH)
    anchor, mate, placed, contig, forward, start, end = (
        array[wide] for array in (anchor, mate, placed, contig, forward, start, end))
    if not len(mate):
        return hits
    found = edit_distance(strands, _windows(index.reference, contig, start, end),
                          mode="infix", k=int(cutoff[mate].max()), task="locations",
                          backend=backend,
                          pairs=(mate + len(reads) * forward, np.arange(len(mate))))
    # One vote: no seed of the mate's own found it, only its partner's placement.
    rescued = _Hits(mate, forward, contig, start + found.target_start, start + found.target_end,
                    found.distance, np.ones(len(mate), dtype=np.int32))
    previous = placements.hit[mate]
    before = np.where(previous >= 0, hits.dist[np.maximum(previous, 0)], np.iinfo(np.int32).max)
    size = _template(_joined_hits(hits, rescued), placed, len(hits.read) + np.arange(len(mate)))
    keep = ((found.distance >= 0) & (found.distance <= cutoff[mate])
            & (size >= insert[0]) & (size <= insert[1])
            & (found.distance.astype(np.int64) <= before.astype(np.int64)
               + config.MAP_UNPAIRED_PENALTY))
    # Only the kept placements join the hits: the others would count as the mates' XS.
    grown = _joined_hits(hits, rescued.take(keep))
    mate, anchor = mate[keep], anchor[keep]
    placements.hit[mate] = len(hits.read) + np.arange(len(mate))
    # XS: the mate's best placement other than the rescued one (its own best, if it had one).
    placements.xs = _other_scores(grown, reads.lengths, placements.hit)
    placements.mapq[mate] = np.minimum(placements.mapq[anchor], mapping_quality(
        _scores(reads.lengths[mate], found.distance[keep]), placements.xs[mate],
        rescued.votes[keep]))
    placements.proper[mate] = placements.proper[anchor] = True
    return grown


def _prefer_ungapped(reference: SequenceSet, strands: SequenceSet, placed: _Aligned) -> None:
    """Among placements of equal cost, take the one without gaps (in place): the infix path
    ties a mismatch at a read's end with a 1-base gap (``99=1I`` for a wrong last base;
    ``1=1D99=`` a base early for a wrong first base equal to the reference base before it),
    where minimap2 and bwa print ``100M``. A gapped placement becomes the reference span of
    the read's length started at its start (else the one ended at its end) when the read has
    as many mismatches there as the placement's edits; its extended CIGAR is that span's."""
    count = len(placed.cigar)
    gapped = np.unique(placed.cigar.run_owner()[placed.cigar.ops >= OP_INSERTION])  # I or D
    length = strands.lengths[gapped]
    undecided = np.ones(len(gapped), dtype=bool)
    for start in (placed.pos[gapped], placed.end[gapped] - length):
        fits = np.flatnonzero(undecided & (start >= 0)
                              & (start + length <= reference.lengths[placed.contig[gapped]]))
        slot, first, size = gapped[fits], start[fits], length[fits]
        span = _windows(reference, placed.contig[slot], first, first + size)
        query = slot + count * placed.reverse[slot]
        read = strands.codes[np.repeat(strands.offsets[query] - span.offsets[:-1], size)
                             + np.arange(len(span.codes), dtype=np.int64)]
        # N matches nothing, as in the edit distance.
        differ = (read != span.codes) | (read >= ALPHABETS["dna"].match_codes)
        column_owner = np.repeat(np.arange(len(slot)), size)
        mismatches = np.bincount(column_owner, weights=differ, minlength=len(slot))
        tie = mismatches == placed.nm[slot]
        placed.pos[slot[tie]], placed.end[slot[tie]] = first[tie], first[tie] + size[tie]
        placed.cigar = placed.cigar.replaced(
            slot[tie], _ungapped_cigars(differ[tie[column_owner]], size[tie]))
        undecided[fits[tie]] = False


def _ungapped_cigars(differ: np.ndarray, columns: np.ndarray) -> PackedCigars:
    """The extended CIGARs of alignments without gaps, one after the other ``columns[i]``
    columns each (none: no alignment), whose columns ``differ`` (``X``) or match (``=``)."""
    offsets = offsets_of_counts(columns)
    return PackedCigars.from_ops(differ.astype(np.uint8), offsets,  # "=" 0, "X" 1
                                 present=columns > 0)


def _joined_hits(hits: _Hits, more: _Hits) -> _Hits:
    """``hits`` followed by ``more`` (not re-ranked: indices into ``hits`` stay valid)."""
    return _Hits(*(np.concatenate((getattr(hits, name), getattr(more, name)))
                   for name in _HIT_FIELDS))


# --------------------------------------------------------------------------- alignments


@dataclass
class _Aligned:
    """Alignments of reads of a batch, the fields of their SAM records: ``read`` the read's
    slot in the batch, ``contig`` -1 where unmapped, ``pos`` to ``end`` the aligned part's
    reference span, ``clip_left`` and ``clip_right`` the read bases clipped before and after
    it (in the reference's orientation), ``cigar`` the aligned parts' extended CIGARs as runs
    (none where unmapped; :func:`_sam_cigars` makes them SAM's, with the clips)."""

    read: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    end: np.ndarray
    reverse: np.ndarray
    nm: np.ndarray
    mapq: np.ndarray
    xs: np.ndarray
    clip_left: np.ndarray
    clip_right: np.ndarray
    cigar: PackedCigars

    @classmethod
    def unmapped(cls, read: np.ndarray) -> _Aligned:
        """No alignment for each of the reads ``read``."""
        count = len(read)
        return cls(read, *(np.full(count, -1, dtype=np.int64) for _ in range(3)),
                   np.zeros(count, dtype=bool), np.full(count, -1, dtype=np.int32),
                   np.zeros(count, dtype=np.uint8), np.full(count, NO_SCORE, dtype=np.int32),
                   np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64),
                   PackedCigars.nones(count))

    def take(self, keep: np.ndarray) -> _Aligned:
        """The alignments at the indices ``keep``."""
        return _Aligned(**{name: getattr(self, name)[keep] for name in _ALIGNED_ARRAYS},
                        cigar=self.cigar.take(keep))

    def score(self, lengths: np.ndarray) -> np.ndarray:
        """``AS``: the aligned read bases less :data:`EDIT_SCORE` per edit (:data:`NO_SCORE`
        where unmapped); ``lengths`` are the batch's reads'."""
        aligned = lengths[self.read] - self.clip_left - self.clip_right
        return np.where(self.contig >= 0, aligned - EDIT_SCORE * self.nm.astype(np.int64),
                        NO_SCORE).astype(np.int32)


_ALIGNED_ARRAYS = ("read", "contig", "pos", "end", "reverse", "nm", "mapq", "xs", "clip_left",
                   "clip_right")


def _primaries(index: Any, strands: SequenceSet, hits: _Hits, placements: _Placements,
               backend: str) -> _Aligned:
    """The alignments of the chosen placements (one path call for all), their ends clipped
    where that scores better (:func:`~gpualign.map.segments.clip_ends`): the edit paths, or
    with :data:`gpualign.config.MAP_PRIMARY_CIGAR` ``"affine"`` the reads realigned with
    minimap2's scores (:func:`_affine_paths`)."""
    count = len(placements.hit)
    placed = _Aligned.unmapped(np.arange(count, dtype=np.int64))
    mapped = np.flatnonzero(placements.hit >= 0)
    chosen = placements.hit[mapped]
    source = config.MAP_PRIMARY_CIGAR
    if source not in ("affine", "edit"):
        raise ValueError(f"config.MAP_PRIMARY_CIGAR={source!r}: expected 'affine' or 'edit'")
    if not len(chosen):
        return placed
    query = mapped + count * hits.reverse[chosen]
    if source == "affine":
        origin, found = _affine_paths(index.reference, strands, hits, chosen, query,
                                      hits.dist[chosen], backend)
        placed.nm[mapped] = cigar_edits(found.cigar)
    else:
        origin = hits.pos[chosen]
        found = edit_distance(strands,
                              _windows(index.reference, hits.contig[chosen], origin,
                                       hits.end[chosen]),
                              mode="infix", k=int(hits.dist[chosen].max()), task="path",
                              backend=backend, pairs=(query, np.arange(len(chosen))))
        placed.nm[mapped] = found.distance
    placed.contig[mapped] = hits.contig[chosen]
    placed.pos[mapped] = origin + found.target_start
    placed.end[mapped] = origin + found.target_end
    placed.reverse[mapped] = hits.reverse[chosen]
    placed.mapq[mapped], placed.xs[mapped] = placements.mapq[mapped], placements.xs[mapped]
    placed.cigar = placed.cigar.replaced(mapped, found.cigar)
    if source == "edit":  # an affine path already prefers a mismatch to a 1-base gap
        _prefer_ungapped(index.reference, strands, placed)
    # The unmapped reads have no runs: nothing of theirs is clipped.
    clips = clip_ends(placed.cigar, AFFINE_ENDS if source == "affine" else EDIT_ENDS)
    placed.pos[mapped] += clips.reference_left[mapped]
    placed.end[mapped] -= clips.reference_right[mapped]
    placed.nm[mapped] = clips.edits[mapped]
    placed.clip_left[mapped] = clips.read_left[mapped]
    placed.clip_right[mapped] = clips.read_right[mapped]
    placed.cigar = clips.cigar
    _extend_clips(index.reference, strands, placed)
    return placed


def _affine_paths(reference: SequenceSet, strands: SequenceSet, hits: _Hits, chosen: np.ndarray,
                  query: np.ndarray, distance: np.ndarray, backend: str,
                  ) -> tuple[np.ndarray, Any]:
    """The semi-global alignments (the read end to end, the reference's ends free) of the reads
    ``query`` (slots of ``strands``) in the windows of the placements ``chosen``, widened on
    each side by a pad that ``distance`` (the placements' edit distances) bounds, with
    minimap2's scores (:data:`~gpualign.map.segments.AFFINE_SCORING`); one call for all.
    Returns each window's start and the alignments. The edit path ends where the whole read
    fits with the fewest edits, covering the far side of a deletion near an end with
    mismatches (at most ``distance``, each ``match - mismatch`` below a match); the affine path
    takes the deletion instead wherever its cost is lower, so it may end up to
    ``(match - mismatch) * distance / gap_extend`` bases further out (and an insertion the
    edit path counted as mismatches, up to ``distance``)."""
    match, mismatch = AFFINE_ENDS.column[:2]
    pad = distance + (match - mismatch) * distance // AFFINE_SCORING.gap_extend
    contig = hits.contig[chosen]
    start = np.maximum(0, hits.pos[chosen] - pad)
    end = np.minimum(reference.lengths[contig], hits.end[chosen] + pad)
    # In a band that such a path proves (the DP's answer either way: align's ``band``).
    table, _ = AFFINE_SCORING.table(strands.alphabet)
    band = band_for_edits(strands.lengths[query], distance, table, AFFINE_SCORING.gap_open,
                          AFFINE_SCORING.gap_extend)
    found = align(strands, _windows(reference, contig, start, end), mode="semi-global",
                  scoring=AFFINE_SCORING, task="path", backend=backend,
                  pairs=(query, np.arange(len(chosen))), packed=True, band=band)
    return start, found


def _extend_clips(reference: SequenceSet, strands: SequenceSet, aligned: _Aligned) -> None:
    """Extend alignments into their clipped ends without gaps (in place), as far as that
    scores best, or to the read's end where that scores less than the best by under
    :data:`~gpualign.map.segments.END_BONUS`: the edit path that was clipped may have bent
    away from bases that align before its clip, and minimap2 extends the same way to the
    end. ``strands`` holds the batch's reads then their reverse complements. Without gaps,
    minimap2's affine scores and end bonus (:data:`~gpualign.map.segments.AFFINE_ENDS`) are
    the mapper's doubled, so one extension serves both primary CIGARs."""
    from .._cigar_text import path_runs  # Numba: loaded by the runs that map
    from ._host import ungapped_extensions

    count = len(strands) // 2
    for right in (True, False):
        clip = aligned.clip_right if right else aligned.clip_left
        rows = np.flatnonzero((clip > 0) & (aligned.contig >= 0))
        if not len(rows):
            continue
        contig = aligned.contig[rows]
        room = reference.lengths[contig] - aligned.end[rows] if right else aligned.pos[rows]
        size = np.minimum(clip[rows], room)
        strand = aligned.read[rows] + count * aligned.reverse[rows]
        # The first column of each extension: next to the clip's border, on the read and on
        # the reference.
        if right:
            read_first = strands.offsets[strand] + strands.lengths[strand] - clip[rows]
            reference_first = reference.offsets[contig] + aligned.end[rows]
        else:
            read_first = strands.offsets[strand] + clip[rows] - 1
            reference_first = reference.offsets[contig] + aligned.pos[rows] - 1
        space = np.zeros(len(aligned.read), dtype=np.int64)  # each alignment's room in ops
        space[rows] = np.cumsum(size) - size
        ops = np.empty(int(size.sum()), dtype=np.uint8)
        take, mismatches = ungapped_extensions(
            strands.codes, reference.codes, read_first.astype(np.int64),
            reference_first.astype(np.int64), 1 if right else -1, size.astype(np.int64),
            clip[rows].astype(np.int64), ALPHABETS["dna"].match_codes, 1 - EDIT_SCORE,
            END_BONUS, space[rows], ops)
        if take.any():
            aligned.nm[rows] += mismatches.astype(aligned.nm.dtype)
            columns = np.zeros(len(aligned.read), dtype=np.int64)
            columns[rows] = take
            added = path_runs(ops, space, columns)
            added = PackedCigars(added.ops, added.lengths, added.offsets, columns > 0)
            aligned.cigar = PackedCigars.joined([aligned.cigar, added] if right
                                                else [added, aligned.cigar])
            if right:
                aligned.end[rows] += take
            else:
                aligned.pos[rows] -= take
        clip[rows] -= take


def _split(index: Any, reads: SequenceSet, strands: SequenceSet, windows: _Hits,
           placed: _Aligned, k: int | None, backend: str) -> _Aligned:
    """The segments of the reads left unmapped or clipped by
    :data:`gpualign.config.MAP_MIN_SEGMENT` bases or more: their local alignments in their
    candidate windows (one call for all; scored as the primaries' CIGARs are,
    :data:`gpualign.config.MAP_PRIMARY_CIGAR`), those of at least that many read bases within
    the cutoff of edits of their length (:func:`_cutoffs`) kept. An unmapped read takes its best
    as its primary (soft-clipped, in ``placed``); a read whose primary leaves at least that
    many bases unaligned takes the best alignment elsewhere that aligns them as its
    supplementary one (hard-clipped, returned). MAPQ weighs each against the best one
    elsewhere that aligns half its bases or more."""
    from ._host import choose_segments  # Numba: loaded by the runs that map

    count = len(reads)
    lengths = reads.lengths
    minimum = max(1, int(config.MAP_MIN_SEGMENT))
    wanted = (placed.contig < 0) | (np.maximum(placed.clip_left, placed.clip_right) >= minimum)
    windows = windows.take(np.flatnonzero(wanted[windows.read]))
    if not len(windows.read):
        return _Aligned.unmapped(np.zeros(0, dtype=np.int64))
    # minimap2's scores where the primaries' CIGARs are affine: a gap costs its opening once,
    # so that the segments, as the primaries, extend through indels as minimap2's do.
    scoring = AFFINE_SCORING if config.MAP_PRIMARY_CIGAR == "affine" else _LOCAL_SCORING
    found = align(strands, _windows(index.reference, windows.contig, windows.pos, windows.end),
                  mode="local", scoring=scoring, task="path", backend=backend,
                  pairs=(windows.read + count * windows.reverse,
                         np.arange(len(windows.read))), packed=True)
    # Every window has an alignment, empty where nothing scores.
    cigars = PackedCigars(found.cigar.ops, found.cigar.lengths, found.cigar.offsets)
    local = _Aligned(windows.read, windows.contig, windows.pos + found.target_start,
                     windows.pos + found.target_end, windows.reverse,
                     cigar_edits(cigars).astype(np.int32),
                     np.zeros(len(cigars), dtype=np.uint8),
                     np.full(len(cigars), NO_SCORE, dtype=np.int32),
                     found.query_start.astype(np.int64),
                     lengths[windows.read] - found.query_end, cigars)
    local.contig[found.query_end == found.query_start] = -1  # nothing aligns: no anchor
    _extend_clips(index.reference, strands, local)
    aligned = lengths[local.read] - local.clip_left - local.clip_right
    # Affine segments extend through divergent stretches with indels, as minimap2's do: their
    # gaps count once against the cutoff (else the longer segments fail it where the shorter
    # linear ones passed, and reads go unplaced).
    edits = cigar_edits(local.cigar, gaps_once=True) if scoring is AFFINE_SCORING else local.nm
    valid = (aligned >= minimum) & (edits <= _cutoffs(aligned, k))
    # Ranked and weighed (MAPQ, XS) by the same edits: a segment through a long gap, which
    # the cutoff lets in, must not lose to a shorter one for that gap's length.
    score = np.where(local.contig >= 0, aligned - EDIT_SCORE * edits.astype(np.int64),
                     NO_SCORE).astype(np.int32)
    # Grouped by read, best first: the highest score, then the most votes.
    order = np.flatnonzero(valid)[np.lexsort((-windows.votes[valid], -score[valid],
                                              local.read[valid]))]
    local, score, votes = local.take(order), score[order], windows.votes[order]
    bounds = np.append(np.flatnonzero(np.diff(local.read, prepend=-1)), len(order))
    primary, primary_xs, chosen, chosen_xs = choose_segments(
        bounds, local.read, local.contig, local.pos, local.end, local.reverse, local.nm,
        local.clip_left, local.clip_right, score, lengths, minimum, NO_SCORE, placed.contig,
        placed.pos, placed.end, placed.reverse, placed.nm, placed.clip_left, placed.clip_right)
    # The unmapped reads that took a local alignment as their primary: its MAPQ and CIGAR.
    taken = primary >= 0
    first, slots = primary[taken], local.read[primary[taken]]
    placed.mapq[slots] = mapping_quality(score[first], primary_xs[taken], votes[first])
    placed.xs[slots] = primary_xs[taken]
    placed.cigar = placed.cigar.replaced(slots, local.cigar.take(first))
    picked = chosen[chosen >= 0]
    extra = local.take(picked)
    extra.mapq[:] = mapping_quality(score[picked], chosen_xs[chosen >= 0], votes[picked])
    extra.xs[:] = chosen_xs[chosen >= 0]
    return extra


def _sa_tags(names: list[str], placed: _Aligned, extra: _Aligned) -> tuple[list[str | None],
                                                                         list[str | None]]:
    """The ``SA:Z`` texts of the primary records (one a read; None for a read not split) and
    of the supplementary ``extra``, each naming the other (CIGARs merged, soft clips); the
    CIGARs are SAM's (:func:`_sam_cigars`)."""
    def described(aligned: _Aligned, rows: np.ndarray) -> list[str]:
        return [f"{names[contig]},{pos + 1},{'-' if reverse else '+'},{cigar.replace('H', 'S')},"
                f"{mapq},{nm};"
                for contig, pos, reverse, cigar, mapq, nm in zip(
                    aligned.contig[rows].tolist(), aligned.pos[rows].tolist(),
                    aligned.reverse[rows].tolist(), aligned.cigar.take(rows).to_text(),
                    aligned.mapq[rows].tolist(), aligned.nm[rows].tolist(), strict=True)]

    split = extra.read
    primary: list[str | None] = [None] * len(placed.read)
    for read, text in zip(split.tolist(), described(extra, np.arange(len(split))), strict=True):
        primary[read] = text
    return primary, described(placed, split)


def _proper_with_segments(placed: _Aligned, placements: _Placements, partner: np.ndarray,
                          insert: tuple[int, int] | None) -> np.ndarray:
    """The proper pairs: the chosen ones, and those of a read placed by its segment
    (:func:`_split`) facing its mapped mate within the ``insert`` bounds."""
    proper = placements.proper.copy()
    segment = np.flatnonzero((placements.hit < 0) & (placed.contig >= 0)
                             & (placed.contig[partner] >= 0))
    if insert is None or not len(segment):
        return proper
    mate = partner[segment]
    forward = np.where(placed.reverse[segment], mate, segment)
    backward = np.where(placed.reverse[segment], segment, mate)
    size = placed.end[backward] - placed.pos[forward]
    joins = segment[(placed.contig[segment] == placed.contig[mate])
                    & (placed.reverse[segment] != placed.reverse[mate])
                    & (size >= insert[0]) & (size <= insert[1])]
    proper[joins] = proper[partner[joins]] = True
    return proper


def _sam_cigars(aligned: _Aligned, clip: str) -> None:
    """The SAM CIGARs of ``aligned`` (in place, :func:`~gpualign.map.sam.sam_cigars`): the
    ``=`` and ``X`` runs merged into ``M``, the clipped ends added as ``clip`` (``S`` soft,
    ``H`` hard)."""
    aligned.cigar = sam_cigars(aligned.cigar, aligned.clip_left, aligned.clip_right, clip)


# --------------------------------------------------------------------------- records


def _records(index: Any, reads: SequenceSet, strands: SequenceSet, found: tuple[_Hits, _Hits],
             placements: _Placements, first_read: int, paired: bool, backend: str,
             insert: tuple[int, int] | None, k: int | None) -> MappingResult:
    """The SAM fields of every read of a batch (``found``: the verified hits and every
    candidate window): the chosen placements' alignments (:func:`_primaries`), the split
    reads' (:func:`_split`), flags, mate fields and template lengths; a supplementary record
    right after its read's primary."""
    hits, windows = found
    count = len(reads)
    lengths = reads.lengths
    placed = _primaries(index, strands, hits, placements, backend)
    extra = _split(index, reads, strands, windows, placed, k, backend)
    _sam_cigars(placed, "S")
    _sam_cigars(extra, "H")
    primary_sa, extra_sa = _sa_tags(list(index.reference.names), placed, extra)
    mapped = placed.contig >= 0
    contig, pos, end, reverse = placed.contig, placed.pos, placed.end, placed.reverse
    score = placed.score(lengths)
    flag = np.where(mapped, 0, UNMAPPED) | np.where(reverse, REVERSE, 0)
    read = first_read + np.arange(count, dtype=np.int64)
    mate_number = np.zeros(count, dtype=np.int8)
    mate_contig = np.full(count, -1, dtype=np.int64)
    mate_pos = np.full(count, -1, dtype=np.int64)
    tlen = np.zeros(count, dtype=np.int64)
    if paired:
        n = count // 2
        partner = np.concatenate((np.arange(n, 2 * n), np.arange(n)))
        mate_number = np.repeat(np.array([1, 2], dtype=np.int8), n)
        read = first_read + np.concatenate((np.arange(n), np.arange(n))).astype(np.int64)
        partner_mapped = mapped[partner]
        proper = _proper_with_segments(placed, placements, partner, insert)
        flag = (flag | PAIRED | np.where(mate_number == 1, FIRST, SECOND)
                | np.where(proper & mapped & partner_mapped, PROPER_PAIR, 0)
                | np.where(partner_mapped, 0, MATE_UNMAPPED)
                | np.where(reverse[partner] & partner_mapped, MATE_REVERSE, 0))
        # An unmapped read with a mapped mate is placed at its mate (SAM's recommendation).
        lone = ~mapped & partner_mapped
        contig[lone], pos[lone] = contig[partner[lone]], pos[partner[lone]]
        mate_contig, mate_pos = contig[partner].copy(), pos[partner].copy()
        both = mapped & partner_mapped & (contig == contig[partner])
        left = np.minimum(pos, pos[partner])
        right = np.maximum(end, end[partner])
        leftmost = (pos < pos[partner]) | ((pos == pos[partner]) & (mate_number == 1))
        tlen = np.where(both, np.where(leftmost, 1, -1) * (right - left), 0)
        # Mates next to each other: first, second, first, second ...
        order = np.stack((np.arange(n), n + np.arange(n)), axis=1).ravel()
    else:
        order = np.arange(count)
    # A supplementary record has its read's pair fields, but is no proper pair and has no
    # template length (as minimap2 writes them).
    split = extra.read
    extra_flag = (SUPPLEMENTARY | np.where(extra.reverse, REVERSE, 0)
                  | (flag[split] & (PAIRED | MATE_UNMAPPED | MATE_REVERSE | FIRST | SECOND)))
    slots = np.concatenate((order, split))
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count)
    records = np.lexsort((np.arange(len(slots)) >= count, rank[slots]))

    def joined(primaries: np.ndarray, supplementaries: np.ndarray) -> np.ndarray:
        return np.concatenate((primaries[order], supplementaries))[records]

    cigars = SamCigars.concatenate([placed.cigar.take(order), extra.cigar])
    tags = [primary_sa[i] for i in order.tolist()] + extra_sa
    return MappingResult(
        joined(read, read[split]), joined(mate_number, mate_number[split]),
        joined(flag, extra_flag).astype(np.uint16), joined(contig, extra.contig),
        joined(pos, extra.pos),
        joined(np.where(mapped, placed.mapq, 0), extra.mapq).astype(np.uint8),
        cigars.take(records), joined(placed.nm, extra.nm).astype(np.int32),
        joined(score, extra.score(lengths)),
        joined(np.where(mapped, placed.xs, NO_SCORE), extra.xs).astype(np.int32),
        joined(mate_contig, mate_contig[split]), joined(mate_pos, mate_pos[split]),
        joined(tlen, np.zeros(len(split), dtype=np.int64)),
        [tags[i] for i in records.tolist()],
        list(index.reference.names), index.reference.lengths.copy(), insert)


# --------------------------------------------------------------------------- driver


def _cutoffs(lengths: np.ndarray, k: int | None) -> np.ndarray:
    if k is not None:
        return np.full(len(lengths), k, dtype=np.int64)
    return np.ceil(config.MAP_MAX_EDIT_FRACTION * lengths).astype(np.int64)


def _joined(first: SequenceSet, second: SequenceSet) -> SequenceSet:
    """Reads of ``first`` then of ``second`` as one set."""
    offsets = np.concatenate((first.offsets, first.offsets[-1] + second.offsets[1:]))
    return SequenceSet(np.concatenate((first.codes, second.codes)), offsets,
                       first.names + second.names, "dna")


def _confident_inserts(hits: _Hits, single: _Placements, n: int) -> np.ndarray:
    """Insert sizes of the pairs whose reads both map with MAPQ >= 30, facing each other."""
    sure = (single.hit[:n] >= 0) & (single.hit[n:] >= 0) & (single.mapq[:n] >= 30) \
        & (single.mapq[n:] >= 30)
    sizes = _template(hits, single.hit[:n][sure], single.hit[n:][sure])
    return sizes[sizes >= 0]


def map_batch(index: Any, reads: SequenceSet, mates: SequenceSet | None, start: int,
              insert: tuple[int, int] | None, *, k: int | None, max_candidates: int,
              backend: str) -> MappingResult:
    """Map one batch of reads (and their mates: pairs by record order), the first read being
    read ``start`` of the input; ``insert`` None with mates: estimated from this batch's pairs
    (:attr:`MappingResult.insert_size` tells which was used). ``backend`` is resolved ("cpu"
    or "cuda"). This is the task of a batch on a Dask worker too
    (:mod:`gpualign.map.distributed`).

    Examples
    --------
    >>> from gpualign.map.index import as_map_index
    >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    >>> reads = SequenceSet.from_sequences([genome[600:650], genome[40:90]], "dna")
    >>> result = map_batch(as_map_index([genome]), reads, None, 10, None, k=None,
    ...                    max_candidates=8, backend="cpu")
    >>> result.read.tolist(), result.pos.tolist(), result.insert_size is None
    ([10, 11], [600, 40], True)
    """
    seconds: dict[str, float] = {}
    sequences = reads if mates is None else _joined(reads, mates)
    lengths = sequences.lengths
    cutoff = _cutoffs(lengths, k)
    strands = _both_strands(sequences)
    hits, windows = _verify(index, sequences, strands, cutoff, max_candidates, backend, seconds)
    began = time.perf_counter()
    placements = _single(hits, lengths)
    if mates is not None:
        if insert is None:
            insert = estimate_insert(_confident_inserts(hits, placements, len(reads))) \
                or tuple(config.MAP_DEFAULT_INSERT)
        placements = _paired(hits, lengths, placements, insert)
        hits = _rescue(index, sequences, strands, hits, placements, cutoff, insert, backend)
    _add(seconds, "pair", began)
    began = time.perf_counter()
    result = _records(index, sequences, strands, (hits, windows), placements, start,
                      mates is not None, backend, insert, k)
    _add(seconds, "cigar", began)
    result.stage_seconds = seconds
    return result


def _read_pairs(reads: Any, mates: Any,
                batch: int) -> Iterator[tuple[ReadBatch, ReadBatch | None, float]]:
    """The batches of ``reads``, each with its mates' (None for single-end) and the seconds
    spent reading them; ValueError where the reads and mates differ in number or a read's
    mate has another name (:func:`_check_mates`)."""
    batches = read_batches(reads, batch, "reads")
    mate_batches = read_batches(mates, batch, "mates") if mates is not None else None
    pairs = 0
    while True:
        began = time.perf_counter()
        chunk = next(batches, None)
        mate_chunk = next(mate_batches, None) if mate_batches is not None else None
        seconds = time.perf_counter() - began
        if mate_batches is not None:
            _check_mates((reads, chunk, batches), (mates, mate_chunk, mate_batches), pairs)
        if chunk is None:
            return
        pairs += len(chunk)
        yield chunk, mate_chunk, seconds


def _check_mates(first: tuple[Any, ReadBatch | None, Iterator[ReadBatch]],
                 second: tuple[Any, ReadBatch | None, Iterator[ReadBatch]], pairs: int) -> None:
    """ValueError unless the next batches of reads and of mates (each given as its input, the
    batch, None past the end, and the batches after it), after ``pairs`` pairs, hold as many
    reads, each with its mate's name but for /1 and /2
    (:func:`~gpualign.map._reads.mate_names_differ`)."""
    (reads, chunk, _), (mates, mate_chunk, _) = first, second
    where = (os.fspath(reads) if isinstance(reads, os.PathLike) else "the reads",
             os.fspath(mates) if isinstance(mates, os.PathLike) else "the mates")
    if chunk is None and mate_chunk is None:
        return
    if chunk is None or mate_chunk is None or len(chunk) != len(mate_chunk):
        # The rest of each input is counted for the message: the error ends the run.
        counts = [pairs + (len(batch) if batch is not None else 0) + sum(map(len, rest))
                  for _, batch, rest in (first, second)]
        raise ValueError(f"the reads and their mates differ in number: {where[0]} holds "
                         f"{counts[0]}, {where[1]} {counts[1]} (pairs are formed by record "
                         "order)")
    differ = mate_names_differ(chunk.sequences.names, mate_chunk.sequences.names)
    if differ is not None:
        raise ValueError(f"record #{chunk.start + differ} of {where[0]} "
                         f"({chunk.sequences.names[differ]!r}) and of {where[1]} "
                         f"({mate_chunk.sequences.names[differ]!r}) are not mates: pairs are "
                         "formed by record order, and their names must agree but for /1 and /2")


class ReadsAhead:
    """Reads, and their mates for pairs (as :func:`map_reads` takes them), read in batches on
    a thread from the moment this is made, a batch ahead of the mapping: given to
    :func:`iter_mappings` as its ``reads``, they are read while the caller builds the index (a
    file's first batch waits for the compiled parsers to load, about a second), as
    ``gpualign map`` does. Errors of the reads come out where the mapping takes them.

    Examples
    --------
    >>> from gpualign.map.index import as_map_index
    >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    >>> reads = ReadsAhead([genome[900:950]])
    >>> [result.pos.tolist() for _, _, result in iter_mappings(as_map_index([genome]), reads,
    ...                                                        backend="cpu")]
    [[900]]
    """

    def __init__(self, reads: Any, mates: Any = None) -> None:
        self.paired = mates is not None
        self.batches = reading_ahead(_read_pairs(reads, mates, _batch_reads()), 1)


def _batch_reads() -> int:
    """Reads (or pairs) a batch: :data:`gpualign.config.MAP_BATCH_READS`, at least 1."""
    return max(1, int(config.MAP_BATCH_READS))


def _map_here(index: Any, batches: Iterator[tuple[ReadBatch, ReadBatch | None, float]],
              insert: tuple[int, int] | None, backend: str, options: dict[str, Any],
              ) -> Iterator[tuple[ReadBatch, ReadBatch | None, MappingResult]]:
    """The batches (read ahead: :class:`ReadsAhead`) mapped one after the other in this
    process, the first pairs' insert sizes kept for the next ones."""
    for chunk, mate_chunk, read_seconds in batches:
        result = map_batch(index, chunk.sequences,
                           None if mate_chunk is None else mate_chunk.sequences, chunk.start,
                           insert, backend=backend, **options)
        insert = result.insert_size
        result.stage_seconds = {"read": read_seconds, **result.stage_seconds}
        yield chunk, mate_chunk, result


def iter_mappings(index: Any, reads: Any, mates: Any = None, *, k: int | None = None,
                  max_candidates: int = 8, insert_size: tuple[int, int] | None = None,
                  backend: str = "auto", progress: bool = False, client: Any = None,
                  ) -> Iterator[tuple[ReadBatch, ReadBatch | None, MappingResult]]:
    """Map ``reads`` (and their ``mates``) batch by batch (:data:`gpualign.config.MAP_BATCH_READS`
    reads or pairs each): yield each batch of reads, of mates (None for single-end) and its
    :class:`MappingResult` (read indices counted from the start of the input), in input
    order, so that a caller can write SAM as it goes. Arguments as :func:`map_reads`,
    ``index`` a :class:`~gpualign.map.index.MapIndex`, ``reads`` also a :class:`ReadsAhead`
    (holding the mates: ``mates`` None); with a ``client``, the batches are tasks on its Dask
    cluster (:func:`gpualign.map.distributed.cluster_mappings`). Without one, the next batch
    is read on a thread while this one maps.

    Examples
    --------
    >>> from gpualign.map.index import as_map_index
    >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    >>> index = as_map_index([genome])
    >>> with config.override(MAP_BATCH_READS=2):
    ...     batches = list(iter_mappings(index, [genome[i:i + 50] for i in (0, 900, 1800)],
    ...                                  backend="cpu"))
    >>> [(reads.start, result.read.tolist(), result.pos.tolist()) for reads, _, result in batches]
    [(0, [0, 1], [0, 900]), (2, [2], [1800])]
    """
    # Without a client the backend is resolved here, before any reading; with one, each
    # worker resolves it (CUDA where it has a GPU) and only its name is checked here.
    if client is None:
        backend = resolve_backend(backend)
    elif (backend or "auto").lower() not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")
    options = {"k": k, "max_candidates": max_candidates}
    insert_size = insert_bounds(insert_size)
    if isinstance(reads, ReadsAhead) and mates is not None:
        raise ValueError("iter_mappings: the mates of reads read ahead go to ReadsAhead")
    if not isinstance(reads, ReadsAhead) and client is None:
        reads = ReadsAhead(reads, mates)
    if isinstance(reads, ReadsAhead):
        batches, paired = reads.batches, reads.paired
    else:  # a cluster's client reads the batches as it hands them out
        batches, paired = _read_pairs(reads, mates, _batch_reads()), mates is not None
    mapped = _map_here(index, batches, insert_size, backend, options) if client is None else \
        cluster_mappings(client, map_batch, index, batches, insert_size, backend, options,
                         paired=paired)
    with progress_bar(None, progress, "map", "read") as bar:
        for chunk, mate_chunk, result in mapped:
            bar.update(len(chunk))
            yield chunk, mate_chunk, result


def concatenate(results: list[MappingResult]) -> MappingResult:
    """One result of the batches' ``results`` (stage seconds summed)."""
    first = results[0]
    arrays = {name: np.concatenate([getattr(r, name) for r in results])
              for name in ("read", "mate", "flag", "contig", "pos", "mapq", "nm", "score", "xs",
                           "mate_contig", "mate_pos", "tlen")}
    seconds: dict[str, float] = {}
    for result in results:
        for stage, value in result.stage_seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + value
    return MappingResult(cigar=SamCigars.concatenate([r.cigar for r in results]),
                         sa=[tag for r in results for tag in r.sa],
                         reference_names=first.reference_names,
                         reference_lengths=first.reference_lengths,
                         insert_size=results[-1].insert_size, stage_seconds=seconds, **arrays)


def map_reads(reference: Any, reads: Any, mates: Any = None, *, k: int | None = None,
              max_candidates: int = 8, insert_size: tuple[int, int] | None = None,
              backend: str = "auto", progress: bool = False,
              index_options: dict[str, Any] | None = None, client: Any = None,
              ) -> MappingResult:
    """Map DNA reads (single-end, or pairs with ``mates``) to a reference.

    Each read's candidate windows on both strands come from the reference's minimizer index;
    every candidate of a batch is verified at once by edit distance (``mode="infix"``: the whole
    read anywhere in its window) on ``backend``; the placement with the fewest edits is the
    primary, MAPQ weighs it against the best placement elsewhere (:func:`mapping_quality`) and
    its CIGAR comes from the read realigned in its window with minimap2's affine scores (or its
    edit path: :data:`gpualign.config.MAP_PRIMARY_CIGAR`), its ends soft-clipped where that
    scores better (:mod:`gpualign.map.segments`). Pairs face each other (one read forward, the
    other reverse) within the insert-size bounds; a read without a proper pair is searched for
    next to its mapped mate (rescue). A read without a placement within the cutoff takes its
    best local alignment of at least :data:`gpualign.config.MAP_MIN_SEGMENT` bases
    (soft-clipped), if it has one, else is reported unmapped; a read whose primary leaves that
    many bases unaligned that align elsewhere is split: a supplementary record (flag 0x800)
    follows its primary, both with an ``SA`` tag. No secondary records are written, as by
    minimap2 ``-ax sr``.

    Parameters
    ----------
    reference : MapIndex, pathlib.Path to a ``.gpumap`` index or a FASTA file, SequenceSet or
        sequences
        Indexed here on ``backend`` unless an index (``index_options``, such as ``k`` and
        ``w``, go to :meth:`MapIndex.build`).
    reads, mates : pathlib.Path to FASTA/FASTQ (plain or compressed; streamed), SequenceSet
        or sequences
        Pairs are formed by record order, and a read's mate must have its name but for a
        ``/1`` or ``/2`` at the end (ValueError naming the record otherwise). Symbols other
        than A/C/G/T are read as N, which matches nothing; reads that look like protein are
        refused (ValueError).
    k : int, optional
        Most edits of a placement; default :data:`gpualign.config.MAP_MAX_EDIT_FRACTION` of
        each read's length, rounded up.
    max_candidates : int
        Candidate windows of a read that are verified, at most (the index's best supported:
        :meth:`MapIndex.candidates`).
    insert_size : (int, int), optional
        Accepted insert sizes (outer distance of a pair, bases: two integers, ``0 <= lo <=
        hi``, else ValueError; see :func:`insert_bounds`); default: estimated from the
        confidently mapped pairs of the first batch, else
        :data:`gpualign.config.MAP_DEFAULT_INSERT`.
    backend : {"auto", "cpu", "cuda"}
        With a ``client``, each worker resolves it for its batches (``"auto"``: CUDA on a
        worker with a GPU), and this process for an index built here.
    progress : bool
        A progress bar over the reads on standard error.
    index_options : dict, optional
        Options of :meth:`MapIndex.build` (see ``reference``).
    client : dask.distributed.Client, optional
        Map on this Dask cluster (:mod:`gpualign.map.distributed`): every batch of reads is a
        task on a worker, which receives the index once; the results come back in input order
        and equal a mapping here. Tasks are pure, so a worker that dies loses no read (Dask
        runs its tasks again). The library never starts a cluster (``gpualign map --workers
        N`` does).

    Returns
    -------
    MappingResult
        One record per read, or per read of a pair (mates together).

    Examples
    --------
    >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    >>> one_deletion = genome[1000:1050] + genome[1051:1100]
    >>> reverse = reverse_complement(SequenceSet.from_sequences([genome[3000:3080]]))[0]
    >>> r = map_reads([genome], [one_deletion, reverse, "ACGT" * 20], backend="cpu")
    >>> r.pos.tolist(), r.flag.tolist(), r.cigar.tolist(), r.nm.tolist(), r.mapq.tolist()
    ([1000, 3000, -1], [0, 16, 4], ['50M1D49M', '80M', None], [1, 0, -1], [60, 60, 0])

    A chimera of two pieces of the genome is split:

    >>> r = map_reads([genome], [genome[1500:1580] + genome[3000:3070]], backend="cpu")
    >>> r.flag.tolist(), r.pos.tolist(), r.cigar.tolist()
    ([0, 2048], [1500, 3000], ['80M70S', '80H70M'])
    >>> r.sa
    ['0,3001,+,80S70M,60,0;', '0,1501,+,80M70S,60,0;']
    """
    from .index import as_map_index

    if max_candidates < 1:
        raise ValueError(f"max_candidates must be >= 1, got {max_candidates}")
    if k is not None and k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    insert_size = insert_bounds(insert_size)  # before the index is built
    index = as_map_index(reference, **{"backend": backend, **(index_options or {})})
    results = [result for _, _, result in iter_mappings(
        index, reads, mates, k=k, max_candidates=max_candidates, insert_size=insert_size,
        backend=backend, progress=progress, client=client)]
    if not results:
        empty = MappingResult(*(np.zeros(0, dtype) for dtype in (
            np.int64, np.int8, np.uint16, np.int64, np.int64, np.uint8)), SamCigars.nones(0),
            *(np.zeros(0, dtype) for dtype in (np.int32, np.int32, np.int32, np.int64, np.int64,
                                                np.int64)), [],
            list(index.reference.names), index.reference.lengths.copy(), insert_size)
        return empty
    return concatenate(results)
