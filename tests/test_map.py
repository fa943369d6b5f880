"""Read mapping (issue 23): simulated reads map to their true positions on both backends,
agree with minimap2 (mappy) on real and simulated reads, pairs get proper-pair flags, mate
fields and rescue, and the SAM passes samtools.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from naive import rescore_cigar

import gpualign
from gpualign import config
from gpualign.cigar import PackedCigars
from gpualign.cli import main
from gpualign.io import DuplicateNameWarning
from gpualign.map import api
from gpualign.map.api import MappingResult, mapping_quality, reverse_complement
from gpualign.map.sam import (
    MATE_REVERSE,
    MATE_UNMAPPED,
    NO_SCORE,
    PAIRED,
    PROPER_PAIR,
    REVERSE,
    UNMAPPED,
    SamCigars,
    merged_cigars,
    sam_cigars,
)
from gpualign.sequences import SequenceSet

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "ecoli_10kb.fasta.gz"
REAL_READS = DATA / "ecoli_reads_2000.fastq.gz"
SAMTOOLS = shutil.which("samtools")
DWGSIM = shutil.which("dwgsim")
MINIMAP2 = shutil.which("minimap2")

try:
    import mappy
except ImportError:  # the test and bench extras install it
    mappy = None


# --------------------------------------------------------------------------- simulation


def _genome() -> str:
    return SequenceSet.from_file(REFERENCE, "dna", invalid="wildcard")[0]


_COMPLEMENT = str.maketrans("ACGTN", "TGCAN")


def _rc(text: str) -> str:
    return text.translate(_COMPLEMENT)[::-1]


def _mutate(rng: np.random.Generator, text: str, substitutions: float, indels: float) -> str:
    out = []
    for base in text:
        draw = rng.random()
        if draw < indels / 2:
            continue  # deletion
        if draw < indels:
            out.append("ACGT"[rng.integers(4)])  # insertion before the base
        if rng.random() < substitutions:
            base = "ACGT".replace(base, "")[rng.integers(3)] if base in "ACGT" else base
        out.append(base)
    return "".join(out)


def simulate_single(seed: int, count: int, length: int = 150, substitutions: float = 0.01,
                    indels: float = 0.002) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Reads from both strands of the reference: sequences, true leftmost positions, strands."""
    rng = np.random.default_rng(seed)
    genome = _genome()
    starts = rng.integers(0, len(genome) - length - 20, count)
    reverse = rng.random(count) < 0.5
    reads = []
    for start, back in zip(starts.tolist(), reverse.tolist(), strict=True):
        piece = _mutate(rng, genome[start:start + length + 10], substitutions, indels)[:length]
        reads.append(_rc(piece) if back else piece)
    return reads, starts, reverse


