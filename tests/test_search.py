"""Database search on every backend: the top-n scores against parasail's 32-bit Smith-Waterman
(tie-aware) on real proteins and random sequences, against the naive Gotoh oracle on tiny
inputs, both DNA strands, paths re-scored to the search score, statistics, the E-value
filter and BLAST's tabular columns; the CPU backend with and without parasail."""

from __future__ import annotations

import doctest
import re
import sys
import types
from pathlib import Path

import numpy as np
import parasail
import pytest
from naive import align_naive, rescore_alignment

import gpualign
from gpualign import Scoring, SequenceSet, config
from gpualign.align import _parasail
from gpualign.cli import main
from gpualign.search import Database, search
from gpualign.search import _cpu as search_cpu
from gpualign.search import _cuda as search_cuda
from gpualign.search import api as search_api
from gpualign.search import database as search_database
from gpualign.search.api import (
    BLAST6_COLUMNS,
    blast_bitscore,
    blast_evalue,
    default_scoring,
    reverse_complements,
)
from gpualign.search.database import best_hits

DATA = Path(__file__).parent / "data"
UNIPROT = DATA / "uniprot_200.fasta.gz"  # 200 real proteins (MMseqs2 examples, UniProt)


@pytest.fixture
def statistics() -> types.ModuleType:
    """The statistics module (a fixture, as the tests that use it were written)."""
    from gpualign.search import statistics as module
    return module


