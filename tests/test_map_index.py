"""The minimizer index of read mapping (gpualign.map.index): minimizers against the naive oracle,
candidate windows holding the true placement of simulated reads, the repetitive-minimizer cap,
the .gpumap file and ``gpualign index``."""

from __future__ import annotations

import doctest
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from naive import minimizers_naive

from gpualign import SequenceSet, build_index, config
from gpualign.cli import main
from gpualign.map import index as map_index
from gpualign.map.index import Candidates, MapIndex, as_map_index, is_map_index_file, minimizers

DATA = Path(__file__).resolve().parent / "data"
ECOLI = DATA / "ecoli_10kb.fasta.gz"


def _random_dna(rng: np.random.Generator, length: int, n_rate: float = 0.0) -> str:
    codes = rng.integers(0, 4, length)
    codes[rng.random(length) < n_rate] = 4
    return "".join("ACGTN"[code] for code in codes)


def _reverse_complement(text: str) -> str:
    return text.translate(str.maketrans("ACGTN", "TGCAN"))[::-1]


def _sample_reads(rng: np.random.Generator, reference: SequenceSet, count: int, length: int,
                  error_rate: float) -> tuple[list[str], list[tuple[int, int, int, bool]]]:
    """Reads of about ``length`` bases from contigs at least that long, with substitutions and
    1-3 base indels at ``error_rate`` each, half of them reverse complemented; their truth as
    ``(contig, start, end, reverse)``."""
    long_enough = np.flatnonzero(reference.lengths >= length)
    reads, truth = [], []
    for _ in range(count):
        contig = int(rng.choice(long_enough))
        start = int(rng.integers(0, reference.lengths[contig] - length + 1))
        bases = list(reference[contig][start:start + length])
        for i in np.flatnonzero(rng.random(len(bases)) < error_rate)[::-1]:
            kind = rng.integers(3)
            if kind == 0:
                bases[i] = "ACGT"[(("ACGT".find(bases[i]) + 1 + rng.integers(3)) % 4)]
            elif kind == 1:
                del bases[i:i + int(rng.integers(1, 4))]
            else:
                bases[i:i] = list(_random_dna(rng, int(rng.integers(1, 4))))
        text, reverse = "".join(bases), bool(rng.integers(2))
        reads.append(_reverse_complement(text) if reverse else text)
        truth.append((contig, start, start + length, reverse))
    return reads, truth


def _check_ordered(found: Candidates, max_candidates: int) -> None:
    """Grouped by read (ascending), votes descending then contig, start ascending; at most
    ``max_candidates`` a read; windows inside their contig."""
    assert all(len(values) == len(found) for values in vars(found).values())
    assert found.read.dtype == np.int64 and found.votes.dtype == np.int32
    assert found.reverse.dtype == bool
    order = np.lexsort((found.reverse, found.start, found.contig, -found.votes, found.read))
    assert np.array_equal(order, np.arange(len(found)))
    assert np.bincount(found.read).max(initial=0) <= max_candidates
    assert np.all(found.start < found.end) and np.all(found.votes >= 1)


def _check_truth(index: MapIndex, reads: list[str], truth: list, **options) -> float:
    """The fraction of reads with a candidate on the true contig and strand whose window holds
    the true placement."""
    found = index.candidates(SequenceSet.from_sequences(reads, "dna"), **options)
    _check_ordered(found, options.get("max_candidates", 8))
    assert np.all(found.end <= index.reference.lengths[found.contig])
    hits = 0
    for number, (contig, start, end, reverse) in enumerate(truth):
        mine = found.read == number
        hits += bool(np.any(mine & (found.contig == contig) & (found.reverse == reverse)
                            & (found.start <= start) & (found.end >= end)))
    return hits / len(reads)


