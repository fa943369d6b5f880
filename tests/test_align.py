"""Pairwise alignment (NW, SW, semi-global, overlap; affine gaps) on every backend against the
Gotoh oracle of naive.py (score, coordinates and CIGAR identical) and parasail (scores, with the
same matrix and gap convention), on random, Hypothesis and real inputs; every CIGAR re-scored.
"""

from __future__ import annotations

import doctest
import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import parasail
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import ALIGN_MODES, align_naive, rescore_alignment
from strategies import mutated

import gpualign
from gpualign import Scoring, SequenceSet
from gpualign.align import api as align_api
from gpualign.cigar import PackedCigars, count_ops, op_counts, placed_cigars
from gpualign.codes import ALIGN_LOCAL
from gpualign.sequences import get_alphabet

DATA = Path(__file__).parent / "data"
PARASAIL = {"global": parasail.nw_scan_32, "local": parasail.sw_scan_32,
            "semi-global": parasail.sg_dx_scan_32, "overlap": parasail.sg_scan_32}
SCHEMES = [Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2),
           Scoring(match=1, mismatch=-1, gap_open=2, gap_extend=2),   # linear gaps
           Scoring(match=5, mismatch=-4, gap_open=10, gap_extend=1),
           Scoring(match=1, mismatch=0, gap_open=0, gap_extend=0)]    # LCS-like, all ties
SIZES = (0, 1, 2, 7, 31, 64, 65, 130)


def codes_of(text: str, alphabet: str = "dna") -> list[int]:
    lookup = get_alphabet(alphabet).lookup
    return [int(lookup[ord(c)]) for c in text]


def oracle(query: str, target: str, scoring: Scoring, mode: str, alphabet: str = "dna"):
    table, _ = scoring.table(alphabet)
    match_codes = get_alphabet(alphabet).match_codes
    return align_naive(codes_of(query, alphabet), codes_of(target, alphabet), table,
                       scoring.gap_open, scoring.gap_extend, mode, match_codes)


def parasail_matrix(scoring: Scoring, alphabet: str):
    """Our substitution table as a parasail matrix (N against N is a mismatch, as here)."""
    table, _ = scoring.table(alphabet)
    symbols = get_alphabet(alphabet).symbols[:len(table)].decode()
    matrix = parasail.matrix_create(symbols, 0, 0)
    for i in range(len(table)):
        for j in range(len(table)):
            matrix.set_value(i, j, int(table[i, j]))
    return matrix


def check_result(result, queries, targets, scoring, mode, alphabet="dna"):
    """Every pair equals the oracle, and every CIGAR re-scores to its score and ends."""
    table, _ = scoring.table(alphabet)
    match_codes = get_alphabet(alphabet).match_codes
    for p, (query, target) in enumerate(zip(queries, targets, strict=True)):
        want = oracle(query, target, scoring, mode, alphabet)
        where = f"pair {p} ({mode}, {scoring.describe()}): {query!r} / {target!r}"
        assert int(result.score[p]) == want.score, where
        if result.task == "score":
            assert result.query_end[p] == result.target_end[p] == -1, where
            continue
        assert (int(result.query_end[p]), int(result.target_end[p])) == \
            (want.query_end, want.target_end), where
        if result.task == "end":
            assert result.cigar is None and result.query_start[p] == -1, where
            continue
        assert (int(result.query_start[p]), int(result.target_start[p]), result.cigar[p]) == \
            (want.query_start, want.target_start, want.cigar), where
        rescored = rescore_alignment(codes_of(query, alphabet), codes_of(target, alphabet),
                                     want.query_start, want.target_start, result.cigar[p],
                                     table, scoring.gap_open, scoring.gap_extend, match_codes)
        assert rescored == (want.score, want.query_end, want.target_end), where
        columns = count_ops(result.cigar[p])
        matches = count_ops(result.cigar[p], "=")
        assert result.identity[p] == pytest.approx(matches / columns if columns else 0.0)


def random_text(rng, length, symbols="ACGT", n_fraction=0.0):
    text = [symbols[k] for k in rng.integers(0, len(symbols), length)]
    if n_fraction:
        for k in np.flatnonzero(rng.random(length) < n_fraction):
            text[k] = "N"
    return "".join(text)


def relative(rng, text, rate=0.15, symbols="ACGT"):
    out = []
    for c in text:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(symbols[rng.integers(len(symbols))])
        elif r < rate:
            out.extend((c, symbols[rng.integers(len(symbols))]))
        else:
            out.append(c)
    return "".join(out)


# --- examples and shapes ------------------------------------------------------------------------


def test_docstring_examples_run():
    assert doctest.testmod(align_api, raise_on_error=True).attempted > 0


def test_worked_example(backend):
    # 8 query symbols against 9 target symbols: best is 7 matches, 1 mismatch, one 1-symbol
    # gap: 7*2 - 3 - 5 = 6. From the end, the traceback prefers the diagonal, so the gap goes
    # before the last T rather than after it.
    scoring = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    r = gpualign.align(["ACGTACGT", "ACGT"], ["ACGAACGTT", "TTTT"], mode="global",
                       scoring=scoring, task="path", backend=backend)
    assert int(r.score[0]) == 6 and r.cigar[0] == "3=1X3=1D1="
    assert r.mode == "global" and r.task == "path" and len(r) == 2
    assert r.query_start.tolist() == [0, 0] and r.query_end.tolist() == [8, 4]
    assert r.target_end.tolist() == [9, 4] and r.identity[0] == pytest.approx(7 / 9)
    check_result(r, ["ACGTACGT", "ACGT"], ["ACGAACGTT", "TTTT"], scoring, "global")


@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_packed_paths_equal_the_texts(backend, mode, linear, monkeypatch):
    # packed=True gives the same CIGARs as arrays of runs: short pairs, an empty alignment
    # (local, nothing scores) and empty sequences; `linear` routes every pair through the
    # linear-space paths of both backends.
    if linear:
        monkeypatch.setattr(gpualign.config, "ALIGN_LINEAR_MIN_CELLS", 0)
        monkeypatch.setattr(gpualign.config, "LONG_ALIGN_MIN_CELLS", 1)
    rng = np.random.default_rng(31)
    queries = [random_text(rng, int(k)) for k in rng.integers(20, 300, 12)] + ["AAAA", ""]
    targets = [relative(rng, q) for q in queries[:12]] + ["CCCC", "ACGT"]
    texts = gpualign.align(queries, targets, mode=mode, task="path", backend=backend)
    packed = gpualign.align(queries, targets, mode=mode, task="path", backend=backend,
                            packed=True)
    assert isinstance(packed.cigar, PackedCigars) and isinstance(texts.cigar, list)
    assert packed.cigar == texts.cigar and len(packed.cigar) == len(queries)
    assert packed.score.tolist() == texts.score.tolist()
    assert packed.identity.tolist() == texts.identity.tolist()
    # The columns and runs of each operation (on the GPU, counted by the walk back).
    for counted, read in zip(op_counts(packed.cigar), op_counts(texts.cigar), strict=True):
        assert counted.tolist() == read.tolist()


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("packed", [False, True])
def test_cuda_paths_too_large_to_stage_come_from_the_device(monkeypatch, packed):
    # A batch whose results do not fit config.ALIGN_PATH_STAGING_BYTES is copied back from the
    # device instead of written to page-locked memory: the same results.
    rng = np.random.default_rng(41)
    queries = [random_text(rng, int(k)) for k in rng.integers(20, 400, 30)]
    targets = [relative(rng, q) for q in queries]
    staged = gpualign.align(queries, targets, mode="local", task="path", backend="cuda",
                            packed=packed)
    monkeypatch.setattr(gpualign.config, "ALIGN_PATH_STAGING_BYTES", 0)
    fetched = gpualign.align(queries, targets, mode="local", task="path", backend="cuda",
                             packed=packed)
    assert fetched.cigar == staged.cigar and fetched.score.tolist() == staged.score.tolist()
    assert fetched.query_start.tolist() == staged.query_start.tolist()


