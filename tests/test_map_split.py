"""Soft clipping, split (chimeric) reads and repeats in read mapping (issue 23): clipped ends
against a naive oracle, planted chimeras, repeats, random tails and reads over contig ends
mapped as minimap2 ``-ax sr`` maps them (supplementary records with hard clips and SA tags, no
secondary records), CIGARs re-scored against the reference, and the SAM through samtools.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import gpualign
from gpualign import config
from gpualign.cigar import PackedCigars, cigar_runs
from gpualign.cli import main
from gpualign.map import api
from gpualign.map.api import MappingResult
from gpualign.map.sam import (
    FIRST,
    MATE_REVERSE,
    NO_SCORE,
    PAIRED,
    PROPER_PAIR,
    REVERSE,
    SECOND,
    SUPPLEMENTARY,
    UNMAPPED,
)
from gpualign.map.segments import (
    AFFINE_ENDS,
    EDIT_ENDS,
    EDIT_SCORE,
    EndScoring,
    cigar_edits,
    clip_ends,
)

SAMTOOLS = shutil.which("samtools")
MINIMAP2 = shutil.which("minimap2")

_COMPLEMENT = str.maketrans("ACGT", "TGCA")


def _rc(text: str) -> str:
    return text.translate(_COMPLEMENT)[::-1]


def _random(rng: np.random.Generator, length: int) -> str:
    return "".join("ACGT"[c] for c in rng.integers(0, 4, length))


# --------------------------------------------------------------------------- clipping


def _naive_clip(cigar: str, scoring: EndScoring = EDIT_ENDS) -> str:
    """The clipped CIGAR by columns: the right end cut where the score before it is highest
    (the latest such column), clipped when that beats the whole by the end bonus or more; then
    the left end of the rest cut where the score before it is lowest (the earliest). A column
    scores its operation's ``scoring.column``, the first of a run also its ``scoring.run``."""
    columns = "".join(op * int(n) for n, op in re.findall(r"([0-9]+)([=XID])", cigar))
    values = [scoring.column["=XID".index(op)]
              + (scoring.run["=XID".index(op)] if i == 0 or columns[i - 1] != op else 0)
              for i, op in enumerate(columns)]
    prefix = np.concatenate(([0], np.cumsum(values)))
    stop = len(columns)
    best = max(range(len(prefix)), key=lambda cut: (prefix[cut], cut))
    if prefix[best] - prefix[-1] >= scoring.end_bonus:
        stop = best
    start = 0
    best = min(range(stop + 1), key=lambda cut: (prefix[cut], cut))
    if -prefix[best] >= scoring.end_bonus:
        start = best
    left = sum(op != "D" for op in columns[:start])
    right = sum(op != "D" for op in columns[stop:])
    kept = _runs_text(columns[start:stop])
    return (f"{left}S" if left else "") + kept + (f"{right}S" if right else "")


def _runs_text(columns: str) -> str:
    """The extended CIGAR of a string of columns (one operation letter each)."""
    return "".join(f"{len(run.group())}{run.group()[0]}"
                   for run in re.finditer(r"(=+|X+|I+|D+)", columns))


def _with_clips(clips) -> list[str]:
    """The clipped CIGARs with their clipped ends as ``S``."""
    return [(f"{left}S" if left else "") + text + (f"{right}S" if right else "")
            for left, text, right in zip(clips.read_left.tolist(), clips.cigar,
                                         clips.read_right.tolist(), strict=True)]


def test_clip_ends_follows_minimap2s_end_bonus():
    # minimap2 -ax sr on the same reads: one mismatch at an end stays, two are clipped, and
    # two mismatches three bases from the end clip five bases (dropping them gains the bonus).
    cigars = ["149=1X", "148=2X", "148=1X1=", "146=2X2=", "147=1X1=1X", "145=2X3=", "2X148=",
              "1X149=", "146=2I2=", "10=1D140="]
    expected = ["149=1X", "148=2S", "148=1X1=", "146=4S", "147=3S", "145=5S", "2S148=",
                "1X149=", "146=4S", "10=1D140="]
    clips = clip_ends(cigars)
    assert _with_clips(clips) == expected
    assert clips.read_right.tolist() == [0, 2, 0, 4, 3, 5, 0, 0, 4, 0]
    assert clips.reference_right.tolist() == [0, 2, 0, 4, 3, 5, 0, 0, 2, 0]
    assert clips.read_left.tolist() == [0, 0, 0, 0, 0, 0, 2, 0, 0, 0]
    assert clips.edits.tolist() == [1, 0, 1, 0, 0, 0, 0, 1, 0, 1]