@pytest.mark.parametrize(("k", "w"), [(2, 1), (3, 2), (5, 4), (11, 7), (15, 10), (28, 3)])
def test_minimizers_match_the_naive_oracle(k, w):
    rng = np.random.default_rng(k * 100 + w)
    sequences = [_random_dna(rng, int(length), n_rate=0.03)
                 for length in rng.integers(0, 120, 30)] + ["", "A" * 40, "ACGT" * 12, "N" * 9]
    records = SequenceSet.from_sequences(sequences, "dna")
    position, hashes, reverse = minimizers(records.codes, records.offsets, k, w)
    sequence = np.searchsorted(records.offsets, position, side="right") - 1
    mine = sorted(zip(sequence.tolist(), (position - records.offsets[sequence]).tolist(),
                      hashes.tolist(), reverse.tolist(), strict=True))
    oracle = minimizers_naive([records.codes_of(i).tolist() for i in range(len(records))], k, w)
    assert mine == oracle and len(oracle) > 0
    assert np.all(np.diff(position) > 0)


@pytest.mark.parametrize(("k", "w"), [(3, 1), (4, 3), (11, 5)])
def test_index_tables_group_the_naive_minimizers_by_hash(k, w):
    # Short k-mers and repeats, so that many hashes have several entries; N's and contigs
    # of every length, empty ones included.
    rng = np.random.default_rng(k * 10 + w)
    contigs = [_random_dna(rng, int(length), n_rate=0.02)
               for length in rng.integers(0, 300, 12)] + ["", "ACGT" * 30, "A" * 50]
    reference = SequenceSet.from_sequences(contigs, "dna",
                                           names=[f"c{i}" for i in range(len(contigs))])
    index = MapIndex.build(reference, k=k, w=w)
    entries: dict[int, list[tuple[int, bool]]] = {}
    for contig, at, key, reverse in minimizers_naive(
            [reference.codes_of(i).tolist() for i in range(len(reference))], k, w):
        entries.setdefault(key, []).append((int(reference.offsets[contig]) + at, reverse))
    keys = sorted(entries)
    assert index.keys.tolist() == keys
    counts = [len(entries[key]) for key in keys]
    assert index.key_starts.tolist() == np.cumsum([0, *counts]).tolist()
    assert list(zip(index.positions.tolist(), index.reverse.tolist(), strict=True)) == [
        entry for key in keys for entry in sorted(entries[key])]
    assert max(len(group) for group in entries.values()) > 1


@pytest.mark.parametrize(("k", "w"), [(3, 1), (5, 4), (15, 10), (7, 25)])
def test_minimizers_of_a_read_at_a_time_equal_the_whole_set(k, w):
    # The compiled lookup of reads finds each read's minimizers itself: ties of low-complexity
    # stretches (each k-mer of the smallest hash counts), stretches between N shorter than w.
    from gpualign.map._host import _choose, _kmer_hashes

    rng = np.random.default_rng(k * 100 + w)
    texts = ["A" * 40, "AC" * 30 + "N" + "ACG" * 20, "ACGTN" * 9, "A" * (k - 1), "",
             *(_random_dna(rng, int(n), n_rate=0.03) for n in rng.integers(1, 300, 40))]
    records = SequenceSet.from_sequences(texts, "dna")
    position, hashes, reverse = minimizers(records.codes, records.offsets, k, w)
    found = []
    for read in range(len(records)):
        lo, length = int(records.offsets[read]), int(records.lengths[read])
        kmer_hashes, kmer_reverse = np.empty(length, np.uint64), np.empty(length, bool)
        chosen, queue = np.empty(length, bool), np.empty(length, np.int64)
        count = _kmer_hashes(records.codes, lo, length, k, kmer_hashes, kmer_reverse)
        _choose(kmer_hashes, count, w, chosen, queue)
        found += [(lo + at, int(kmer_hashes[at]), bool(kmer_reverse[at]))
                  for at in np.flatnonzero(chosen[:count]).tolist()]
    assert found == list(zip(position.tolist(), hashes.tolist(), reverse.tolist(), strict=True))