def test_path_rows_match_the_kernels_enums():
    # The rows of a batch's index, size and result arrays are warp.cu's IndexRow, SizeRow and
    # ResultRow enumerators, in order: the host writes and reads them by these names.
    from gpualign.align import _cuda
    from gpualign.cuda import loader

    text = loader.source(_cuda.WARP_KERNEL_FILE)
    for enum, rows in (("IndexRow", _cuda._PATH_INDEX_ROWS), ("SizeRow", _cuda._PATH_SIZE_ROWS),
                       ("ResultRow", _cuda._TRACE_OUTPUTS)):
        body = text.split(f"enum {enum} {{", 1)[1].split("};", 1)[0]
        names = re.findall(r"^\s*([A-Z_]+),", body, flags=re.MULTILINE)
        assert names == [row.upper() for row in rows], enum


@pytest.mark.parametrize("mode", ALIGN_MODES)
@pytest.mark.parametrize("task", ["score", "end", "path"])
def test_seeded_random_against_the_oracle(backend, mode, task):
    rng = np.random.default_rng(11)
    queries, targets = [], []
    for m in SIZES:
        for n in SIZES[::2]:
            query = random_text(rng, m, n_fraction=0.05)
            queries.append(query)
            targets.append(relative(rng, query, 0.2)[:n] if rng.random() < 0.5
                           else random_text(rng, n, n_fraction=0.05))
    for scoring in SCHEMES:
        result = gpualign.align(queries, targets, mode=mode, scoring=scoring, task=task,
                                backend=backend)
        check_result(result, queries, targets, scoring, mode)


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_protein_blosum_against_the_oracle(backend, mode):
    rng = np.random.default_rng(12)
    amino = "ARNDCQEGHILKMFPSTWYVBZX*"
    queries = [random_text(rng, m, amino) for m in (0, 1, 5, 40, 90)]
    targets = [relative(rng, q, 0.3, amino) + random_text(rng, 4, amino) for q in queries]
    for name in ("BLOSUM62", "PAM30"):
        scoring = Scoring.matrix(name, gap_open=11, gap_extend=1)
        result = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                                alphabet="protein", backend=backend)
        check_result(result, queries, targets, scoring, mode, "protein")


def test_bytes_alphabet(backend):
    scoring = Scoring(match=3, mismatch=-1, gap_open=4, gap_extend=1)
    queries, targets = ["hello, world", "naïve"], ["yellow word!", "native"]
    for mode in ALIGN_MODES:
        result = gpualign.align([q.encode() for q in queries], [t.encode() for t in targets],
                                mode=mode, scoring=scoring, task="path", alphabet="bytes",
                                backend=backend)
        for p, (q, t) in enumerate(zip(queries, targets, strict=True)):
            want = align_naive(list(q.encode()), list(t.encode()), scoring.table("bytes")[0],
                               4, 1, mode, None)
            assert (int(result.score[p]), result.cigar[p]) == (want.score, want.cigar)
        ends = gpualign.align([q.encode() for q in queries], [t.encode() for t in targets],
                              mode=mode, scoring=scoring, task="end", alphabet="bytes",
                              backend=backend)
        assert ends.score.tolist() == result.score.tolist()
        assert ends.target_end.tolist() == result.target_end.tolist()


@st.composite
def problems(draw):
    symbol = st.sampled_from([0, 1, 2, 3, 4])
    query = draw(st.lists(symbol, max_size=20))
    if draw(st.booleans()):
        target = draw(st.lists(symbol, max_size=20))
    else:
        target = draw(st.lists(symbol, max_size=4)) + mutated(draw, query, symbol) + \
            draw(st.lists(symbol, max_size=4))
    gap_open = draw(st.integers(0, 8))
    scoring = Scoring(match=draw(st.integers(0, 6)), mismatch=draw(st.integers(-6, 1)),
                      gap_open=gap_open, gap_extend=draw(st.integers(0, min(gap_open, 4))))
    return query, target, scoring, draw(st.sampled_from(ALIGN_MODES))


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_hypothesis(problem):
    query, target, scoring, mode = problem
    text = "ACGTN"
    q, t = "".join(text[c] for c in query), "".join(text[c] for c in target)
    result = gpualign.align([q], [t], mode=mode, scoring=scoring, task="path", backend="cpu")
    check_result(result, [q], [t], scoring, mode)


# --- peers: parasail ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_scores_equal_parasail_random(backend, mode):
    rng = np.random.default_rng(13)
    queries = [random_text(rng, int(m), n_fraction=0.02) for m in rng.integers(1, 300, 60)]
    targets = [relative(rng, q, 0.2) if k % 2 else random_text(rng, int(rng.integers(1, 300)))
               for k, q in enumerate(queries)]
    for scoring in SCHEMES:
        matrix = parasail_matrix(scoring, "dna")
        result = gpualign.align(queries, targets, mode=mode, scoring=scoring, backend=backend)
        want = [PARASAIL[mode](q, t, scoring.gap_open, scoring.gap_extend, matrix).score
                for q, t in zip(queries, targets, strict=True)]
        assert result.score.tolist() == want, scoring.describe()