@pytest.mark.parametrize("scoring", [EDIT_ENDS, AFFINE_ENDS], ids=["edit", "affine"])
def test_clip_ends_equals_the_naive_clip(scoring):
    rng = np.random.default_rng(11)
    cigars = []
    for _ in range(400):
        # Runs of columns, a match at both ends as an infix edit path has (no end gap).
        columns = "=" + "".join(
            op * int(rng.integers(1, 30 if op == "=" else 6))
            for op in rng.choice(list("=XID"), rng.integers(1, 12), p=[0.55, 0.25, 0.1, 0.1]))
        cigars.append(_runs_text(columns + "="))
    clips = clip_ends(cigars, scoring)
    assert _with_clips(clips) == [_naive_clip(c, scoring) for c in cigars]
    assert clips.edits.tolist() == cigar_edits(clips.cigar).tolist()
    # The reference bases of the clipped columns and of the kept ones make the whole span.
    spans = [sum(int(n) for n, op in re.findall(r"([0-9]+)([=XD])", c)) for c in cigars]
    kept = [sum(int(n) for n, op in re.findall(r"([0-9]+)([=XD])", c)) for c in clips.cigar]
    assert (clips.reference_left + clips.reference_right + kept == spans).all()


@pytest.mark.parametrize("scoring", [EDIT_ENDS, AFFINE_ENDS], ids=["edit", "affine"])
def test_clip_ends_of_runs_equals_the_clip_of_strings(scoring):
    # The mapper clips its PackedCigars: the same cuts as of the strings, unmapped reads (no
    # alignment) left without one, clips at both ends and none, deletions cut off an end.
    rng = np.random.default_rng(12)
    cigars = ["2X140=2X", "3X1=2X144=", "145=1X1=3X", "1X1=1X1=1X", "", "7=", "1D149=",
              "148=2X1D", "3D2X145="]
    for _ in range(300):
        runs = rng.choice(list("=XID"), rng.integers(1, 10), p=[0.5, 0.3, 0.1, 0.1])
        cigars.append("".join(f"{rng.integers(1, 25 if op == '=' else 5)}{op}" for op in runs))
    with_none = [None, *cigars[:150], None, *cigars[150:]]
    strings = clip_ends(cigars, scoring)
    runs = clip_ends(PackedCigars.from_strings(with_none), scoring)
    assert isinstance(runs.cigar, PackedCigars) and isinstance(strings.cigar, list)
    mapped = np.array([c is not None for c in with_none])
    assert runs.cigar.take(mapped) == strings.cigar and runs.cigar.take(~mapped) == [None] * 2
    for name in ("read_left", "read_right", "reference_left", "reference_right", "edits"):
        assert getattr(runs, name)[mapped].tolist() == getattr(strings, name).tolist(), name
        assert not getattr(runs, name)[~mapped].any(), name
    assert (strings.read_left > 0).any() and (strings.read_right > 0).any()
    assert ((strings.read_left > 0) & (strings.read_right > 0)).any()


def _naive_extension(read: str, reference: str, first_read: int, first_reference: int,
                     step: int, clip: int) -> str:
    """The columns (``=``/``X``) an alignment takes of its clipped bases ``read[first_read]``,
    ``read[first_read + step]`` ... against the reference's from ``first_reference``, as
    ``_extend_clips`` defines them: up to the highest running score above 0 (the most
    columns of equal ones), or all of them when they reach the read's end and score less
    than that best by under the end bonus."""
    size = min(clip, first_reference + 1 if step < 0 else len(reference) - first_reference)
    columns = ["=" if read[first_read + step * k] == reference[first_reference + step * k]
               and read[first_read + step * k] != "N" else "X" for k in range(size)]
    running = np.cumsum([1 if c == "=" else 1 - EDIT_SCORE for c in columns]).tolist()
    best = max(range(size), key=lambda k: (running[k], k), default=-1)
    take = best + 1 if best >= 0 and running[best] > 0 else 0
    best_score = running[best] if take else 0
    if size and size == clip and best_score - running[-1] < EDIT_ENDS.end_bonus:
        take = size
    return "".join(columns[:take])


