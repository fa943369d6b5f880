"""Search statistics: NCBI BLAST's gapped Karlin-Altschul tables (rows pinned, transcription
checked for consistency), matching a Scoring to its table, bit scores and E-values checked
against hand computation and published BLAST output (effective search spaces, a blastn hit)."""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pytest

from gpualign.scoring import MATRICES, Scoring
from gpualign.search import statistics
from gpualign.search.statistics import bit_scores, evalues, length_adjustment, parameters, tabulated

BLOSUM62_11_1 = Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)  # BLAST's 11/1
#: blastn's match/mismatch pairs and how many gap pairs BLAST tabulates for each (its rows
#: "0/0" of greedy extension left out).
DNA_PAIRS = {(1, -5): 1, (1, -4): 4, (2, -7): 4, (1, -3): 5, (2, -5): 4, (1, -2): 6, (2, -3): 8,
             (3, -4): 6, (4, -5): 4, (1, -1): 7, (3, -2): 1, (5, -4): 2}
#: Rows of each matrix's table in BLAST (the ungapped row included).
MATRIX_ROWS = {"BLOSUM45": 14, "BLOSUM50": 16, "BLOSUM62": 12, "BLOSUM80": 10, "BLOSUM90": 8,
               "PAM30": 11, "PAM70": 9, "PAM250": 16}


def test_docstring_examples_run():
    assert doctest.testmod(statistics, raise_on_error=True).attempted > 0


def test_pinned_rows():
    gapped = parameters(BLOSUM62_11_1, "protein")
    assert (gapped.lam, gapped.k, gapped.h, gapped.alpha, gapped.beta) == (
        0.267, 0.041, 0.14, 1.9, -30)
    assert gapped.source == "NCBI BLAST gapped table, BLOSUM62 11/1 (gap_open 12, gap_extend 1)"
    ungapped = tabulated(BLOSUM62_11_1, "protein")[None]
    assert (ungapped.lam, ungapped.k, ungapped.h) == (0.3176, 0.134, 0.4012)
    blosum45 = parameters(Scoring.matrix("BLOSUM45", gap_open=16, gap_extend=2), "protein")
    assert (blosum45.lam, blosum45.k, blosum45.h, blosum45.alpha, blosum45.beta) == (
        0.195, 0.032, 0.10, 1.9, -36)  # BLAST's 14/2, its preferred BLOSUM45 costs
    pam30 = parameters(Scoring.matrix("PAM30", gap_open=10, gap_extend=1), "protein")
    assert (pam30.lam, pam30.k, pam30.h) == (0.294, 0.11, 0.61)  # BLAST's 9/1
    blastn = parameters(Scoring(match=1, mismatch=-2, gap_open=7, gap_extend=2), "dna")
    assert blastn is None  # 5/2 is not tabulated for 1/-2
    blastn = parameters(Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna")
    assert (blastn.lam, blastn.k, blastn.h, blastn.alpha, blastn.beta) == (
        0.625, 0.41, 0.78, 0.8, -2)  # blastn's default 2/-3 5/2
    assert blastn.even_scores


@pytest.mark.parametrize("name", MATRICES)
def test_every_matrix_is_tabulated(name):
    table = tabulated(Scoring.matrix(name), "protein")
    assert len(table) == MATRIX_ROWS[name]
    ungapped = table.pop(None)
    for (gap_open, gap_extend), params in table.items():
        blast = f"{gap_open - gap_extend}/{gap_extend} "
        assert f"{name} {blast}(gap_open {gap_open}, gap_extend {gap_extend})" in params.source
        # Gaps only add alignments: lambda and K are at most their ungapped values.
        assert params.lam < ungapped.lam and params.k < ungapped.k
        assert parameters(Scoring.matrix(name, gap_open=gap_open, gap_extend=gap_extend),
                          "protein") == params
    _check_monotone(table)


@pytest.mark.parametrize("pair", list(DNA_PAIRS))
def test_every_match_mismatch_pair_is_tabulated(pair):
    match, mismatch = pair
    table = tabulated(Scoring(match=match, mismatch=mismatch), "dna")
    assert len(table) == DNA_PAIRS[pair] and None not in table
    # Ungapped lambda of uniform bases: 1/4 e^(lam match) + 3/4 e^(lam mismatch) = 1.
    low, high = 1e-6, 10.0
    for _ in range(200):
        middle = (low + high) / 2
        total = 0.25 * math.exp(middle * match) + 0.75 * math.exp(middle * mismatch)
        low, high = (middle, high) if total < 1 else (low, middle)
    for (gap_open, gap_extend), params in table.items():
        assert gap_open >= gap_extend > 0
        assert params.lam <= low + 0.005  # the tables round to 2 or 3 digits
        assert params.even_scores == (pair in {(2, -7), (2, -5), (2, -3), (3, -4)})
    _check_monotone(table)


def _check_monotone(table):
    """Within one extension cost, a dearer gap opening never lowers lambda or K (catches a
    transcribed row in the wrong place)."""
    by_extend = {}
    for (gap_open, gap_extend), params in table.items():
        by_extend.setdefault(gap_extend, []).append((gap_open, params))
    for rows in by_extend.values():
        rows.sort(key=lambda row: row[0])
        for (_, cheaper), (_, dearer) in itertools.pairwise(rows):
            assert cheaper.lam <= dearer.lam and cheaper.k <= dearer.k, (cheaper, dearer)


def test_gap_convention_mapping():
    # BLAST's existence E, extension X is gpualign's gap_open E + X, gap_extend X.
    assert parameters(Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1), "protein").lam \
        == 0.243  # BLAST 10/1
    assert parameters(Scoring.matrix("BLOSUM62", gap_open=13, gap_extend=2), "protein").k \
        == 0.082  # BLAST 11/2
    assert parameters(Scoring.matrix("BLOSUM62", gap_open=10, gap_extend=1), "protein").k \
        == 0.010  # BLAST 9/1
    assert parameters(Scoring.matrix("BLOSUM62", gap_open=9, gap_extend=1), "protein") is None
    # blastn's 0/2 (no opening cost) is a linear gap of 2 per base.
    linear = parameters(Scoring(match=1, mismatch=-3, gap_open=2, gap_extend=2), "dna")
    assert (linear.lam, linear.k) == (1.25, 0.42)


