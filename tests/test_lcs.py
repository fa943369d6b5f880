"""LCS on every backend against the full-matrix oracle (naive.py) and rapidfuzz.

Lengths are checked against :func:`naive.lcs_length_naive` and ``rapidfuzz``'s ``LCSseq`` (with
distinct stand-ins for ``N`` on each side, since ``N`` matches nothing here). A top-N result
(:func:`check_top`) must list exactly the oracle's best subjects (longer LCS first, then lower
index), and each LCS string must be a subsequence of both the query and its subject, of the
reported length. Inputs hit the word boundaries of the CPU (64-bit words) and of the CUDA
kernel (32-bit words, tiles of up to 64 words, several launches for long queries), and the
tunables are shrunk (conftest.py) to force many batches, tiles and launches on tiny inputs.
"""

from __future__ import annotations

import doctest
import functools
import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import is_subsequence, lcs_length_naive, lcs_matrix, top_n_naive
from rapidfuzz.distance import LCSseq
from strategies import mutated

import gpualign
from gpualign.backend import resolve_backend
from gpualign.sequences import SequenceSet, encode, get_alphabet

DATA = Path(__file__).parent / "data"
ALPHABETS = ("dna", "protein", "bytes")
#: Lengths around the 64-bit words of the CPU code and the 32-bit words and tiles (up to 64
#: words: 2,048 rows) of the CUDA kernel.
SIZES = (0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 2047, 2048, 2049, 4096)
SHORT_SIZES = SIZES[:11]

HYPOTHESIS = settings(deadline=None, max_examples=40,
                      suppress_health_check=[HealthCheck.function_scoped_fixture,
                                             HealthCheck.too_slow, HealthCheck.data_too_large])


# --- helpers ---------------------------------------------------------------------------------


def random_codes(rng, length, symbols=4, n_fraction=0.0, n_code=4):
    """``length`` codes drawn from ``symbols`` (a count: codes ``0..symbols-1``, or a list of
    codes); a fraction ``n_fraction`` of them replaced by ``n_code`` (DNA's N)."""
    pool = np.arange(symbols) if np.isscalar(symbols) else np.asarray(symbols)
    codes = pool[rng.integers(0, len(pool), int(length))]
    if n_fraction:
        codes[rng.random(int(length)) < n_fraction] = n_code
    return [int(c) for c in codes]


def mutate(rng, codes, rate, symbols=4):
    """Substitute, insert or delete about ``rate * len(codes)`` symbols."""
    pool = np.arange(symbols) if np.isscalar(symbols) else np.asarray(symbols)
    codes = list(codes)
    for _ in range(int(rng.binomial(len(codes), rate)) if codes else 0):
        kind, position = int(rng.integers(3)), int(rng.integers(0, len(codes) + 1))
        symbol = int(pool[rng.integers(len(pool))])
        if kind == 0 and position < len(codes):
            codes[position] = symbol
        elif kind == 1:
            codes.insert(position, symbol)
        elif codes:
            del codes[min(position, len(codes) - 1)]
    return codes


def related(rng, query, length, symbols=4, rate=0.1):
    """A subject of exactly ``length`` symbols holding a mutated copy of ``query`` somewhere, so
    that the LCS is long."""
    copy = mutate(rng, query, rate, symbols)[:length]
    before = int(rng.integers(0, length - len(copy) + 1))
    return (random_codes(rng, before, symbols) + copy
            + random_codes(rng, length - len(copy) - before, symbols))


def to_input(codes, alphabet="dna"):
    """What users pass: str for DNA/protein, bytes for the bytes alphabet."""
    if alphabet == "bytes":
        return bytes(codes)
    return get_alphabet(alphabet).decode(np.asarray(codes, dtype=np.uint8))


def to_inputs(codes_list, alphabet="dna"):
    return [to_input(codes, alphabet) for codes in codes_list]


@functools.cache
def _oracle(a: bytes, b: bytes, match_codes: int) -> int:
    return lcs_length_naive(list(a), list(b), match_codes)


def oracle(a, b, alphabet="dna"):
    return _oracle(bytes(a), bytes(b), get_alphabet(alphabet).match_codes)


def rapidfuzz_lcs(a, b, alphabet="dna"):
    """rapidfuzz's LCS of two code lists as text; symbols that match nothing (N) become 'N' in
    ``a`` and 'n' in ``b``, which appear nowhere else."""
    alpha = get_alphabet(alphabet)
    symbols = alpha.symbols.decode("latin-1")
    other = symbols[:alpha.match_codes] + "n" * (alpha.size - alpha.match_codes)
    return LCSseq.similarity("".join(symbols[c] for c in a), "".join(other[c] for c in b))


def check_lengths(query, subjects, lengths, alphabet="dna", peers=True, where=""):
    """``lengths`` (one per subject) equal the oracle's and rapidfuzz's."""
    assert isinstance(lengths, np.ndarray) and lengths.dtype == np.int32
    assert lengths.shape == (len(subjects),)
    for s, subject in enumerate(subjects):
        at = f"{where} subject #{s}: {len(query)} x {len(subject)}, {alphabet}"
        assert int(lengths[s]) == oracle(query, subject, alphabet), at
        if peers:
            assert int(lengths[s]) == rapidfuzz_lcs(query, subject, alphabet), at + " (rapidfuzz)"


def lcs_as_codes(text, alphabet):
    return encode(text.encode("latin-1"), alphabet).tolist()