def test_extensions_into_clips_equal_the_naive_walk():
    # Alignments clipped on either side or both (some clips past the reference's ends, bases
    # that match, differ or are N), forward and reverse, and unmapped reads left alone.
    rng = np.random.default_rng(21)
    contigs = [_random(rng, 700), _random(rng, 500)]
    reads, rows = [], []
    for _ in range(300):
        contig = int(rng.integers(0, 2))
        sequence = contigs[contig]
        core = int(rng.integers(5, 60))
        pos = int(rng.integers(0, len(sequence) - core + 1))
        left, right = (int(n) * int(rng.integers(0, 2)) for n in rng.integers(1, 30, 2))
        # The clipped bases: the reference's where there is one, mutated often.
        aligned = "".join(
            sequence[at] if 0 <= at < len(sequence) and rng.random() < 0.8
            else "ACGTN"[rng.integers(0, 5)] for at in range(pos - left, pos + core + right))
        reverse = bool(rng.integers(0, 2))
        reads.append(_rc(aligned) if reverse else aligned)
        rows.append((contig, pos, core, left, right, reverse, aligned))
    unmapped = {3, 77, 150}
    count = len(reads)
    strands = gpualign.SequenceSet.from_sequences(reads + [_rc(r) for r in reads], "dna")
    reference = gpualign.SequenceSet.from_sequences(contigs, "dna")
    cigars = [None if i in unmapped else f"{row[2]}=" for i, row in enumerate(rows)]
    placed = api._Aligned(
        np.arange(count), np.array([-1 if i in unmapped else r[0] for i, r in enumerate(rows)]),
        np.array([r[1] for r in rows]), np.array([r[1] + r[2] for r in rows]),
        np.array([r[5] for r in rows]), np.full(count, 2, dtype=np.int32),
        np.zeros(count, dtype=np.uint8), np.zeros(count, dtype=np.int32),
        np.array([r[3] for r in rows]), np.array([r[4] for r in rows]),
        PackedCigars.from_strings(cigars))
    api._extend_clips(reference, strands, placed)
    taken = []
    for i, (contig, pos, core, left, right, _, aligned) in enumerate(rows):
        if i in unmapped:
            assert placed.cigar[i] is None and placed.clip_left[i] == left
            continue
        sequence = contigs[contig]
        after = _naive_extension(aligned, sequence, left + core, pos + core, 1, right)
        before = _naive_extension(aligned, sequence, left - 1, pos - 1, -1, left)[::-1]
        runs = [_runs_text(part) for part in (before, "=" * core, after)]
        assert placed.cigar[i] == "".join(runs), i
        assert placed.nm[i] == 2 + (before + after).count("X"), i
        assert (placed.pos[i], placed.end[i]) == (pos - len(before), pos + core + len(after))
        assert (placed.clip_left[i], placed.clip_right[i]) == (left - len(before),
                                                               right - len(after)), i
        taken += [(len(before), left), (len(after), right)]
    # Clips taken whole, in part and not at all, mismatches among the columns taken.
    assert {(0 < n == clip, 0 < n < clip, n == 0 < clip) for n, clip in taken} >= {
        (True, False, False), (False, True, False), (False, False, True)}
    assert (placed.nm[placed.contig >= 0] > 2).any()


def _naive_segments(local: dict, placed: dict, lengths: np.ndarray, minimum: int) -> tuple:
    """The choices of split reads, a read and an alignment at a time (``_split``'s rule):
    ``local`` and ``placed`` hold arrays of the fields of alignments (``placed``: one a read,
    changed in place where an unmapped read takes its read's first local alignment)."""
    def span(fields: dict, i: int, length: int) -> tuple[int, int]:
        if fields["reverse"][i]:
            return fields["clip_right"][i], length - fields["clip_left"][i]
        return fields["clip_left"][i], length - fields["clip_right"][i]

    def overlapping(a: dict, i: int, b: dict, j: int) -> bool:
        return (a["contig"][i] == b["contig"][j] and a["reverse"][i] == b["reverse"][j]
                and a["pos"][i] < b["end"][j] and b["pos"][j] < a["end"][i])

    def xs(i: int, group: range, length: int) -> int:
        lo, hi = span(local, i, length)
        best = NO_SCORE
        for j in group:
            other = span(local, j, length)
            if j != i and 2 * (min(hi, other[1]) - max(lo, other[0])) >= hi - lo \
                    and not overlapping(local, i, local, j):
                best = max(best, int(local["score"][j]))
        return best

    primaries, chosen = [], []
    read = local["read"]
    bounds = np.append(np.flatnonzero(np.diff(read, prepend=-1)), len(read)).tolist()
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        r, group = int(read[lo]), range(lo, hi)
        length = int(lengths[r])
        if placed["contig"][r] < 0:
            for name in placed:
                placed[name][r] = local[name][lo]
            primaries.append((lo, xs(lo, group, length)))
        covered = span(placed, r, length)
        for j in group:
            start, stop = span(local, j, length)
            new = (stop - start) - max(0, min(stop, covered[1]) - max(start, covered[0]))
            if new >= minimum and not overlapping(local, j, placed, r):
                chosen.append((j, xs(j, group, length)))
                break
    return primaries, chosen