def simulate_pairs(seed: int, count: int, length: int = 150, insert: int = 400,
                   spread: int = 30) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Pairs facing each other (either read may be the forward one): reads, mates, and the
    true leftmost positions of reads and mates."""
    rng = np.random.default_rng(seed)
    genome = _genome()
    sizes = np.clip(rng.normal(insert, spread, count).astype(int), length + 10, None)
    starts = rng.integers(0, len(genome) - sizes - 20)
    swap = rng.random(count) < 0.5
    first, second, first_pos, second_pos = [], [], [], []
    for start, size, swapped in zip(starts.tolist(), sizes.tolist(), swap.tolist(),
                                    strict=True):
        left = _mutate(rng, genome[start:start + length], 0.01, 0.0)
        right = _rc(_mutate(rng, genome[start + size - length:start + size], 0.01, 0.0))
        pair = [(left, start), (right, start + size - length)]
        if swapped:
            pair.reverse()
        first.append(pair[0][0])
        second.append(pair[1][0])
        first_pos.append(pair[0][1])
        second_pos.append(pair[1][1])
    return first, second, np.array(first_pos), np.array(second_pos)


# --------------------------------------------------------------------------- tests


def test_merged_cigar_and_reverse_complement():
    assert merged_cigars(["10=", "2=1X2=2I1X3=1D1=", "", "3I"]) == ["10M", "5M2I4M1D1M", "",
                                                                      "3I"]
    assert merged_cigars([]) == []
    # Against the regular expressions that merged them before (runs of 1 to 5 digits).
    rng = np.random.default_rng(8)
    cigars = ["".join(f"{rng.integers(1, 10 ** int(rng.integers(1, 6)))}{rng.choice(list('=XID'))}"
                      for _ in range(int(rng.integers(0, 12)))) for _ in range(500)]
    adjacent, digits = re.compile(r"(?:[0-9]+M){2,}"), re.compile(r"[0-9]+")
    assert merged_cigars(cigars) == [adjacent.sub(
        lambda runs: f"{sum(map(int, digits.findall(runs.group())))}M",
        text.translate(str.maketrans("=X", "MM"))) for text in cigars]
    rc = reverse_complement(SequenceSet.from_sequences(["ACGTN", "", "GGA"]))
    assert [rc[0], rc[1], rc[2]] == ["NACGT", "", "TCC"]


@pytest.mark.parametrize("clip", ["S", "H"])
def test_sam_cigars_equal_the_merged_texts_with_clips(clip):
    # The SAM runs of the mapper's records (one compiled pass over the runs) against the texts
    # they replaced: merged_cigars' M runs between the clips; None stays None (unmapped),
    # an empty alignment keeps its clips only.
    rng = np.random.default_rng(9)
    cigars = [None, "", "10=", "3I", "1X1D1X"]
    for _ in range(400):
        cigars.append(None if rng.random() < 0.1 else "".join(
            f"{rng.integers(1, 10 ** int(rng.integers(1, 4)))}{rng.choice(list('=XID'))}"
            for _ in range(int(rng.integers(0, 10)))))
    left = rng.integers(0, 3, len(cigars)) * rng.integers(1, 200, len(cigars))
    right = rng.integers(0, 3, len(cigars)) * rng.integers(1, 200, len(cigars))
    got = sam_cigars(PackedCigars.from_strings(cigars), left, right, clip)
    merged = merged_cigars([c or "" for c in cigars])
    assert isinstance(got, SamCigars) and got == [
        None if c is None else (f"{a}{clip}" if a else "") + m + (f"{b}{clip}" if b else "")
        for c, m, a, b in zip(cigars, merged, left.tolist(), right.tolist(), strict=True)]
    assert got.present.tolist() == [c is not None for c in cigars]
    with pytest.raises(ValueError, match="clip="):
        sam_cigars(PackedCigars.nones(1), left[:1], right[:1], "M")


def test_ranked_placements_equal_the_two_sorts():
    # The compiled ranking (a read at a time) against the whole-batch sorts it replaced:
    # repeats of a place dropped (the fewest edits kept, the first of equal ones), then the
    # fewest edits, the most votes, contig and start first.
    rng = np.random.default_rng(6)
    size = 3000
    read = np.sort(rng.integers(0, 600, size))
    hits = api._Hits(read, rng.random(size) < 0.5, rng.integers(0, 2, size),
                     rng.integers(0, 12, size), rng.integers(0, 10 ** 6, size),
                     rng.integers(0, 4, size).astype(np.int32),
                     rng.integers(1, 5, size).astype(np.int32))
    order = np.lexsort((hits.dist, hits.pos, hits.contig, hits.reverse, hits.read))
    first = hits.take(order)
    repeat = np.zeros(size, dtype=bool)
    repeat[1:] = ((first.read[1:] == first.read[:-1]) & (first.reverse[1:] == first.reverse[:-1])
                  & (first.contig[1:] == first.contig[:-1]) & (first.pos[1:] == first.pos[:-1]))
    first = first.take(~repeat)
    expected = first.take(np.lexsort((first.pos, first.contig, -first.votes, first.dist,
                                      first.read)))
    ranked = api._ranked(hits)
    for name in api._HIT_FIELDS:
        assert np.array_equal(getattr(ranked, name), getattr(expected, name)), name
    assert len(api._ranked(hits.take(np.zeros(0, dtype=np.int64))).read) == 0


def test_mapping_quality_formula():
    votes = np.array([20, 20, 20, 1, 20])
    quality = mapping_quality(np.array([150, 150, 150, 150, -5]),
                              np.array([NO_SCORE, 150, 140, NO_SCORE, NO_SCORE]), votes)
    assert quality[0] == 60 and quality[1] == 0 and 0 < quality[2] < 60
    assert quality[3] < 60 and quality[4] == 0


def test_simulated_reads_map_to_their_positions(backend, monkeypatch):
    monkeypatch.setattr(config, "MAP_BATCH_READS", 97)  # several batches
    reads, starts, reverse = simulate_single(1, 400)
    result = gpualign.map_reads(REFERENCE, reads, backend=backend)
    assert isinstance(result, MappingResult) and len(result) == len(reads)
    assert result.read.tolist() == list(range(len(reads)))
    mapped = result.mapped
    assert mapped.mean() > 0.98
    close = mapped & (np.abs(result.pos - starts) <= 5)
    assert close.mean() >= 0.95
    assert np.array_equal((result.flag[close] & REVERSE) > 0, reverse[close])
    # NM is the edit distance of the read's aligned part (or its reverse complement's) with its
    # placement; AS counts the aligned bases (soft clips left out).
    genome = _genome()
    clipped = np.zeros(len(result), dtype=np.int64)
    for i in np.flatnonzero(mapped).tolist():
        runs = _cigar_runs(result.cigar[i])
        query = _rc(reads[i]) if result.flag[i] & REVERSE else reads[i]
        left = int(runs[0][0]) if runs[0][1] == "S" else 0
        clipped[i] = sum(int(n) for n, op in runs if op == "S")
        query = query[left:left + len(query) - clipped[i]]
        span = sum(int(n) for n, op in runs if op in "MD")
        target = genome[result.pos[i]:result.pos[i] + span]
        assert gpualign.edit_distance([query], [target], backend="cpu").distance[0] <= \
            result.nm[i]
        assert sum(int(n) for n, op in runs if op in "MIS") == len(reads[i])
    assert np.array_equal(result.score[mapped], 150 - clipped[mapped] - 5 * result.nm[mapped])


def _cigar_runs(cigar: str) -> list[tuple[str, str]]:
    import re

    return re.findall(r"([0-9]+)([MIDSX=])", cigar)


def test_backends_agree(backend):
    reads, _, _ = simulate_single(2, 120)
    cpu = gpualign.map_reads(REFERENCE, reads, backend="cpu")
    other = gpualign.map_reads(REFERENCE, reads, backend=backend)
    for name in ("flag", "contig", "pos", "mapq", "nm", "score", "xs"):
        assert np.array_equal(getattr(cpu, name), getattr(other, name)), name
    assert cpu.cigar == other.cigar


def test_unmapped_reads_are_reported():
    rng = np.random.default_rng(5)
    noise = ["".join("ACGT"[c] for c in rng.integers(0, 4, 120)) for _ in range(5)]
    reads, starts, _ = simulate_single(3, 5)
    result = gpualign.map_reads(REFERENCE, noise + reads + ["NNNNNNNNNN"], backend="cpu")
    assert len(result) == 11
    assert (result.flag[:5] & UNMAPPED).all() and (result.flag[10] & UNMAPPED)
    assert (result.pos[:5] == -1).all() and result.cigar[:5] == [None] * 5
    assert (result.mapq[:5] == 0).all() and (result.nm[:5] == -1).all()
    assert not (result.flag[5:10] & UNMAPPED).any()


def test_a_repeat_gets_mapq_zero_and_xs():
    genome = _genome()
    piece = genome[2000:2150]
    # The reference twice over: every read has an equally good second placement.
    doubled = [genome, genome[:5000] + piece + genome[5000:]]
    result = gpualign.map_reads(doubled, [piece], backend="cpu")
    assert result.mapped[0] and result.mapq[0] == 0 and result.xs[0] == result.score[0]


@pytest.mark.skipif(mappy is None, reason="mappy not installed")
def test_simulated_reads_agree_with_minimap2():
    reads, _, _ = simulate_single(4, 300)
    result = gpualign.map_reads(REFERENCE, reads, backend="cpu")
    agree, compared = _agreement_with_mappy(result, reads)
    assert compared > 250 and agree >= 0.99 * compared


def _agreement_with_mappy(result: MappingResult, reads: list[str]) -> tuple[int, int]:
    """Of the reads that both place uniquely (MAPQ >= 30), how many at one position (the
    first aligned base, within 5 bases) and strand; and how many were compared."""
    aligner = mappy.Aligner(str(REFERENCE), preset="sr")
    agree = compared = 0
    for i, read in enumerate(reads):
        hits = [hit for hit in aligner.map(read) if hit.is_primary]
        if not hits or hits[0].mapq < 30 or not result.mapped[i] or result.mapq[i] < 30:
            continue
        hit = hits[0]
        compared += 1
        agree += (abs(hit.r_st - result.pos[i]) <= 5
                  and (hit.strand < 0) == bool(result.flag[i] & REVERSE))
    return agree, compared


@pytest.mark.skipif(mappy is None, reason="mappy not installed")
def test_real_reads_agree_with_minimap2():
    with gzip.open(REAL_READS, "rt") as handle:
        reads = handle.read().splitlines()[1::4]
    result = gpualign.map_reads(REFERENCE, REAL_READS, backend="cpu")
    assert len(result) == len(reads) == 2000
    # QUAST's test reads come from these 10 kb: minimap2 -ax sr maps 1,986 of them.
    assert result.mapped.sum() >= 1950
    agree, compared = _agreement_with_mappy(result, reads)
    assert compared >= 10 and agree >= 0.99 * compared


@pytest.mark.usefixtures("small_batches")
def test_pairs_are_proper_with_mate_fields(backend, monkeypatch):
    monkeypatch.setattr(config, "MAP_BATCH_READS", 150)
    first, second, first_pos, second_pos = simulate_pairs(6, 300)
    result = gpualign.map_reads(REFERENCE, first, second, backend=backend)
    assert len(result) == 600
    assert result.mate.tolist() == [1, 2] * 300
    assert result.read.tolist() == np.repeat(np.arange(300), 2).tolist()
    lo, hi = result.insert_size
    assert lo <= 400 <= hi and hi < 1000
    truth = np.stack((first_pos, second_pos), axis=1).ravel()
    assert (np.abs(result.pos - truth) <= 5).mean() >= 0.95
    proper = (result.flag & PROPER_PAIR) > 0
    assert (result.flag & PAIRED).all() and proper.mean() >= 0.95
    ones, twos = np.arange(0, 600, 2), np.arange(1, 600, 2)
    assert np.array_equal(result.mate_pos[ones], result.pos[twos])
    assert np.array_equal(result.mate_pos[twos], result.pos[ones])
    both = proper[ones] & proper[twos]
    # TLEN: positive for the leftmost read, its negative for the other.
    assert np.array_equal(result.tlen[ones][both], -result.tlen[twos][both])
    left = np.where(result.pos[ones] <= result.pos[twos], ones, twos)[both]
    assert (result.tlen[left] > 0).all()
    # A substitution at a read's end may be aligned as an insertion there (the same cost).
    true_size = np.abs(truth[twos] - truth[ones])[both] + 150
    assert (np.abs(np.abs(result.tlen[ones][both]) - true_size) <= 2).mean() >= 0.95
    # Facing each other: one forward, one reverse, mate-reverse flags mirror them.
    rev = (result.flag & REVERSE) > 0
    assert (rev[ones][both] != rev[twos][both]).all()
    assert np.array_equal((result.flag[ones] & MATE_REVERSE) > 0, rev[twos])


def test_mate_rescue_finds_a_mate_without_seeds():
    first, second, first_pos, second_pos = simulate_pairs(7, 60)
    # Mates with a substitution every 12 bases: no exact 15-mer, no candidate, yet within k.
    def scramble(text: str) -> str:
        return "".join(("ACGT".replace(b, "")[0] if i % 12 == 6 else b)
                       for i, b in enumerate(text))

    second = [scramble(text) for text in second[:3]] + second[3:]
    result = gpualign.map_reads(REFERENCE, first, second, k=20, backend="cpu",
                                insert_size=(200, 700))
    rescued = np.arange(1, 6, 2)
    assert not (result.flag[rescued] & UNMAPPED).any()
    assert (result.flag[rescued] & PROPER_PAIR).all()
    assert (np.abs(result.pos[rescued] - second_pos[:3]) <= 5).all()
    # Without rescue's window they have no candidate: as single reads they stay unmapped.
    alone = gpualign.map_reads(REFERENCE, second[:3], k=20, backend="cpu")
    assert (alone.flag & UNMAPPED).all()


def test_a_lone_mate_is_placed_at_its_partner():
    first, second, _, _ = simulate_pairs(8, 4)
    rng = np.random.default_rng(1)
    second[0] = "".join("ACGT"[c] for c in rng.integers(0, 4, 150))
    result = gpualign.map_reads(REFERENCE, first, second, backend="cpu",
                                insert_size=(200, 700))
    assert result.flag[1] & UNMAPPED and result.flag[0] & MATE_UNMAPPED
    assert not result.flag[0] & PROPER_PAIR
    assert result.pos[1] == result.pos[0] and result.contig[1] == result.contig[0]
    assert result.tlen[0] == result.tlen[1] == 0


def _write_reads(path: Path, reads: list[str], quality: bool = True) -> None:
    with open(path, "w") as handle:
        for i, read in enumerate(reads):
            if quality:
                handle.write(f"@r{i}\n{read}\n+\n{'I' * (len(read) - 1)}#\n")
            else:
                handle.write(f">r{i}\n{read}\n")


def test_sam_records_and_header(tmp_path):
    reads, _, reverse = simulate_single(9, 30)
    fastq = tmp_path / "reads.fq"
    _write_reads(fastq, reads)
    result = gpualign.map_reads(REFERENCE, fastq, backend="cpu")
    out = tmp_path / "out.sam"
    result.write_sam(out, fastq, command_line="test")
    lines = out.read_text().splitlines()
    assert lines[0] == "@HD\tVN:1.6\tSO:unsorted"
    assert lines[1].startswith("@SQ\tSN:") and "\tLN:10000" in lines[1]
    assert lines[2].startswith("@PG\tID:gpualign\tPN:gpualign\tVN:") and "CL:test" in lines[2]
    records = [line.split("\t") for line in lines[3:]]
    assert [r[0] for r in records] == [f"r{i}" for i in range(30)]
    # The CIGARs are runs, read as strings.
    assert isinstance(result.cigar, SamCigars) and list(result.cigar) == [r[5] for r in records]
    for i, fields in enumerate(records):
        flag = int(fields[1])
        if flag & REVERSE:
            assert fields[9] == _rc(reads[i]) and fields[10] == "#" + "I" * 149
        else:
            assert fields[9] == reads[i] and fields[10] == "I" * 149 + "#"
        assert int(fields[3]) == result.pos[i] + 1 and fields[5] == result.cigar[i]
        assert f"NM:i:{result.nm[i]}" in fields and f"AS:i:{result.score[i]}" in fields


@pytest.mark.skipif(SAMTOOLS is None, reason="samtools not installed")
def test_cli_pairs_pass_samtools(tmp_path, capsys):
    first, second, _, _ = simulate_pairs(10, 100)
    rng = np.random.default_rng(2)
    first.append("".join("ACGT"[c] for c in rng.integers(0, 4, 150)))
    second.append("".join("ACGT"[c] for c in rng.integers(0, 4, 150)))
    _write_reads(tmp_path / "r1.fq", first)
    _write_reads(tmp_path / "r2.fq", second)
    out = tmp_path / "pairs.sam"
    assert main(["map", str(REFERENCE), str(tmp_path / "r1.fq"), str(tmp_path / "r2.fq"),
                 "-o", str(out), "--backend", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "gpualign map: 202 reads (pairs)" in err and "reads/s by stage" in err
    check = subprocess.run([SAMTOOLS, "view", "-c", str(out)], capture_output=True, text=True)
    assert check.returncode == 0 and check.stderr == "" and check.stdout.strip() == "202"
    stats = subprocess.run([SAMTOOLS, "flagstat", str(out)], capture_output=True, text=True)
    assert stats.returncode == 0 and stats.stderr == ""
    assert "202 + 0 paired in sequencing" in stats.stdout
    assert "properly paired" in stats.stdout


@pytest.mark.skipif(SAMTOOLS is None, reason="samtools not installed")
def test_cli_single_end_fasta_to_stdout(tmp_path, capsys):
    reads, _, _ = simulate_single(11, 20)
    _write_reads(tmp_path / "r.fa", reads, quality=False)
    assert main(["map", str(REFERENCE), str(tmp_path / "r.fa"), "-q", "--backend", "cpu",
                 "-k", "20", "--max-candidates", "4"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    (tmp_path / "out.sam").write_text(captured.out)
    records = [line.split("\t") for line in captured.out.splitlines()
               if not line.startswith("@")]
    assert len(records) == 20 and all(fields[10] == "*" for fields in records)
    check = subprocess.run([SAMTOOLS, "view", str(tmp_path / "out.sam")], capture_output=True,
                           text=True)
    assert check.returncode == 0 and check.stderr == ""


def test_mates_of_another_count_are_refused(tmp_path, capsys):
    first, second, _, _ = simulate_pairs(12, 5)
    _write_reads(tmp_path / "r1.fq", first)
    _write_reads(tmp_path / "r2.fq", second[:4])
    assert main(["map", str(REFERENCE), str(tmp_path / "r1.fq"), str(tmp_path / "r2.fq"),
                 "-q", "--backend", "cpu", "-o", str(tmp_path / "x.sam")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpualign: error: ") and err.count("\n") == 1
    assert (f"differ in number: {tmp_path / 'r1.fq'} holds 5, {tmp_path / 'r2.fq'} 4"
            in err), err
    # Counted to the end, the mates holding more, with batches smaller than the inputs.
    with config.override(MAP_BATCH_READS=2), pytest.raises(
            ValueError, match=r"differ in number: the reads holds 3, the mates 5"):
        gpualign.map_reads(REFERENCE, first[:3], second, backend="cpu")


@pytest.mark.parametrize("layer", [None, "workqueue"])
def test_cli_batches_written_while_the_next_maps_on_any_threading_layer(tmp_path, layer):
    # The SAM of a batch is written on a thread while the next batch maps, both running
    # Numba's parallel kernels: Numba's workqueue layer (chosen where neither OpenMP nor TBB
    # loads) aborts a process that launches them from two threads, so there the batches are
    # written in the mapping thread. Several batches, in a process of their own (the layer is
    # chosen once a process); the SAM equals the one written batch by batch in this process.
    first, second, _, _ = simulate_pairs(13, 12)
    _write_reads(tmp_path / "r1.fq", first)
    _write_reads(tmp_path / "r2.fq", second)
    arguments = ["map", str(REFERENCE), str(tmp_path / "r1.fq"), str(tmp_path / "r2.fq"), "-q",
                 "--backend", "cpu", "-o"]
    with config.override(MAP_BATCH_READS=12):
        assert main([*arguments, str(tmp_path / "one.sam")]) == 0
    script = ("import sys; from gpualign import config; from gpualign.cli import main; "
              "config.MAP_BATCH_READS = 3; sys.exit(main(sys.argv[1:]))")
    environment = dict(os.environ)
    environment.pop("NUMBA_THREADING_LAYER", None)
    if layer is not None:
        environment["NUMBA_THREADING_LAYER"] = layer
    run = subprocess.run([sys.executable, "-c", script, *arguments, str(tmp_path / "four.sam")],
                         capture_output=True, text=True, env=environment)
    assert run.returncode == 0, run.stderr

    def records(name: str) -> list[str]:
        return [line for line in (tmp_path / name).read_text().splitlines()
                if not line.startswith("@PG")]

    assert records("four.sam") == records("one.sam") and len(records("one.sam")) > 24


def _write_named(path: Path, names: list[str], reads: list[str]) -> None:
    path.write_text("".join(f"@{name} extra words\n{read}\n+\n{'I' * len(read)}\n"
                            for name, read in zip(names, reads, strict=True)))


def test_mates_are_checked_by_name(tmp_path, capsys):
    first, second, _, _ = simulate_pairs(12, 5)
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    # /1 and /2 (and what follows the first white space) may differ: these are mates.
    _write_named(r1, [f"p{i}/1" for i in range(5)], first)
    _write_named(r2, [f"p{i}/2" for i in range(5)], second)
    with config.override(MAP_BATCH_READS=2):
        paired = gpualign.map_reads(REFERENCE, r1, r2, backend="cpu")
    assert (paired.flag & PROPER_PAIR).all()
    # Record #3 (in the second batch) names another pair.
    _write_named(r2, [f"p{i}/2" for i in (0, 1, 2, 4, 3)], second)
    with config.override(MAP_BATCH_READS=2), pytest.raises(
            ValueError, match=rf"record #3 of {r1} \('p3/1'\) and of {r2} \('p4/2'\) are "
                              "not mates"):
        gpualign.map_reads(REFERENCE, r1, r2, backend="cpu")
    assert main(["map", str(REFERENCE), str(r1), str(r2), "-q", "--backend", "cpu",
                 "-o", str(tmp_path / "x.sam")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpualign: error: record #3 of ") and err.count("\n") == 1, err


def test_mate_names_compared_at_once_equal_one_by_one():
    # The names' templates compared as one text give the first pair that differs, as a name by
    # name comparison does: /1 and /2 dropped (not /3), names of 0 to 2 characters, UTF-8, and
    # names holding a newline (compared one by one).
    from gpualign.map._reads import mate_names_differ, template_name

    def one_by_one(names, mates):
        return next((i for i, (a, b) in enumerate(zip(names, mates, strict=True))
                     if template_name(a) != template_name(b)), None)

    rng = np.random.default_rng(3)
    pieces = ["", "/", "1", "2", "/1", "/2", "/3", "é", "a", "\n", "x/1"]
    for _ in range(300):
        names = ["".join(rng.choice(pieces, int(rng.integers(0, 4)))) for _ in range(6)]
        mates = [name[:-2] + "/2" if name.endswith("/1") else name for name in names]
        if rng.random() < 0.5:
            k = int(rng.integers(0, 6))
            mates[k] = mates[k] + str(rng.choice(pieces))
        assert mate_names_differ(names, mates) == one_by_one(names, mates), (names, mates)
    many = [f"p{i}/1" for i in range(1000)]
    assert mate_names_differ(many, [f"p{i}/2" for i in range(1000)]) is None
    assert mate_names_differ(many, [f"p{i}/2" for i in range(999)] + ["q/2"]) == 999


def test_protein_reads_are_refused(tmp_path):
    protein = ["MKVLAAGIVGAWLLQSTEEPQSDPSVEPPLSQETFSDLWKLLPENNVLSPLPSQ"] * 3
    with pytest.raises(ValueError, match="reads: looks like protein, read mapping is for DNA"):
        gpualign.map_reads(REFERENCE, protein, backend="cpu")
    path = tmp_path / "mates.fa"
    path.write_text("".join(f">p{i}\n{text}\n" for i, text in enumerate(protein)))
    dna = [_genome()[i:i + 60] for i in (0, 500, 1000)]
    with pytest.raises(ValueError, match=f"{path}: looks like protein, read mapping is for DNA"):
        gpualign.map_reads(REFERENCE, dna, path, backend="cpu")


def test_docstring_examples():
    import doctest

    from gpualign.map import _reads, api, sam

    for module in (_reads, api, sam):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0


def test_readme_example(tmp_path, capsys):
    """The README's "Read mapping" example, in Python and on the command line."""
    result = gpualign.map_reads(REFERENCE, REAL_READS)
    assert (result.pos[:3].tolist(), result.flag[:3].tolist(), result.mapq[:3].tolist(),
            result.cigar[:3]) == ([8844, 204, 2279], [16, 0, 16], [60, 60, 60],
                                  ["100M", "94M", "100M"])
    written = tmp_path / "api.sam"
    result.write_sam(written, REAL_READS)
    out = tmp_path / "reads.sam"
    assert main(["map", str(REFERENCE), str(REAL_READS), "-o", str(out)]) == 0
    assert "gpualign map: 2000 reads, " in capsys.readouterr().err
    records = [line for line in out.read_text().splitlines() if not line.startswith("@")]
    assert records == [line for line in written.read_text().splitlines()
                       if not line.startswith("@")]
    assert records[0].split("\t")[:6] == ["EAS20_8_6_1_6_1211/1", "16",
                                          "gi|49175990|ref|NC_000913.2|", "8845", "60", "100M"]