def _real(name, alphabet, count):
    subjects = SequenceSet.from_file(DATA / name, alphabet, invalid="wildcard")
    return [subjects[i] for i in range(count)]


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_real_16s_against_parasail_and_rescored(backend, mode):
    # Neighbouring 16S genes of the RDP excerpt: ~1.5 kb, related, with IUPAC codes read as N.
    genes = _real("rdp16s_200.fasta.gz", "dna", 24)
    queries, targets = genes[0::2], genes[1::2]
    scoring = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    result = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                            backend=backend)
    matrix = parasail_matrix(scoring, "dna")
    table, _ = scoring.table("dna")
    for p, (q, t) in enumerate(zip(queries, targets, strict=True)):
        assert int(result.score[p]) == PARASAIL[mode](q, t, 5, 2, matrix).score
        rescored = rescore_alignment(codes_of(q), codes_of(t), int(result.query_start[p]),
                                     int(result.target_start[p]), result.cigar[p], table, 5, 2)
        assert rescored == (int(result.score[p]), int(result.query_end[p]),
                            int(result.target_end[p]))
    # A few against the oracle too (the full-matrix oracle is slow on 1.5 kb).
    check_result(gpualign.align(queries[:1], targets[:1], mode=mode, scoring=scoring,
                                task="path", backend=backend),
                 queries[:1], targets[:1], scoring, mode)


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_real_proteins_blosum62_against_parasail(backend, mode):
    proteins = _real("uniprot_200.fasta.gz", "protein", 40)
    queries, targets = proteins[0::2], proteins[1::2]
    scoring = Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1)
    matrix = parasail_matrix(scoring, "protein")
    result = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="end",
                            alphabet="protein", backend=backend)
    want = [PARASAIL[mode](q, t, 11, 1, matrix).score
            for q, t in zip(queries, targets, strict=True)]
    assert result.score.tolist() == want


def test_mitochondrial_genomes(backend):
    # Human vs orangutan mtDNA (16.6 kb each, ~85% identity): one long pair, every mode.
    human, orang = (_real(name, "dna", 1)[0] for name in ("MT-human.fa.gz", "MT-orang.fa.gz"))
    assert (len(human), len(orang)) == (16569, 16499)
    scoring = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    matrix = parasail_matrix(scoring, "dna")
    table, _ = scoring.table("dna")
    for mode in ("global", "local"):
        result = gpualign.align([human], [orang], mode=mode, scoring=scoring, task="path",
                                backend=backend)
        assert int(result.score[0]) == PARASAIL[mode](human, orang, 5, 2, matrix).score
        rescored = rescore_alignment(codes_of(human), codes_of(orang),
                                     int(result.query_start[0]), int(result.target_start[0]),
                                     result.cigar[0], table, 5, 2)
        assert rescored == (int(result.score[0]), int(result.query_end[0]),
                            int(result.target_end[0]))
        assert 0.8 < result.identity[0] < 0.95
        ends = gpualign.align([human], [orang], mode=mode, scoring=scoring, task="end",
                              backend=backend)
        assert (int(ends.score[0]), int(ends.query_end[0]), int(ends.target_end[0])) == \
            (int(result.score[0]), int(result.query_end[0]), int(result.target_end[0]))


# --- the CUDA kernels' strips, widths and chunks -----------------------------------------------


def _full_matrices(a, b, table, gap_open, gap_extend, mode):
    """Every H, E and F of the Gotoh DP (int64), as the kernels compute them."""
    m, n = len(a), len(b)
    neg = -(1 << 40)
    h = np.zeros((m + 1, n + 1), dtype=np.int64)
    e = np.full((m + 1, n + 1), neg, dtype=np.int64)
    f = np.full((m + 1, n + 1), neg, dtype=np.int64)
    gap = [0] + [gap_open + (k - 1) * gap_extend for k in range(1, max(m, n) + 1)]
    if mode == "global":
        h[0, 1:] = [-gap[j] for j in range(1, n + 1)]
    if mode in ("global", "semi-global"):
        h[1:, 0] = [-gap[i] for i in range(1, m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            e[i, j] = max(e[i, j - 1] - gap_extend, h[i, j - 1] - gap_open)
            f[i, j] = max(f[i - 1, j] - gap_extend, h[i - 1, j] - gap_open)
            h[i, j] = max(h[i - 1, j - 1] + table[a[i - 1], b[j - 1]], e[i, j], f[i, j],
                          0 if mode == "local" else neg)
    return h, e[:, 1:], f[1:, :]


def test_narrow_value_bounds_hold():
    # The CUDA backend runs a pair in 16-bit lanes only when value_bounds fits them: the bounds
    # must hold for every DP value of every mode (here on small pairs, all cells checked).
    from gpualign.align import _cuda

    rng = np.random.default_rng(21)
    for trial in range(60):
        scoring = Scoring(match=int(rng.integers(0, 6)), mismatch=-int(rng.integers(0, 6)),
                          gap_open=int(rng.integers(1, 9)), gap_extend=1)
        if trial % 3 == 0:
            scoring = Scoring.matrix("PAM30", gap_open=int(rng.integers(1, 12)), gap_extend=1)
        alphabet = "protein" if scoring.matrix_name else "dna"
        table, _ = scoring.table(alphabet)
        symbols = "ARNDCQEGHILKMFPSTWYV" if scoring.matrix_name else "ACGT"
        query = random_text(rng, int(rng.integers(1, 25)), symbols)
        target = relative(rng, query, 0.3, symbols) or symbols[0]
        a, b = codes_of(query, alphabet), codes_of(target, alphabet)
        high, low = _cuda.value_bounds(np.array([len(a)]), np.array([len(b)]), table,
                                       scoring.gap_open, scoring.gap_extend)
        for mode in ALIGN_MODES:
            h, e, f = _full_matrices(a, b, table, scoring.gap_open, scoring.gap_extend, mode)
            # The kernels hold H - gap_open, E and F, and add gap_open plus the substitution.
            assert h.max() + int(table.max()) <= high[0], (mode, query, target)
            assert min(h.min(), e[1:].min(), f[:, 1:].min()) - scoring.gap_open \
                - scoring.gap_extend - 128 >= low[0], (mode, query, target)


def _related_dna(rng, count, longest):
    """``count`` DNA queries of 1 to ``longest`` symbols (3% N) and targets: two in three a
    mutated copy with a few symbols added, the others unrelated."""
    queries = [random_text(rng, int(m), n_fraction=0.03) for m in rng.integers(1, longest, count)]
    targets = [relative(rng, q, 0.25) + random_text(rng, int(rng.integers(0, 6)))
               if k % 3 else random_text(rng, int(rng.integers(1, longest)))
               for k, q in enumerate(queries)]
    return queries, [t or "A" for t in targets]


def _dna_and_protein_cases(seed, dna_pairs, dna_longest, protein_longest):
    """``(queries, targets, scoring, alphabet)``: related DNA pairs under every scheme of
    SCHEMES, then 10 related protein pairs under BLOSUM62 11/1."""
    rng = np.random.default_rng(seed)
    queries, targets = _related_dna(rng, dna_pairs, dna_longest)
    amino = "ARNDCQEGHILKMFPSTWYV"
    proteins = [random_text(rng, int(m), amino) for m in rng.integers(1, protein_longest, 10)]
    others = [relative(rng, p, 0.3, amino) + "W" for p in proteins]
    return [(queries, targets, scoring, "dna") for scoring in SCHEMES] + \
        [(proteins, others, Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1), "protein")]


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("strip_rows", [2, 6, 64])
def test_cuda_strips_widths_and_chunks_equal_the_cpu(monkeypatch, strip_rows):
    # Strips of 2 and 6 rows put most rows in later strips and most queries' ends in padded
    # last strips; +100/-120 with gaps 300/20 cannot run in 16 bits (wide kernel), the others
    # can; proteins take the query-profile and the shared-table lookups; a 4 KiB batch budget
    # and 7-pair chunks split every launch.
    monkeypatch.setattr(gpualign.config, "ALIGN_STRIP_ROWS", strip_rows)
    monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES", 4096)
    monkeypatch.setattr(gpualign.config, "ALIGN_GPU_CHUNK_PAIRS", 7)
    rng = np.random.default_rng(22)
    queries, targets = _related_dna(rng, 80, 90)
    schemes = SCHEMES + [Scoring(match=100, mismatch=-120, gap_open=300, gap_extend=20),
                         Scoring(match=3, mismatch=-2, gap_open=4, gap_extend=4)]
    amino = "ARNDCQEGHILKMFPSTWYVBZX*"
    proteins = [random_text(rng, int(m), amino) for m in rng.integers(1, 90, 40)]
    others = [relative(rng, p, 0.3, amino) + "W" for p in proteins]
    # BLOSUM62 + 11 fits the int8 query profiles; + 200 needs the shared int16 table.
    cases = [(queries, targets, scoring, "dna") for scoring in schemes] + \
        [(proteins, others, Scoring.matrix("BLOSUM62", gap_open=g, gap_extend=1), "protein")
         for g in (11, 200)]
    for queries, targets, scoring, alphabet in cases:
        for mode in ALIGN_MODES:
            for task in ("score", "end"):
                want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task=task,
                                      alphabet=alphabet, backend="cpu")
                got = gpualign.align(queries, targets, mode=mode, scoring=scoring, task=task,
                                     alphabet=alphabet, backend="cuda")
                where = (mode, task, scoring.describe())
                assert got.score.tolist() == want.score.tolist(), where
                assert got.query_end.tolist() == want.query_end.tolist(), where
                assert got.target_end.tolist() == want.target_end.tolist(), where


