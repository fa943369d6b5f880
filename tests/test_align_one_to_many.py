"""``align_one_to_many`` in its default ``mode="local"``: the targets scored by the database
search engine (``top_scores`` of gpualign.search's backends, batch by batch), with results
identical to aligning the query with every target (``align(..., pairs=...)``, the path before
the engine), on real proteins and random DNA, whatever ``n`` and ``min_score``, with ties, in
one batch or many, from every kind of target source."""

from __future__ import annotations

import gc
import gzip
import weakref
from pathlib import Path

import numpy as np
from test_align import check_result, random_text, relative
from test_progress_long import Recorder

import gpualign
from gpualign import Scoring, SequenceSet
from gpualign.align import api as align_api

DATA = Path(__file__).parent / "data"
BLOSUM62 = Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)  # BLAST's 11/1
DNA_SCHEMES = [Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2),
               Scoring(match=1, mismatch=-1, gap_open=2, gap_extend=2),  # linear gaps
               Scoring(match=1, mismatch=0, gap_open=0, gap_extend=0)]   # ties everywhere
#: (n, min_score): n alone, min_score alone, both, neither, n beyond the targets.
KEEPS = ((1, None), (7, None), (None, 20), (5, 20), (None, None), (1000, None))


def expected(query, targets: SequenceSet, scoring: Scoring, n, min_score, backend: str):
    """The kept targets and their scores by aligning the query with every target, ranked by
    score, then target index."""
    qset = SequenceSet.from_sequences([query], targets.alphabet)
    scores = gpualign.align(qset, targets, mode="local", scoring=scoring, backend=backend,
                            pairs=(np.zeros(len(targets), dtype=np.int64),
                                   np.arange(len(targets)))).score
    ranked = np.lexsort((np.arange(len(targets)), -scores))
    if min_score is not None:
        ranked = ranked[scores[ranked] >= min_score]
    ranked = ranked[:n]
    return ranked.tolist(), scores[ranked].tolist()


def write_fasta(path: Path, targets: SequenceSet) -> Path:
    path.write_bytes(gzip.compress("".join(f">{targets.names[k]}\n{targets[k]}\n"
                                           for k in range(len(targets))).encode()))
    return path


def sources(targets: SequenceSet, tmp_path: Path):
    """The same targets as a SequenceSet, a list, an iterator and a gzipped FASTA file."""
    texts = [targets[k] for k in range(len(targets))]
    return {"set": targets, "list": texts, "iterator": iter(texts),
            "file": write_fasta(tmp_path / "targets.fa.gz", targets)}


def check_hits(hits, want, scores, targets: SequenceSet, where):
    assert hits.target_index.tolist() == want, where
    assert hits.score.tolist() == scores, where
    assert hits.query_index.tolist() == [0] * len(want), where
    assert hits.mode == "local", where


def test_real_proteins_equal_aligning_every_target(backend, monkeypatch, tmp_path):
    proteins = SequenceSet.from_file(DATA / "uniprot_200.fasta.gz", "protein")
    rng = np.random.default_rng(22)
    copies = [int(k) for k in rng.choice(len(proteins), 12, replace=False)]
    # Exact copies of some proteins at the end: ties that the lower index wins.
    targets = proteins.take(np.concatenate((np.arange(len(proteins)), copies)))
    queries = [proteins[copies[0]], relative(rng, proteins[copies[1]], 0.3,
                                             "ARNDCQEGHILKMFPSTWYV")]
    for batch_residues in (1 << 24, 5000):  # one batch; about 15 batches
        monkeypatch.setattr(gpualign.config, "ALIGN_CPU_BATCH_RESIDUES", batch_residues)
        for query in queries:
            for n, min_score in ((10, None), (None, 60), (4, 60), (None, None)):
                want, scores = expected(query, targets, BLOSUM62, n, min_score, backend)
                for kind, source in sources(targets, tmp_path).items():
                    hits = gpualign.align_one_to_many(query, source, scoring=BLOSUM62, n=n,
                                                      min_score=min_score, alphabet="protein",
                                                      backend=backend)
                    check_hits(hits, want, scores, targets,
                               (batch_residues, n, min_score, kind))


def test_random_dna_equals_aligning_every_target(backend, monkeypatch, tmp_path):
    monkeypatch.setattr(gpualign.config, "ALIGN_CPU_BATCH_RESIDUES", 97)  # many batches
    rng = np.random.default_rng(7)
    query = random_text(rng, 50, n_fraction=0.05)
    texts = [relative(rng, query, rate) if k % 3 else random_text(rng, int(rng.integers(0, 90)))
             for k, rate in enumerate(rng.uniform(0.0, 0.5, 70))]
    texts += [texts[4], texts[8], "", query]  # ties, an empty target, the query itself
    targets = SequenceSet.from_sequences(texts, "dna")
    for scoring in DNA_SCHEMES:
        for n, min_score in KEEPS:
            want, scores = expected(query, targets, scoring, n, min_score, backend)
            for kind, source in sources(targets, tmp_path).items():
                hits = gpualign.align_one_to_many(query, source, scoring=scoring, n=n,
                                                  min_score=min_score, task="path",
                                                  backend=backend)
                check_hits(hits, want, scores, targets, (scoring.describe(), n, min_score, kind))
                if kind == "file":
                    assert hits.target_name == [targets.names[k] for k in want]
        check_result(hits, [query] * len(want), [texts[k] for k in want], scoring, "local")