def _primary_records(sam: str) -> dict[tuple[str, int], tuple[int, int, int, str]]:
    """``(name, mate) -> (flag, POS, MAPQ, CIGAR)`` of the primary records of SAM text."""
    records = {}
    for line in sam.splitlines():
        if line.startswith("@"):
            continue
        fields = line.split("\t")
        flag = int(fields[1])
        if flag & 0x900:  # secondary, supplementary
            continue
        records[(fields[0], 1 if flag & 0x40 else 2)] = (flag, int(fields[3]), int(fields[4]),
                                                          fields[5])
    return records


def _placed(records: dict) -> tuple[int, int, int]:
    """Reads placed within 5 bases of dwgsim's truth (read from their names), reads placed
    elsewhere with MAPQ >= 30, and reads placed with MAPQ >= 30."""
    import re

    correct = wrong_sure = sure = 0
    for (name, mate), (flag, pos, mapq, cigar) in records.items():
        if flag & UNMAPPED:
            continue
        fields = name.split("_")
        truth = int(fields[-9] if mate == 1 else fields[-8])  # 1-based leftmost
        clipped = re.match(r"([0-9]+)S", cigar)  # minimap2 soft-clips; gpualign does not
        right = abs(pos - (int(clipped.group(1)) if clipped else 0) - truth) <= 5
        correct += right
        sure += mapq >= 30
        wrong_sure += mapq >= 30 and not right
    return correct, wrong_sure, sure