def test_segment_choices_equal_the_naive_loop():
    # Reads with several local alignments on two contigs and both strands, overlapping one
    # another or the read's primary; some reads unmapped (they take their first alignment).
    from gpualign.map._host import choose_segments

    rng = np.random.default_rng(5)
    reads = 400
    lengths = rng.integers(60, 160, reads)
    read = np.sort(rng.choice(reads, 1500))
    count = len(read)

    def alignments(size: int, of: np.ndarray) -> dict:
        clip_left = rng.integers(0, lengths[of] // 2)
        clip_right = rng.integers(0, lengths[of] - clip_left)
        pos = rng.integers(0, 400, size)
        return {"contig": rng.integers(0, 2, size), "pos": pos,
                "end": pos + lengths[of] - clip_left - clip_right,
                "reverse": rng.random(size) < 0.5, "nm": rng.integers(0, 9, size).astype(np.int32),
                "clip_left": clip_left, "clip_right": clip_right}

    local = {"read": read, **alignments(count, read)}
    score = rng.integers(20, 150, count).astype(np.int32)
    placed = alignments(reads, np.arange(reads))
    placed["contig"][rng.random(reads) < 0.3] = -1
    want_placed = {name: values.copy() for name, values in placed.items()}
    want_primaries, want_chosen = _naive_segments({**local, "score": score}, want_placed,
                                                  lengths, 35)
    primary, primary_xs, chosen, chosen_xs = choose_segments(
        np.append(np.flatnonzero(np.diff(read, prepend=-1)), count), read, local["contig"],
        local["pos"], local["end"], local["reverse"], local["nm"], local["clip_left"],
        local["clip_right"], score, lengths, 35, NO_SCORE, placed["contig"], placed["pos"],
        placed["end"], placed["reverse"], placed["nm"], placed["clip_left"],
        placed["clip_right"])
    assert list(zip(primary[primary >= 0].tolist(), primary_xs[primary >= 0].tolist(),
                    strict=True)) == want_primaries
    assert list(zip(chosen[chosen >= 0].tolist(), chosen_xs[chosen >= 0].tolist(),
                    strict=True)) == want_chosen
    for name, values in placed.items():
        assert values.tolist() == want_placed[name].tolist(), name
    # Both kinds of choice happen, with and without an XS.
    assert len(want_primaries) > 20 and len(want_chosen) > 20
    assert {xs == NO_SCORE for _, xs in want_chosen} == {True, False}


def test_cigar_runs_of_long_runs_and_empty_cigars():
    owner, length, op = cigar_runs(["", "123456=", "", "1X1000000I"])
    assert owner.tolist() == [1, 3, 3] and length.tolist() == [123456, 1, 1000000]
    assert op.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="extended CIGARs"):
        cigar_runs(["10M"])


# --------------------------------------------------------------------------- planted reads


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    """Two random contigs (the first with a 1 kb segment twice) and reads planted on them:
    chimeras of two segments (across contigs, strands, far apart on one contig), a read in the
    repeat, reads with random ends, reads over the contigs' ends, a chimera with a short
    second segment, and a read with nothing of the reference."""
    rng = np.random.default_rng(2026)
    one, two, repeat = _random(rng, 20000), _random(rng, 15000), _random(rng, 1000)
    one = one[:5000] + repeat + one[5000:12000] + repeat + one[12000:]
    tail = _random(rng, 20)
    # The random tail's first base differs from the reference base it replaces, so that the
    # clip is exactly 20 bases (a base that matched would be aligned, by minimap2 too).
    while tail[0] == one[9130]:
        tail = _random(rng, 20)
    head = _random(rng, 20)
    while head[-1] == one[9499]:
        head = _random(rng, 20)
    reads = {
        "chimera": one[2000:2080] + two[3000:3070],
        "chimera_strands": one[8000:8075] + _rc(two[6000:6075]),
        "chimera_far": one[1000:1077] + one[15000:15073],
        "chimera_reversed": _rc(one[3000:3080] + two[9000:9070]),
        "short_segment": one[4000:4130] + two[500:520],
        "repeat": repeat[200:350],
        "random_tail": one[9000:9130] + tail,
        "random_head": head + one[9500:9630],
        "over_the_end": one[-100:] + _random(rng, 50),
        "over_the_start": _random(rng, 40) + two[:110],
        "noise": _random(rng, 150),
        "plain": one[16000:16150],
    }
    folder = tmp_path_factory.mktemp("planted")
    reference = folder / "reference.fa"
    reference.write_text(f">one\n{one}\n>two\n{two}\n")
    fasta = folder / "reads.fa"
    fasta.write_text("".join(f">{name}\n{read}\n" for name, read in reads.items()))
    return {"contigs": {"one": one, "two": two}, "reads": reads, "reference": reference,
            "fasta": fasta, "folder": folder}


