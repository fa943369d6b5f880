"""The CUDA search kernel (``search/kernels/search.cu``) against the CPU backend's local scores:
lane shapes, several passes, overflowing 16-bit lanes, database partitions (streamed through
two device buffers) and query chunks, odd and empty subjects, ties."""

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


def _search(qset: SequenceSet, database, scoring: Scoring, n: int):
    """The CUDA backend's top ``n``: ``(score, subject)``."""
    from gpualign.search import _cuda

    table, _ = scoring.table(database.sequences.alphabet)
    return _cuda.top_scores(qset, database, table, scoring.gap_open, scoring.gap_extend, n)


def _check(queries, database, scoring, n):
    qset, best, where = _expected(queries, database, scoring, n)
    score, subject = _search(qset, database, scoring, n)
    np.testing.assert_array_equal(score, best)
    np.testing.assert_array_equal(subject, where)


BLOSUM62 = Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)


def test_real_proteins_every_shape():
    proteins = _proteins(120)
    _check(proteins[:12], _database(proteins[12:]), BLOSUM62, 10)


@pytest.mark.parametrize("groups,rows", [((4,), (8,)), ((8,), (12,)), ((32,), (16,)),
                                         ((16,), (28,)), ((4,), (6,)), ((8,), (14,)),
                                         ((32,), (30,)), ((16,), (48,)), ((8,), (46,))])
def test_several_passes(monkeypatch, groups, rows):
    """Small passes: queries of up to 400 residues run in up to 13 passes."""
    monkeypatch.setattr(gpualign.config, "SEARCH_GROUPS", groups)
    monkeypatch.setattr(gpualign.config, "SEARCH_LANE_ROWS", rows)
    proteins = _proteins(60)
    _check(proteins[:6], _database(proteins[6:]), BLOSUM62, 5)


def test_large_database_shapes(monkeypatch):
    """A database of SEARCH_LARGE_SUBJECTS sequences or more takes the large shapes (fewer
    threads a pair, up to 48 rows each): the same scores."""
    from gpualign.search import _cuda

    monkeypatch.setattr(gpualign.config, "SEARCH_LARGE_SUBJECTS", 10)
    proteins = _proteins(120)
    queries = proteins[:12]
    assert {_cuda.lane_shape(len(q), large=True) for q in queries} != \
        {_cuda.lane_shape(len(q)) for q in queries}
    _check(queries, _database(proteins[12:]), BLOSUM62, 10)


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


def _streamed_budget(qset: SequenceSet, database, partitions: int) -> int:
    """A batch budget under which the search streams ``database`` in ``partitions`` partitions
    for the queries ``qset`` (the smallest found in steps of 5%)."""
    from gpualign.search import _cuda

    passes, profile = _cuda._query_passes(qset, False)
    lengths = database.sequences.lengths
    budget = 1
    while True:
        cut = _cuda.partition_plan(lengths, budget, bool((passes > 1).any()), int(profile.max()))
        if len(cut) <= partitions:
            assert len(cut) == partitions
            return budget
        budget += budget // 20 + 1