@pytest.mark.skipif(DWGSIM is None or MINIMAP2 is None, reason="dwgsim or minimap2 missing")
def test_dwgsim_pairs_placed_as_well_as_by_minimap2(tmp_path):
    """The issue's accuracy check at test size: dwgsim's 150 bp pairs (with their truth) from
    the 10 kb of E. coli, through gpualign map and minimap2 -ax sr."""
    reference = tmp_path / "ref.fa"
    with gzip.open(REFERENCE, "rb") as source:
        reference.write_bytes(source.read())
    subprocess.run([DWGSIM, "-z", "3", "-N", "1500", "-1", "150", "-2", "150", "-d", "400",
                    "-s", "30", str(reference), str(tmp_path / "sim")], check=True,
                   capture_output=True)
    first, second = (str(tmp_path / f"sim.bwa.read{n}.fastq.gz") for n in (1, 2))
    ours = tmp_path / "ours.sam"
    assert main(["map", str(reference), first, second, "-q", "-o", str(ours)]) == 0
    theirs = subprocess.run([MINIMAP2, "-ax", "sr", str(reference), first, second],
                            capture_output=True, text=True, check=True).stdout
    records, peer = _primary_records(ours.read_text()), _primary_records(theirs)
    assert len(records) == len(peer) == 3000
    correct, wrong_sure, sure = _placed(records)
    peer_correct, peer_wrong_sure, _ = _placed(peer)
    # dwgsim makes 5% of the reads random DNA (-y 0.05): nobody places those.
    assert correct >= 0.9 * len(records) and sure >= 0.9 * len(records)
    assert correct >= peer_correct - 3 and wrong_sure <= peer_wrong_sure + 1