def _records_of(result: MappingResult, names: list[str]) -> dict[str, list[int]]:
    """The records of each read, by its name (primary first)."""
    records: dict[str, list[int]] = {}
    for record, read in enumerate(result.read.tolist()):
        records.setdefault(names[read], []).append(record)
    return records


def _aligned_part(read: str, cigar: str, reverse: bool) -> str:
    """The read bases a record's CIGAR aligns (in the reference's orientation)."""
    text = _rc(read) if reverse else read
    left = re.match(r"^([0-9]+)[SH]", cigar)
    right = re.search(r"([0-9]+)[SH]$", cigar)
    return text[int(left[1]) if left else 0:len(text) - (int(right[1]) if right else 0)]


def _check_record(result: MappingResult, record: int, read: str, contigs: dict,
                  names: list[str]) -> None:
    """The record's CIGAR re-scored against the reference: its columns consume the read and
    reference bases that give NM edits; its M/I/S/H cover the read; AS follows NM."""
    cigar = result.cigar[record]
    runs = [(int(n), op) for n, op in re.findall(r"([0-9]+)([MIDSH])", cigar)]
    assert sum(n for n, op in runs if op in "MISH") == len(read)
    query = _aligned_part(read, cigar, bool(result.flag[record] & REVERSE))
    reference = contigs[names[result.contig[record]]]
    q, t, edits = 0, int(result.pos[record]), 0
    for n, op in runs:
        if op == "M":
            edits += sum(a != b for a, b in zip(query[q:q + n], reference[t:t + n], strict=True))
            q, t = q + n, t + n
        elif op == "I":
            edits, q = edits + n, q + n
        elif op == "D":
            edits, t = edits + n, t + n
    assert q == len(query) and t <= len(reference)
    assert edits == result.nm[record]
    assert result.score[record] == len(query) - EDIT_SCORE * edits


@pytest.fixture(scope="module")
def mapped_planted(planted) -> MappingResult:
    return gpualign.map_reads(planted["reference"], list(planted["reads"].values()),
                              backend="cpu")


def test_planted_reads_are_clipped_and_split(planted, mapped_planted):
    result, reads = mapped_planted, planted["reads"]
    names = list(reads)
    records = _records_of(result, names)
    contigs = ["one", "two"]
    for name, found in records.items():
        for record in found:
            if result.mapped[record]:
                _check_record(result, record, reads[name], planted["contigs"], contigs)
    assert ((result.flag & 0x100) == 0).all()  # no secondary records, as minimap2 -ax sr

    def fields(record: int) -> tuple:
        return (contigs[result.contig[record]], int(result.pos[record]) + 1,
                int(result.flag[record]), result.cigar[record])

    # Whole reads, clipped reads and the repeat: one record each.
    for name, expected in (("plain", ("one", 16001, 0, "150M")),
                           ("random_tail", ("one", 9001, 0, "130M20S")),
                           ("random_head", ("one", 9501, 0, "20S130M")),
                           ("over_the_end", ("one", len(planted["contigs"]["one"]) - 99, 0,
                                             "100M50S")),
                           ("over_the_start", ("two", 1, 0, "40S110M")),
                           ("short_segment", ("one", 4001, 0, "130M20S"))):
        assert [fields(record) for record in records[name]] == [expected], name
        assert result.sa[records[name][0]] is None
    repeat = records["repeat"]
    assert len(repeat) == 1 and result.mapq[repeat[0]] == 0
    assert result.xs[repeat[0]] == result.score[repeat[0]] == 150
    assert result.cigar[repeat[0]] == "150M"
    noise = records["noise"]
    assert len(noise) == 1 and result.flag[noise[0]] == UNMAPPED
    # Chimeras: a primary and a supplementary, each naming the other.
    for name, segments in (("chimera", {("one", 2001, "+", "80M70S"),
                                        ("two", 3001, "+", "79S71M")}),
                           ("chimera_strands", {("one", 8001, "+", "75M75S"),
                                                ("two", 6001, "-", "75M75S")}),
                           ("chimera_far", {("one", 1001, "+", "77M73S"),
                                            ("one", 15001, "+", "77S73M")}),
                           ("chimera_reversed", {("one", 3001, "-", "80M70S"),
                                                 ("two", 9001, "-", "80S70M")})):
        primary, supplementary = records[name]
        assert not result.flag[primary] & SUPPLEMENTARY
        assert result.flag[supplementary] & SUPPLEMENTARY
        assert "H" in result.cigar[supplementary] and "H" not in result.cigar[primary]
        described = {}
        for record in (primary, supplementary):
            strand = "-" if result.flag[record] & REVERSE else "+"
            contig, pos, _, cigar = fields(record)
            # The segments may share a base that both contigs have at the junction.
            described[record] = (contig, pos, strand, cigar.replace("H", "S"))
            assert result.mapq[record] == 60
        soft = {(c, p, s, cig) for c, p, s, cig in described.values()}
        assert _near(soft, segments), (name, soft)
        for record, other in ((primary, supplementary), (supplementary, primary)):
            contig, pos, strand, cigar = described[other]
            assert result.sa[record] == (f"{contig},{pos},{strand},{cigar},"
                                         f"{result.mapq[other]},{result.nm[other]};")


