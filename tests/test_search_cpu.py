"""The CPU search backend's passes through parasail: every pair in 8-bit lanes first, the pairs
that saturate them in 16 bits, those that saturate 16 in 32, each first width forced through
``config.SEARCH_CPU_FIRST_BITS``; the scores of every pair against parasail's unvectorized
reference (and the naive Gotoh oracle on tiny inputs), for DNA and protein, linear and affine
gaps, empty queries and subjects, and scorings or queries that a narrow width cannot hold."""

from __future__ import annotations

import functools

import numpy as np
import parasail
import pytest
from naive import align_naive
from test_search import _parasail_scores

from gpualign import Scoring, SequenceSet, config
from gpualign.align import _parasail
from gpualign.search import Database
from gpualign.search import _cpu as search_cpu

#: Scores above these saturate parasail's 8-bit and 16-bit lanes in every kernel (8-bit
#: striped lanes hold scores up to about 255 minus the best substitution score, biased from
#: -128; 8-bit scan ones up to about 127 minus it).
EIGHT_BITS, SIXTEEN_BITS = 255, (1 << 15) - 1

SCORINGS = {
    "protein-affine": ("protein", Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)),
    "protein-linear": ("protein", Scoring.matrix("PAM30", gap_open=10, gap_extend=10)),
    "dna-affine": ("dna", Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)),
    "dna-linear": ("dna", Scoring(match=2, mismatch=-3, gap_open=3, gap_extend=3)),
}
#: Residues of the query whose self-hit saturates 16 bits (about 5 a residue for random
#: proteins, 2 for DNA).
LONG = {"protein": 7000, "dna": 17000}
LETTERS = {"protein": "ACDEFGHIKLMNPQRSTVWY", "dna": "ACGT"}


def _random(rng: np.random.Generator, length: int, letters: str) -> str:
    return "".join(rng.choice(list(letters), length))


def _reference(queries: SequenceSet, subjects: SequenceSet, scoring: Scoring) -> np.ndarray:
    """parasail's unvectorized Smith-Waterman (no lanes to saturate) of every pair."""
    return _parasail_scores(queries, subjects, scoring, parasail.sw)


@functools.cache
def _workload(name: str) -> tuple[SequenceSet, Database, np.ndarray]:
    """Queries (one empty, short, medium and long), a database of random subjects (one empty)
    with the queries among them, and the reference score of every pair: the self-hits saturate
    8 bits (medium) and 16 bits (long), the random pairs stay below 8 bits."""
    alphabet, scoring = SCORINGS[name]
    rng = np.random.default_rng(5)
    letters = LETTERS[alphabet]
    queries = ["", _random(rng, 25, letters), _random(rng, 300, letters),
               _random(rng, LONG[alphabet], letters)]
    subjects = [_random(rng, int(rng.integers(1, 150)), letters) for _ in range(20)]
    subjects += ["", *queries[1:]]
    query_set = SequenceSet.from_sequences(queries, alphabet)
    database = Database.from_sequences(subjects, alphabet)
    expected = _reference(query_set, SequenceSet.from_sequences(subjects, alphabet), scoring)
    return query_set, database, expected


def _all_scores(queries: SequenceSet, database: Database, scoring: Scoring) -> np.ndarray:
    """The backend's score of every (query, subject) pair, subjects in input order."""
    table, _ = scoring.table(queries.alphabet)
    score, subject = search_cpu.top_scores(queries, database, table, scoring.gap_open,
                                           scoring.gap_extend, len(database))
    out = np.full((len(queries), len(database)), -1, dtype=np.int64)
    np.put_along_axis(out, database.order[subject], score, axis=1)
    return out


@pytest.mark.parametrize("first_bits", [8, 16, 32])
@pytest.mark.parametrize("name", list(SCORINGS))
def test_every_pair_is_exact_whatever_width_it_stops_at(name, first_bits, monkeypatch):
    queries, database, expected = _workload(name)
    # The pairs stop at every width: below 8 bits' range, between 8 and 16, beyond 16.
    assert (expected[expected > 0] <= EIGHT_BITS).any()
    assert ((EIGHT_BITS < expected) & (expected <= SIXTEEN_BITS)).any()
    assert (expected > SIXTEEN_BITS).any()
    monkeypatch.setattr(config, "SEARCH_CPU_FIRST_BITS", first_bits)
    monkeypatch.setattr(config, "SEARCH_CPU_TASK_RESIDUES", 200)  # several tasks
    assert _all_scores(queries, database, SCORINGS[name][1]).tolist() == expected.tolist()


def _check_top(queries: SequenceSet, database: Database, scoring: Scoring,
               expected: np.ndarray, n: int) -> None:
    """The backend's best ``n`` of each query are the expected ones, ties to the first in the
    input."""
    table, _ = scoring.table(queries.alphabet)
    score, subject = search_cpu.top_scores(queries, database, table, scoring.gap_open,
                                           scoring.gap_extend, n)
    for q in range(len(queries)):
        best = sorted(range(len(database)), key=lambda s: (-expected[q, s], s))[:n]
        assert score[q].tolist() == expected[q, best].tolist(), q
        assert database.order[subject[q]].tolist() == best, q


@pytest.mark.parametrize("name", list(SCORINGS))
def test_the_best_hits_fold_the_rescored_pairs(name, monkeypatch):
    """Saturated pairs wait for their exact scores and fold into the best hits after the
    blocks they came from (here at the end: they are fewer than a block's pairs)."""
    queries, database, expected = _workload(name)
    monkeypatch.setattr(config, "SEARCH_CPU_TASK_RESIDUES", 200)
    _check_top(queries, database, SCORINGS[name][1], expected, 3)