def test_a_saved_index_maps_as_its_fasta(tmp_path, capsys):
    index_module = pytest.importorskip("gpualign.map.index")
    saved = tmp_path / "ecoli.gpumap"
    index_module.MapIndex.build(REFERENCE, backend="cpu").save(saved)
    outputs = []
    for reference in (REFERENCE, saved):
        out = tmp_path / f"from-{reference.suffix[1:]}.sam"
        assert main(["map", str(reference), str(REAL_READS), "-q", "--backend", "cpu",
                     "-o", str(out)]) == 0
        outputs.append([line for line in out.read_text().splitlines()
                        if not line.startswith("@PG")])
    assert outputs[0] == outputs[1] and len(outputs[0]) == 2002


def test_duplicate_reference_names_are_refused(tmp_path):
    """Two records of one name would give two @SQ lines of one SN: invalid SAM."""
    genome = _genome()
    fasta = tmp_path / "ref.fa"
    fasta.write_text(f">chr\n{genome[:4000]}\n>other\n{genome[4000:7000]}\n"
                     f">chr\n{genome[7000:]}\n")
    with pytest.raises(ValueError, match=f"^{fasta}: records #0 and #2 have the same name "
                                         "'chr'; SAM names each reference record once"):
        gpualign.map_reads(fasta, [genome[100:200]], backend="cpu")
    named = SequenceSet.from_sequences([genome[:5000], genome[5000:]], "dna",
                                       names=["a", "a"])
    with pytest.raises(ValueError, match="^reference: records #0 and #1 have the same name 'a'"):
        gpualign.map_reads(named, [genome[100:200]], backend="cpu")
    # Renamed by the caller: chr, other, chr.2.
    with pytest.warns(DuplicateNameWarning, match="#2 renamed 'chr.2'"):
        renamed = SequenceSet.from_file(fasta, "dna", duplicates="rename")
    result = gpualign.map_reads(renamed, [genome[7100:7200]], backend="cpu")
    assert result.reference_names == ["chr", "other", "chr.2"]
    assert (result.contig.tolist(), result.pos.tolist()) == ([2], [100])