def check_top(query, subjects, top, n, alphabet="dna", with_lcs=True, names=None,
              expected_lengths=None):
    """``top`` lists the oracle's ``n`` best subjects in order, with valid LCS strings."""
    lengths = expected_lengths
    if lengths is None:
        lengths = [oracle(query, subject, alphabet) for subject in subjects]
    best = top_n_naive(lengths, n)
    assert isinstance(top, gpualign.LcsTop)
    assert top.index.dtype == np.int64 and top.length.dtype == np.int32
    assert top.index.tolist() == best
    assert top.length.tolist() == [lengths[i] for i in best]
    assert len(top) == len(best) == min(n, len(subjects))
    assert top.subjects == len(subjects) and top.query_length == len(query)
    assert top.subject_length.dtype == np.int64
    assert top.subject_length.tolist() == [len(subjects[i]) for i in best]
    names = names if names is not None else [str(i) for i in range(len(subjects))]
    assert top.name == [names[i] for i in best]
    if not with_lcs:
        assert top.lcs is None
        return
    assert isinstance(top.lcs, list) and len(top.lcs) == len(best)
    match_codes = get_alphabet(alphabet).match_codes
    for rank, (i, text) in enumerate(zip(best, top.lcs, strict=True)):
        codes = lcs_as_codes(text, alphabet)
        where = f"rank {rank}, subject #{i}: {text[:40]!r}"
        assert len(codes) == lengths[i], where
        assert all(c < match_codes for c in codes), where  # N is never part of an LCS
        assert is_subsequence(codes, list(query)), where + " (query)"
        assert is_subsequence(codes, list(subjects[i])), where + " (subject)"


def lengths_of(query, subjects, alphabet="dna", **kwargs):
    return gpualign.lcs_length(to_input(query, alphabet), to_inputs(subjects, alphabet),
                               alphabet=alphabet, **kwargs)


def top_of(query, subjects, n, alphabet="dna", **kwargs):
    return gpualign.lcs_top(to_input(query, alphabet), to_inputs(subjects, alphabet), n,
                            alphabet=alphabet, **kwargs)


# --- the oracle itself -----------------------------------------------------------------------


def test_oracle_equals_full_matrix_and_rapidfuzz():
    rng = np.random.default_rng(0)
    for trial in range(300):
        symbols = (1, 2, 3, 4)[trial % 4]
        a = random_codes(rng, rng.integers(0, 16), symbols, 0.2)
        b = random_codes(rng, rng.integers(0, 16), symbols, 0.2)
        expected = lcs_matrix(a, b)[-1][-1]
        assert lcs_length_naive(a, b) == expected
        assert lcs_length_naive(b, a) == expected
        assert rapidfuzz_lcs(a, b) == expected
        every = lcs_matrix(a, b, match_codes=None)[-1][-1]
        assert lcs_length_naive(a, b, match_codes=None) == every
        assert LCSseq.similarity(a, b) == every


def test_oracle_known_values():
    acgt = [0, 1, 2, 3]
    assert lcs_length_naive(acgt, [0, 2, 3]) == 3
    assert lcs_length_naive(acgt, []) == 0 and lcs_length_naive([], []) == 0
    assert lcs_length_naive([4], [4]) == 0  # N matches nothing, not even N
    assert lcs_length_naive([4, 4], [4, 4], match_codes=None) == 2
    assert lcs_length_naive([0, 4, 1], [0, 4, 1]) == 2
    assert is_subsequence([0, 2], acgt) and is_subsequence([], acgt) and is_subsequence([], [])
    assert not is_subsequence([2, 0], acgt) and not is_subsequence([0], [])
    assert is_subsequence("AGT", "ACGT") and not is_subsequence("AA", "ACGT")
    assert top_n_naive([3, 5, 5, 1, 5], 3) == [1, 2, 4]
    assert top_n_naive([0, 0], 5) == [0, 1]


# --- fixed examples --------------------------------------------------------------------------


def test_docstring_examples_run():
    import gpualign.lcs.api
    import gpualign.streaming

    for module in (gpualign.lcs.api, gpualign.streaming):
        outcome = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert outcome.attempted > 0, module.__name__
        assert outcome.failed == 0, f"{outcome.failed} docstring example(s) of {module.__name__}"


def test_documented_examples(backend):
    lengths = gpualign.lcs_length("ACGTACGT", ["ACGT", "TTTTGGGG", "CAGTTACG"], backend=backend)
    assert lengths.tolist() == [4, 2, 6]
    matrix = gpualign.lcs_length_matrix(["ACGT", "TTT"], ["AGT", "TATAT", ""], backend=backend)
    assert matrix.tolist() == [[3, 2, 0], [1, 3, 0]]
    top = gpualign.lcs_top("ACGTACGT", ["ACGT", "TTTTGGGG", "CAGTTACG"], n=2, backend=backend)
    assert top.index.tolist() == [2, 0] and top.length.tolist() == [6, 4]
    assert top.lcs == ["AGTACG", "ACGT"]  # the CPU computes the strings on every backend


def test_n_matches_nothing(backend):
    subjects = ["N", "NNNN", "ACNT", "acnt", "ACGT", "NACGTN", ""]
    assert gpualign.lcs_length("N", subjects, backend=backend).tolist() == [0] * 7
    assert gpualign.lcs_length("nnnn", subjects, backend=backend).tolist() == [0] * 7
    assert gpualign.lcs_length("ACNT", subjects, backend=backend).tolist() == [0, 0, 3, 3, 3, 3, 0]
    top = gpualign.lcs_top("NACGTN", subjects, n=7, backend=backend)
    assert top.length.tolist() == [4, 4, 3, 3, 0, 0, 0]
    assert top.index.tolist() == [4, 5, 2, 3, 0, 1, 6]
    assert top.lcs == ["ACGT", "ACGT", "ACT", "ACT", "", "", ""]
    # In the other alphabets every symbol matches itself.
    assert gpualign.lcs_length("NN", ["NN"], alphabet="protein", backend=backend).tolist() == [2]
    assert gpualign.lcs_length("NN", ["NN"], alphabet="bytes", backend=backend).tolist() == [2]


def test_case_and_input_types_of_the_query(backend):
    subjects = ["ACGTTGCA", "TTTT", "GATTACA"]
    expected = gpualign.lcs_length("ACGTAC", subjects, backend=backend).tolist()
    for query in ("acgtac", b"ACGTAC", bytearray(b"acgtac"),
                  np.frombuffer(b"ACGTAC", dtype=np.uint8),
                  SequenceSet.from_sequences(["ACGTAC"])):
        assert gpualign.lcs_length(query, subjects, backend=backend).tolist() == expected
        top = gpualign.lcs_top(query, subjects, 2, backend=backend)
        assert top.length.tolist() == sorted(expected, reverse=True)[:2]