def test_multiples_of_a_pair_use_its_table_scaled():
    # BLAST divides 2/-4 by 2: the 1/-2 table, gap costs doubled, lambda and alpha halved.
    base = parameters(Scoring(match=1, mismatch=-2, gap_open=3, gap_extend=1), "dna")
    double = parameters(Scoring(match=2, mismatch=-4, gap_open=6, gap_extend=2), "dna")
    assert double.lam == base.lam / 2 and double.alpha == base.alpha / 2
    assert (double.k, double.h, double.beta) == (base.k, base.h, base.beta)
    assert "1/-2 table scaled by 2" in double.source and not double.even_scores
    assert parameters(Scoring(match=2, mismatch=-4, gap_open=3, gap_extend=1), "dna") is None
    assert parameters(Scoring(match=4, mismatch=-6, gap_open=12, gap_extend=4), "dna"
                      ).even_scores  # 2/-3 scaled by 2, BLAST 8/4


def _write_matrix(path, symbols: bytes, scores: np.ndarray) -> None:
    """An NCBI-format matrix file."""
    letters = symbols.decode()
    rows = [" ".join(letters)] + [f"{letter} " + " ".join(map(str, row))
                                  for letter, row in zip(letters, scores.tolist(), strict=True)]
    path.write_text("\n".join(rows) + "\n")


def test_matching_compares_scores_not_names(tmp_path):
    shipped = Scoring.matrix("BLOSUM62")
    renamed = tmp_path / "my-matrix.txt"
    _write_matrix(renamed, shipped.matrix_symbols, shipped.matrix_scores)
    found = parameters(Scoring.from_file(renamed, gap_open=12, gap_extend=1), "protein")
    assert found == parameters(BLOSUM62_11_1, "protein")
    # The same name with one score changed (W/W 11 -> 12) is another matrix.
    scores = shipped.matrix_scores.copy()
    w = shipped.matrix_symbols.index(b"W")
    scores[w, w] = 12
    edited = tmp_path / "BLOSUM62"
    _write_matrix(edited, shipped.matrix_symbols, scores)
    assert Scoring.from_file(edited).matrix_name == "BLOSUM62"
    assert parameters(Scoring.from_file(edited, gap_open=12, gap_extend=1), "protein") is None
    assert tabulated(Scoring.from_file(edited), "protein") == {}


def test_no_table_for_other_schemes():
    assert parameters(BLOSUM62_11_1, "dna") is None
    assert parameters(Scoring(match=1, mismatch=-2, gap_open=3, gap_extend=1), "protein") is None
    assert parameters(Scoring(match=5, mismatch=-3, gap_open=3, gap_extend=1), "dna") is None
    assert parameters(Scoring(match=1, mismatch=1, gap_open=3, gap_extend=1), "dna") is None
    assert tabulated(Scoring(match=1, mismatch=-2), "bytes") == {}