@pytest.mark.parametrize("insert_size,error,message", [
    ((600, 200), ValueError, "upper bound must be >= 600 .got 200."),
    ((-1, 200), ValueError, "lower bound must be >= 0 .got -1."),
    ((300,), ValueError, r"two integers \(lo, hi\), got \(300,\)"),
    (500, ValueError, "two integers"),
    ((1.5, 300), TypeError, "lower bound must be an integer"),
])
def test_insert_size_is_checked(insert_size, error, message):
    genome = _genome()
    with pytest.raises(error, match=message):
        gpualign.map_reads(REFERENCE, [genome[:100]], [_rc(genome[300:400])], backend="cpu",
                           insert_size=insert_size)
    result = gpualign.map_reads(REFERENCE, [genome[:100]], [_rc(genome[300:400])],
                                backend="cpu", insert_size=(400, 400))
    assert result.insert_size == (400, 400) and (result.flag & PROPER_PAIR).all()


def test_a_read_inside_a_tandem_repeat_gets_a_low_mapq():
    """Hits a period apart must not chain into one window over the whole repeat, where no
    second placement is seen: minimap2 and bwa give such a read MAPQ 0."""
    rng = np.random.default_rng(3)
    flank = ["".join("ACGT"[c] for c in rng.integers(0, 4, 3000)) for _ in range(2)]
    reference = flank[0] + "ACGTTGCAGG" * 60 + flank[1]
    result = gpualign.map_reads([reference], [reference[3100:3200], flank[1][500:600]],
                                backend="cpu")
    assert result.mapped.all() and result.nm.tolist() == [0, 0]
    assert result.mapq[0] <= 3 and result.xs[0] == 100
    assert result.mapq[1] == 60 and result.pos[1] == 3600 + 500