@pytest.fixture
def small_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU tasks of a few residues: many tasks, many merges of their best hits."""
    monkeypatch.setattr(config, "SEARCH_CPU_TASK_RESIDUES", 40)


# --------------------------------------------------------------------------- helpers

def _parasail_scores(queries: SequenceSet, subjects: SequenceSet, scoring: Scoring,
                     function=parasail.sw_striped_32) -> np.ndarray:
    """parasail's Smith-Waterman score (``function``: 32-bit striped by default) of every
    query with every subject."""
    table, _ = scoring.table(queries.alphabet)
    matrix = _parasail.matrix(queries.alphabet.symbols, table)
    out = np.zeros((len(queries), len(subjects)), dtype=np.int64)
    for q in range(len(queries)):
        for s in range(len(subjects)):
            if queries.lengths[q] and subjects.lengths[s]:
                out[q, s] = function(queries[q], subjects[s], scoring.gap_open,
                                     scoring.gap_extend, matrix).score
    return out


def _check_top(result, expected: np.ndarray, n: int) -> None:
    """Tie-aware: each query's reported scores are the multiset of its best ``n`` positive
    expected scores, and each reported subject scores what is reported."""
    for q in range(expected.shape[0]):
        rows = result.query_index == q
        best = np.sort(expected[q][expected[q] > 0])[::-1][:n]
        assert sorted(result.score[rows].tolist(), reverse=True) == best.tolist(), q
        assert expected[q, result.subject_index[rows]].tolist() == result.score[rows].tolist()
        assert result.rank[rows].tolist() == list(range(1, rows.sum() + 1))


def _random_sequences(rng: np.random.Generator, count: int, lengths: tuple[int, int],
                      symbols: str) -> list[str]:
    letters = np.frombuffer(symbols.encode(), dtype=np.uint8)
    return [letters[rng.integers(0, len(letters), rng.integers(*lengths))].tobytes().decode()
            for _ in range(count)]


# --------------------------------------------------------------------------- top scores

@pytest.mark.parametrize("module", [search_api, search_database, search_cpu, search_cuda],
                         ids=["api", "database", "cpu", "cuda host side"])
def test_docstring_examples(module):
    assert doctest.testmod(module, raise_on_error=True,
                           optionflags=doctest.NORMALIZE_WHITESPACE).attempted > 0


def test_progress_counts_the_cells_of_both_strands(backend):
    seen = []
    result = search(["ACGTAC", "GGT"], ["ACGTTTGA", "CCA"], backend=backend,
                    progress=lambda done, total: seen.append((done, total)))
    assert result.cells == 2 * (6 + 3) * (8 + 3)
    assert seen and seen[-1] == (result.cells, result.cells)


def test_top_scores_equal_parasail_on_real_proteins(backend):
    proteins = SequenceSet.from_file(UNIPROT)
    queries = proteins.take(np.array([0, 17, 50, 123, 199]))
    result = search(queries, proteins, n=10, backend=backend)
    scoring = default_scoring("protein")
    assert result.scoring == scoring and result.alphabet == "protein"
    _check_top(result, _parasail_scores(queries, proteins, scoring), 10)
    # Each query is in the database: its best hit is itself, end to end.
    first = result.rank == 1
    assert result.subject_index[first].tolist() == [0, 17, 50, 123, 199]


@pytest.mark.parametrize("scoring", [Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1),
                                     Scoring.matrix("PAM30", gap_open=10, gap_extend=10),
                                     Scoring.matrix("BLOSUM45", gap_open=3, gap_extend=1)],
                         ids=["blosum62", "pam30-linear", "blosum45-cheap-gaps"])
def test_top_scores_equal_parasail_on_random_proteins(backend, small_tasks, scoring):
    rng = np.random.default_rng(7)
    database = _random_sequences(rng, 120, (0, 90), "ARNDCQEGHILKMFPSTWYVBZX*")
    database += database[:10]  # equal sequences: ties go to the first in the input
    queries = SequenceSet.from_sequences(_random_sequences(rng, 9, (1, 70), "ACDEFGHIKLMNPQ"),
                                         "protein")
    result = search(queries, database, scoring=scoring, n=7, alphabet="protein",
                    backend=backend)
    subjects = SequenceSet.from_sequences(database, "protein")
    _check_top(result, _parasail_scores(queries, subjects, scoring), 7)
    for q in range(len(queries)):
        rows = np.flatnonzero(result.query_index == q)
        key = list(zip((-result.score[rows]).tolist(), result.subject_index[rows].tolist(),
                       strict=True))
        assert key == sorted(key)


def test_scores_beyond_16_bits_are_exact(backend):
    """A long self-hit saturates 16-bit lanes: the 32-bit rerun gives the exact score."""
    rng = np.random.default_rng(3)
    long = _random_sequences(rng, 1, (7000, 7001), "ACDEFGHIKLMNPQRSTVWY")[0]
    scoring = default_scoring("protein")
    result = search([long], [long[:100], long], n=2, scoring=scoring, backend=backend)
    table, _ = scoring.table("protein")
    matrix = _parasail.matrix(b"ARNDCQEGHILKMFPSTWYVBZX*", table)
    expected = parasail.sw_striped_32(long, long, 12, 1, matrix).score
    assert expected > 1 << 15 and result.score[0] == expected


def test_top_scores_against_the_naive_oracle(backend):
    rng = np.random.default_rng(11)
    scoring = Scoring(match=3, mismatch=-2, gap_open=4, gap_extend=1)
    table, _ = scoring.table("dna")
    database = SequenceSet.from_sequences(_random_sequences(rng, 25, (0, 14), "ACGTN"), "dna")
    queries = SequenceSet.from_sequences(_random_sequences(rng, 6, (0, 10), "ACGT"), "dna")
    db = Database.from_set(database)
    score, subject = _backend_module(backend).top_scores(queries, db, table, 4, 1, 5)
    for q in range(len(queries)):
        expected = [align_naive(list(queries.codes_of(q)), list(database.codes_of(s)), table,
                                4, 1, "local").score for s in range(len(database))]
        order = sorted(range(len(database)), key=lambda s: (-expected[s], s))[:5]
        assert score[q].tolist() == [expected[s] for s in order]
        assert db.order[subject[q]].tolist() == order


def _backend_module(backend: str):
    if backend == "cuda":
        from gpualign.search import _cuda
        return _cuda
    return search_cpu


def test_top_scores_pads_rows_of_a_small_database(backend):
    db = Database.from_sequences(["MKV", "WW"], "protein")
    queries = SequenceSet.from_sequences(["MKV", ""], "protein")
    table, _ = default_scoring("protein").table("protein")
    score, subject = _backend_module(backend).top_scores(queries, db, table, 12, 1, 4)
    assert score.shape == subject.shape == (2, 4)
    assert score[0, 2:].tolist() == [-1, -1] and subject[0, 2:].tolist() == [-1, -1]
    assert score[1, :2].tolist() == [0, 0]  # an empty query aligns nothing
    result = search(["MKV", ""], db, n=4, backend=backend)  # no hit scores 0
    assert result.query_index.tolist() == [0] and result.score.tolist() == [14]


def test_nothing_to_search(backend):
    assert len(search(SequenceSet.from_sequences([], "dna"), ["ACGT"], backend=backend)) == 0
    assert len(search(["ACGT"], Database.from_sequences([], "dna"), backend=backend)) == 0
    assert len(search(["AAAA"], ["", "GGGG"], task="path", backend=backend)) == 0


def test_best_hits_tie_rule():
    score = np.array([[5, 7, 5, -1], [1, 1, 1, 1]])
    order = np.array([3, 2, 1, 0])
    best, chosen = best_hits(score, np.array([0, 1, 2, 3]), order, 3)
    assert best.tolist() == [[7, 5, 5], [1, 1, 1]]
    assert chosen.tolist() == [[1, 2, 0], [3, 2, 1]]
    best, chosen = best_hits(np.array([[4]]), np.array([0]), np.array([0]), 3)
    assert best.tolist() == [[4, -1, -1]] and chosen.tolist() == [[0, -1, -1]]


def test_the_cpu_backend_without_parasail_gives_the_same_hits(small_tasks, monkeypatch):
    proteins = SequenceSet.from_file(UNIPROT).take(np.arange(40))
    queries = proteins.take(np.array([3, 30]))
    expected = _parasail_scores(queries, proteins, default_scoring("protein"))
    with_parasail = search(queries, proteins, n=6, task="path", backend="cpu")
    monkeypatch.setitem(sys.modules, "parasail", None)  # the Numba DP scores now
    assert not _parasail.available("protein")
    result = search(queries, proteins, n=6, task="path", backend="cpu")
    _check_top(result, expected, 6)
    assert result.subject_index.tolist() == with_parasail.subject_index.tolist()
    assert result.cigar == with_parasail.cigar


# --------------------------------------------------------------------------- paths

@pytest.mark.parametrize("task", ["locations", "path"])
def test_paths_rescore_to_the_search_score(backend, task):
    proteins = SequenceSet.from_file(UNIPROT)
    queries = proteins.take(np.array([5, 77]))
    scoring = default_scoring("protein")
    result = search(queries, proteins, n=8, task=task, backend=backend)
    table, _ = scoring.table("protein")
    assert (result.query_end > result.query_start).all()
    assert (result.subject_end > result.subject_start).all()
    if task == "locations":
        assert result.cigar is None and result.identity is None
        return
    for p in range(len(result)):
        query = list(queries.codes_of(int(result.query_index[p])))
        subject = list(proteins.codes_of(int(result.subject_index[p])))
        score, q_end, s_end = rescore_alignment(
            query, subject, int(result.query_start[p]), int(result.subject_start[p]),
            result.cigar[p], table, 12, 1, None)
        assert (score, q_end, s_end) == (result.score[p], result.query_end[p],
                                         result.subject_end[p])
        columns = result.alignment_length[p]
        assert columns == sum(int(length) for length in re.findall(r"\d+", result.cigar[p]))
        assert result.identity[p] == pytest.approx(
            (columns - result.mismatches[p] - _gap_columns(result.cigar[p])) / columns)


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
def test_cuda_paths_equal_the_cpu_paths():
    # The GPU fills of the hits stop once past the first cell of the score the search found;
    # the alignments stay the CPU backend's, CIGAR for CIGAR (real proteins, the longest
    # queries of the file against all of it).
    proteins = SequenceSet.from_file(UNIPROT)
    queries = proteins.take(np.argsort(-proteins.lengths)[:6])
    got = search(queries, proteins, n=10, task="path", backend="cuda")
    want = search(queries, proteins, n=10, task="path", backend="cpu")
    for name in ("query_index", "subject_index", "score", "query_start", "query_end",
                 "subject_start", "subject_end", "mismatches", "gap_opens"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist(), name
    assert list(got.cigar) == list(want.cigar)


def _gap_columns(cigar: str) -> int:
    return sum(int(length) for length, op in re.findall(r"(\d+)([ID])", cigar))


def test_score_task_leaves_coordinates_out(backend):
    result = search(["MKVLAAGIVGAW"], ["MEEPQSDPSV", "MKVLATGIVGAWT", "GGGG"], backend=backend)
    assert result.subject_index.tolist() == [1, 0, 2]  # GGGG: one G scores 6
    assert result.query_start.tolist() == result.subject_end.tolist() == [-1, -1, -1]
    assert result.cigar is None and result.mismatches is None
    header, columns = result.table(["q"], ["a", "b", "c"])
    assert columns[header.index("cigar")] == [None] * 3
    assert columns[header.index("query_start")] == [None] * 3


# --------------------------------------------------------------------------- DNA

def test_dna_reverse_complement_plant_is_found_on_minus(backend):
    rng = np.random.default_rng(5)
    query = _random_sequences(rng, 1, (60, 61), "ACGT")[0]
    planted = reverse_complements(SequenceSet.from_sequences([query[10:50]], "dna"))[0]
    background = _random_sequences(rng, 30, (80, 200), "ACGT")
    subject = background[7][:20] + planted + background[7][20:]
    database = background[:7] + [subject] + background[8:]
    result = search([query], database, n=3, task="path", backend=backend)
    assert result.subject_index[0] == 7 and result.strand[0] == "-"
    assert result.score[0] >= 2 * 40  # the 40 planted bases at +2 each
    # The plant, and perhaps a base or two of the flanks that happen to match.
    q_start, q_end = int(result.query_start[0]), int(result.query_end[0])
    s_start, s_end = int(result.subject_start[0]), int(result.subject_end[0])
    assert 5 <= q_start <= 10 and 50 <= q_end <= 55
    assert 15 <= s_start <= 20 and 60 <= s_end <= 65
    assert (10 - q_start, q_end - 50) == (s_end - 60, 20 - s_start)  # reversed flanks
    # The CIGAR aligns the query's reverse complement with the subject.
    minus_query = reverse_complements(SequenceSet.from_sequences([query], "dna"))
    table, _ = default_scoring("dna").table("dna")
    score, _, _ = rescore_alignment(list(minus_query.codes_of(0)),
                                    list(SequenceSet.from_sequences([subject]).codes_of(0)),
                                    60 - int(result.query_end[0]),
                                    int(result.subject_start[0]), result.cigar[0], table, 7, 2)
    assert score == result.score[0]
    header, columns = result.blast6_columns(["q"], [str(k) for k in range(len(database))])
    row = {name: column[0] for name, column in zip(header, columns, strict=True)}
    assert (row["qstart"], row["qend"], row["sstart"], row["send"]) == (q_start + 1, q_end,
                                                                        s_end, s_start + 1)


def test_dna_both_strands_against_the_naive_oracle(backend):
    rng = np.random.default_rng(9)
    database = _random_sequences(rng, 20, (0, 16), "ACGT")
    queries = SequenceSet.from_sequences(_random_sequences(rng, 4, (1, 9), "ACGT"), "dna")
    scoring = default_scoring("dna")
    table, _ = scoring.table("dna")
    subjects = SequenceSet.from_sequences(database, "dna")
    minus = reverse_complements(queries)
    result = search(queries, database, n=6, backend=backend)
    for q in range(len(queries)):
        candidates = []
        for strand, sequences in ((0, queries), (1, minus)):
            for s in range(len(subjects)):
                score = align_naive(list(sequences.codes_of(q)), list(subjects.codes_of(s)),
                                    table, 7, 2, "local").score
                if score > 0:
                    candidates.append((-score, s, strand))
        expected = sorted(candidates)[:6]
        rows = result.query_index == q
        got = list(zip((-result.score[rows]).tolist(), result.subject_index[rows].tolist(),
                       (result.strand[rows] == "-").astype(int).tolist(), strict=True))
        assert got == expected


def test_reverse_complements():
    sets = SequenceSet.from_sequences(["ACGTN", "", "AAC"], "dna")
    assert [reverse_complements(sets)[k] for k in range(3)] == ["NACGT", "", "GTT"]


# --------------------------------------------------------------------------- statistics

def test_bit_scores_and_evalues_come_from_the_statistics(statistics, backend):
    proteins = SequenceSet.from_file(UNIPROT)
    queries = proteins.take(np.array([1, 2]))
    result = search(queries, proteins, n=5, backend=backend)
    params = statistics.parameters(default_scoring("protein"), "protein")
    assert result.statistics == params
    np.testing.assert_allclose(result.bitscore, statistics.bit_scores(result.score, params))
    np.testing.assert_allclose(result.evalue, statistics.evalues(
        result.score, queries.lengths[result.query_index], int(proteins.lengths.sum()),
        len(proteins), params))


def test_evalue_filter_keeps_the_hits_within_it(backend):
    proteins = SequenceSet.from_file(UNIPROT)
    queries = proteins.take(np.array([8, 9, 10]))
    everything = search(queries, proteins, n=20, backend=backend)
    cutoff = float(np.median(everything.evalue))
    kept = search(queries, proteins, n=20, evalue=cutoff, backend=backend)
    assert 0 < len(kept) < len(everything) and (kept.evalue <= cutoff).all()
    within = everything.evalue <= cutoff
    assert kept.subject_index.tolist() == everything.subject_index[within].tolist()
    assert kept.query_index.tolist() == everything.query_index[within].tolist()
    for q in range(3):
        rows = kept.query_index == q
        assert kept.rank[rows].tolist() == list(range(1, rows.sum() + 1))


def test_no_statistics_no_evalue(backend):
    odd = Scoring(match=7, mismatch=-13, gap_open=40, gap_extend=1)
    result = search(["ACGTACGTTT"], ["TTACGTACGTTTGG"], scoring=odd, backend=backend)
    assert result.statistics is None
    assert np.isnan(result.evalue).all() and np.isnan(result.bitscore).all()
    header, columns = result.table(["q"], ["s"])
    assert columns[header.index("evalue")] == [None] * len(result)
    with pytest.raises(ValueError, match=r"^evalue=0\.1: no published Karlin-Altschul "
                                         r"parameters for match \+7"):
        search(["ACGT"], ["ACGT"], scoring=odd, evalue=0.1, backend=backend)


@pytest.mark.parametrize("kwargs,error,message", [
    ({"n": 0}, ValueError, "n must be >= 1"),
    ({"n": 2.5}, TypeError, "n must be an integer"),
    ({"task": "end"}, ValueError, "task='end': expected one of score, locations, path"),
    ({"evalue": 0}, ValueError, "evalue must be a number > 0"),
    ({"evalue": "1e-3"}, ValueError, "evalue must be a number > 0"),
    ({"scoring": "BLOSUM62"}, TypeError, "scoring must be a gpualign.Scoring"),
])
def test_argument_checks(kwargs, error, message):
    with pytest.raises(error, match=message):
        search(["MKV"], ["MKV"], backend="cpu", **kwargs)


def test_default_scorings_are_blasts():
    assert default_scoring("protein") == Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)
    assert default_scoring("dna") == Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2)


# --------------------------------------------------------------------------- BLAST tabular

def test_blast_number_formats():
    assert [blast_evalue(e) for e in (0.0, 1e-181, 2.4e-150, 9.9e-100, 8.5e-4, 0.0009,
                                      0.05, 0.5, 5.0, 42.0)] == \
        ["0.0", "0.0", "2e-150", "1e-99", "8e-04", "0.001", "0.050", "0.50", "5.0", "   42"]
    assert [blast_bitscore(b) for b in (0.5, 99.9, 99.95, 150.7, 9999.0, 10000.5)] == \
        [" 0.5", "99.9", "  99", " 150", "9999", "1.000e+04"]


def test_blast6_columns(backend):
    proteins = SequenceSet.from_file(UNIPROT)
    queries = proteins.take(np.array([4]))
    result = search(queries, proteins, n=5, task="path", backend=backend)
    header, columns = result.blast6_columns(queries.names, proteins.names)
    assert header == BLAST6_COLUMNS
    rows = [dict(zip(header, row, strict=True)) for row in zip(*columns, strict=True)]
    for p, row in enumerate(rows):
        assert row["qseqid"] == queries.names[0]
        assert row["sseqid"] == proteins.names[result.subject_index[p]]
        assert row["pident"] == f"{100 * result.identity[p]:.3f}"
        assert row["length"] == result.alignment_length[p]
        assert (row["qstart"], row["qend"]) == (result.query_start[p] + 1,
                                                result.query_end[p])
        assert (row["sstart"], row["send"]) == (result.subject_start[p] + 1,
                                                result.subject_end[p])
        assert row["evalue"] == blast_evalue(result.evalue[p])
        assert row["bitscore"] == blast_bitscore(result.bitscore[p])
    assert rows[0]["pident"] == "100.000"  # the query itself
    with pytest.raises(ValueError, match="needs task='path'"):
        search(queries, proteins, n=1, backend=backend).blast6_columns(["q"], proteins.names)



def test_no_hits_in_every_format(tmp_path, capsys):
    """A search that finds nothing writes the empty table, BLAST's format too."""
    queries, subjects = tmp_path / "q.fa", tmp_path / "s.fa"
    queries.write_text(">q\nAAAAAAAA\n")
    subjects.write_text(">s\nCCCCCCCC\n")
    result = search(["AAAA"], ["CCCC"], task="path", backend="cpu")
    assert len(result) == 0 and result.cigar == [] and len(result.identity) == 0
    for output in ("tsv", "blast6"):
        assert main(["search", str(queries), str(subjects), "--format", output, "-q",
                     "--backend", "cpu"]) == 0
        assert "q\ts" not in capsys.readouterr().out