# --- oracle and peer on sizes that hit every code path ---------------------------------------


@pytest.mark.parametrize("alphabet", ["dna", "bytes"])
def test_boundary_sizes(backend, alphabet):
    rng = np.random.default_rng(1 if alphabet == "dna" else 2)
    symbols = 4 if alphabet == "dna" else 256
    n_fraction = 0.02 if alphabet == "dna" else 0.0
    subject_sizes = SIZES if alphabet == "dna" else SHORT_SIZES + (1025, 2049, 4096)
    for m in SIZES:
        query = random_codes(rng, m, symbols, n_fraction)
        subjects = [related(rng, query, n, symbols) for n in subject_sizes]
        subjects += [random_codes(rng, n, symbols, n_fraction) for n in SHORT_SIZES]
        lengths = lengths_of(query, subjects, alphabet, backend=backend)
        check_lengths(query, subjects, lengths, alphabet, where=f"query of {m}:")


def test_long_query_short_subjects_and_short_query_long_subjects(backend):
    rng = np.random.default_rng(3)
    # 5,000 rows: beyond two 2,048-row tiles; 6,000 short subjects of every small length.
    long_query = random_codes(rng, 5000, 4, 0.01)
    shorts = [random_codes(rng, n % 70, 4) for n in range(600)]
    shorts += [long_query[p:p + n] for p, n in zip(rng.integers(0, 4900, 50),
                                                   rng.integers(1, 100, 50), strict=True)]
    lengths = lengths_of(long_query, shorts, backend=backend)
    check_lengths(long_query, shorts, lengths, peers=False)
    # Pieces of the query: every symbol but N is common.
    assert lengths[600:].tolist() == [sum(c < 4 for c in s) for s in shorts[600:]]
    for query in ([], [2], random_codes(rng, 3), random_codes(rng, 33)):
        longs = [random_codes(rng, n, 4, 0.01) for n in (3000, 4097, 6000, 1, 0)]
        check_lengths(query, longs, lengths_of(query, longs, backend=backend))


def _symbol_pool(rng, alphabet, count):
    """``count`` distinct codes that match (random ones, so that the GPU remaps arbitrary
    symbols), or all of them."""
    alpha = get_alphabet(alphabet)
    count = min(count, alpha.match_codes)
    return sorted(int(c) for c in rng.choice(alpha.match_codes, count, replace=False))


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_seeded_random(backend, alphabet):
    rng = np.random.default_rng(ALPHABETS.index(alphabet) + 11)
    effective = {"dna": (1, 2, 3, 4), "protein": (1, 2, 4, 20, 24),
                 "bytes": (1, 2, 4, 26, 256)}[alphabet]
    for trial, count in enumerate(effective * 2):
        pool = _symbol_pool(rng, alphabet, count)
        n_fraction = rng.random() * 0.5 if alphabet == "dna" and trial % 2 else 0.0
        query = random_codes(rng, rng.integers(0, 300), pool, n_fraction)
        subjects = []
        for s in range(60):
            if s % 3 == 0:
                subjects.append(random_codes(rng, rng.integers(0, 300), pool, n_fraction))
            else:
                subjects.append(related(rng, query, int(rng.integers(0, 400)), pool,
                                        rate=rng.random() * 0.4))
        lengths = lengths_of(query, subjects, alphabet, backend=backend)
        check_lengths(query, subjects, lengths, alphabet, where=f"trial {trial}:")
        top = top_of(query, subjects, 7, alphabet, backend=backend)
        check_top(query, subjects, top, 7, alphabet, expected_lengths=lengths.tolist())


def test_n_heavy_dna(backend):
    rng = np.random.default_rng(4)
    for n_fraction in (0.3, 0.7, 0.95, 1.0):
        query = random_codes(rng, 200, 4, n_fraction)
        subjects = [random_codes(rng, rng.integers(0, 260), 4, rng.random())
                    for _ in range(40)]
        subjects += [list(query), mutate(rng, query, 0.1)]
        lengths = lengths_of(query, subjects, backend=backend)
        check_lengths(query, subjects, lengths)
        assert lengths[-2] == sum(c < 4 for c in query)  # with itself: every non-N symbol
        check_top(query, subjects, top_of(query, subjects, 5, backend=backend), 5)


@st.composite
def lcs_problems(draw):
    """A query and 0-5 subjects of tiny or word-boundary lengths over 1, 2, 4 or all symbols,
    subjects often edited copies of the query (ties and long LCS)."""
    alphabet = draw(st.sampled_from(["dna", "dna", "protein", "bytes"]))
    size = get_alphabet(alphabet).size
    n_symbols = draw(st.sampled_from([1, 2, 4, size]))
    symbol = st.integers(0, n_symbols - 1)
    lengths = st.one_of(st.integers(0, 8), st.sampled_from(SIZES[2:11]))
    m = draw(lengths)
    query = draw(st.lists(symbol, min_size=m, max_size=m))
    subjects = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()) or not query:
            n = draw(lengths)
            subjects.append(draw(st.lists(symbol, min_size=n, max_size=n)))
        else:
            subjects.append(draw(st.lists(symbol, max_size=9)) + mutated(draw, query, symbol))
    return alphabet, query, subjects


@HYPOTHESIS
@given(problem=lcs_problems(), n=st.integers(1, 7))
def test_hypothesis(backend, problem, n):
    alphabet, query, subjects = problem
    lengths = lengths_of(query, subjects, alphabet, backend=backend)
    check_lengths(query, subjects, lengths, alphabet)
    top = top_of(query, subjects, n, alphabet, backend=backend)
    check_top(query, subjects, top, n, alphabet, expected_lengths=lengths.tolist())


# --- matrices --------------------------------------------------------------------------------