def test_pairs_that_all_saturate_are_rescored_block_by_block(monkeypatch):
    """Every pair saturates 8 bits: each block's are as many as its pairs, rescored before
    the next block comes."""
    scoring = Scoring(match=100, mismatch=-100, gap_open=120, gap_extend=20)
    queries = SequenceSet.from_sequences(["A" * 5, "A" * 30, "C" * 9], "dna")
    subjects = SequenceSet.from_sequences(["A" * length for length in range(2, 40, 3)]
                                          + ["C" * length for length in range(2, 40, 3)],
                                          "dna")
    monkeypatch.setattr(config, "SEARCH_CPU_TASK_RESIDUES", 60)
    _check_top(queries, Database.from_set(subjects), scoring,
               _reference(queries, subjects, scoring), 4)


@pytest.mark.parametrize("scoring", [
    Scoring(match=100, mismatch=-100, gap_open=120, gap_extend=20),
    Scoring(match=3, mismatch=-2, gap_open=4, gap_extend=4),
], ids=["a match or two saturates 8 bits", "linear"])
def test_tiny_pairs_against_the_naive_oracle(scoring):
    rng = np.random.default_rng(9)
    queries = SequenceSet.from_sequences([_random(rng, int(rng.integers(0, 12)), "ACGT")
                                          for _ in range(6)], "dna")
    subjects = SequenceSet.from_sequences([_random(rng, int(rng.integers(0, 15)), "ACGTN")
                                           for _ in range(15)], "dna")
    table, _ = scoring.table("dna")
    expected = [[align_naive(list(queries.codes_of(q)), list(subjects.codes_of(s)), table,
                             scoring.gap_open, scoring.gap_extend, "local").score
                 for s in range(len(subjects))] for q in range(len(queries))]
    assert _all_scores(queries, Database.from_set(subjects), scoring).tolist() == expected


@pytest.mark.parametrize("scoring", [
    Scoring(match=2, mismatch=-3, gap_open=200, gap_extend=1),
    Scoring(match=150, mismatch=-3, gap_open=5, gap_extend=2),
    Scoring(match=2, mismatch=-130, gap_open=5, gap_extend=5),
], ids=["gap open beyond 8 bits", "match beyond 8 bits", "mismatch beyond 8 bits, linear"])
def test_scorings_beyond_8_bits_start_in_16(scoring):
    rng = np.random.default_rng(13)
    queries = SequenceSet.from_sequences([_random(rng, 40, "ACGT"), "ACGT" * 50], "dna")
    subjects = SequenceSet.from_sequences([_random(rng, int(rng.integers(1, 300)), "ACGT")
                                           for _ in range(10)] + ["ACGT" * 60], "dna")
    expected = _reference(queries, subjects, scoring)
    assert _all_scores(queries, Database.from_set(subjects), scoring).tolist() == \
        expected.tolist()


@pytest.mark.parametrize("first_bits, query_length, gap", [(8, 3000, 5), (16, 60000, 10)],
                         ids=["wraps 8 bits", "wraps 16 bits"])
def test_long_queries_with_linear_gaps(first_bits, query_length, gap, monkeypatch):
    """parasail's scan kernels add the query's segments times the gap cost in one lane: a
    width where that wraps (wrong scores, unflagged) is skipped for the query."""
    monkeypatch.setattr(config, "SEARCH_CPU_FIRST_BITS", first_bits)
    rng = np.random.default_rng(17)
    scoring = Scoring(match=2, mismatch=-3, gap_open=gap, gap_extend=gap)
    queries = SequenceSet.from_sequences([_random(rng, query_length, "ACGT")], "dna")
    subjects = SequenceSet.from_sequences([_random(rng, int(rng.integers(1, 200)), "ACGT")
                                           for _ in range(12)], "dna")
    expected = _reference(queries, subjects, scoring)
    assert _all_scores(queries, Database.from_set(subjects), scoring).tolist() == \
        expected.tolist()


def test_which_queries_a_width_holds():
    lengths = np.array([0, 100, 2032, 2033, 60000])
    blosum, _ = Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1).table("protein")
    assert _parasail.lanes_fit(8, "striped", lengths, blosum, 12, 1).all()
    assert not _parasail.lanes_fit(8, "striped", lengths, blosum, 128, 1).any()
    assert not _parasail.lanes_fit(8, "striped", lengths, blosum * 12, 12, 1).any()
    assert _parasail.lanes_fit(16, "striped", lengths, blosum * 12, 128, 1).all()
    # Scan: ceil(length / 16) segments of 8-bit lanes times gap_extend at most 127.
    assert _parasail.lanes_fit(8, "scan", lengths, blosum, 1, 1).tolist() == \
        [True, True, True, False, False]
    assert _parasail.lanes_fit(16, "scan", lengths, blosum, 1, 1).all()
    assert _parasail.lanes_fit(32, "scan", lengths, blosum * 1000, 1 << 20, 1 << 20).all()


def test_the_first_width_is_checked(monkeypatch):
    monkeypatch.setattr(config, "SEARCH_CPU_FIRST_BITS", 12)
    queries = SequenceSet.from_sequences(["ACGT"], "dna")
    table, _ = Scoring().table("dna")
    with pytest.raises(ValueError, match="SEARCH_CPU_FIRST_BITS"):
        search_cpu.top_scores(queries, Database.from_sequences(["ACGT"], "dna"), table, 5, 2, 1)