def test_minimizers_of_no_kmers():
    position, hashes, reverse = minimizers(np.zeros(3, np.uint8), np.array([0, 3]), 5, 2)
    assert len(position) == len(hashes) == len(reverse) == 0


def test_a_kmer_and_its_reverse_complement_are_one_minimizer():
    text = _random_dna(np.random.default_rng(1), 300)
    records = SequenceSet.from_sequences([text, _reverse_complement(text)], "dna")
    position, hashes, reverse = minimizers(records.codes, records.offsets, 15, 10)
    first = position < records.offsets[1]
    assert sorted(hashes[first].tolist()) == sorted(hashes[~first].tolist())
    assert reverse[first].sum() == (~reverse[~first]).sum()


def test_candidates_hold_the_true_window_of_ecoli_reads():
    index = MapIndex.build(ECOLI, backend="cpu")
    rng = np.random.default_rng(23)
    reads, truth = _sample_reads(rng, index.reference, 300, 150, 0.01)
    assert _check_truth(index, reads, truth) == 1.0
    reads, truth = _sample_reads(rng, index.reference, 300, 150, 0.04)
    assert _check_truth(index, reads, truth) >= 0.99


def test_the_best_candidate_of_real_reads_is_where_minimap2_maps_them():
    # QUAST's real E. coli reads: every read that minimap2 (mappy, -x sr) places uniquely
    # (MAPQ >= 30) has its alignment inside the window of the read's first candidate.
    mappy = pytest.importorskip("mappy")
    aligner = mappy.Aligner(str(ECOLI), preset="sr")
    reads = SequenceSet.from_file(DATA / "ecoli_reads_2000.fastq.gz", "dna", invalid="wildcard")
    found = MapIndex.build(ECOLI).candidates(reads)
    first = np.flatnonzero(np.append(True, found.read[1:] != found.read[:-1]))
    best = dict(zip(found.read[first].tolist(), first.tolist(), strict=True))
    unique = 0
    for number in range(len(reads)):
        for hit in aligner.map(reads[number]):
            if hit.is_primary and hit.mapq >= 30:
                unique += 1
                at = best[number]
                assert (bool(found.reverse[at]), int(found.contig[at])) == \
                    (hit.strand < 0, 0), number
                assert found.start[at] <= hit.r_st and hit.r_en <= found.end[at], number
    assert unique > 1800


def test_candidates_on_a_multi_contig_reference(monkeypatch):
    rng = np.random.default_rng(5)
    contigs = [_random_dna(rng, int(length), n_rate=0.001)
               for length in (3000, 40, 800, 0, 5000, 130, 2000)]
    reference = SequenceSet.from_sequences(contigs, "dna", names=[f"c{i}" for i in range(7)])
    index = MapIndex.build(reference, k=13, w=8)
    reads, truth = _sample_reads(rng, reference, 400, 120, 0.02)
    assert _check_truth(index, reads, truth, max_candidates=4) >= 0.995
    assert _check_truth(index, reads, truth, max_candidates=1, margin=30) >= 0.99
    # Every read's candidates are the oracle's (the reads span several compiled tasks).
    batch = SequenceSet.from_sequences(reads, "dna")
    for max_candidates, margin in ((8, None), (3, 30)):
        found = index.candidates(batch, max_candidates=max_candidates, margin=margin)
        assert _candidate_rows(found) == _candidates_naive(index, batch, max_candidates, margin)
    # Built in pieces that cut contigs (and are shorter than a window): the same index.
    for batch in (900, 97, 5, 1):
        monkeypatch.setattr(config, "MAP_INDEX_BATCH_BASES", batch)
        batched = MapIndex.build(reference, k=13, w=8)
        for name in ("keys", "key_starts", "positions", "reverse"):
            assert np.array_equal(getattr(batched, name), getattr(index, name)), (batch, name)