def test_length_matrix(backend):
    rng = np.random.default_rng(5)
    queries = [random_codes(rng, m, 4, 0.02) for m in (0, 1, 31, 33, 64, 65, 200, 2049)]
    queries.append([4] * 10)  # only N
    subjects = [related(rng, queries[6], n) for n in (0, 5, 64, 200, 250)]
    subjects += [random_codes(rng, n, 4, 0.05) for n in (1, 32, 129, 2100)]
    matrix = gpualign.lcs_length_matrix(to_inputs(queries), to_inputs(subjects), backend=backend)
    assert isinstance(matrix, np.ndarray) and matrix.dtype == np.int32
    assert matrix.shape == (len(queries), len(subjects))
    expected = [[oracle(q, s) for s in subjects] for q in queries]
    assert matrix.tolist() == expected
    for row, query in enumerate(queries):
        assert lengths_of(query, subjects, backend=backend).tolist() == expected[row]
    as_sets = gpualign.lcs_length_matrix(SequenceSet.from_sequences(to_inputs(queries)),
                                         SequenceSet.from_sequences(to_inputs(subjects)),
                                         backend=backend)
    assert as_sets.tolist() == expected
    streamed = gpualign.lcs_length_matrix(iter(to_inputs(queries)), iter(to_inputs(subjects)),
                                          backend=backend)
    assert streamed.tolist() == expected


@pytest.mark.parametrize("alphabet", ["protein", "bytes"])
def test_length_matrix_other_alphabets(backend, alphabet):
    rng = np.random.default_rng(6)
    size = get_alphabet(alphabet).size
    queries = [random_codes(rng, m, size) for m in (0, 7, 65, 300)]
    subjects = [related(rng, queries[3], n, size) for n in (0, 64, 320)]
    subjects += [random_codes(rng, n, size) for n in (1, 99)]
    matrix = gpualign.lcs_length_matrix(to_inputs(queries, alphabet),
                                        to_inputs(subjects, alphabet), alphabet=alphabet,
                                        backend=backend)
    assert matrix.tolist() == [[oracle(q, s, alphabet) for s in subjects] for q in queries]


def test_length_matrix_empty_inputs(backend):
    matrix = gpualign.lcs_length_matrix([], ["ACGT", "A"], backend=backend)
    assert matrix.shape == (0, 2) and matrix.dtype == np.int32
    matrix = gpualign.lcs_length_matrix(["ACGT", ""], [], backend=backend)
    assert matrix.shape == (2, 0) and matrix.dtype == np.int32
    matrix = gpualign.lcs_length_matrix(["", "ACGT"], ["", "AC"], backend=backend)
    assert matrix.tolist() == [[0, 0], [0, 2]]


# --- top-N -----------------------------------------------------------------------------------


def test_top_ordering_and_ties(backend):
    rng = np.random.default_rng(7)
    query = random_codes(rng, 40, 2)
    # 120 subjects over two symbols whose LCS with the query takes few distinct values: many
    # ties, spread over the whole collection.
    subjects = [random_codes(rng, int(rng.integers(0, 12)), 2) for _ in range(120)]
    lengths = [oracle(query, s) for s in subjects]
    assert len(set(lengths)) < 15
    for n in (1, 2, 3, 10, 37, 119, 120, 121, 1000):
        top = top_of(query, subjects, n, backend=backend)
        check_top(query, subjects, top, n, expected_lengths=lengths)
        bare = top_of(query, subjects, n, backend=backend, with_lcs=False)
        check_top(query, subjects, bare, n, with_lcs=False, expected_lengths=lengths)
    # Every subject equal: the first n, in order.
    top = gpualign.lcs_top("ACGT", ["ACGT"] * 50, 5, backend=backend)
    assert top.index.tolist() == [0, 1, 2, 3, 4] and top.length.tolist() == [4] * 5
    assert top.lcs == ["ACGT"] * 5


def test_top_n_larger_than_collection(backend):
    top = gpualign.lcs_top("ACGTACGT", ["A", "ACGTACGT", "", "CGT"], n=100, backend=backend)
    assert top.index.tolist() == [1, 3, 0, 2]
    assert top.length.tolist() == [8, 3, 1, 0]
    assert top.lcs == ["ACGTACGT", "CGT", "A", ""]
    assert top.subjects == 4 and top.query_length == 8 and len(top) == 4
    assert top.name == ["1", "3", "0", "2"]


def test_top_n_accepts_numpy_integers(backend):
    top = gpualign.lcs_top("ACGT", ["A", "ACG", "T"], n=np.int64(2), backend=backend)
    assert top.index.tolist() == [1, 0]


def test_top_lcs_strings_are_common_subsequences(backend):
    rng = np.random.default_rng(8)
    for alphabet, symbols in (("dna", 4), ("dna", 2), ("protein", 24), ("bytes", 256)):
        query = random_codes(rng, 700, symbols, 0.05 if alphabet == "dna" else 0.0)
        subjects = [related(rng, query, int(n), symbols, rate=0.2)
                    for n in rng.integers(0, 900, 25)]
        subjects += [random_codes(rng, 3000, symbols), query[::-1]]
        top = top_of(query, subjects, 12, alphabet, backend=backend)
        check_top(query, subjects, top, 12, alphabet)


def test_top_lcs_of_long_sequences(backend):
    # Hirschberg's recursion several levels deep: 5,000 x 6,000 symbols.
    rng = np.random.default_rng(9)
    query = random_codes(rng, 5000, 4, 0.01)
    subjects = [related(rng, query, 6000, rate=0.15), random_codes(rng, 4500, 4)]
    check_top(query, subjects, top_of(query, subjects, 2, backend=backend), 2)


def test_empty_query(backend):
    subjects = ["ACGT", "", "GGGG", "N"]
    assert gpualign.lcs_length("", subjects, backend=backend).tolist() == [0, 0, 0, 0]
    top = gpualign.lcs_top("", subjects, n=3, backend=backend)
    assert top.index.tolist() == [0, 1, 2] and top.length.tolist() == [0, 0, 0]
    assert top.lcs == ["", "", ""] and top.query_length == 0 and top.subjects == 4
    assert gpualign.lcs_length_matrix([""], subjects, backend=backend).tolist() == [[0] * 4]


