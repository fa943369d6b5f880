"""The primary's CIGAR from an affine realignment (issue 23, ``config.MAP_PRIMARY_CIGAR``):
planted reads against a naive oracle (the read end to end in its window by Gotoh's matrices,
its ends clipped with minimap2's scores) and as minimap2 ``-ax sr`` places them: an indel
near an end aligned through, a random tail clipped, long indels (past the edit cutoff)
aligned through by the local stage; both backends alike, and the setting checked.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from naive import align_naive

import gpualign
from gpualign import config
from gpualign.map import api as map_api
from gpualign.map.sam import merged_cigars
from gpualign.map.segments import AFFINE_ENDS, AFFINE_SCORING, clip_ends
from gpualign.sequences import SequenceSet

MINIMAP2 = shutil.which("minimap2")

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
        # A 6-base deletion 12 bases from the start: the edit path clips the 11 bases before
        # it, minimap2 aligns through the gap (12 + 2 a base, won back by the matches and the
        # end bonus).
        "deletion near the start": (genome[1000:1012] + genome[1018:1250], 1000),
        # The same 8 bases from the start: the matches before it and the end bonus only make
        # up for the gap, and both tools clip (minimap2 too: 7S237M).
        "deletion at the break-even": (genome[2000:2008] + genome[2014:2250], 2000),
        # A 4-base insertion 12 bases from the end.
        "insertion near the end": (genome[3000:3238] + "ACGT" + genome[3238:3250], 3000),
        # Random bases after 200 aligned ones: clipped.
        "random tail": (genome[5000:5200] + _random(rng, 50), 5000),
        # Mismatches spread through the read: aligned end to end.
        "mismatches": ("".join(b if i % 37 else "ACGT"[("ACGT".index(b) + 1) % 4]
                               for i, b in enumerate(genome[7000:7150])), 7000),
        # Long indels: more edits than the read's cutoff (15), so no end-to-end placement;
        # its local alignment, with minimap2's scores and a gap counted once against the
        # cutoff, aligns through them as minimap2 does (the edit setting clips or splits).
        "long deletion": (genome[9000:9075] + genome[9095:9170], 9000),
        "long insertion": (genome[11000:11070] + "ACGTTGCAACGT" + genome[11070:11150], 11000),
        # A 30-base deletion: the local stage's segment through it is ranked and weighed by
        # its gap counted once (MAPQ 60 as minimap2's), not by 30 edits.
        "deletion past the cutoff": (genome[13000:13075] + genome[13105:13180], 13000),
        # A 3-base deletion 7 bases from the end: the affine path keeps it (no swap for the
        # ungapped span with as many mismatches, which the edit path's ties call for).
        "short deletion near the end": (genome[15000:15140] + genome[15143:15150], 15000),
        # A 16-base deletion 20 bases from the end: past the edit path's end by more than the
        # read's cutoff, inside the window's pad.
        "deletion 20 bases from the end": (genome[17000:17130] + genome[17146:17166], 17000),
        # Seven N (-1 each, as minimap2 scores them) stay aligned, not a pair of 7-base gaps.
        "a run of N": (genome[19000:19070] + "N" * 7 + genome[19077:19150], 19000),
    }


#: minimap2 2.24 ``-ax sr``'s POS (0-based) and CIGAR of :func:`_planted`'s reads.
MINIMAP2_PLACEMENTS = {"deletion near the start": (1000, "11M6D233M"),
                       "deletion at the break-even": (2013, "7S237M"),
                       "insertion near the end": (3000, "237M4I13M"),
                       "random tail": (5000, "200M50S"),
                       "mismatches": (7000, "150M"),
                       "long deletion": (9000, "73M20D77M"),
                       "long insertion": (11000, "70M12I80M"),
                       "deletion past the cutoff": (13000, "75M30D75M"),
                       "short deletion near the end": (15000, "140M3D7M"),
                       "deletion 20 bases from the end": (17000, "130M16D20M"),
                       "a run of N": (19000, "150M")}


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
    assert got == MINIMAP2_PLACEMENTS
    assert result.nm.tolist() == [6, 0, 4, 0, 5, 20, 12, 30, 3, 16, 7]
    # AS stays in the mapper's units (aligned read bases less 5 an edit, every gap base one),
    # as XS and MAPQ.
    assert result.score.tolist() == [244 - 30, 237, 254 - 20, 200, 150 - 25, 150 - 100,
                                     162 - 60, 150 - 150, 147 - 15, 150 - 80, 150 - 35]
    assert (result.mapq == 60).all()


@pytest.mark.skipif(MINIMAP2 is None, reason="minimap2 is not on PATH")
def test_planted_reads_as_minimap2_places_them(genome, tmp_path):
    planted = _planted(genome)
    (tmp_path / "genome.fa").write_text(f">genome\n{genome}\n")
    (tmp_path / "reads.fa").write_text("".join(f">{i}\n{read}\n" for i, (read, _)
                                               in enumerate(planted.values())))
    sam = subprocess.run([MINIMAP2, "-ax", "sr", str(tmp_path / "genome.fa"),
                          str(tmp_path / "reads.fa")], capture_output=True, text=True,
                         check=True).stdout
    records = [line.split("\t") for line in sam.splitlines() if not line.startswith("@")]
    assert {name: (int(fields[3]) - 1, fields[5]) for name, fields in zip(
        planted, records, strict=True)} == MINIMAP2_PLACEMENTS


def test_the_edit_path_clips_what_the_affine_path_aligns(genome):
    planted = _planted(genome)
    reads = [read for read, _ in planted.values()]
    with config.override(MAP_PRIMARY_CIGAR="edit"):
        edit = gpualign.map_reads([genome], reads, backend="cpu")
    affine = gpualign.map_reads([genome], reads, backend="cpu")  # the default
    assert edit.cigar[0] == "11S233M" and edit.pos[0] == 1017
    assert affine.cigar[0] == "11M6D233M" and affine.pos[0] == 1000
    assert edit.cigar[5] == "73S77M" and affine.cigar[5] == "73M20D77M"
    # The placement's quality does not depend on where the CIGAR comes from (the reads placed
    # end to end; the edit setting splits the read with a 30-base deletion in two).
    for name in ("mapq", "xs"):
        assert getattr(edit, name)[edit.primary][:7].tolist() == \
            getattr(affine, name)[affine.primary][:7].tolist(), name


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


def test_realignments_in_bands_equal_the_full_ones(genome, backend, monkeypatch):
    # The reads realigned in bands (align's band: most of them settled there) and in their
    # whole windows give the same records; the planted reads' long indels are aligned in full.
    rng = np.random.default_rng(9)
    reads = [read for read, _ in _planted(genome).values()]
    for _ in range(200):
        start = int(rng.integers(0, len(genome) - 200))
        read = list(genome[start:start + 150])
        for _ in range(int(rng.integers(0, 6))):
            at = int(rng.integers(0, len(read)))
            read[at:at + int(rng.integers(0, 3))] = _random(rng, int(rng.integers(0, 3)))
        reads.append("".join(read))
    banded = gpualign.map_reads([genome], reads, backend=backend)
    monkeypatch.setattr(map_api, "band_for_edits", lambda *args: None)
    whole = gpualign.map_reads([genome], reads, backend=backend)
    assert banded.cigar == whole.cigar
    for name in ("read", "pos", "flag", "nm", "score", "mapq", "xs"):
        assert getattr(banded, name).tolist() == getattr(whole, name).tolist(), name


@pytest.mark.parametrize("read", ["placed", "unplaced"])
def test_an_unknown_primary_cigar_setting_is_refused(genome, read):
    sequence = genome[100:200] if read == "placed" else "ACGT" * 25
    with config.override(MAP_PRIMARY_CIGAR="gotoh"), pytest.raises(ValueError, match="gotoh"):
        gpualign.map_reads([genome], [sequence], backend="cpu")