def _near(found: set, expected: set) -> bool:
    """Whether the (contig, position, strand, CIGAR) segments agree, but for one base that
    the junction may give either segment."""
    def close(one: tuple, other: tuple) -> bool:
        runs = [int(n) for n in re.findall(r"[0-9]+", one[3])]
        want = [int(n) for n in re.findall(r"[0-9]+", other[3])]
        return (one[0] == other[0] and one[2] == other[2] and abs(one[1] - other[1]) <= 1
                and re.sub(r"[0-9]+", "", one[3]) == re.sub(r"[0-9]+", "", other[3])
                and max(abs(a - b) for a, b in zip(runs, want, strict=True)) <= 1)

    return len(found) == len(expected) and all(any(close(segment, other) for other in expected)
                                               for segment in found)


def test_min_segment_is_a_setting(planted):
    reads = [planted["reads"]["short_segment"]]
    with config.override(MAP_MIN_SEGMENT=15):
        result = gpualign.map_reads(planted["reference"], reads, backend="cpu")
    assert result.flag.tolist() == [0, SUPPLEMENTARY]
    assert result.cigar == ["130M20S", "130H20M"] and result.pos.tolist() == [4000, 500]
    with config.override(MAP_MIN_SEGMENT=90):
        result = gpualign.map_reads(planted["reference"], [planted["reads"]["chimera"]],
                                    backend="cpu")
    # Both segments are shorter than 90 bases, and the whole read has no placement.
    assert result.flag.tolist() == [UNMAPPED]


def test_backends_agree_on_planted_reads(backend, planted, mapped_planted):
    other = gpualign.map_reads(planted["reference"], list(planted["reads"].values()),
                               backend=backend)
    for name in ("read", "flag", "contig", "pos", "mapq", "nm", "score", "xs"):
        assert np.array_equal(getattr(mapped_planted, name), getattr(other, name)), name
    assert mapped_planted.cigar == other.cigar and mapped_planted.sa == other.sa


def test_a_chimeric_mate_gets_a_supplementary_record_with_its_pair_fields(planted):
    one, two = planted["contigs"]["one"], planted["contigs"]["two"]
    first = [one[6000:6150], one[10000:10150]]
    second = [_rc(one[6250:6330] + two[9000:9070]), _rc(one[10300:10450])]
    result = gpualign.map_reads(planted["reference"], first, second, backend="cpu",
                                insert_size=(200, 600))
    assert result.read.tolist() == [0, 0, 0, 1, 1]
    assert result.mate.tolist() == [1, 2, 2, 1, 2]
    flag = result.flag.tolist()
    assert flag[0] & PROPER_PAIR and flag[1] & PROPER_PAIR
    # As minimap2 writes it: the pair's fields, no proper pair, no template length.
    assert flag[2] == SUPPLEMENTARY | PAIRED | SECOND | REVERSE
    assert flag[0] & MATE_REVERSE and flag[1] & REVERSE
    assert result.contig[2] == 1 and abs(result.pos[2] - 9000) <= 1 and result.tlen[2] == 0
    assert result.mate_contig[2] == 0 and result.mate_pos[2] == result.pos[0]
    assert result.sa[1] is not None and result.sa[2] is not None
    assert flag[3] & FIRST and flag[3] & PROPER_PAIR
    out = planted["folder"] / "pairs.sam"
    result.write_sam(out, first, second)
    if SAMTOOLS:
        stats = subprocess.run([SAMTOOLS, "flagstat", str(out)], check=True,
                               capture_output=True, text=True).stdout
        assert "4 + 0 primary\n" in stats and "1 + 0 supplementary" in stats