def test_empty_collection(backend, tmp_path):
    empty_file = tmp_path / "empty.fa"
    empty_file.write_text("")
    empty_gz = tmp_path / "empty.fa.gz"
    empty_gz.write_bytes(gzip.compress(b""))
    for subjects in ([], (), iter([]), SequenceSet.from_sequences([]), empty_file, empty_gz):
        lengths = gpualign.lcs_length("ACGT", subjects, backend=backend)
        assert lengths.shape == (0,) and lengths.dtype == np.int32
    for subjects in ([], iter([]), SequenceSet.from_sequences([]), empty_file):
        top = gpualign.lcs_top("ACGT", subjects, n=5, backend=backend)
        assert len(top) == 0 and top.subjects == 0 and top.query_length == 4
        assert top.index.shape == (0,) and top.index.dtype == np.int64
        assert top.length.shape == (0,) and top.length.dtype == np.int32
        assert top.name == [] and top.lcs == []


def test_zero_length_records(backend, tmp_path):
    seqs = ["", "ACGT", "", "", "GATTACA", ""]
    path = tmp_path / "gaps.fa"
    path.write_text("".join(f">r{i}\n{s}\n" for i, s in enumerate(seqs)))
    for subjects in (seqs, iter(seqs), path):
        assert gpualign.lcs_length("GATTACA", subjects, backend=backend).tolist() == \
            [0, 2, 0, 0, 7, 0]
    top = gpualign.lcs_top("GATTACA", path, n=3, backend=backend)
    assert top.index.tolist() == [4, 1, 0] and top.name == ["r4", "r1", "r0"]
    assert top.lcs[0] == "GATTACA" and top.lcs[2] == ""
    assert len(top.lcs[1]) == 2 and is_subsequence(top.lcs[1], "ACGT")
    assert is_subsequence(top.lcs[1], "GATTACA")


# --- input forms, streaming and batching -----------------------------------------------------


def _named_collection(rng, count=40):
    query = random_codes(rng, 150, 4, 0.03)
    codes = [related(rng, query, int(rng.integers(0, 200)), rate=0.3) for _ in range(count)]
    codes[5] = []
    seqs = to_inputs(codes)
    names = [f"s{i}" for i in range(count)]
    return query, codes, seqs, names


def test_input_forms_agree(backend, tmp_path):
    rng = np.random.default_rng(10)
    query, codes, seqs, names = _named_collection(rng)
    fasta = tmp_path / "subjects.fa"
    fasta.write_text("".join(f">{name} some description\n{s}\n" for name, s in
                             zip(names, seqs, strict=True)))
    fasta_gz = tmp_path / "subjects.fa.gz"
    fasta_gz.write_bytes(gzip.compress(fasta.read_bytes()))
    fastq = tmp_path / "subjects.fastq"
    fastq.write_text("".join(f"@{name}\n{s}\n+\n{'I' * len(s)}\n" for name, s in
                             zip(names, seqs, strict=True)))
    lengths = [oracle(query, s) for s in codes]

    def forms():
        """(label, subjects, named): fresh each time, since generators are spent once read."""
        yield "fasta", fasta, True
        yield "fasta.gz", fasta_gz, True
        yield "fastq", fastq, True
        yield "pair generator", ((n, s) for n, s in zip(names, seqs, strict=True)), True
        yield "pair list", list(zip(names, seqs, strict=True)), True
        yield "named set", SequenceSet.from_sequences(seqs, names=names), True
        yield "generator", (s for s in seqs), False
        yield "list", seqs, False
        yield "tuple", tuple(seqs), False
        yield "lower case", [s.lower() for s in seqs], False
        yield "bytes", [s.encode() for s in seqs], False
        yield "arrays", [np.frombuffer(s.encode(), dtype=np.uint8) for s in seqs], False
        yield "set", SequenceSet.from_sequences(seqs), False

    q = to_input(query)
    for label, subjects, _ in forms():
        assert gpualign.lcs_length(q, subjects, backend=backend).tolist() == lengths, label
    first = None
    for label, subjects, named in forms():
        top = gpualign.lcs_top(q, subjects, 8, backend=backend)
        check_top(query, codes, top, 8, names=names if named else None, expected_lengths=lengths)
        first = first or top
        assert top.index.tolist() == first.index.tolist(), label
        assert top.lcs == first.lcs, label  # deterministic strings whatever the input form


@pytest.mark.usefixtures("small_lcs_batches")
def test_many_batches(backend, tmp_path):
    rng = np.random.default_rng(12)
    query, codes, seqs, names = _named_collection(rng, 60)
    codes.append(random_codes(rng, 3000, 4))  # one subject bigger than a whole batch
    seqs.append(to_input(codes[-1]))
    names.append("big")
    fasta = tmp_path / "many.fa.gz"
    fasta.write_bytes(gzip.compress("".join(f">{n}\n{s}\n" for n, s in
                                            zip(names, seqs, strict=True)).encode()))
    lengths = [oracle(query, s) for s in codes]
    q = to_input(query)
    for label, form in (("list", seqs), ("generator", iter(seqs)), ("file", fasta),
                        ("set", SequenceSet.from_sequences(seqs, names=names))):
        assert gpualign.lcs_length(q, form, backend=backend).tolist() == lengths, label
    for label, make in (("list", lambda: seqs), ("generator", lambda: iter(seqs)),
                        ("file", lambda: fasta),
                        ("set", lambda: SequenceSet.from_sequences(seqs, names=names))):
        for n in (1, 4, 61, 100):
            top = gpualign.lcs_top(q, make(), n, backend=backend)
            check_top(query, codes, top, n, expected_lengths=lengths,
                      names=None if label in ("list", "generator") else names)
    matrix = gpualign.lcs_length_matrix([q, "", "ACGT" * 40], iter(seqs), backend=backend)
    assert matrix[0].tolist() == lengths and matrix[1].tolist() == [0] * len(seqs)
    assert matrix[2].tolist() == [oracle(lcs_as_codes("ACGT" * 40, "dna"), s) for s in codes]


