"""The primary's CIGAR from an affine realignment (issue 23, ``config.MAP_PRIMARY_CIGAR``):
planted reads against a naive oracle (the read end to end in its window by Gotoh's matrices,
its ends clipped with minimap2's scores), an indel near an end aligned through as minimap2
does, a random tail clipped, both backends alike, and the setting checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from naive import align_naive

import gpualign
from gpualign import config
from gpualign.map.sam import merged_cigars
from gpualign.map.segments import AFFINE_ENDS, AFFINE_SCORING, clip_ends
from gpualign.sequences import SequenceSet

#: Reference bases on each side of a planted read's true span that the oracle aligns it in:
#: more than any shift of its ends below, so the oracle's window holds the mapper's.
ORACLE_PAD = 40


def _random(rng: np.random.Generator, length: int) -> str:
    return "".join("ACGT"[c] for c in rng.integers(0, 4, length))


@pytest.fixture(scope="module")
def genome() -> str:
    return _random(np.random.default_rng(23), 20_000)


def _planted(genome: str) -> dict[str, tuple[str, int]]:
    """Reads (forward strand) and where their first base comes from."""
    rng = np.random.default_rng(5)
    return {
        # A 6-base deletion 8 bases from the start: the edit path clips the 8 bases, minimap2
        # aligns through the gap (a gap costs 12 + 2 per base, 8 matches and the end bonus
        # win it back).
        "deletion near the start": (genome[1000:1008] + genome[1014:1250], 1000),
        # A 4-base insertion 12 bases from the end.
        "insertion near the end": (genome[3000:3238] + "ACGT" + genome[3238:3250], 3000),
        # Random bases after 200 aligned ones: clipped.
        "random tail": (genome[5000:5200] + _random(rng, 50), 5000),
        # Mismatches spread through the read: aligned end to end.
        "mismatches": ("".join(b if i % 37 else "ACGT"[("ACGT".index(b) + 1) % 4]
                               for i, b in enumerate(genome[7000:7150])), 7000),
    }


def _oracle(genome: str, read: str, start: int) -> tuple[int, str]:
    """POS and SAM CIGAR of ``read``: its semi-global alignment with minimap2's scores in the
    genome around ``start`` (Gotoh's matrices), the ends clipped with minimap2's end bonus."""
    lo = max(0, start - ORACLE_PAD)
    hi = min(len(genome), start + len(read) + ORACLE_PAD)
    codes = SequenceSet.from_sequences([read, genome[lo:hi]], "dna")
    table, _ = AFFINE_SCORING.table("dna")
    found = align_naive(codes.codes[:len(read)].tolist(), codes.codes[len(read):].tolist(),
                        table, AFFINE_SCORING.gap_open, AFFINE_SCORING.gap_extend,
                        "semi-global")
    clips = clip_ends([found.cigar], AFFINE_ENDS)
    left, right = int(clips.read_left[0]), int(clips.read_right[0])
    cigar = (f"{left}S" if left else "") + merged_cigars(clips.cigar)[0] \
        + (f"{right}S" if right else "")
    return lo + found.target_start + int(clips.reference_left[0]), cigar


def test_planted_reads_equal_the_naive_affine_oracle(genome, backend):
    planted = _planted(genome)
    reads = [read for read, _ in planted.values()]
    with config.override(MAP_PRIMARY_CIGAR="affine"):
        result = gpualign.map_reads([genome], reads, backend=backend)
    got = dict(zip(planted, zip(result.pos.tolist(), result.cigar, strict=True), strict=True))
    want = {name: _oracle(genome, read, start) for name, (read, start) in planted.items()}
    assert got == want
    # As minimap2 -ax sr aligns them.
    assert got == {"deletion near the start": (1000, "8M6D236M"),
                   "insertion near the end": (3000, "238M4I12M"),
                   "random tail": (5000, "200M50S"),
                   "mismatches": (7000, "150M")}
    assert result.nm.tolist() == [6, 4, 0, 5]
    # AS stays in the mapper's units (aligned read bases less 5 an edit), as XS and MAPQ.
    assert result.score.tolist() == [244 - 30, 250 - 20, 200, 150 - 25]


def test_the_edit_path_clips_what_the_affine_path_aligns(genome):
    planted = _planted(genome)
    reads = [read for read, _ in planted.values()]
    with config.override(MAP_PRIMARY_CIGAR="edit"):
        edit = gpualign.map_reads([genome], reads, backend="cpu")
    affine = gpualign.map_reads([genome], reads, backend="cpu")  # the default
    assert edit.cigar[:2] == ["8S236M", "238M12S"]
    assert edit.pos[0] == 1014
    assert affine.cigar[:2] == ["8M6D236M", "238M4I12M"]
    # The placement's quality does not depend on where the CIGAR comes from.
    assert edit.mapq.tolist() == affine.mapq.tolist()
    assert edit.xs.tolist() == affine.xs.tolist()


def test_backends_agree_on_affine_cigars(genome, backend):
    rng = np.random.default_rng(8)
    reads = []
    for _ in range(60):
        start = int(rng.integers(0, len(genome) - 300))
        read = list(genome[start:start + 150])
        for _ in range(int(rng.integers(0, 4))):
            at = int(rng.integers(0, len(read)))
            kind = rng.integers(0, 3)
            if kind == 0:
                read[at] = "ACGT"[int(rng.integers(0, 4))]
            elif kind == 1:
                read.insert(at, _random(rng, int(rng.integers(1, 5))))
            else:
                del read[at:at + int(rng.integers(1, 5))]
        reads.append("".join(read))
    with config.override(MAP_PRIMARY_CIGAR="affine"):
        cpu = gpualign.map_reads([genome], reads, backend="cpu")
        other = gpualign.map_reads([genome], reads, backend=backend)
    assert other.cigar == cpu.cigar
    for name in ("pos", "flag", "nm", "score", "mapq", "xs"):
        assert getattr(other, name).tolist() == getattr(cpu, name).tolist(), name


def test_an_unknown_primary_cigar_setting_is_refused(genome):
    with config.override(MAP_PRIMARY_CIGAR="gotoh"), pytest.raises(ValueError, match="gotoh"):
        gpualign.map_reads([genome], [genome[100:200]], backend="cpu")