def test_rescue_needs_20_bases_and_gives_the_mate_its_own_mapq():
    genome = _genome()

    def seedless_mate(length: int) -> str:
        # A substitution in the middle: no 15-mer of the mate is in the reference.
        text = list(_rc(genome[1400 - length:1400]))
        text[length // 2] = "ACGT".replace(text[length // 2], "")[0]
        return "".join(text)

    anchor = genome[1000:1150]
    result = gpualign.map_reads(REFERENCE, [anchor, anchor],
                                [seedless_mate(20), seedless_mate(19)], backend="cpu",
                                insert_size=(200, 700))
    # 20 bases: rescued, a proper pair, with the MAPQ of a lone placement found by one seed
    # (score 20 - 5, no second placement), below its partner's 60.
    assert result.mapq[0] == 60 and result.flag[1] & PROPER_PAIR
    assert (result.pos[1], result.nm[1]) == (1380, 1)
    expected = mapping_quality(np.array([15]), np.array([NO_SCORE]), np.array([1]))[0]
    assert result.mapq[1] == expected == 10
    # 19 bases: too short to be searched for (a chance match is likely in a window that wide).
    assert result.flag[3] & UNMAPPED and result.flag[2] & MATE_UNMAPPED
    assert not result.flag[2] & PROPER_PAIR


def test_a_read_moved_by_its_pair_reports_the_best_it_left_as_xs():
    # Read 1 is an exact copy of X (1000) and 2 substitutions off Y (5000); its mate is unique
    # at 5200, so the pair puts read 1 at Y. bwa mem: AS 90, XS 100 (X), MAPQ 40.
    genome = list(_genome()[:8000])
    copy = genome[1000:1100]
    for offset in (30, 70):
        copy[offset] = "ACGT".replace(copy[offset], "")[0]
    genome[5000:5100] = copy
    genome = "".join(genome)
    read, mate = genome[1000:1100], _rc(genome[5200:5300])
    result = gpualign.map_reads([genome], [read], [mate], backend="cpu", insert_size=(200, 400))
    assert result.flag[0] & PROPER_PAIR
    assert (result.pos[0], result.score[0], result.xs[0]) == (5000, 90, 100)
    own = mapping_quality(np.array([90]), np.array([100]), np.array([10]))[0]
    assert own == 0 and result.mapq[0] == own + api.PAIR_MAPQ_LIFT == 40
    # The mate stays on its best: the pair's MAPQ.
    assert (result.pos[1], result.mapq[1], result.xs[1]) == (5200, 60, NO_SCORE)


def test_a_mismatch_at_a_read_end_is_not_a_gap():
    # The infix path ties a wrong end base with a 1-base gap; minimap2 and bwa print 100M.
    genome = _genome()
    start = next(s for s in range(3000, 3100) if genome[s - 1] != genome[s])
    last = list(genome[2000:2100])
    last[-1] = "ACGT".replace(last[-1], "")[0]
    first = genome[start - 1] + genome[start + 1:start + 100]  # equal to the base before
    reads = ["".join(last), first]
    reads += [_rc(read) for read in reads]
    result = gpualign.map_reads([genome], reads, backend="cpu")
    assert result.pos.tolist() == [2000, start, 2000, start]
    assert result.cigar == ["100M"] * 4 and result.nm.tolist() == [1] * 4
    assert result.score.tolist() == [95] * 4
    # NM and the CIGAR re-score against the reference (the naive oracle's column count).
    for read, pos, cigar, nm, reverse in zip(reads, result.pos, result.cigar, result.nm,
                                             result.flag & REVERSE, strict=True):
        query = SequenceSet.from_sequences([_rc(read) if reverse else read]).codes
        target = SequenceSet.from_sequences([genome[pos:pos + 100]]).codes
        assert rescore_cigar(query.tolist(), target.tolist(), cigar.replace("M", "=")) == nm


def test_write_sam_refuses_reads_other_than_those_mapped(tmp_path):
    genome = _genome()
    reads = [genome[1000:1100], genome[2000:2100], genome[3000:3100]]
    mates = [_rc(genome[1200:1300]), _rc(genome[2200:2300]), _rc(genome[3200:3300])]
    single = gpualign.map_reads([genome], reads, backend="cpu")
    pairs = gpualign.map_reads([genome], reads, mates, backend="cpu")
    out = tmp_path / "out.sam"
    with config.override(MAP_BATCH_READS=2):  # the mates run out in a later batch
        for result, given, given_mates, message in (
                (single, reads[:2], None, "3 records, the reads given make 2"),
                (single, reads + reads[:1], None, "3 records, the reads given make 4"),
                (single, reads, mates, "the result is single-end, mates were given"),
                (pairs, reads, None, "the result is paired, mates were not given"),
                (pairs, reads, mates[:2], "mates given are fewer or more than the reads"),
                (pairs, reads, mates[:1], "mates given are fewer or more than the reads"),
                (pairs, reads[:2], mates, "mates given are more than the reads")):
            with pytest.raises(ValueError, match=message):
                result.write_sam(out, given, given_mates)
        pairs.write_sam(out, reads, mates)
    assert len([line for line in out.read_text().splitlines() if line[0] != "@"]) == 6


def test_a_rescued_mate_reports_its_own_best_as_xs():
    # The mate (29 bases, no seed near its partner: a substitution mid-read) has an exact copy
    # at 6000; rescue places it next to its partner with 1 edit, so its XS is the copy's.
    genome = list(_genome()[:8000])
    copy = genome[1300:1329]
    copy[14] = "ACGT".replace(copy[14], "")[0]
    genome[6000:6029] = copy
    genome = "".join(genome)
    anchor, mate = genome[1000:1150], _rc("".join(copy))
    result = gpualign.map_reads([genome], [anchor], [mate], backend="cpu",
                                insert_size=(200, 700))
    assert result.flag[1] & PROPER_PAIR and (result.pos[1], result.nm[1]) == (1300, 1)
    assert (result.score[1], result.xs[1], result.mapq[1]) == (24, 29, 0)