@pytest.mark.skipif(SAMTOOLS is None, reason="samtools not installed")
def test_split_reads_pass_samtools(planted, tmp_path, capsys):
    out = tmp_path / "planted.sam"
    assert main(["map", str(planted["reference"]), str(planted["fasta"]), "-o",
                              str(out), "--backend", "cpu"]) == 0
    assert "12 reads, 11 mapped" in capsys.readouterr().err
    # samtools checks each record, the SEQ against its CIGAR (hard clips leave it out).
    view = subprocess.run([SAMTOOLS, "view", "-h", str(out)], check=True,
                          capture_output=True, text=True)
    assert "error" not in view.stderr.lower()
    stats = subprocess.run([SAMTOOLS, "flagstat", str(out)], check=True, capture_output=True,
                           text=True).stdout
    assert "12 + 0 primary\n" in stats and "0 + 0 secondary" in stats
    assert "4 + 0 supplementary" in stats and "11 + 0 primary mapped" in stats
    for line in view.stdout.splitlines():
        if line.startswith("@") or int(line.split("\t")[1]) & SUPPLEMENTARY == 0:
            continue
        fields = line.split("\t")
        aligned = sum(int(n) for n, op in re.findall(r"([0-9]+)([MI])", fields[5]))
        assert len(fields[9]) == aligned and "SA:Z:" in line
    sorted_bam = tmp_path / "planted.bam"
    subprocess.run([SAMTOOLS, "sort", "-o", str(sorted_bam), str(out)], check=True,
                   capture_output=True)
    subprocess.run([SAMTOOLS, "index", str(sorted_bam)], check=True, capture_output=True)


@pytest.mark.skipif(MINIMAP2 is None, reason="minimap2 not installed")
def test_planted_reads_as_minimap2_maps_them(planted, mapped_planted):
    sam = subprocess.run([MINIMAP2, "-ax", "sr", str(planted["reference"]),
                          str(planted["fasta"])], check=True, capture_output=True,
                         text=True).stdout
    theirs: dict[str, set] = {}
    for line in sam.splitlines():
        if line.startswith("@"):
            continue
        fields = line.split("\t")
        flag = int(fields[1])
        if flag & UNMAPPED:
            continue
        assert not flag & 0x100  # minimap2 -ax sr prints no secondary records either
        theirs.setdefault(fields[0], set()).add(
            (fields[2], int(fields[3]), "-" if flag & REVERSE else "+",
             fields[5].replace("H", "S"), bool(flag & SUPPLEMENTARY)))
    names = list(planted["reads"])
    ours: dict[str, set] = {}
    for record, read in enumerate(mapped_planted.read.tolist()):
        if not mapped_planted.mapped[record]:
            continue
        flag = int(mapped_planted.flag[record])
        ours.setdefault(names[read], set()).add(
            (["one", "two"][mapped_planted.contig[record]], int(mapped_planted.pos[record]) + 1,
             "-" if flag & REVERSE else "+", mapped_planted.cigar[record].replace("H", "S"),
             bool(flag & SUPPLEMENTARY)))
    assert ours.keys() == theirs.keys()
    for name in ours:
        # Which of two equal segments is the primary is a tie; the segments are the same.
        mine = {segment[:4] for segment in ours[name]}
        other = {segment[:4] for segment in theirs[name]}
        assert _near(mine, other), (name, mine, other)
        assert sum(s[4] for s in ours[name]) == sum(s[4] for s in theirs[name]), name


