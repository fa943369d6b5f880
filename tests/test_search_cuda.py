"""The CUDA search kernel (``search/kernels/search.cu``) against the CPU backend's local scores:
lane shapes, several passes, overflowing 16-bit lanes, database partitions and query chunks,
odd and empty subjects, ties."""

from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import CUDA_AVAILABLE, CUDA_REASON

import gpualign.config
from gpualign import Scoring, align
from gpualign.sequences import SequenceSet

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA unavailable: {CUDA_REASON}")]

DATA = Path(__file__).parent / "data"
PROTEIN = "ACDEFGHIKLMNPQRSTVWY"


def _proteins(count: int) -> list[str]:
    """The first ``count`` proteins of the bundled UniProt excerpt."""
    records, current = [], []
    with gzip.open(DATA / "uniprot_200.fasta.gz", "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                if current:
                    records.append("".join(current))
                current = []
            else:
                current.append(line.strip())
    records.append("".join(current))
    return records[:count]


def _database(sequences: list[str], alphabet: str = "protein") -> SimpleNamespace:
    """What the backend reads of a database: the sequences sorted by length, and their order."""
    order = np.argsort([len(s) for s in sequences], kind="stable")
    return SimpleNamespace(
        sequences=SequenceSet.from_sequences([sequences[i] for i in order], alphabet),
        order=order.astype(np.int64))


def _expected(queries: list[str], database, scoring: Scoring, n: int):
    """Top ``n`` by the CPU backend's local scores of every pair, ties to the input order."""
    subjects = database.sequences
    q_index = np.repeat(np.arange(len(queries)), len(subjects))
    s_index = np.tile(np.arange(len(subjects)), len(queries))
    qset = SequenceSet.from_sequences(queries, subjects.alphabet)
    scores = align(qset, subjects, mode="local", scoring=scoring, backend="cpu",
                   pairs=(q_index, s_index)).score.reshape(len(queries), len(subjects))
    take = min(n, len(subjects))
    best = np.full((len(queries), n), -1, dtype=np.int64)
    where = np.full((len(queries), n), -1, dtype=np.int64)
    for q in range(len(queries)):
        pick = np.lexsort((database.order, -scores[q]))[:take]
        best[q, :take] = scores[q, pick]
        where[q, :take] = pick
    return qset, best, where


def _check(queries, database, scoring, n):
    from gpualign.search import _cuda

    qset, best, where = _expected(queries, database, scoring, n)
    table, _ = scoring.table(database.sequences.alphabet)
    score, subject = _cuda.top_scores(qset, database, table, scoring.gap_open,
                                      scoring.gap_extend, n)
    np.testing.assert_array_equal(score, best)
    np.testing.assert_array_equal(subject, where)


BLOSUM62 = Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)


def test_real_proteins_every_shape():
    proteins = _proteins(120)
    _check(proteins[:12], _database(proteins[12:]), BLOSUM62, 10)


@pytest.mark.parametrize("groups,rows", [((4,), (8,)), ((8,), (12,)), ((32,), (16,)),
                                         ((16,), (28,)), ((4,), (6,)), ((8,), (14,)),
                                         ((32,), (30,))])
def test_several_passes(monkeypatch, groups, rows):
    """Small passes: queries of up to 400 residues run in up to 13 passes."""
    monkeypatch.setattr(gpualign.config, "SEARCH_GROUPS", groups)
    monkeypatch.setattr(gpualign.config, "SEARCH_LANE_ROWS", rows)
    proteins = _proteins(60)
    _check(proteins[:6], _database(proteins[6:]), BLOSUM62, 5)


def test_random_odd_empty_and_ties():
    rng = np.random.default_rng(3)
    subjects = ["".join(rng.choice(list(PROTEIN), size=int(k))) for k in
                rng.integers(0, 90, size=41)]
    subjects += ["", subjects[3], subjects[3]]  # an empty subject; ties broken by input order
    queries = [subjects[3], "".join(rng.choice(list(PROTEIN), size=70)), "W", ""]
    _check(queries, _database(subjects), BLOSUM62, 45)


def test_overflowing_lanes_are_rescored():
    """W-W scores 11: 3,100 Ws score 34,100, past the 16-bit lanes' range."""
    long = "W" * 3100
    subjects = [long, "W" * 2900, long[:1000] + "A" * 50 + long[:2500], "MKV" * 30]
    _check([long, "W" * 200], _database(subjects), BLOSUM62, 4)


def test_partitions_and_query_chunks(monkeypatch):
    """A database that may not stay on the device and a budget of about one score row."""
    from gpualign.search import _cuda

    monkeypatch.setattr(_cuda, "fits_resident", lambda nbytes: False)
    monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES", 6000)
    proteins = _proteins(80)
    _check(proteins[:5], _database(proteins[5:]), BLOSUM62, 7)


def test_dna_and_a_scoring_outside_the_lanes():
    rng = np.random.default_rng(5)
    subjects = ["".join(rng.choice(list("ACGT"), size=int(k))) for k in rng.integers(1, 300, 30)]
    queries = [subjects[0][10:120], "ACGTN" * 20]
    _check(queries, _database(subjects, "dna"), Scoring(match=2, mismatch=-3, gap_open=7,
                                                        gap_extend=2), 6)
    # match + gap_open above a signed byte: the alignment kernels score every pair
    _check(queries, _database(subjects, "dna"), Scoring(match=100, mismatch=-3, gap_open=60,
                                                        gap_extend=2), 6)


def test_long_subjects_go_to_the_alignment_kernels(monkeypatch):
    """Subjects above SEARCH_LONG_SUBJECT residues: scored by align's kernels, merged in."""
    monkeypatch.setattr(gpualign.config, "SEARCH_LONG_SUBJECT", 150)
    proteins = _proteins(50)
    _check(proteins[:4], _database(proteins[4:]), BLOSUM62, 12)
    monkeypatch.setattr(gpualign.config, "SEARCH_LONG_SUBJECT", 0)  # every subject
    _check(proteins[:2], _database(proteins[4:20]), BLOSUM62, 5)


def test_a_searched_database_is_released_with_its_sequences():
    """The device layout kept between searches does not keep its database alive."""
    import gc
    import weakref

    from gpualign.search import _cuda

    proteins = _proteins(30)
    database = _database(proteins[3:])
    _check(proteins[:2], database, BLOSUM62, 3)
    sequences = weakref.ref(database.sequences)
    assert sequences() in _cuda._RESIDENT
    del database
    gc.collect()
    assert sequences() is None