def _candidate_rows(found: Candidates) -> list[tuple[int, bool, int, int, int, int]]:
    return list(zip(found.read.tolist(), found.reverse.tolist(), found.contig.tolist(),
                    found.start.tolist(), found.end.tolist(), found.votes.tolist(), strict=True))


def _candidates_naive(index: MapIndex, reads: SequenceSet, max_candidates: int,
                      margin: int | None) -> list[tuple[int, bool, int, int, int, int]]:
    """The oracle of MapIndex.candidates, one read, hit and cluster after the other: the rows
    ``(read, reverse, contig, start, end, votes)``."""
    entries = {}
    for key, lo, hi in zip(index.keys.tolist(), index.key_starts[:-1].tolist(),
                           index.key_starts[1:].tolist(), strict=True):
        if hi - lo <= config.MAP_MAX_OCCURRENCES:
            entries[key] = list(zip(index.positions[lo:hi].tolist(),
                                    index.reverse[lo:hi].tolist(), strict=True))
    offsets = index.reference.offsets.tolist()
    rows = []
    for read in range(len(reads)):
        length = int(reads.lengths[read])
        span = (length + 9) // 10 + 8 if margin is None else margin
        hits = []
        for seed, (_, at, key, reverse) in enumerate(
                minimizers_naive([reads.codes_of(read).tolist()], index.k, index.w)):
            for target, entry_reverse in entries.get(key, []):
                flipped = reverse != entry_reverse
                contig = int(np.searchsorted(offsets, target, side="right")) - 1
                along = length - at - index.k if flipped else at
                hits.append((flipped, contig, target - along, seed))
        clusters = []  # [flipped, contig, first diagonal, last diagonal, seeds]
        for flipped, contig, diagonal, seed in sorted(hits):
            last = clusters[-1] if clusters else None
            if last is None or last[:2] != [flipped, contig] or diagonal - last[2] > span:
                clusters.append(last := [flipped, contig, diagonal, diagonal, set()])
            last[3] = diagonal
            last[4].add(seed)
        windows = []
        for number, (flipped, contig, first, final, seeds) in enumerate(clusters):
            size = offsets[contig + 1] - offsets[contig]
            start = min(max(first - span - offsets[contig], 0), size)
            end = min(max(final + length + span - offsets[contig], 0), size)
            windows.append((-len(seeds), contig, start, flipped, number, end))
        rows += [(read, flipped, contig, start, end, -votes) for votes, contig, start, flipped, _,
                 end in sorted(windows)[:max_candidates]]
    return rows


def test_windows_are_clipped_and_unplaced_reads_have_none():
    reference = SequenceSet.from_sequences([_random_dna(np.random.default_rng(2), 500)], "dna")
    index = MapIndex.build(reference, k=11, w=5)
    text = reference[0]
    reads = SequenceSet.from_sequences(
        [text[:100], _reverse_complement(text[-100:]), "ACGT", "N" * 200,
         _random_dna(np.random.default_rng(3), 100)], "dna")
    found = index.candidates(reads, margin=20)
    best = {read: (reverse, start, end) for read, reverse, start, end in zip(
        found.read.tolist()[::-1], found.reverse.tolist()[::-1], found.start.tolist()[::-1],
        found.end.tolist()[::-1], strict=True)}
    assert best[0] == (False, 0, 120) and best[1] == (True, 380, 500)
    assert 2 not in best and 3 not in best
    as_list = index.candidates([text[:100], "ACGT"], margin=20)
    assert as_list.read.tolist() == [0] and as_list.start.tolist() == [0]
    empty = index.candidates(SequenceSet.from_sequences([], "dna"))
    assert len(empty) == 0 and empty.read.dtype == np.int64