def test_ties_go_to_the_lower_target_index_whatever_the_lengths(backend, monkeypatch):
    """Equal scores on targets of different lengths: the search sorts each batch by length,
    and the tie still goes to the target given first."""
    best = ["GGACGTACGTGG", "ACGTACGT", "TTTTTTACGTACGTTTTTTTTT", "CACGTACGTC"]
    texts = [best[k % len(best)] if k % 2 else "TTTT" for k in range(40)]
    targets = SequenceSet.from_sequences(texts, "dna")
    for batch_residues in (1 << 24, 30):
        monkeypatch.setattr(gpualign.config, "ALIGN_CPU_BATCH_RESIDUES", batch_residues)
        for n in (1, 3, 19, 20, None):
            hits = gpualign.align_one_to_many("ACGTACGT", targets, n=n, backend=backend)
            want, scores = expected("ACGTACGT", targets, Scoring(), n, None, backend)
            assert hits.target_index.tolist() == want and hits.score.tolist() == scores
            assert want[:20] == list(range(1, 40, 2))[:n]


def test_scores_beyond_16_bits_are_exact(backend):
    """A score past the search kernels' 16-bit lanes is rescored wider, as align scores it."""
    rng = np.random.default_rng(11)
    scoring = Scoring(match=5, mismatch=-4, gap_open=10, gap_extend=1)
    query = random_text(rng, 7000)
    texts = [relative(rng, query, 0.02), random_text(rng, 300), query, query[:3000]]
    hits = gpualign.align_one_to_many(query, texts, scoring=scoring, n=3, backend=backend)
    want, scores = expected(query, SequenceSet.from_sequences(texts, "dna"), scoring, 3, None,
                            backend)
    assert hits.target_index.tolist() == want and hits.score.tolist() == scores
    assert scores[0] == 5 * 7000 > 1 << 15


def test_an_empty_query_keeps_the_first_targets(backend):
    hits = gpualign.align_one_to_many("", ["ACGT", "GG", "", "T"], n=3, alphabet="dna",
                                      backend=backend)
    assert hits.target_index.tolist() == [0, 1, 2] and hits.score.tolist() == [0, 0, 0]


def test_raw_bytes_take_the_engine_too(backend):
    """256 codes: neither the CPU's SIMD kernels nor the GPU's search lanes take them; the
    engine's fallbacks score them."""
    texts = [b"hello world", b"yellow", b"\x00\xffhello\x00", b"", b"world"]
    targets = SequenceSet.from_sequences(texts, "bytes")
    for n, min_score in KEEPS:
        hits = gpualign.align_one_to_many(b"hello", targets, n=n, min_score=min_score,
                                          backend=backend)
        want, scores = expected(b"hello", targets, Scoring(), n, min_score, backend)
        assert hits.target_index.tolist() == want and hits.score.tolist() == scores


def test_other_modes_keep_aligning_every_target(backend, monkeypatch):
    """Only local mode searches: the others score each target with ``align`` as before."""
    calls = []
    monkeypatch.setattr(align_api, "_searched", lambda *args: calls.append(args))
    for mode in ("global", "semi-global", "overlap"):
        hits = gpualign.align_one_to_many("ACGTACGT", ["ACGT", "TTACGTACGTT"], mode=mode,
                                          n=1, backend=backend)
        assert hits.mode == mode and len(hits) == 1
    assert calls == []


def test_a_target_set_is_sorted_once_while_it_lives(backend, monkeypatch):
    monkeypatch.setattr(gpualign.config, "ALIGN_CPU_BATCH_RESIDUES", 60)
    rng = np.random.default_rng(5)
    targets = SequenceSet.from_sequences([random_text(rng, int(k)) for k in
                                          rng.integers(5, 40, 30)], "dna")
    queries = [random_text(rng, 25) for _ in range(3)]
    made = []  # the batches' sorted sequences, weakly: the backends must not keep them
    from_set = align_api.Database.from_set

    def sorted_batch(records):
        database = from_set(records)
        made.append(weakref.ref(database.sequences))
        return database

    monkeypatch.setattr(align_api.Database, "from_set", sorted_batch)
    for query in queries:
        hits = gpualign.align_one_to_many(query, targets, n=5, backend=backend)
        want, scores = expected(query, targets, Scoring(), 5, None, backend)
        assert hits.target_index.tolist() == want and hits.score.tolist() == scores
    batches = len(align_api._SORTED_BATCHES[targets])
    assert batches > 1 and len(made) == batches
    assert sum(len(kept()) for kept in made) == len(targets)
    # A list is encoded anew at each call, and its sorted batches go with the call.
    gpualign.align_one_to_many(queries[0], [targets[k] for k in range(len(targets))], n=5,
                               backend=backend)
    gc.collect()
    assert len(made) > batches and all(kept() is None for kept in made[batches:])
    alive = weakref.ref(targets)
    del targets
    gc.collect()
    assert alive() is None  # the kept batches do not keep the set alive ...
    assert all(kept() is None for kept in made)  # ... and go with it


def test_progress_counts_the_search_cells(backend, monkeypatch):
    monkeypatch.setattr(gpualign.config, "ALIGN_CPU_BATCH_RESIDUES", 50)
    rng = np.random.default_rng(9)
    texts = [random_text(rng, int(k)) for k in rng.integers(0, 60, 25)]
    query = random_text(rng, 33)
    cells = len(query) * sum(map(len, texts))
    for source, total in ((SequenceSet.from_sequences(texts, "dna"), cells), (texts, None)):
        recorder = Recorder()
        gpualign.align_one_to_many(query, source, n=2, backend=backend, progress=recorder)
        recorder.check(cells, total)