def _simulated(contigs: dict, count: int, seed: int) -> list[str]:
    """Reads of 150 bases with 1.5% substitutions and 0.2% indels: a sixth are chimeras of
    two pieces (either strand, split anywhere from 20 bases), a tenth end in 5 to 40 random
    bases, a twentieth run over a contig's end; the others are whole."""
    rng = np.random.default_rng(seed)
    names = list(contigs)

    def piece(length: int) -> str:
        text = contigs[names[rng.integers(len(names))]]
        start = int(rng.integers(0, len(text) - length))
        return _rc(text[start:start + length]) if rng.random() < 0.5 else \
            text[start:start + length]

    reads = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.15:
            split = int(rng.integers(20, 131))
            read = piece(split) + piece(150 - split)
        elif kind < 0.25:
            tail = int(rng.integers(5, 41))
            read = piece(150 - tail) + _random(rng, tail)
        elif kind < 0.3:
            text, over = contigs[names[rng.integers(len(names))]], int(rng.integers(5, 60))
            read = text[-(150 - over):] + _random(rng, over) if rng.random() < 0.5 else \
                _random(rng, over) + text[:150 - over]
        else:
            read = piece(150)
        out = []
        for base in read:
            draw = rng.random()
            if draw < 0.001:
                continue
            if draw < 0.002:
                out.append("ACGT"[rng.integers(4)])
            out.append("ACGT".replace(base, "")[rng.integers(3)] if rng.random() < 0.015
                       else base)
        reads.append("".join(out))
    return reads


def test_simulated_reads_records_are_consistent_and_close_to_minimap2(planted, tmp_path):
    contigs = planted["contigs"]
    reads = _simulated(contigs, 600, 3)
    with config.override(MAP_BATCH_READS=150):  # several batches
        result = gpualign.map_reads(planted["reference"], reads, backend="cpu")
    assert (result.read[result.primary] == np.arange(len(reads))).all()
    for record in np.flatnonzero(result.mapped).tolist():
        _check_record(result, record, reads[result.read[record]], contigs, ["one", "two"])
    split = np.flatnonzero(~result.primary)
    assert (result.read[split - 1] == result.read[split]).all()  # right after the primary
    assert len(split) > 40
    if MINIMAP2 is None:
        return
    fasta = tmp_path / "reads.fa"
    fasta.write_text("".join(f">r{i}\n{read}\n" for i, read in enumerate(reads)))
    sam = subprocess.run([MINIMAP2, "-ax", "sr", str(planted["reference"]), str(fasta)],
                         check=True, capture_output=True, text=True).stdout
    theirs, supplementary = {}, 0
    for line in sam.splitlines():
        fields = line.split("\t")
        if line.startswith("@") or int(fields[1]) & UNMAPPED:
            continue
        if int(fields[1]) & SUPPLEMENTARY:
            supplementary += 1
        else:
            theirs[int(fields[0][1:])] = (fields[2], int(fields[3]) - 1, fields[5])
    same = sum(theirs[i] == (["one", "two"][result.contig[r]], result.pos[r], result.cigar[r])
               for i, r in enumerate(np.flatnonzero(result.primary).tolist())
               if i in theirs and result.mapped[r])
    # Ties (the copies of the repeat, which of two equal segments is the primary) and
    # gaps the edit path places otherwise near a clip make the rest.
    assert same >= 0.9 * len(theirs)
    assert 0.7 * supplementary <= len(split) <= 1.5 * supplementary


@pytest.mark.skipif(SAMTOOLS is None, reason="samtools not installed")
def test_split_reads_from_fastq_in_batches_pass_samtools(planted, tmp_path):
    reads = list(planted["reads"].values())
    fastq = tmp_path / "reads.fq"
    fastq.write_text("".join(f"@r{i}\n{read}\n+\n{'I' * (len(read) - 3)}#!5\n"
                             for i, read in enumerate(reads)))
    whole = gpualign.map_reads(planted["reference"], fastq, backend="cpu")
    with config.override(MAP_BATCH_READS=3):
        batched = gpualign.map_reads(planted["reference"], fastq, backend="cpu")
        batched.write_sam(tmp_path / "batched.sam", fastq)
    whole.write_sam(tmp_path / "whole.sam", fastq)
    assert (tmp_path / "batched.sam").read_text() == (tmp_path / "whole.sam").read_text()
    view = subprocess.run([SAMTOOLS, "view", str(tmp_path / "whole.sam")], check=True,
                          capture_output=True, text=True).stdout
    for line in view.splitlines():
        fields = line.split("\t")
        assert len(fields[9]) == len(fields[10])
        if int(fields[1]) & SUPPLEMENTARY:
            # The hard-clipped QUAL is the aligned part's: the read's ends ("#!5") are gone
            # where the clip takes them.
            right = re.search(r"([0-9]+)H$", fields[5])
            left = re.match(r"^([0-9]+)H", fields[5])
            assert len(fields[9]) + sum(int(m[1]) for m in (left, right) if m) == 150