def test_the_cuda_launch_plan(monkeypatch):
    """Every query in exactly one launch of its lane shape; queries of several passes (which
    get border rows) apart; no launch above the grid's y limit."""
    from gpualign.search import _cuda

    monkeypatch.setattr(_cuda, "_MAX_GRID_Y", 3)
    lengths = np.random.default_rng(2).integers(0, 3000, 200)
    plan = _cuda.launch_plan(lengths)
    placed = np.concatenate([members for _, members in plan])
    assert sorted(placed.tolist()) == list(range(len(lengths)))
    for (group, rows), members in plan:
        assert 1 <= len(members) <= 3
        assert all(_cuda.lane_shape(int(m)) == (group, rows) for m in lengths[members])
        several = lengths[members] > group * rows
        assert several.all() or not several.any()


def test_the_cuda_partition_plan():
    """The partitions a database that may not stay on the GPU streams in: in order, covering it,
    each starting at an even position (the kernel's pairs are the database's); where no pair is
    over the budget alone, two partitions' device layouts and one query's working memory (its
    score row, profile and, for a query of several passes, border rows) fit the budget; border
    rows make partitions smaller."""
    from gpualign.search import _cuda

    lengths = np.sort(np.random.default_rng(4).integers(0, 500, 301))
    profile = 700
    counts = {}
    for several in (False, True):
        for budget in (20_000, 40_000, 300_000):
            bounds = _cuda.partition_plan(lengths, budget, several, profile)
            counts[several, budget] = len(bounds)
            assert [lo for lo, _ in bounds[1:]] == [hi for _, hi in bounds[:-1]]
            assert bounds[0][0] == 0 and bounds[-1][1] == len(lengths)
            assert all(lo % 2 == 0 and hi > lo for lo, hi in bounds)
            layouts = [_cuda._packed_layout(int(lengths[lo:hi].sum()), hi - lo)[1]
                       for lo, hi in bounds]
            for lo, hi in bounds:
                border = 8 * int(_cuda._border_columns(lengths[lo:hi]).sum()) if several else 0
                work = _cuda._BYTES_PER_SCORE * (hi - lo) + profile + border
                assert 2 * max(layouts) + work <= budget
        assert _cuda.partition_plan(lengths, 1, several, profile) == [
            (lo, min(lo + 2, len(lengths))) for lo in range(0, len(lengths), 2)]
        assert _cuda.partition_plan(lengths, 1 << 40, several, profile) == [(0, len(lengths))]
    assert all(counts[True, budget] > counts[False, budget] for budget in (20_000, 40_000, 300_000))