def _check_cuda_paths(cases) -> None:
    """Paths, starts, ends and identities of every mode equal the CPU backend's on CUDA."""
    for queries, targets, scoring, alphabet in cases:
        for mode in ALIGN_MODES:
            want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                                  alphabet=alphabet, backend="cpu")
            got = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                                 alphabet=alphabet, backend="cuda")
            where = (mode, alphabet, scoring.describe())
            for name in ("score", "query_start", "query_end", "target_start", "target_end",
                         "identity"):
                assert getattr(got, name).tolist() == getattr(want, name).tolist(), (name, where)
            assert got.cigar == want.cigar, where
            packed = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                                    alphabet=alphabet, backend="cuda", packed=True)
            assert isinstance(packed.cigar, PackedCigars) and packed.cigar == want.cigar, where


@pytest.mark.parametrize("task", ["score", "end", "path"])
def test_align_encoded_runs_the_callers_work_once(backend, task):
    # The search builds its result while the GPU aligns its hits (`meanwhile`): every backend
    # and task runs it exactly once before the alignments return, and they are the same.
    sets = SequenceSet.from_sequences(["ACGTACGTTA", "TTACGAAC", "GATTACA", "CCGTA"])
    pairs = (np.array([0, 1, 2, 3]), np.array([1, 2, 0, 0]))
    calls = []
    got = align_api.align_encoded(sets, sets, *pairs, Scoring(), "local", task, backend,
                                  packed=True, meanwhile=lambda: calls.append("meanwhile"))
    assert calls == ["meanwhile"]
    want = align_api.align_encoded(sets, sets, *pairs, Scoring(), "local", task, backend,
                                   packed=True)
    assert got.score.tolist() == want.score.tolist()
    assert got.target_end.tolist() == want.target_end.tolist()
    assert (got.cigar is None) == (task != "path") and (task != "path" or
                                                        got.cigar == want.cigar)


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("batch_bytes", [None, 1 << 16])
def test_cuda_paths_run_the_callers_work_before_waiting_for_the_gpu(monkeypatch, batch_bytes):
    # The caller's work overlaps the GPU's: it runs once the launches are queued, before the
    # host first waits for a batch's results, in a call of one batch or of several (a 64 KiB
    # budget: the third waits for the first).
    from gpualign.align import _cuda

    if batch_bytes is not None:
        monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES", batch_bytes)
    events = []
    fetch = _cuda._TraceResults.fetch_oldest

    def recorded_fetch(self, in_thread=True):
        events.append("fetch")
        return fetch(self, in_thread)

    monkeypatch.setattr(_cuda._TraceResults, "fetch_oldest", recorded_fetch)
    rng = np.random.default_rng(43)
    texts = [random_text(rng, int(k)) for k in rng.integers(200, 400, 40)]
    sets = SequenceSet.from_sequences(texts)
    pairs = np.arange(40), np.roll(np.arange(40), 1)
    got = align_api.align_encoded(sets, sets, *pairs, Scoring(), "local", "path", "cuda",
                                  meanwhile=lambda: events.append("meanwhile"))
    assert events[0] == "meanwhile" and events.count("meanwhile") == 1
    assert events.count("fetch") >= (3 if batch_bytes else 1)
    want = align_api.align_encoded(sets, sets, *pairs, Scoring(), "local", "path", "cpu")
    assert got.cigar == want.cigar


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("lanes, heights", [(32, (8,)), (32, (2,)), (128, (2,)), (512, (4,))])
def test_cuda_local_paths_with_known_scores_equal_the_cpu(monkeypatch, lanes, heights):
    # A search knows its hits' scores, and a local fill given them stops once every lane is
    # past the first cell of that score (bands below: up to its column; warps' pipelined
    # bands: above too, and those below read where the row above ends). The paths stay the
    # CPU's: ends early in long targets (the fill stops long before the end), ends in a later
    # band, an end in the first of three bands with 500 columns after it (the bands below
    # must not compute past the columns the first one wrote: the memory behind them holds
    # large values), repeats whose equal best cells lie in several columns and bands (the
    # first wins).
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANES", (lanes,))
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANE_ROWS", heights)
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_BLOCK_LANE_ROWS", heights)
    import cupy

    from gpualign.align import _cpu, _cuda

    rng = np.random.default_rng(31)
    core = [random_text(rng, int(k), "ACGT") for k in (40, 300, 700, 2200, 200, 20)]
    # The last pair ends in its first 20 columns: its first band stops before the band below
    # has read a chunk of the row (32 columns) from it.
    queries = core[:4] + [core[1] * 3, core[0] + core[1],
                          core[4] + random_text(rng, 400, "ACGT"),
                          core[5] + random_text(rng, 600, "ACGT")]
    targets = [relative(rng, core[0], 0.1, "ACGT") + random_text(rng, 3000, "ACGT"),
               random_text(rng, 50, "ACGT") + core[1] + random_text(rng, 2000, "ACGT"),
               relative(rng, core[2], 0.2, "ACGT"), random_text(rng, 900, "ACGT") + core[3],
               core[1] + random_text(rng, 40, "ACGT") + core[1], core[1] + core[0],
               random_text(rng, 50, "ACGT") + core[4] + random_text(rng, 500, "ACGT"),
               core[5] + random_text(rng, 3000, "ACGT")]
    qset = SequenceSet.from_sequences(queries, "dna")
    tset = SequenceSet.from_sequences(targets, "dna")
    index = np.arange(len(queries), dtype=np.int64)
    for scoring in SCHEMES:
        table, _ = scoring.table("dna")
        arguments = (qset, tset, index, index, table, scoring.gap_open, scoring.gap_extend,
                     ALIGN_LOCAL, "path")
        want = _cpu.align_pairs(*arguments)
        cupy.full(1 << 22, 1 << 28, dtype=cupy.int32)  # freed: the pool hands it out again
        got = _cuda.align_pairs(*arguments, known_scores=want[0])
        for name, mine, theirs in zip(("score", "q_start", "q_end", "t_start", "t_end"),
                                      got[:5], want[:5], strict=True):
            assert mine.tolist() == theirs.tolist(), (name, scoring.describe())
        assert list(got[5]) == list(want[5]), scoring.describe()


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
def test_cuda_scores_with_a_very_negative_mismatch_stay_exact():
    # A mismatch far below a byte: the int16 lanes would wrap where a low cell takes it (the
    # diagonal near -28,000 plus -4,980), so such pairs go to the 32-bit lanes. Linear gaps of
    # several sizes, the queries' last strips padded (700, 200 and 180 rows) or not (320).
    queries = ["A" * 700, "ACGT" * 50, "ACGTTGCA" * 40, "ACGTAC" * 30]
    targets = ["C" * 700, "ACGA" * 50, "ACGATGCA" * 40, "AGGTAC" * 31]
    for mismatch, gap_open, gap_extend in ((-5000, 20, 20), (-200, 2, 2), (-3, 40, 40),
                                           (-5000, 21, 20)):
        scoring = Scoring(match=1, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend)
        for mode in ("global", "semi-global", "local"):
            got = gpualign.align(queries, targets, mode=mode, scoring=scoring, backend="cuda")
            want = gpualign.align(queries, targets, mode=mode, scoring=scoring, backend="cpu")
            assert got.score.tolist() == want.score.tolist(), (mode, scoring.describe())


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("lanes,heights,streams", [
    ((32,), (8,), 1), ((32,), (2,), 2), ((32, 128, 256, 512), (2, 4, 8, 16, 24, 32), 3)])