def test_bit_scores_by_hand():
    params = parameters(BLOSUM62_11_1, "protein")
    raw = np.array([[57, 0], [100, -1]], dtype=np.int64)
    bits = bit_scores(raw, params)
    assert bits.dtype == np.float64 and bits.shape == raw.shape
    expected = (0.267 * raw[:, :1] - math.log(0.041)) / math.log(2)
    np.testing.assert_allclose(bits[:, 0], expected[:, 0], rtol=1e-12)
    assert round(float(bits[0, 0]), 1) == 26.6  # BLAST 2.2.5 printed "S2: 57 (26.6 bits)"
    assert bits[0, 1] == pytest.approx(-math.log(0.041) / math.log(2))
    assert np.isnan(bits[1, 1])


# Effective search spaces that BLAST reported: (scoring, alphabet, query length, database
# residues, database sequences, length adjustment, effective search space).
PUBLISHED_SPACES = [
    # BLASTP 2.2.5, pdb_seqres.txt (a BLAST report quoted in a parser's documentation)
    (BLOSUM62_11_1, "protein", 274, 9_419_815, 44_233, 94, 947_144_340),
    # BLAST 2.2.26+ blastp (Biopython's test file xml_2226_blastp_001.xml)
    (BLOSUM62_11_1, "protein", 32, 6_406, 20, 7, 156_650),
    # BLAST+ blastn, match 2, mismatch -3, BLAST gap costs 5/2 (XML output in a test suite)
    (Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna", 63, 1_634_236_772,
     1_331_289, 28, 55_893_623_800),
    (Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna", 21, 1_634_236_772,
     1_331_289, 18, 4_830_820_710),
]


@pytest.mark.parametrize("scoring,alphabet,m,n,count,adjustment,space", PUBLISHED_SPACES)
def test_effective_search_space_as_blast(scoring, alphabet, m, n, count, adjustment, space):
    params = parameters(scoring, alphabet)
    assert length_adjustment(m, n, count, params) == adjustment
    assert (m - adjustment) * (n - count * adjustment) == space
    # E-value of score 0 is K times the search space.
    assert evalues([0], [m], n, count, params)[0] == pytest.approx(params.k * space, rel=1e-12)


def test_published_blastn_hit():
    # Score 32, 30.1402 bits, E-value 4.0824 (the 21-base query of PUBLISHED_SPACES).
    params = parameters(Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna")
    assert bit_scores([32], params)[0] == pytest.approx(30.1402, abs=5e-5)
    assert evalues([32], [21], 1_634_236_772, 1_331_289, params)[0] == pytest.approx(
        4.0824, abs=5e-5)


def test_evalues_vectorised_by_hand():
    params = parameters(BLOSUM62_11_1, "protein")
    n, count = 9_419_815, 44_233
    lengths = np.array([274, 32, 274, 1000])
    raw = np.array([[100, 80, 60], [40, 30, -1], [57, 57, 20], [300, 200, 100]])
    values = evalues(raw, lengths, n, count, params)
    assert values.shape == raw.shape and values.dtype == np.float64
    for q, m in enumerate(lengths.tolist()):
        ell = length_adjustment(m, n, count, params)
        space = (m - ell) * (n - count * ell)
        for j, score in enumerate(raw[q].tolist()):
            if score < 0:
                assert np.isnan(values[q, j])
            else:
                assert values[q, j] == pytest.approx(
                    space * 0.041 * math.exp(-0.267 * score), rel=1e-12)
    # 274 residues: BLAST's published search space.
    assert values[0, 0] == pytest.approx(947_144_340 * 0.041 * math.exp(-26.7), rel=1e-12)
    # Lengths of raw's shape give the same values; a 1-D batch of hits too.
    np.testing.assert_array_equal(
        evalues(raw, np.broadcast_to(lengths[:, None], raw.shape), n, count, params), values)
    np.testing.assert_array_equal(evalues(raw[:, 0], lengths, n, count, params), values[:, 0])


def test_even_scores_round_down_for_evalues_only():
    params = parameters(Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna")
    values = evalues([[30, 31, 32]], [100], 10**6, 10**3, params)[0]
    assert values[0] == values[1] > values[2]
    bits = bit_scores([30, 31], params)
    assert bits[1] > bits[0]
    odd = parameters(Scoring(match=1, mismatch=-2, gap_open=3, gap_extend=1), "dna")
    assert not odd.even_scores
    values = evalues([[30, 31]], [100], 10**6, 10**3, odd)[0]
    assert values[0] > values[1]


def test_length_adjustment_limits():
    params = parameters(BLOSUM62_11_1, "protein")
    # K m n below max(m, n): no adjustment, and BLAST's floor of one database residue.
    assert length_adjustment(10, 20, 1, params) == 0
    assert evalues([0], [10], 20, 1, params)[0] == pytest.approx(0.041 * 10 * 20)
    # The adjustment keeps both effective lengths positive and grows with the search space.
    adjustments = [length_adjustment(300, n, n // 300, params) for n in (10**4, 10**6, 10**9)]
    assert adjustments == sorted(adjustments) and 0 < adjustments[-1] < 300