@pytest.mark.parametrize("pinned", [False, True], ids=["pageable", "pinned"])
@pytest.mark.parametrize("slots", [2, 3, 5])
def test_set_in_host_memory_copy_paths(backend, monkeypatch, pinned, slots):
    # Batches of a set in pinned memory (SequenceSet.pin_memory) go to the GPU straight from it;
    # other batches are staged through the pipeline's own pinned buffers. Many batches cycle
    # through every slot. Same lengths either way, on every backend.
    if pinned and backend != "cuda":
        pytest.skip("pin_memory needs CuPy")
    # A pinned set is cut by the LCS_GPU_PINNED_* plan (4,500 symbols a batch for this query
    # of 300), any other by LCS_GPU_* (9,000): the plan in use gets the parametrized slots,
    # the other one 2, so that a wrong choice shows.
    monkeypatch.setattr(gpualign.config, "LCS_GPU_BATCH_RESIDUES", 9000)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_PINNED_BATCH_CELLS", 300 * 4500)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_PINNED_SLOTS", slots if pinned else 2)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_SLOTS", 2 if pinned else slots)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_FIRST_BATCH_RESIDUES", 3000)
    rng = np.random.default_rng(15)
    query = random_codes(rng, 300, 4, 0.01)
    subjects = [related(rng, query, int(n), rate=0.3) for n in rng.integers(0, 700, 150)]
    seqs = SequenceSet.from_sequences([to_input(s) for s in subjects])
    if backend == "cuda":
        from gpualign.cuda.host import is_page_locked
        from gpualign.lcs import _cuda

        if pinned:
            seqs = seqs.pin_memory()
            assert is_page_locked(seqs.codes)
        assert _cuda.plan(seqs, len(query)) == (4500 if pinned else 9000, 3000, slots)
        assert _cuda.plan(seqs, len(query), 2)[0] == 9000  # 2 GPUs: 4x the work, capped
    lengths = gpualign.lcs_length(to_input(query), seqs, backend=backend)
    assert lengths.tolist() == [oracle(query, s) for s in subjects]
    top = gpualign.lcs_top(to_input(query), seqs, 5, backend=backend)
    check_top(query, subjects, top, 5)


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_kernel_tilings(backend, alphabet, small_lcs_tiles):
    # The CUDA kernel with small tiles and little shared memory: queries of many tiles and
    # launches (carries between tiles); the CPU backend must be unaffected too.
    rng = np.random.default_rng(13)
    symbols = get_alphabet(alphabet).match_codes
    n_fraction = 0.05 if alphabet == "dna" else 0.0
    for m in (31, 33, 65, 129, 1025, 2049 if alphabet == "dna" else 700):
        query = random_codes(rng, m, symbols, n_fraction)
        subjects = [related(rng, query, n, symbols, rate=0.2) for n in (0, 1, 31, 32, 33, 95)]
        subjects += [random_codes(rng, n, symbols) for n in (64, 300)]
        subjects.append(related(rng, query, m + 40, symbols, rate=0.1))
        lengths = lengths_of(query, subjects, alphabet, backend=backend)
        check_lengths(query, subjects, lengths, alphabet, where=small_lcs_tiles)


@pytest.mark.usefixtures("small_lcs_batches")
def test_many_batches_and_tiles_together(backend, small_lcs_tiles):
    rng = np.random.default_rng(14)
    query = random_codes(rng, 1100, 4, 0.01)
    subjects = [related(rng, query, int(n), rate=0.3) for n in rng.integers(0, 1200, 30)]
    top = top_of(query, subjects, 6, backend=backend)
    check_top(query, subjects, top, 6)
    check_lengths(query, subjects, lengths_of(query, iter(subjects), backend=backend),
                  peers=False)


def test_progress_does_not_change_results(backend, capsys):
    subjects = ["AGT", "ACGT", "T"]
    assert gpualign.lcs_length("ACGT", subjects, progress=True,
                               backend=backend).tolist() == [3, 4, 1]
    top = gpualign.lcs_top("ACGT", iter(subjects), 2, progress=True, backend=backend)
    assert top.index.tolist() == [1, 0]
    matrix = gpualign.lcs_length_matrix(["ACGT"], subjects, progress=True, backend=backend)
    assert matrix.tolist() == [[3, 4, 1]]


def test_progress_hook_counts_subjects(backend, capsys):
    # A function as progress: called with each batch's subjects, and no bar of the API's.
    subjects = ["AGT", "ACGT", "T", "GG"]
    done: list[int] = []
    with gpualign.config.override(LCS_CPU_BATCH_RESIDUES=3, LCS_GPU_BATCH_RESIDUES=3,
                                  LCS_GPU_FIRST_BATCH_RESIDUES=3):
        assert gpualign.lcs_top("ACGT", subjects, 1, progress=done.append,
                                backend=backend).index.tolist() == [1]
        assert len(done) > 1 and sum(done) == 4
        done.clear()
        assert gpualign.lcs_length_matrix(["ACGT", "GG"], iter(subjects), backend=backend,
                                          progress=done.append).shape == (2, 4)
        assert sum(done) == 4
    assert capsys.readouterr().err == ""


def test_invalid_wildcard_input(backend):
    lengths = gpualign.lcs_length("ACGTRY", ["ACGTRY", "ACGTAC"], invalid="wildcard",
                                  backend=backend)
    assert lengths.tolist() == [4, 4]  # R and Y become N, which matches nothing
    lengths = gpualign.lcs_length("MKV1", ["MKVX", "MKV"], alphabet="protein",
                                  invalid="wildcard", backend=backend)
    assert lengths.tolist() == [4, 3]  # protein X is an ordinary symbol
    # (R was U until issue 20 made DNA read U as T.)
    top = gpualign.lcs_top("ACGR", iter(["ACGR", "ACG"]), 2, invalid="wildcard",
                           backend=backend)
    assert top.length.tolist() == [3, 3] and top.lcs == ["ACG", "ACG"]