def test_cuda_paths_bands_heights_and_launches_equal_the_cpu(monkeypatch, lanes, heights,
                                                             streams):
    # Warps of 8-row lanes put queries over 256 symbols in several bands, of 2 rows those over
    # 64 (up to 15), a warp a band, pipelined; all heights and lane counts let each pair take
    # its own layout; a 64 KiB budget splits the launches, which take one, two or three streams
    # in turn.
    # Paths, starts, ends and identities equal the CPU backend's, every mode, DNA (with N),
    # proteins and bytes (a 256 x 256 table in shared memory).
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANES", lanes)
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANE_ROWS", heights)
    monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES", 1 << 16)
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_STREAMS", streams)
    cases = _dna_and_protein_cases(23, 24, 900, 500)
    proteins, others = cases[-1][:2]
    cases.append((proteins[:4], others[:4],
                  Scoring(match=3, mismatch=-2, gap_open=4, gap_extend=1), "bytes"))
    _check_cuda_paths(cases)


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
def test_cuda_path_batches_of_several_lane_shapes_equal_the_cpu(monkeypatch):
    # A 1 MiB budget puts pairs of several lane heights in each batch (a launch each, side by
    # side on the streams) and cuts the call into several batches (two queued at a time, the
    # finisher thread storing the older).
    from gpualign.align import _cuda

    monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES", 1 << 20)
    batches = []
    queue = _cuda._TraceChunk._queue

    def spy(chunk, members):
        batches.append(len(np.unique(chunk.lanes[members] * 1024 + chunk.rows[members])))
        return queue(chunk, members)

    monkeypatch.setattr(_cuda._TraceChunk, "_queue", spy)
    rng = np.random.default_rng(41)
    queries = [random_text(rng, int(k)) for k in rng.integers(30, 1000, 80)]
    targets = [relative(rng, q) for q in queries]
    _check_cuda_paths([(queries, targets, SCHEMES[0], "dna")])
    assert len(batches) >= 3 * len(ALIGN_MODES) and max(batches) >= 2


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("lanes, heights", [
    (128, (2,)), (128, (4,)), (128, (8,)), (128, (2, 4, 8, 16, 24, 32)), (256, (2,)),
    (256, (2, 4, 8, 16, 24, 32)), (512, (4,)), (512, (2, 4, 8, 16, 24, 32)), (32, (2,)),
    (32, (8,))])
def test_cuda_paths_filled_by_blocks_and_pipelined_warps_equal_the_cpu(monkeypatch, lanes,
                                                                        heights):
    # Every pair is filled by a block of 128, 256 or 512 lanes (4 to 16 warps and a barrier a
    # step), or by warps of 2 or 8-row lanes, a warp a band, all at once; lanes of 2, 4 or 8
    # rows (a byte, half a word or a word of codes a step) put the longer queries in several
    # bands. Local ties: A+B against B+A puts two equal best cells in different warps' rows and
    # different bands, the later one in the earlier column (it wins; pipelined bands: the last
    # warp to finish merges the bands' best cells).
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANES", (lanes,))
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANE_ROWS", heights)
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_BLOCK_LANE_ROWS", heights)
    from gpualign.align import _cuda

    lengths = np.array([100, 300, 1100, 2500])
    assert _cuda._trace_plan(lengths, lengths, 1)[0].tolist() == [lanes] * 4
    cases = _dna_and_protein_cases(26, 12, 2600, 1500)
    rng = np.random.default_rng(27)
    a, b = (random_text(rng, 700, "ACGT") for _ in range(2))
    cases.append(([a + b, a], [b + a, a + a], SCHEMES[0], "dna"))
    _check_cuda_paths(cases)


