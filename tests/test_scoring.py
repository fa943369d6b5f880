"""Scoring: gap costs, the shipped NCBI matrices (checked against parasail's copies), NCBI-format
files, substitution tables over each alphabet, and the errors for bad schemes and inputs."""

from __future__ import annotations

import doctest

import numpy as np
import parasail
import pytest

import gpualign
from gpualign import scoring
from gpualign.scoring import MATRICES, Scoring
from gpualign.sequences import SequenceSet, get_alphabet

PROTEIN = get_alphabet("protein")


def test_docstring_examples_run():
    assert doctest.testmod(scoring, raise_on_error=True).attempted > 0


def test_gap_cost_is_parasails_convention():
    affine = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    assert [affine.gap_cost(n) for n in range(5)] == [0, 5, 7, 9, 11]
    linear = Scoring(gap_open=3, gap_extend=3)
    assert [linear.gap_cost(n) for n in range(4)] == [0, 3, 6, 9]


@pytest.mark.parametrize("kwargs,error,match", [
    ({"gap_open": -5}, ValueError, "positive costs"),
    ({"gap_extend": -1}, ValueError, "positive costs"),
    ({"gap_open": 1, "gap_extend": 2}, ValueError, "at least as much as extending"),
    ({"match": 2.5}, TypeError, "match must be an integer"),
    ({"gap_open": True}, TypeError, "gap_open must be an integer"),
])
def test_bad_schemes(kwargs, error, match):
    with pytest.raises(error, match=match):
        Scoring(**kwargs)
    if "gap_open" in kwargs or "gap_extend" in kwargs:
        with pytest.raises(error, match=match):
            Scoring.matrix("BLOSUM62", **{"gap_open": 11, "gap_extend": 1, **kwargs})


def test_unknown_matrix_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown matrix 'BLOSUM63'.*BLOSUM62"):
        Scoring.matrix("BLOSUM63")


@pytest.mark.parametrize("name", [m for m in MATRICES if m != "BLOSUM80"])
def test_shipped_matrices_equal_parasails(name):
    # parasail ships older NCBI copies: the 20 amino acids and * agree; the ambiguity rows
    # B, Z and X were recomputed by NCBI since (the shipped files are ncbi-data's, 2017).
    ours = Scoring.matrix(name.lower(), gap_open=10, gap_extend=1)
    assert ours.matrix_name == name and ours.describe() == f"{name}, gap open 10, extend 1"
    theirs = getattr(parasail, name.lower())
    mapper = np.asarray(theirs.mapper)
    table, covered = ours.table(PROTEIN)
    assert covered.all()  # every protein symbol, B/Z/X/* included, is in every matrix
    assert np.array_equal(table, table.T)
    symbols = PROTEIN.symbols[:PROTEIN.size]
    expected = np.array([[theirs.matrix[mapper[a], mapper[b]] for b in symbols]
                         for a in symbols])
    standard = np.array([symbol not in b"BZX" for symbol in symbols])
    assert np.array_equal(table[np.ix_(standard, standard)], expected[np.ix_(standard, standard)])


def test_blosum80_is_blasts():
    # NCBI (BLAST) ships BLOSUM80 in half bits; parasail's BLOSUM80 is Henikoff's original in
    # third bits (A/A 7, W/W 16). gpualign ships BLAST's.
    ours = Scoring.matrix("BLOSUM80")
    assert (ours.score("A", "A"), ours.score("W", "W"), ours.score("A", "R")) == (5, 11, -2)
    assert (parasail.blosum80.matrix[0, 0]) == 7


def test_match_mismatch_tables():
    plain = Scoring(match=3, mismatch=-2)
    dna, covered = plain.table("dna")
    assert covered.all()
    assert np.diag(dna).tolist() == [3, 3, 3, 3, -2]  # N matches nothing, not even N
    assert (dna[~np.eye(5, dtype=bool)] == -2).all()
    protein, _ = plain.table("protein")
    assert (np.diag(protein) == 3).all()  # X and * are ordinary symbols in protein
    raw, _ = plain.table("bytes")
    assert raw.shape == (256, 256) and (np.diag(raw) == 3).all()


def test_score_of_two_symbols():
    blosum = Scoring.matrix("BLOSUM62")
    assert (blosum.score("W", "W"), blosum.score("A", "W"), blosum.score("*", "*")) == (11, -3, 1)
    assert Scoring().score("A", "A") == 2 and Scoring().score("N", "N") == -3
    # J is read as X since issue 20 (the protein alphabet keeps the matrices' other 24 symbols).
    assert blosum.score("J", "A") == blosum.score("X", "A")
    with pytest.raises(ValueError, match="not scored"):
        blosum.score("1", "A")


def write(tmp_path, text, name="NUC"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_ncbi_file(tmp_path):
    path = write(tmp_path, "# a DNA matrix\n   A  C  G  T\nA  5 -4 -4 -4\nC -4  5 -4 -4\n"
                           "G -4 -4  5 -4\nT -4 -4 -4  5\n")
    nuc = Scoring.from_file(path, gap_open=6, gap_extend=2)
    assert nuc.matrix_name == "NUC" and nuc.gap_cost(2) == 8
    table, covered = nuc.table("dna")
    assert covered.tolist() == [True, True, True, True, False]  # no N in this matrix
    assert table[:4, :4].tolist() == (np.full((4, 4), -4) + 9 * np.eye(4, dtype=int)).tolist()
    good = SequenceSet.from_sequences(["ACGT", "TTGA"], names=["a", "b"])
    nuc.check_covered(good)
    bad = SequenceSet.from_sequences(["ACGT", "TTNA"], names=["a", "b"])
    with pytest.raises(ValueError, match=r"targets: record 'b' \(#1\): symbol 'N' at position 2 "
                                         r"is not in the matrix NUC \(ACGT\)"):
        nuc.check_covered(bad, "targets")


@pytest.mark.parametrize("text,match", [
    ("", "no matrix"),
    ("# only a comment\n", "no matrix"),
    ("  A  C\nA 1 0\n", "1 rows for 2 columns"),
    ("  A  C\nA 1 0\nG 0 1\n", r"row 2 \('G'\) must be 'C'"),
    ("  A  C\nA 1 0\nC 0\n", r"row 2 \('C'\) must be 'C' followed by 2 scores"),
    ("  A  C\nA 1 x\nC 0 1\n", "not an integer"),
    ("  A  AC\nA 1 0\nAC 0 1\n", "one-letter symbols"),
    ("  A  A\nA 1 0\nA 0 1\n", "distinct"),
])
def test_malformed_ncbi_files(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        Scoring.from_file(write(tmp_path, text))


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        Scoring.from_file("/nonexistent/BLOSUM")


def test_public_names():
    assert gpualign.Scoring is Scoring