@pytest.mark.parametrize("partitions", [1, 2, 3, 7])
@pytest.mark.parametrize("several_passes", [False, True])
def test_streamed_partitions_equal_the_resident_search(monkeypatch, partitions, several_passes):
    """A database that may not stay on the device, streamed in 1, 2, 3 and 7 partitions
    through the two device buffers, in staging pieces of 300 bytes. With passes of 32 rows
    (``several_passes``), every query but the shortest runs several passes, with border rows
    in every partition. The hits, ties included, equal the resident search's and the CPU's;
    two device buffers at most; each query alone fits the memory its chunks are given, border
    rows included."""
    from gpualign.search import _cuda

    proteins = _proteins(50)
    queries = proteins[1:5] + ["MKV"]  # 258, 339, 94 and 208 residues: one pass each
    if several_passes:
        monkeypatch.setattr(gpualign.config, "SEARCH_GROUPS", (4,))
        monkeypatch.setattr(gpualign.config, "SEARCH_LANE_ROWS", (8,))
        queries.append(proteins[0])  # 1,880 residues: 59 passes
    subjects = proteins[6:46] + [proteins[9], proteins[9]]  # a tie of three
    qset, best, where = _expected(queries, _database(subjects), BLOSUM62, 9)
    resident = _search(qset, _database(subjects), BLOSUM62, 9)

    buffers: list[int] = []
    fitting: list[bool] = []
    upload_slot, query_chunks = _cuda._UploadSlot, _cuda._query_chunks

    def counted_slot(size):
        buffers.append(size)
        return upload_slot(size)

    def checked_chunks(resident, budget, passes, profile):
        alone = (_cuda._BYTES_PER_SCORE * resident.count + profile
                 + np.where(passes > 1, 8 * resident.border_entries, 0))
        fitting.append(bool((alone <= budget).all()))
        return query_chunks(resident, budget, passes, profile)

    database = _database(subjects)
    monkeypatch.setattr(_cuda, "fits_resident", lambda nbytes: False)
    monkeypatch.setattr(_cuda, "_STAGING_BYTES", 300)
    monkeypatch.setattr(_cuda, "_UploadSlot", counted_slot)
    monkeypatch.setattr(_cuda, "_query_chunks", checked_chunks)
    monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES",
                        _streamed_budget(qset, database, partitions))
    streamed = _search(qset, database, BLOSUM62, 9)
    for on_device in (resident, streamed):
        np.testing.assert_array_equal(on_device[0], best)
        np.testing.assert_array_equal(on_device[1], where)
    assert len(buffers) == min(2, partitions)
    assert fitting == [True] * partitions


def test_pinned_staging_copies_through_its_pieces_in_turn():
    """Copies longer and shorter than a piece, and empty; each source may change as soon as its
    copy returns (it is staged)."""
    import cupy

    from gpualign.cuda.host import PinnedStaging

    rng = np.random.default_rng(8)
    sources = [rng.integers(0, 256, size, dtype=np.uint8) for size in (1, 777, 5000, 0, 512)]
    expected = np.concatenate(sources)
    staging = PinnedStaging(cupy.cuda.Stream(non_blocking=True), 512)
    on_device = cupy.zeros(len(expected), dtype=cupy.uint8)
    position = 0
    for source in sources:
        staging.copy(on_device[position:position + len(source)], source)
        source[:] = 0
        position += len(source)
    staging.stream.synchronize()
    np.testing.assert_array_equal(on_device.get(), expected)


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


def test_a_database_that_does_not_fit_beside_the_kept_ones_makes_them_go(monkeypatch):
    """Databases kept by earlier searches go, the least recently searched first, when the one
    searched now does not fit beside them (here: a database fits only alone); each search
    still gives the CPU backend's hits."""
    from gpualign.search import _cuda

    proteins = _proteins(90)
    first, second, third = (_database(proteins[k:k + 25]) for k in (10, 40, 65))
    now = [first]

    def alone(nbytes: int) -> bool:
        return all(sequences is now[0].sequences
                   for sequences, by_device in _cuda._RESIDENT.items() if by_device)

    monkeypatch.setattr(_cuda, "fits_resident", alone)
    for database in (first, second, first, third):
        now[0] = database
        _check(proteins[:3], database, BLOSUM62, 4)
        kept = [d for d in (first, second, third) if _cuda._RESIDENT.get(d.sequences)]
        assert kept == [database]


def test_a_kept_database_stays_when_a_query_fits_beside_it(monkeypatch):
    """A database that an earlier search left on the device is searched there again when one
    query's working memory fits beside it: its own layout is not counted a second time."""
    from gpualign.search import _cuda

    asked: list[int] = []
    fits_resident = _cuda.fits_resident

    def recorded(nbytes):
        asked.append(nbytes)
        return fits_resident(nbytes)

    monkeypatch.setattr(_cuda, "fits_resident", recorded)
    proteins = _proteins(30)
    database = _database(proteins[3:])
    _check(proteins[:2], database, BLOSUM62, 3)
    _check(proteins[:2], database, BLOSUM62, 3)
    layout = _cuda._pair_bytes(database.sequences.lengths, False)[0]
    assert asked[0] - asked[1] == int(layout.sum()) + _cuda._LAYOUT_EXTRA