def test_repetitive_minimizers_are_skipped(monkeypatch):
    rng = np.random.default_rng(9)
    repeat = _random_dna(rng, 200)
    reference = SequenceSet.from_sequences(
        ["".join(_random_dna(rng, 300) + repeat for _ in range(5)), _random_dna(rng, 1000)],
        "dna")
    index = MapIndex.build(reference, k=15, w=5)
    reads = SequenceSet.from_sequences([repeat[50:150], reference[1][200:300]], "dna")
    found = index.candidates(reads)
    assert found.read.tolist() == [0] * 5 + [1]
    assert np.all(found.votes[:5] == found.votes[0])
    assert index.candidates(reads, max_candidates=3).read.tolist() == [0] * 3 + [1]
    monkeypatch.setattr(config, "MAP_MAX_OCCURRENCES", 4)
    assert index.candidates(reads).read.tolist() == [1]
    config.reset()
    assert config.MAP_MAX_OCCURRENCES == 200


def test_save_and_open(tmp_path):
    index = MapIndex.build(ECOLI, k=13, w=6)
    path = tmp_path / "ecoli.gpumap"
    index.save(path)
    assert is_map_index_file(path)
    buffer = io.BytesIO()
    index.save(buffer)
    assert buffer.getvalue() == path.read_bytes()
    for loaded in (MapIndex.open(path), MapIndex.open(str(path)), as_map_index(path)):
        assert (loaded.k, loaded.w) == (13, 6)
        assert loaded.reference.names == index.reference.names
        assert np.array_equal(loaded.reference.codes, index.reference.codes)
        for name in ("keys", "key_starts", "positions", "reverse"):
            assert np.array_equal(getattr(loaded, name), getattr(index, name)), name
            assert getattr(loaded, name).dtype == getattr(index, name).dtype


def test_open_refuses_other_files_in_one_line(tmp_path):
    fasta = tmp_path / "ref.fa"
    fasta.write_text(">a\nACGTTGCA\n")
    mem_index = tmp_path / "ref.gpuidx"
    build_index(["ACGTTGCA" * 20], backend="cpu").save(mem_index)
    whole = tmp_path / "whole.gpumap"
    MapIndex.build(["ACGTTGCAAGTTCCA" * 30], k=5, w=3).save(whole)
    cut = tmp_path / "cut.gpumap"
    cut.write_bytes(whole.read_bytes()[:700])
    for path in (fasta, mem_index):
        with pytest.raises(ValueError, match=f"^{path}: not a gpualign map index"):
            MapIndex.open(path)
    with pytest.raises(ValueError, match=f"^{cut}: damaged gpualign map index .*; rebuild it"):
        MapIndex.open(cut)
    with np.load(whole) as data:
        arrays = dict(data)
    newer = tmp_path / "newer.gpumap"
    with open(newer, "wb") as handle:
        np.savez(handle, **{**arrays, "format": np.array([99])})
    with pytest.raises(ValueError, match=f"^{newer}: a gpualign map index of format 99"):
        MapIndex.open(newer)
    with pytest.raises(FileNotFoundError):
        MapIndex.open(tmp_path / "missing.gpumap")
    with pytest.raises(IsADirectoryError):
        MapIndex.open(tmp_path)