def test_devices_argument(backend):
    if backend == "cpu":
        with pytest.raises(ValueError, match="CUDA backend only"):
            gpualign.lcs_length("ACGT", ["ACGT"], devices=[0], backend=backend)
    else:
        assert gpualign.lcs_length("ACGT", ["AGT"], devices=[0],
                                   backend=backend).tolist() == [3]
        top = gpualign.lcs_top("ACGT", ["AGT", "ACGT"], 1, devices=[0], backend=backend)
        assert top.index.tolist() == [1]
    for bad in ([], [0, 0], [-1]):
        with pytest.raises(ValueError, match="devices"):
            gpualign.lcs_length("ACGT", ["ACGT"], devices=bad, backend=backend)
        with pytest.raises(ValueError, match="devices"):
            gpualign.lcs_top("ACGT", ["ACGT"], devices=bad, backend=backend)


def test_several_pipelines_share_the_batches(backend, monkeypatch):
    # devices=[0, 1, ...] runs one pipeline per GPU, each pulling batches from the shared source
    # on its own thread. Two pipelines on the same GPU (allowed internally, refused by the API)
    # exercise that sharing on a one-GPU machine: every batch consumed once, lengths right.
    if backend != "cuda":
        pytest.skip("CUDA pipelines")
    from gpualign.lcs import _cuda

    monkeypatch.setattr(gpualign.config, "LCS_GPU_BATCH_RESIDUES", 800)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_FIRST_BATCH_RESIDUES", 100)
    rng = np.random.default_rng(16)
    query = random_codes(rng, 200, 4, 0.02)
    subjects = [related(rng, query, int(n), rate=0.3) for n in rng.integers(0, 400, 120)]
    seqs = SequenceSet.from_sequences([to_input(s) for s in subjects])
    consumed = {}

    def consume(batch, lengths):
        assert batch.start not in consumed
        consumed[batch.start] = lengths[0].copy()

    _cuda.run([np.asarray(query, dtype=np.uint8)], get_alphabet("dna"), seqs, "error", consume,
              [0, 0])
    assert len(consumed) > 4
    lengths = np.concatenate([consumed[start] for start in sorted(consumed)])
    assert lengths.tolist() == [oracle(query, s) for s in subjects]


# Lengths, a matrix and a top-N without strings on the backend named by argv[1], then whether
# Numba is loaded; then a top-N with strings (computed on the CPU) and whether it is loaded.
_NUMBA_LOADED = """
import sys, gpualign
backend = sys.argv[1]
gpualign.lcs_length("ACGT", ["AGT", "TT"], backend=backend)
gpualign.lcs_length_matrix(["ACGT", "GG"], ["AGT"], backend=backend)
gpualign.lcs_top("ACGT", ["AGT", "TT"], 1, with_lcs=False, backend=backend)
print("numba" in sys.modules)
assert gpualign.lcs_top("ACGT", ["AGT"], 1, backend=backend).lcs == ["AGT"]
print("numba" in sys.modules)
"""