def test_the_cuda_streamed_partition_layout():
    """A streamed partition's device buffer as the host packs it: the codes with their zero
    padding, the offsets, the input order and the pairs' border bases read back from it, the
    int64 arrays aligned, in no more bytes than the partition plan counts."""
    from gpualign.search import _cuda
    from gpualign.sequences import DEVICE_PADDING

    part = SequenceSet.from_sequences(["ACG", "", "ACGTA", "A", "GG"], "dna")  # odd, empty
    order = np.array([4, 0, 3, 1, 2])
    columns = _cuda._border_columns(part.lengths)
    assert columns.tolist() == [4, 6, 2]
    packed = np.concatenate(_cuda._layout_pieces(part, order, columns))
    start, end = _cuda._packed_layout(len(part.codes), len(part))
    assert start % 8 == 0 and len(packed) == end
    assert end <= int(_cuda._pair_bytes(part.lengths, False)[0].sum()) + _cuda._LAYOUT_EXTRA
    codes, offsets, input_order, border_base = _cuda._unpacked(packed, len(part.codes),
                                                               len(part))
    assert codes.tolist() == part.codes.tolist() + [0] * DEVICE_PADDING
    assert offsets.tolist() == part.offsets.tolist()
    assert input_order.tolist() == order.tolist()
    assert border_base.tolist() == [0, 4, 10]


def test_the_cuda_query_passes(monkeypatch):
    """Each query's passes and profile bytes, from its lane shape."""
    from gpualign.search import _cuda

    monkeypatch.setattr(config, "SEARCH_GROUPS", (4,))
    monkeypatch.setattr(config, "SEARCH_LANE_ROWS", (8,))
    queries = SequenceSet.from_sequences(["MKV", "", "A" * 32, "A" * 33, "MKV", "W" * 100])
    passes, profile = _cuda._query_passes(queries, False)
    assert passes.tolist() == [1, 1, 1, 2, 1, 4]
    assert profile.tolist() == [32 * p * queries.alphabet.size for p in passes.tolist()]