def test_trace_plan_gives_each_pair_its_least_work_near_its_fastest():
    # While the call's warps fit the GPU (ALIGN_TRACE_WARPS_PER_SM warps an SM), each pair takes
    # the layout of least work (warp-time) whose fill is within _LANE_SLACK of its fastest (the
    # measured step times, _FILL_STEP_NS): a warp of lanes of one height, its bands pipelined (a
    # warp each; several only where they take at most _PIPELINE_GAIN of the time of the fastest
    # single warp or block), or a block of 128, 256 or 512 lanes (its bands in turn). A call too
    # large for that takes the least work that finishes by the least time at which it fits.
    from gpualign.align import _cuda

    def layouts(m, n, sms):
        lanes, rows, _, _ = _cuda._trace_plan(m, n, sms)
        return list(zip(lanes.tolist(), rows.tolist(),
                        _cuda._pair_bands(m, lanes, rows).tolist(), strict=True))

    m = np.array([400] * 20 + [1500, 200, 100, 500, 1024])
    n = np.array([450] * 20 + [1700, 12000, 9000, 1000, 3000])
    lanes, rows, words, cost = _cuda._trace_plan(m, n, 132)
    # 400 x 450: a warp of 16-row lanes (within the slack of 256 lanes of 2, and less work);
    # 1,500 x 1,700 and 1,024 x 3,000: 12 and 8 pipelined warps of 4-row lanes (about half the
    # time of any block); 200 x 12,000: a block of 128 lanes of 2 rows (2 warps would save too
    # little); 100 x 9,000: a warp of 4-row lanes; 500 x 1,000: a block of 128 lanes of 4 rows
    # (within the slack of 256 lanes of 2, and less work; 4 pipelined warps would save too
    # little).
    assert layouts(m, n, 132)[19:] == [(32, 16, 1), (32, 4, 12), (128, 2, 1), (32, 4, 1),
                                       (128, 4, 1), (32, 4, 8)]

    def step(lanes, rows):
        return _cuda._step_ns(lanes, np.array([rows]))[0]

    # A pipelined fill: one band's steps, then the lag of each band below; a block's bands one
    # after another.
    lag = _cuda._PIPELINE_LAG_STEPS
    assert cost[20] == pytest.approx((1700 + 31 + 11 * lag) * step(32, 4))
    assert cost[21] == pytest.approx((12000 + 127) * step(128, 2))
    assert cost[24] == pytest.approx((3000 + 31 + 7 * lag) * step(32, 4))
    assert cost[24] < _cuda._PIPELINE_GAIN * (3000 + 511) * step(512, 2)
    assert (words == _cuda._trace_words(m, n, lanes, rows)).all()
    # One SM (12 warps) cannot hold all that at once: the call's work must fit by the time it
    # takes, which the tall pair's single block does. A batch of thousands of similar pairs
    # fills the GPU a warp each, and so does a small GPU.
    assert layouts(m[:21], n[:21], 1)[19:] == [(32, 16, 1), (128, 16, 1)]
    many = np.full(20000, 400)
    assert set(layouts(many, many, 132)) == {(32, 16, 1)}
    # Too many for the GPU, where several warps would otherwise be fastest: each pair takes an
    # allowed layout of least work, at its finite time.
    tall = np.full(2000, 2000)
    _, _, _, cost = _cuda._trace_plan(tall, tall, 132)
    assert np.isfinite(cost).all() and len(set(layouts(tall, tall, 132))) == 1
    assert set(layouts(m[:20], n[:20], 1)) == {(32, 16, 1)}
    assert layouts(m[:0], n[:0], 132) == []
    # trace_layout (the score fills' layout): the fewest bands, then the lowest height.
    rows, words = _cuda.trace_layout(m, n, np.array([32] * 20 + [512, 128, 128, 128, 256]))
    assert rows[19:].tolist() == [16, 4, 2, 2, 4, 4]
    assert words[20] == (1700 + 511) * 512 // 2  # 4 nibbles a lane and step: half a word
    assert words[21] == (12000 + 127) * 128 // 4  # 2 nibbles: a byte
    assert _cuda._step_ns(32, np.array([48, 64]))[1] > _cuda._step_ns(32, np.array([48]))[0]


def test_trace_layout_keeps_large_blocks_to_few_rows():
    # 256 lanes keep at most 16 rows, 512 at most 8 (their share of the registers), a warp of
    # 32 as many as ALIGN_TRACE_LANE_ROWS allow: more rows mean more bands.
    from gpualign.align import _cuda

    m, n = np.array([10000, 10000, 10000]), np.array([500, 500, 500])
    rows, _ = _cuda.trace_layout(m, n, np.array([32, 256, 512]))
    assert rows.tolist() == [32, 16, 8]


@pytest.mark.cuda
@pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="needs a CUDA device")
@pytest.mark.parametrize("heights", [(8,), (2,), (2, 4, 8, 16, 24, 32)])
def test_cuda_warp_per_pair_scores_equal_the_cpu(monkeypatch, heights):
    # Every pair counts as long: global, semi-global and local scores and ends come from the
    # warp kernel (its bands in turn), overlap's from the thread kernels; lanes of 8 rows give
    # queries over 256 symbols several bands (a later band's tie in an earlier column) and
    # padded rows, lanes of 2 rows those over 64.
    monkeypatch.setattr(gpualign.config, "ALIGN_WARP_MIN_CELLS", 1)
    monkeypatch.setattr(gpualign.config, "ALIGN_WARP_MIN_RATIO", 0.0)
    monkeypatch.setattr(gpualign.config, "ALIGN_TRACE_LANE_ROWS", heights)
    from gpualign.align import _cpu

    def no_fallback(*args):  # every pair here fits the GPU: none may go to the CPU
        raise AssertionError("a pair was computed by the CPU backend")

    cases = _dna_and_protein_cases(24, 30, 700, 400)
    # Local ties: A+B against B+A puts two equal best cells in different bands, the later
    # band's in the earlier column (it wins); X+X against X, two in one column (the first row).
    rng = np.random.default_rng(25)
    a, b, x = (random_text(rng, 300, "ACGT") for _ in range(3))
    cases.append(([a + b, x + x, x], [b + a, x, x + x], SCHEMES[0], "dna"))
    for queries, targets, scoring, alphabet in cases:
        for mode in ALIGN_MODES:
            for task in ("score", "end"):
                want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task=task,
                                      alphabet=alphabet, backend="cpu")
                with monkeypatch.context() as patch:
                    patch.setattr(_cpu, "align_pairs", no_fallback)
                    got = gpualign.align(queries, targets, mode=mode, scoring=scoring,
                                         task=task, alphabet=alphabet, backend="cuda")
                where = (mode, task, alphabet, scoring.describe())
                assert got.score.tolist() == want.score.tolist(), where
                assert got.query_end.tolist() == want.query_end.tolist(), where
                assert got.target_end.tolist() == want.target_end.tolist(), where