def test_modules_of_a_cuda_lcs_run_do_not_import_numba():
    # Importing Numba costs most of a second: the API, the CUDA backend and its pipeline leave
    # it out (the CPU backend and the LCS strings load it when first used).
    code = ("import sys, gpualign, gpualign.lcs.api, gpualign.lcs._cuda, "
            "gpualign.cuda.pipeline; print('numba' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)
    assert shown.stdout.split() == ["False"]


def test_only_the_cpu_backend_and_strings_load_numba(backend):
    shown = subprocess.run([sys.executable, "-c", _NUMBA_LOADED, backend], capture_output=True,
                           text=True, check=True)
    assert shown.stdout.split() == ["False" if backend == "cuda" else "True", "True"]


# --- real data -------------------------------------------------------------------------------


def _real(name, alphabet):
    path = DATA / name
    subjects = SequenceSet.from_file(path, alphabet, invalid="wildcard")
    return path, subjects, [subjects.codes_of(i).tolist() for i in range(len(subjects))]


@pytest.mark.parametrize("name,alphabet,picks", [
    ("rdp16s_200.fasta.gz", "dna", (0, 3, 101, 199)),
    ("uniprot_200.fasta.gz", "protein", (0, 42, 150)),
])
def test_real_data(backend, name, alphabet, picks):
    path, subjects, codes = _real(name, alphabet)
    assert len(subjects) == 200
    for pick in picks:
        query = subjects[pick]
        # The subjects streamed from the compressed file (read on a background thread).
        lengths = gpualign.lcs_length(query, path, alphabet=alphabet, invalid="wildcard",
                                      backend=backend)
        expected = [rapidfuzz_lcs(codes[pick], s, alphabet) for s in codes]
        assert lengths.tolist() == expected
        assert lengths[pick] == sum(c < subjects.alphabet.match_codes for c in codes[pick])
        top = gpualign.lcs_top(query, path, 5, alphabet=alphabet, invalid="wildcard",
                               backend=backend)
        check_top(codes[pick], codes, top, 5, alphabet, names=subjects.names,
                  expected_lengths=expected)
        assert top.index[0] == pick


def test_real_data_some_against_the_oracle(backend):
    _, subjects, codes = _real("rdp16s_200.fasta.gz", "dna")
    # The records holding N (from K/Y read as wildcards too) against a few others.
    with_n = [i for i, c in enumerate(codes) if 4 in c]
    assert len(with_n) >= 5
    chosen = with_n[:4] + [10, 20]
    matrix = gpualign.lcs_length_matrix(SequenceSet.from_sequences(
        [subjects[i] for i in chosen]), subjects.take(np.array(with_n + [30, 40])),
        backend=backend)
    assert matrix.tolist() == [[oracle(codes[q], codes[s]) for s in with_n + [30, 40]]
                               for q in chosen]


def test_real_data_many_batches(backend, small_lcs_batches):
    path, subjects, codes = _real("uniprot_200.fasta.gz", "protein")
    lengths = gpualign.lcs_length(subjects[7], path, alphabet="protein", backend=backend)
    assert lengths.tolist() == [rapidfuzz_lcs(codes[7], s, "protein") for s in codes]


# --- errors: the same on every backend -------------------------------------------------------


def test_error_invalid_symbol_names_record_and_position(backend, tmp_path):
    # (R was U until issue 20 made DNA read U as T.)
    for subjects in (["ACGT", "AC", "ACRG"], iter(["ACGT", "AC", "ACRG"])):
        with pytest.raises(gpualign.InvalidSymbolError, match=r"'2' \(#2\).*'R' at position 2"):
            gpualign.lcs_length("ACGT", subjects, backend=backend)
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'query' \(#0\).*'-' at position 3"):
        gpualign.lcs_length("ACG-", ["ACGT"], backend=backend)
    # (a digit since issue 20 made J a protein symbol, read as X)
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'query' \(#0\).*'1' at position 1"):
        gpualign.lcs_top("M1", ["MK"], alphabet="protein", backend=backend)
    # (alphabet="dna" named since issue 20: "auto" takes A, Z for protein)
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'query #1' \(#1\).*position 0"):
        gpualign.lcs_length_matrix(["A", "Z"], ["A"], alphabet="dna", backend=backend)
    path = tmp_path / "bad.fa"
    path.write_text(">ok\nACGT\n>broken read\nACGR\n")
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'broken' \(#1\).*'R' at position 3"):
        gpualign.lcs_top("ACGT", path, backend=backend)
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'x' \(#1\).*position 0"):
        gpualign.lcs_top("ACGT", iter([("w", "A"), ("x", "-")]), backend=backend)


def test_error_truncated_gzip(backend, tmp_path):
    data = gzip.compress("".join(f">r{i}\n{'ACGT' * 30}\n" for i in range(2000)).encode())
    path = tmp_path / "cut.fa.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(gpualign.SequenceFileError, match=re.escape(str(path))):
        gpualign.lcs_length("ACGT", path, backend=backend)
    with pytest.raises(gpualign.SequenceFileError, match=re.escape(str(path))):
        gpualign.lcs_top("ACGT", path, backend=backend)
    with pytest.raises(gpualign.SequenceFileError, match=re.escape(str(path))):
        gpualign.lcs_length_matrix(["ACGT"], path, backend=backend)


def test_error_missing_file(backend, tmp_path):
    with pytest.raises(gpualign.SequenceFileError, match="no such file"):
        gpualign.lcs_top("ACGT", tmp_path / "absent.fa", backend=backend)


@pytest.mark.parametrize("n,error", [(0, ValueError), (-3, ValueError), (1.5, TypeError),
                                     (True, TypeError), ("3", TypeError), (None, TypeError)])
def test_error_bad_n(backend, n, error):
    with pytest.raises(error, match="n must"):
        gpualign.lcs_top("ACGT", ["ACGT"], n=n, backend=backend)


def test_error_alphabet_mismatch(backend):
    proteins = SequenceSet.from_sequences(["MKV"], "protein")
    dna = SequenceSet.from_sequences(["ACGT"])
    # (alphabet="dna" named since issue 20: "auto" takes the alphabet of the encoded set)
    with pytest.raises(ValueError, match="subjects are encoded as protein, not dna"):
        gpualign.lcs_length("ACGT", proteins, alphabet="dna", backend=backend)
    with pytest.raises(ValueError, match="subjects are encoded as protein, not dna"):
        gpualign.lcs_top("ACGT", proteins, alphabet="dna", backend=backend)
    with pytest.raises(ValueError, match="encoded as dna, not protein"):
        gpualign.lcs_length(dna, ["MKV"], alphabet="protein", backend=backend)
    with pytest.raises(ValueError, match="queries are encoded as protein"):
        gpualign.lcs_length_matrix(proteins, ["ACGT"], alphabet="dna", backend=backend)
    assert gpualign.lcs_length("MKW", proteins, backend=backend).tolist() == [2]


def test_error_plain_str_subjects_and_queries(backend):
    for subjects in ("ACGT", b"ACGT"):
        with pytest.raises(TypeError, match="subjects: pass a list"):
            gpualign.lcs_length("ACGT", subjects, backend=backend)
        with pytest.raises(TypeError, match="subjects: pass a list"):
            gpualign.lcs_top("ACGT", subjects, backend=backend)
    with pytest.raises(TypeError, match="subjects"):
        gpualign.lcs_length("ACGT", 42, backend=backend)
    with pytest.raises(TypeError, match="queries"):
        gpualign.lcs_length_matrix("ACGT", ["ACGT"], backend=backend)
    with pytest.raises(TypeError, match="query"):
        gpualign.lcs_length(Path("q.fa"), ["ACGT"], backend=backend)
    with pytest.raises(ValueError, match="SequenceSet of 2 sequences"):
        gpualign.lcs_top(SequenceSet.from_sequences(["A", "C"]), ["ACGT"], backend=backend)


def test_error_unknown_alphabet_and_invalid_option(backend):
    with pytest.raises(ValueError, match="unknown alphabet"):
        gpualign.lcs_length("A", ["A"], alphabet="rna", backend=backend)
    with pytest.raises(ValueError, match="invalid="):
        gpualign.lcs_top("A", ["A"], invalid="skip", backend=backend)


def test_error_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        gpualign.lcs_length("A", ["A"], backend="bogus")
    with pytest.raises(ValueError, match="backend"):
        gpualign.lcs_top("A", ["A"], backend="bogus")
    with pytest.raises(ValueError, match="backend"):
        gpualign.lcs_length_matrix(["A"], ["A"], backend="gpu")


@pytest.mark.skipif(gpualign.backend.cuda_status()[0], reason="a GPU is present")
def test_error_cuda_unavailable(monkeypatch):
    monkeypatch.delenv("GPUALIGN_BACKEND", raising=False)
    with pytest.raises(gpualign.BackendUnavailableError, match="cuda"):
        gpualign.lcs_length("A", ["A"], backend="cuda")
    with pytest.raises(gpualign.BackendUnavailableError, match="cuda"):
        gpualign.lcs_top("A", ["A"], backend="CUDA")
    assert resolve_backend("auto") == "cpu"
    assert gpualign.lcs_length("ACGT", ["AGT"]).tolist() == [3]  # auto: the CPU
