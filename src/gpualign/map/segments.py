"""The aligned part of a read: soft clipping of a placement's ends, scored as the mapper
scores placements.

A placement's score is minimap2's short-read score (``-x sr``: +2 a match, -8 a mismatch, an
end bonus of 10) halved: +1 a read base aligned, :data:`EDIT_SCORE` less an edit, so that an
alignment scores its aligned read bases less ``EDIT_SCORE`` per edit (``AS``). An end of the
read is clipped where dropping it raises that score by at least :data:`END_BONUS`, the bonus
minimap2 gives an alignment that reaches the read's end: one mismatch at an end stays
aligned, two clip.

An affine path (``gpualign.config.MAP_PRIMARY_CIGAR = "affine"``) is clipped with minimap2's own
scores (:data:`AFFINE_SCORING`: a gap costs its opening once, not an edit a base) and end bonus
(:data:`AFFINE_END_BONUS`): :data:`AFFINE_ENDS` instead of :data:`EDIT_ENDS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cigar import PackedCigars, check_letters, op_counts
from ..codes import CIGAR_OPS
from ..scoring import Scoring

__all__ = ["AFFINE_END_BONUS", "AFFINE_ENDS", "AFFINE_SCORING", "EDIT_ENDS", "EDIT_SCORE",
           "END_BONUS", "Clips", "EndScoring", "cigar_edits", "clip_ends"]

#: What an edit costs, against a matched base: an alignment scores its aligned read bases less
#: this much per edit.
EDIT_SCORE = 5

#: The score an alignment that reaches an end of the read keeps over one clipped there.
END_BONUS = 5

#: minimap2 ``-x sr``'s scores (``-A2 -B8 -O12 -E2``: a gap of ``L`` bases costs ``12 + 2L``)
#: in gpualign's gap convention (``gap_open + (L - 1) * gap_extend``), with ``N`` (in the read
#: or the reference) scoring -1 against anything, as minimap2's ``--score-N`` does: as a full
#: mismatch, a run of seven ``N`` would cost more than a pair of gaps around it. minimap2's
#: second, longer gap cost (``-O24 -E1``, cheaper past 12 bases) has no place in one affine
#: scheme.
AFFINE_SCORING = Scoring.from_text(
    "   A  C  G  T  N\n"
    "A  2 -8 -8 -8 -1\n"
    "C -8  2 -8 -8 -1\n"
    "G -8 -8  2 -8 -1\n"
    "T -8 -8 -8  2 -1\n"
    "N -1 -1 -1 -1 -1\n", "minimap2 -x sr", gap_open=14, gap_extend=2)

#: minimap2 ``-x sr``'s end bonus (``--end-bonus=10``), in :data:`AFFINE_SCORING`'s units.
AFFINE_END_BONUS = 10


@dataclass(frozen=True)
class EndScoring:
    """How :func:`clip_ends` scores a CIGAR: each run of an operation of ``"=XID"`` scores its
    length times ``column`` plus ``run`` (an affine gap's opening), and an alignment that
    reaches an end of the read keeps ``end_bonus`` over one clipped there.

    Examples
    --------
    >>> EndScoring.affine(Scoring(match=2, mismatch=-8, gap_open=14, gap_extend=2), 10).run
    (0, 0, -12, -12)
    """

    column: tuple[int, int, int, int]
    run: tuple[int, int, int, int]
    end_bonus: int

    @classmethod
    def affine(cls, scoring: Scoring, end_bonus: int) -> EndScoring:
        """The columns scored as ``scoring`` scores two equal and two different bases (``A``
        against ``A`` and ``C``): a gap of ``L`` bases ``-(gap_open + (L - 1) * gap_extend)``.
        A CIGAR does not tell an ``N`` from a mismatch: both score as the mismatch here."""
        opening = scoring.gap_extend - scoring.gap_open
        return cls((scoring.score("A", "A"), scoring.score("A", "C"), -scoring.gap_extend,
                    -scoring.gap_extend), (0, 0, opening, opening), end_bonus)


#: The mapper's own score (the module's docstring): +1 a read base aligned, -EDIT_SCORE an edit.
EDIT_ENDS = EndScoring((1, 1 - EDIT_SCORE, 1 - EDIT_SCORE, -EDIT_SCORE), (0, 0, 0, 0), END_BONUS)

#: minimap2 ``-x sr``'s score, for affine paths.
AFFINE_ENDS = EndScoring.affine(AFFINE_SCORING, AFFINE_END_BONUS)


@dataclass
class Clips:
    """The ends clipped off alignments (see :func:`clip_ends`), in the CIGARs' orientation
    (the reference's).

    Attributes
    ----------
    read_left, read_right : np.ndarray of int64
        Read bases clipped before and after the aligned part.
    reference_left, reference_right : np.ndarray of int64
        Reference bases the clipped columns covered: the aligned part starts and ends inside
        by this many.
    edits : np.ndarray of int64
        Edits of the aligned part (``NM``).
    cigar : list of str, or PackedCigars
        The extended CIGARs of the aligned parts (without the clipped ends), of the kind that
        was clipped.
    """

    read_left: np.ndarray
    read_right: np.ndarray
    reference_left: np.ndarray
    reference_right: np.ndarray
    edits: np.ndarray
    cigar: list[str] | PackedCigars


def clip_ends(cigars: Sequence[str] | PackedCigars, scoring: EndScoring = EDIT_ENDS) -> Clips:
    """Clip the ends of alignments (extended CIGARs of whole reads) where dropping them raises
    the score (``scoring``; default the mapper's, :data:`EDIT_SCORE`) by at least its end
    bonus (:data:`END_BONUS`): each end at the cut that leaves the highest score (the least
    clipped of equal ones), the right end first, then the left end of what it left. A cut
    falls only before or after a run of matches. The CIGARs are strings, or a
    :class:`~gpualign.cigar.PackedCigars`, clipped as runs with no text (its pairs without an
    alignment have no runs: nothing is clipped, and they stay without one).

    Examples
    --------
    >>> clips = clip_ends(["130=1X2=1X1=1X1=1X1=1X1=1X1=1X1=1X", "149=1X", "1X1=1X147="])
    >>> clips.cigar, clips.read_left.tolist(), clips.read_right.tolist(), clips.edits.tolist()
    (['130=', '149=1X', '147='], [0, 0, 3], [16, 0, 0], [0, 1, 0])

    With minimap2's affine scores a gap near an end costs its opening once, so the end stays:

    >>> [clip_ends(["10=6I134="], scoring).cigar[0] for scoring in (EDIT_ENDS, AFFINE_ENDS)]
    ['134=', '10=6I134=']
    """
    from ._host import clip_runs  # Numba: loaded by the runs that map

    if isinstance(cigars, PackedCigars):
        check_letters(cigars, CIGAR_OPS, "clip_ends")
    packed = cigars if isinstance(cigars, PackedCigars) else PackedCigars.from_strings(
        [str(text) for text in cigars])
    read_left, read_right, reference_left, reference_right, edits, kept_from, kept_to = \
        clip_runs(packed.ops, packed.lengths, packed.offsets,
                  np.array(scoring.column, dtype=np.int64),
                  np.array(scoring.run, dtype=np.int64), scoring.end_bonus)
    # The runs are cut where read bases are clipped (a deletion cut off an end alone leaves
    # them).
    cut = (read_left > 0) | (read_right > 0)
    kept = packed.cut(np.where(cut, kept_from, packed.offsets[:-1]),
                      np.where(cut, kept_to, packed.offsets[1:]))
    return Clips(read_left, read_right, reference_left, reference_right, edits,
                 kept if isinstance(cigars, PackedCigars) else kept.to_text())


def cigar_edits(cigars: Sequence[str] | PackedCigars, gaps_once: bool = False) -> np.ndarray:
    """The edits (``X``, ``I`` and ``D`` columns: ``NM``) of each extended CIGAR (strings, or
    a :class:`~gpualign.cigar.PackedCigars` read from its arrays); with ``gaps_once``, a gap
    counts once whatever its length (mismatches and gaps: the events of an affine alignment,
    whose gap costs its opening once).

    Examples
    --------
    >>> cigar_edits(["10=2X3=1D4=", ""]).tolist(), cigar_edits(["10=2X3=4D4="], True).tolist()
    ([3, 0], [3])
    """
    columns, runs = op_counts(cigars)  # in the order "=XID"
    gaps = runs[:, 2:] if gaps_once else columns[:, 2:]
    return columns[:, 1] + gaps.sum(axis=1)