def test_cuda_backend_imports_no_numba():
    # The CUDA backend loads neither Numba nor the CPU backend (the rare pairs that the GPU
    # cannot take import it when they occur); in a fresh process, as a user's run starts.
    code = ("import sys\n"
            "from gpualign.align import _cuda, api\n"
            "api.resolve_backend = lambda backend: 'cuda'\n"
            "assert api._backend('cuda') is _cuda\n"
            "loaded = [m for m in sys.modules if m == 'numba' or m.endswith('._cpu')]\n"
            "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("packed", [False, True])
def test_cuda_batch_cigars_are_decoded_at_once(packed):
    # The GPU gathers a batch's CIGARs: texts each followed by a newline, decoded with one
    # split (keeping the empty CIGARs of empty alignments), or runs (a word each: the length
    # above two bits of operation) cut by the pairs' counts.
    from gpualign.align import _cuda

    results = _cuda._TraceResults(None, *(np.zeros(4, dtype=np.int64) for _ in range(4)),
                                  np.zeros(4), packed)
    values = np.zeros((len(_cuda._TRACE_OUTPUTS), 3), dtype=np.int32)
    row = {name: k for k, name in enumerate(_cuda._TRACE_OUTPUTS)}
    # The walk's counts of "3=", "" and "12X1D": columns of =, X, I and all, runs of each.
    for name, counts in (("matches", [3, 0, 0]), ("mismatches", [0, 0, 12]),
                         ("columns", [3, 0, 13]), ("match_runs", [1, 0, 0]),
                         ("mismatch_runs", [0, 0, 1]), ("delete_runs", [0, 0, 1])):
        values[row[name]] = counts
    if packed:
        values[_cuda._WRITTEN] = [1, 0, 2]
        gathered = np.array([3 << 2 | 0, 12 << 2 | 1, 1 << 2 | 3], dtype=np.uint32)
    else:
        gathered = np.frombuffer(b"3=\n\n12X1D\n", dtype=np.uint8)
    results.store(np.array([3, 0, 1]), values, gathered)
    (where, cigars), = results.pieces
    assert where.tolist() == [3, 0, 1] and list(cigars) == ["3=", "", "12X1D"]
    assert isinstance(cigars, PackedCigars) == packed
    assert results.identity[[3, 0, 1]].tolist() == [1.0, 0.0, 0.0]
    if packed:  # the runs come with the walk's counts, which op_counts gives back
        assert cigars.counts is not None
        for counted, read in zip(op_counts(cigars), op_counts(list(cigars)), strict=True):
            assert counted.tolist() == read.tolist()
    assert placed_cigars([(where, cigars), (np.array([2]), cigars[:1])], 4, packed) == \
        ["", "12X1D", "3=", "3="]


# --- inputs, tasks, errors ------------------------------------------------------------------------


def test_pairs_and_input_forms(backend, tmp_path):
    queries, targets = ["ACGT", "GGGA", "TTAC"], ["ACGA", "GGA"]
    r = gpualign.align(queries, targets, pairs=([2, 0, 1], [1, 0, 0]), task="path",
                       backend=backend)
    single = [gpualign.align([queries[q]], [targets[t]], task="path", backend=backend)
              for q, t in ((2, 1), (0, 0), (1, 0))]
    assert r.score.tolist() == [int(s.score[0]) for s in single]
    assert r.cigar == [s.cigar[0] for s in single]
    assert r.query_index.tolist() == [2, 0, 1] and r.target_index.tolist() == [1, 0, 0]
    fasta = tmp_path / "t.fa"
    fasta.write_text(">a\nACGA\n>b\nGGA\n")
    from_file = gpualign.align(SequenceSet.from_sequences(queries[:2]), fasta, task="path",
                               backend=backend)
    assert from_file.cigar == gpualign.align(queries[:2], targets, task="path",
                                             backend=backend).cigar


def test_empty_inputs(backend):
    r = gpualign.align([], [], task="path", backend=backend)
    assert len(r) == 0 and r.cigar == [] and r.identity.shape == (0,)
    r = gpualign.align(["", "ACG", ""], ["AC", "", ""], mode="local", task="path",
                       backend=backend)
    assert r.score.tolist() == [0, 0, 0] and r.cigar == ["", "", ""]
    r = gpualign.align(["", "ACG"], ["AC", ""], task="path", backend=backend)
    assert r.score.tolist() == [-7, -9] and r.cigar == ["2D", "3I"]  # gaps of 2 and 3


def test_many_pairs_in_parallel(backend):
    rng = np.random.default_rng(14)
    queries = [random_text(rng, int(m)) for m in rng.integers(0, 60, 400)]
    targets = [relative(rng, q, 0.2) for q in queries]
    scoring = SCHEMES[0]
    result = gpualign.align(queries, targets, mode="semi-global", scoring=scoring, task="path",
                            backend=backend)
    sample = list(range(0, 400, 37))
    check_result(gpualign.align([queries[i] for i in sample], [targets[i] for i in sample],
                                mode="semi-global", scoring=scoring, task="path",
                                backend=backend),
                 [queries[i] for i in sample], [targets[i] for i in sample], scoring,
                 "semi-global")
    assert [result.cigar[i] for i in sample] == [oracle(queries[i], targets[i], scoring,
                                                        "semi-global").cigar for i in sample]


@pytest.mark.parametrize("mode,name", [("NW", "global"), ("sw", "local"),
                                       ("Semi-Global", "semi-global"), ("overlap", "overlap")])
def test_mode_names(backend, mode, name):
    assert gpualign.align(["A"], ["A"], mode=mode, backend=backend).mode == name


def test_errors(backend):
    with pytest.raises(ValueError, match="mode='infix'"):
        gpualign.align(["A"], ["A"], mode="infix", backend=backend)
    with pytest.raises(ValueError, match="task='cigar'"):
        gpualign.align(["A"], ["A"], task="cigar", backend=backend)
    with pytest.raises(TypeError, match="gpualign.Scoring"):
        gpualign.align(["A"], ["A"], scoring={"match": 2}, backend=backend)
    with pytest.raises(ValueError, match="2 queries but 1 targets"):
        gpualign.align(["A", "C"], ["A"], backend=backend)
    with pytest.raises(ValueError, match=r"targets: record '1' \(#1\): symbol 'a' at position 0 "
                                         r"is not in the matrix BLOSUM62"):
        gpualign.align([b"AW", b"W"], [b"WA", b"aW"], alphabet="bytes",
                       scoring=Scoring.matrix("BLOSUM62"), backend=backend)
    # J is a protein symbol (read as X, issue 20); a digit is none.
    with pytest.raises(gpualign.InvalidSymbolError, match="position 1"):
        gpualign.align(["A1"], ["A"], alphabet="protein", backend=backend)


# --- one query against many targets ---------------------------------------------------------------


def _brute_force(query, targets, mode, scoring, n=None, min_score=None):
    scores = gpualign.align([query] * len(targets), targets, mode=mode, scoring=scoring,
                            backend="cpu").score
    order = [i for i in np.lexsort((np.arange(len(targets)), -scores)).tolist()
             if min_score is None or scores[i] >= min_score]
    return order[:n] if n is not None else order, scores


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_one_to_many_equals_brute_force(backend, mode, monkeypatch, tmp_path):
    monkeypatch.setattr(gpualign.config, "ALIGN_CPU_BATCH_RESIDUES", 97)  # many batches
    rng = np.random.default_rng(15)
    query = random_text(rng, 40)
    targets = [relative(rng, query, rate) if k % 3 else random_text(rng, 45)
               for k, rate in enumerate(rng.uniform(0.0, 0.5, 60))]
    targets += [targets[5], targets[7]]  # exact ties: the lower index first
    fasta = tmp_path / "targets.fa.gz"
    fasta.write_bytes(gzip.compress("".join(f">t{k}\n{t}\n" for k, t in
                                            enumerate(targets)).encode()))
    scoring = SCHEMES[0]
    for n, min_score in ((1, None), (7, None), (None, 20), (5, 20), (1000, None), (None, None)):
        want, scores = _brute_force(query, targets, mode, scoring, n, min_score)
        for source in (targets, iter(targets), fasta):
            hits = gpualign.align_one_to_many(query, source, mode=mode, scoring=scoring, n=n,
                                              min_score=min_score, task="path",
                                              backend=backend)
            assert hits.target_index.tolist() == want, (n, min_score)
            assert hits.score.tolist() == scores[want].tolist()
            assert hits.query_index.tolist() == [0] * len(want)
            if source is fasta:
                assert hits.target_name == [f"t{k}" for k in want]
            check_result(hits, [query] * len(want), [targets[k] for k in want], scoring, mode)


def test_one_to_many_errors(backend):
    with pytest.raises(ValueError, match="n must be >= 1"):
        gpualign.align_one_to_many("ACGT", ["ACGT"], n=0, backend=backend)
    with pytest.raises(TypeError, match="n must be an integer"):
        gpualign.align_one_to_many("ACGT", ["ACGT"], n=2.5, backend=backend)
    with pytest.raises(TypeError, match="min_score must be an integer"):
        gpualign.align_one_to_many("ACGT", ["ACGT"], min_score="10", backend=backend)
    with pytest.raises(ValueError, match="pass one sequence"):
        gpualign.align_one_to_many(SequenceSet.from_sequences(["A", "C"]), ["ACGT"],
                                   backend=backend)
    empty = gpualign.align_one_to_many("ACGT", [], n=3, task="path", backend=backend)
    assert len(empty) == 0 and empty.cigar == [] and empty.target_name == []


@pytest.mark.parametrize("alphabet,symbols", [("dna", "ACGTN"),
                                              ("protein", "ARNDCQEGHILKMFPSTWYVBZX*")])
def test_parasail_scores_equal_the_numba_dp(backend, monkeypatch, alphabet, symbols):
    # task="score" goes through parasail's SIMD kernels (striped; prefix-scan for linear gaps,
    # where striped ones disagree); 16-bit results that saturate are rerun in 32-bit.
    rng = np.random.default_rng(16)
    queries = [random_text(rng, int(m), symbols) for m in rng.integers(0, 90, 80)]
    targets = [relative(rng, q, 0.3, symbols) if k % 2 else random_text(rng, 50, symbols)
               for k, q in enumerate(queries)]
    schemes = SCHEMES + [Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1),
                         Scoring.matrix("PAM30", gap_open=4, gap_extend=4)]
    for scoring in schemes:
        for mode in ALIGN_MODES:
            monkeypatch.setattr(gpualign.config, "ALIGN_CPU_SCORES", "parasail")
            fast = gpualign.align(queries, targets, mode=mode, scoring=scoring,
                                  alphabet=alphabet, backend=backend)
            monkeypatch.setattr(gpualign.config, "ALIGN_CPU_SCORES", "numba")
            dp = gpualign.align(queries, targets, mode=mode, scoring=scoring,
                                alphabet=alphabet, backend=backend)
            assert fast.score.tolist() == dp.score.tolist(), (mode, scoring.describe())
    assert fast.query_end.tolist() == [-1] * len(queries) and fast.cigar is None
    # Scores past 16 bits (parasail saturates, gpualign reruns the pair in 32-bit).
    same = random_text(rng, 17000, symbols[:4])
    for mode in ("global", "local"):
        monkeypatch.setattr(gpualign.config, "ALIGN_CPU_SCORES", "parasail")
        fast = gpualign.align([same], [same], mode=mode, alphabet=alphabet, backend=backend)
        monkeypatch.setattr(gpualign.config, "ALIGN_CPU_SCORES", "numba")
        dp = gpualign.align([same], [same], mode=mode, alphabet=alphabet, backend=backend)
        assert fast.score.tolist() == dp.score.tolist() == [2 * 17000]