def test_as_map_index():
    index = as_map_index(str(ECOLI), k=12, w=5, backend="cpu")
    assert as_map_index(index) is index and as_map_index(index, k=12) is index
    with pytest.raises(ValueError, match="^w=6: the index was built with w=5"):
        as_map_index(index, w=6)
    from_set = as_map_index(index.reference, k=12, w=5)
    assert np.array_equal(from_set.positions, index.positions)
    assert repr(from_set) == (f"MapIndex(1 contigs, 10000 bp, k=12, w=5, "
                              f"{len(index.positions)} minimizers)")


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be from 2 to 28"):
        MapIndex.build(["ACGT"], k=29)
    with pytest.raises(ValueError, match="w must be from 1 to 255"):
        MapIndex.build(["ACGT"], w=0)
    with pytest.raises(ValueError, match="reference: looks like protein, read mapping is for"):
        MapIndex.build(["MEEPQSDPSVEPPLSQETFSDLWKLL"])
    with pytest.raises(ValueError, match="reference: no records"):
        MapIndex.build([])
    nothing = MapIndex.build(["", "NNNN"], k=5, w=3)
    assert len(nothing.keys) == 0 and len(nothing.key_starts) == 1
    assert len(nothing.candidates(SequenceSet.from_sequences(["ACGTTGCA"], "dna"))) == 0
    index = MapIndex.build(["ACGTTGCAAGTTCCA"], k=5, w=3)
    with pytest.raises(ValueError, match="max_candidates must be >= 1"):
        index.candidates(SequenceSet.from_sequences(["ACGTT"], "dna"), max_candidates=0)
    with pytest.raises(ValueError, match="reads: alphabet protein, read mapping is for DNA"):
        index.candidates(SequenceSet.from_sequences(["MEEPQ"], "protein"))


def test_index_command(tmp_path, capsys):
    out = tmp_path / "ecoli.gpumap"
    assert main(["index", str(ECOLI), "-o", str(out), "-k", "13", "-w", "6"]) == 0
    err = capsys.readouterr().err
    assert "minimizers (k = 13, w = 6)" in err and f"-> {out}" in err
    loaded = MapIndex.open(out)
    assert np.array_equal(loaded.positions, MapIndex.build(ECOLI, k=13, w=6).positions)
    # --kind map whatever the name; the defaults are those of MapIndex.build.
    named = tmp_path / "ecoli.idx"
    assert main(["index", str(ECOLI), "-o", str(named), "--kind", "map", "-q"]) == 0
    assert (MapIndex.open(named).k, MapIndex.open(named).w) == (15, 10)
    # Other names build a MEM index, as before; -k/-w belong to map indexes.
    mems = tmp_path / "ecoli.gpuidx"
    assert main(["index", str(ECOLI), "-o", str(mems), "-q"]) == 0
    assert not is_map_index_file(mems)
    assert main(["index", str(ECOLI), "-o", str(mems), "-k", "9", "-q"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "gpualign: error: -k/-w: options of a map index (--kind map, or an output named "
        "*.gpumap)"]
    assert main(["index", str(out), "-o", str(tmp_path / "again.gpumap"), "-q"]) == 2
    assert capsys.readouterr().err == (f"gpualign: error: {out}: a zip archive (a gpualign MEM "
                                       "index or map index?), not a FASTA/FASTQ file\n")
    assert main(["mems", str(out), str(DATA / "ecoli_reads_2000.fastq.gz"), "-q"]) == 2
    assert capsys.readouterr().err.startswith(f"gpualign: error: {out}: a gpualign map index")


def test_index_command_to_standard_output(capsysbinary, tmp_path):
    assert main(["index", str(ECOLI), "-o", "-", "--kind", "map", "-q"]) == 0
    piped = tmp_path / "piped.gpumap"
    piped.write_bytes(capsysbinary.readouterr().out)
    assert np.array_equal(MapIndex.open(piped).positions, MapIndex.build(ECOLI).positions)


def test_indexing_loads_no_numba():
    # ``gpualign index`` on a GPU machine builds the index only: no Numba. Looking reads up
    # (the candidates, compiled host stages that every backend runs) loads it.
    script = ("import sys\nfrom gpualign import SequenceSet\n"
              "from gpualign.map.index import MapIndex\n"
              "index = MapIndex.build(['ACGTTGCAAGTTCCAGGATTACA' * 9], k=7, w=4, backend='cpu')\n"
              "print('numba' in sys.modules)\n"
              "index.candidates(SequenceSet.from_sequences(['GCAAGTTCCAGGATTA'], 'dna'))\n"
              "print('numba' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["False", "True"]


def test_docstring_examples():
    from gpualign.map import _kmer_hash

    for module in (map_index, _kmer_hash):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0