def test_cpu_scores_of_long_queries_with_linear_gaps_are_exact():
    # parasail's 16-bit scan kernel adds segments x gap_extend in one lane: for a 60,000-base
    # query with gaps 10/10 that wraps, and the score came back wrong without the saturation
    # flag. Such queries go to the 32-bit kernel; the scores equal the Numba DP's (task="end").
    rng = np.random.default_rng(17)
    query = random_text(rng, 60_000, "ACGT")
    targets = [random_text(rng, int(k), "ACGT") for k in rng.integers(1, 25, 12)]
    scoring = Scoring(match=2, mismatch=-3, gap_open=10, gap_extend=10)
    for mode in ("local", "semi-global", "global"):
        score = gpualign.align([query] * len(targets), targets, mode=mode, scoring=scoring,
                               task="score", backend="cpu")
        end = gpualign.align([query] * len(targets), targets, mode=mode, scoring=scoring,
                             task="end", backend="cpu")
        assert score.score.tolist() == end.score.tolist(), mode


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_cpu_long_pairs_score_on_every_core_not_through_parasail(monkeypatch, mode):
    # With parasail installed, task="score" sends the pairs of ALIGN_CPU_WAVEFRONT_MIN_CELLS
    # and more to the score passes on every core and the others to parasail: the scores
    # equal parasail's for every pair.
    from gpualign.align import _parasail

    rng = np.random.default_rng(43)
    queries, targets = _related_dna(rng, 30, 400)
    scoring = SCHEMES[0]
    want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="score",
                          backend="cpu")
    monkeypatch.setattr(gpualign.config, "ALIGN_CPU_WAVEFRONT_MIN_CELLS", 20_000)
    calls = []
    scores = _parasail.scores
    monkeypatch.setattr(_parasail, "scores", lambda *args: calls.append(len(args[2])) or
                        scores(*args))
    got = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="score",
                         backend="cpu")
    cells = np.array([len(q) * len(t) for q, t in zip(queries, targets, strict=True)])
    assert calls == [int((cells < 20_000).sum())] and 0 < calls[0] < len(cells)
    assert got.score.tolist() == want.score.tolist()
