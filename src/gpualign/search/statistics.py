"""Karlin-Altschul statistics of database search hits: bit scores and BLAST's E-values.

A local alignment score ``S`` found in a search of a query of length ``m`` against a database
of ``n`` residues in ``N`` sequences is judged by its E-value, the number of hits scoring at
least ``S`` expected by chance, ``E = K m' n' exp(-lambda S)``, and by its bit score
``(lambda S - ln K) / ln 2``. ``lambda`` and ``K`` of gapped alignments have no closed form:
NCBI BLAST tabulates them, estimated by simulation, for its substitution matrices and its
match/mismatch scores at the gap costs it supports, together with the entropy ``H`` and the
constants ``alpha`` and ``beta`` of the length adjustment (the expected length of a hit of
raw score ``S`` is ``alpha * S + beta``, that is ``alpha / lambda`` per nat of
``lambda S``) that shortens ``m`` and ``n`` to the effective
lengths ``m'`` and ``n'`` (:func:`evalues`). This module holds those tables and the formulas.

Gap conventions differ: in gpualign a gap of length ``L`` costs ``gap_open + (L - 1) *
gap_extend``; BLAST charges ``existence + L * extension``. BLAST's ``existence E, extension X``
is gpualign's ``gap_open = E + X, gap_extend = X``: BLAST's default ``BLOSUM62 11/1`` is
``Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)`` here. Tables and sources name the
BLAST pair ("11/1"); every function takes and returns gpualign's.

Source of the numbers: the gapped parameter tables of NCBI BLAST+ (``blast_stat.c`` in
``c++/src/algo/blast/core``: the ``*_values`` arrays of the protein matrices and
``blastn_values_*`` of the match/mismatch pairs), from Altschul, Bundschuh, Olsen and Hwa,
"The estimation of statistical parameters for local alignment score distributions", Nucleic
Acids Res. 29:351-361 (2001). The E-value is the one BLAST computes without finite-size
correction (blastn's; blastp's with ``OLD_FSC`` set and ``-comp_based_stats 0``): BLAST+'s
blastp by default adjusts the matrix to the sequences' composition and uses Spouge's
finite-size correction, so its E-values of protein hits differ; bit scores agree.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..scoring import MATRICES, Scoring
from ..sequences import Alphabet, get_alphabet

__all__ = ["KarlinAltschul", "bit_scores", "evalues", "length_adjustment", "parameters",
           "tabulated"]


@dataclass(frozen=True)
class KarlinAltschul:
    """Statistical parameters of one scoring scheme (substitution scores and gap costs).

    Attributes
    ----------
    lam, k, h : float
        Karlin-Altschul ``lambda`` (per unit of raw score), ``K`` and the relative entropy
        ``H`` (nats per aligned pair) of gapped local alignments.
    alpha, beta : float
        BLAST's length-adjustment constants: a hit of raw score ``S`` is expected to span
        ``alpha * S + beta`` residues (:func:`length_adjustment`).
    source : str
        Where the numbers come from, e.g. ``NCBI BLAST gapped table, BLOSUM62 11/1 (gap_open
        12, gap_extend 1)``.
    even_scores : bool
        BLAST's parameters of some match/mismatch pairs (2/-7, 2/-5, 2/-3, 3/-4 and their
        multiples) hold for even scores only: the E-value of an odd score is that of the even
        score below it (the bit score is not rounded), as BLAST does.

    Examples
    --------
    >>> blosum62 = parameters(Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1), "protein")
    >>> blosum62.lam, blosum62.k, blosum62.h
    (0.267, 0.041, 0.14)
    """

    lam: float
    k: float
    h: float
    alpha: float
    beta: float
    source: str
    even_scores: bool = False


# --- the tables --------------------------------------------------------------------------------
# One block per substitution matrix: a row per gap pair in BLAST's convention "existence/
# extension" ("ungapped": alignments without gaps), then lambda, K, H, alpha, beta.

_MATRIX_TABLES = {
    "BLOSUM45": """
        ungapped  0.2291  0.0924  0.2514  0.9113  -5.7
        13/3      0.207   0.049   0.14    1.5     -22
        12/3      0.199   0.039   0.11    1.8     -34
        11/3      0.190   0.031   0.095   2.0     -38
        10/3      0.179   0.023   0.075   2.4     -51
        16/2      0.210   0.051   0.14    1.5     -24
        15/2      0.203   0.041   0.12    1.7     -31
        14/2      0.195   0.032   0.10    1.9     -36
        13/2      0.185   0.024   0.084   2.2     -45
        12/2      0.171   0.016   0.061   2.8     -65
        19/1      0.205   0.040   0.11    1.9     -43
        18/1      0.198   0.032   0.10    2.0     -43
        17/1      0.189   0.024   0.079   2.4     -57
        16/1      0.176   0.016   0.063   2.8     -67
    """,
    "BLOSUM50": """
        ungapped  0.2318  0.112   0.3362  0.6895  -4.0
        13/3      0.212   0.063   0.19    1.1     -16
        12/3      0.206   0.055   0.17    1.2     -18
        11/3      0.197   0.042   0.14    1.4     -25
        10/3      0.186   0.031   0.11    1.7     -34
        9/3       0.172   0.022   0.082   2.1     -48
        16/2      0.215   0.066   0.20    1.05    -15
        15/2      0.210   0.058   0.17    1.2     -20
        14/2      0.202   0.045   0.14    1.4     -27
        13/2      0.193   0.035   0.12    1.6     -32
        12/2      0.181   0.025   0.095   1.9     -41
        19/1      0.212   0.057   0.18    1.2     -21
        18/1      0.207   0.050   0.15    1.4     -28
        17/1      0.198   0.037   0.12    1.6     -33
        16/1      0.186   0.025   0.10    1.9     -42
        15/1      0.171   0.015   0.063   2.7     -76
    """,
    "BLOSUM62": """
        ungapped  0.3176  0.134   0.4012  0.7916  -3.2
        11/2      0.297   0.082   0.27    1.1     -10
        10/2      0.291   0.075   0.23    1.3     -15
        9/2       0.279   0.058   0.19    1.5     -19
        8/2       0.264   0.045   0.15    1.8     -26
        7/2       0.239   0.027   0.10    2.5     -46
        6/2       0.201   0.012   0.061   3.3     -58
        13/1      0.292   0.071   0.23    1.2     -11
        12/1      0.283   0.059   0.19    1.5     -19
        11/1      0.267   0.041   0.14    1.9     -30
        10/1      0.243   0.024   0.10    2.5     -44
        9/1       0.206   0.010   0.052   4.0     -87
    """,
    "BLOSUM80": """
        ungapped  0.3430  0.177   0.6568  0.5222  -1.6
        25/2      0.342   0.17    0.66    0.52    -1.6
        13/2      0.336   0.15    0.57    0.59    -3
        9/2       0.319   0.11    0.42    0.76    -6
        8/2       0.308   0.090   0.35    0.89    -9
        7/2       0.293   0.070   0.27    1.1     -14
        6/2       0.268   0.045   0.19    1.4     -19
        11/1      0.314   0.095   0.35    0.90    -9
        10/1      0.299   0.071   0.27    1.1     -14
        9/1       0.279   0.048   0.20    1.4     -19
    """,
    "BLOSUM90": """
        ungapped  0.3346  0.190   0.7547  0.4434  -1.4
        9/2       0.310   0.12    0.46    0.67    -6
        8/2       0.300   0.099   0.39    0.76    -7
        7/2       0.283   0.072   0.30    0.93    -11
        6/2       0.259   0.048   0.22    1.2     -16
        11/1      0.302   0.093   0.39    0.78    -8
        10/1      0.290   0.075   0.28    1.04    -15
        9/1       0.265   0.044   0.20    1.3     -19
    """,
    "PAM30": """
        ungapped  0.3400  0.283   1.754   0.1938  -0.3
        7/2       0.305   0.15    0.87    0.35    -3
        6/2       0.287   0.11    0.68    0.42    -4
        5/2       0.264   0.079   0.45    0.59    -7
        10/1      0.309   0.15    0.88    0.35    -3
        9/1       0.294   0.11    0.61    0.48    -6
        8/1       0.270   0.072   0.40    0.68    -10
        15/3      0.339   0.28    1.70    0.20    -0.5
        14/2      0.337   0.27    1.62    0.21    -0.8
        14/1      0.333   0.27    1.43    0.23    -1.4
        13/3      0.338   0.27    1.69    0.20    -0.5
    """,
    "PAM70": """
        ungapped  0.3345  0.229   1.029   0.3250  -0.7
        8/2       0.301   0.12    0.54    0.56    -5
        7/2       0.286   0.093   0.43    0.67    -7
        6/2       0.264   0.064   0.29    0.90    -12
        11/1      0.305   0.12    0.52    0.59    -6
        10/1      0.291   0.091   0.41    0.71    -9
        9/1       0.270   0.060   0.28    0.97    -14
        11/2      0.323   0.186   0.80    1.32    -27
        12/3      0.330   0.219   0.93    0.82    -16
    """,
    "PAM250": """
        ungapped  0.2252  0.0868  0.2223  0.98    -5.0
        15/3      0.205   0.049   0.13    1.6     -23
        14/3      0.200   0.043   0.12    1.7     -26
        13/3      0.194   0.036   0.10    1.9     -31
        12/3      0.186   0.029   0.085   2.2     -41
        11/3      0.174   0.020   0.070   2.5     -48
        17/2      0.204   0.047   0.12    1.7     -28
        16/2      0.198   0.038   0.11    1.8     -29
        15/2      0.191   0.031   0.087   2.2     -44
        14/2      0.182   0.024   0.073   2.5     -53
        13/2      0.171   0.017   0.059   2.9     -64
        21/1      0.205   0.045   0.11    1.8     -34
        20/1      0.199   0.037   0.10    1.9     -35
        19/1      0.192   0.029   0.083   2.3     -52
        18/1      0.183   0.021   0.070   2.6     -60
        17/1      0.171   0.014   0.052   3.3     -86
    """,
}

# blastn's tables, keyed by (match, mismatch) in lowest terms (BLAST divides a pair by its
# greatest common divisor and scales the table, see _dna_table). BLAST's rows "0/0" (the
# non-affine costs of its greedy extension, half-integers for odd match scores) are left
# out: they are not gap pairs a Scoring can hold.
_DNA_TABLES = {
    (1, -5): """
        3/3       1.39    0.747   1.38    1.00    0
    """,
    (1, -4): """
        1/2       1.36    0.67    1.2     1.1     0
        0/2       1.26    0.43    0.90    1.4     -1
        2/1       1.35    0.61    1.1     1.2     -1
        1/1       1.22    0.35    0.72    1.7     -3
    """,
    (2, -7): """
        2/4       0.68    0.67    1.2     0.55    0
        0/4       0.63    0.43    0.90    0.7     -1
        4/2       0.675   0.62    1.1     0.6     -1
        2/2       0.61    0.35    0.72    1.7     -3
    """,
    (1, -3): """
        2/2       1.37    0.70    1.2     1.1     0
        1/2       1.35    0.64    1.1     1.2     -1
        0/2       1.25    0.42    0.83    1.5     -2
        2/1       1.34    0.60    1.1     1.2     -1
        1/1       1.21    0.34    0.71    1.7     -2
    """,
    (2, -5): """
        2/4       0.67    0.59    1.1     0.6     -1
        0/4       0.62    0.39    0.78    0.8     -2
        4/2       0.67    0.61    1.0     0.65    -2
        2/2       0.56    0.32    0.59    0.95    -4
    """,
    (1, -2): """
        2/2       1.33    0.62    1.1     1.2     0
        1/2       1.30    0.52    0.93    1.4     -2
        0/2       1.19    0.34    0.66    1.8     -3
        3/1       1.32    0.57    1.0     1.3     -1
        2/1       1.29    0.49    0.92    1.4     -1
        1/1       1.14    0.26    0.52    2.2     -5
    """,
    (2, -3): """
        4/4       0.63    0.42    0.84    0.75    -2
        2/4       0.615   0.37    0.72    0.85    -3
        0/4       0.55    0.21    0.46    1.2     -5
        3/3       0.615   0.37    0.68    0.9     -3
        6/2       0.63    0.42    0.84    0.75    -2
        5/2       0.625   0.41    0.78    0.8     -2
        4/2       0.61    0.35    0.68    0.9     -3
        2/2       0.515   0.14    0.33    1.55    -9
    """,
    (3, -4): """
        6/3       0.389   0.25    0.56    0.7     -5
        5/3       0.375   0.21    0.47    0.8     -6
        4/3       0.351   0.14    0.35    1.0     -9
        6/2       0.362   0.16    0.45    0.8     -4
        5/2       0.330   0.092   0.28    1.2     -13
        4/2       0.281   0.046   0.16    1.8     -23
    """,
    (4, -5): """
        6/5       0.28    0.21    0.47    0.6     -7
        5/5       0.27    0.17    0.39    0.7     -9
        4/5       0.25    0.10    0.31    0.8     -10
        3/5       0.23    0.065   0.25    0.9     -11
    """,
    (1, -1): """
        3/2       1.09    0.31    0.55    2.0     -2
        2/2       1.07    0.27    0.49    2.2     -3
        1/2       1.02    0.21    0.36    2.8     -6
        0/2       0.80    0.064   0.17    4.8     -16
        4/1       1.08    0.28    0.54    2.0     -2
        3/1       1.06    0.25    0.46    2.3     -4
        2/1       0.99    0.17    0.30    3.3     -10
    """,
    (3, -2): """
        5/5       0.208   0.030   0.072   2.9     -47
    """,
    (5, -4): """
        10/6      0.163   0.068   0.16    1.0     -19
        8/6       0.146   0.039   0.11    1.3     -29
    """,
}

#: The pairs (in lowest terms) whose parameters BLAST applies to even scores only.
_EVEN_SCORE_PAIRS = frozenset({(2, -7), (2, -5), (2, -3), (3, -4)})


def _rows(text: str) -> list[tuple[tuple[int, int] | None, tuple[float, ...]]]:
    """The rows of a table block: the BLAST gap pair (None: ungapped) and its five numbers."""
    rows = []
    for line in text.strip().splitlines():
        gaps, *numbers = line.split()
        pair = None if gaps == "ungapped" else tuple(int(cost) for cost in gaps.split("/"))
        rows.append((pair, tuple(float(number) for number in numbers)))
    return rows


def _gpualign_gaps(existence: int, extension: int) -> tuple[int, int]:
    """BLAST's gap pair as gpualign's (gap_open, gap_extend)."""
    return existence + extension, extension


def _gaps_text(pair: tuple[int, int] | None) -> str:
    if pair is None:
        return "ungapped"
    gap_open, gap_extend = _gpualign_gaps(*pair)
    return f"{pair[0]}/{pair[1]} (gap_open {gap_open}, gap_extend {gap_extend})"


@functools.cache
def _matrix_table(name: str) -> dict[tuple[int, int] | None, KarlinAltschul]:
    table = {}
    for pair, (lam, k, h, alpha, beta) in _rows(_MATRIX_TABLES[name]):
        key = None if pair is None else _gpualign_gaps(*pair)
        table[key] = KarlinAltschul(lam, k, h, alpha, beta,
                                    f"NCBI BLAST gapped table, {name} {_gaps_text(pair)}")
    return table


@functools.cache
def _dna_table(match: int, mismatch: int) -> dict[tuple[int, int] | None, KarlinAltschul]:
    """BLAST's table of a match/mismatch pair: a multiple ``d`` of a tabulated pair uses that
    pair's rows with the gap costs multiplied by ``d`` and lambda and alpha divided by ``d``
    (scores are ``d`` times larger; K, H and beta do not change)."""
    divisor = math.gcd(match, mismatch)
    reduced = (match // divisor, mismatch // divisor)
    if reduced not in _DNA_TABLES:
        return {}
    scaled = f" (the {reduced[0]}/{reduced[1]} table scaled by {divisor})" if divisor > 1 else ""
    table = {}
    for pair, (lam, k, h, alpha, beta) in _rows(_DNA_TABLES[reduced]):
        blast_pair = (pair[0] * divisor, pair[1] * divisor)
        table[_gpualign_gaps(*blast_pair)] = KarlinAltschul(
            lam / divisor, k, h, alpha / divisor, beta,
            f"NCBI BLAST gapped table, match/mismatch {match}/{mismatch}{scaled} "
            f"{_gaps_text(blast_pair)}",
            even_scores=reduced in _EVEN_SCORE_PAIRS)
    return table


@functools.cache
def _shipped_tables() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The protein-alphabet score tables (and covered codes) of the shipped matrices."""
    return {name: Scoring.matrix(name).table("protein") for name in MATRICES}


def _matrix_of(scoring: Scoring) -> str | None:
    """The shipped matrix whose scores ``scoring`` has over the protein alphabet, or None.
    Scores decide, not names: a renamed copy matches, an edited file named BLOSUM62 does not."""
    table, covered = scoring.table("protein")
    for name, (shipped, shipped_covered) in _shipped_tables().items():
        if np.array_equal(covered, shipped_covered) and np.array_equal(table, shipped):
            return name
    return None


def tabulated(scoring: Scoring, alphabet_name: str | Alphabet
              ) -> dict[tuple[int, int] | None, KarlinAltschul]:
    """Every gap-cost pair with published parameters for the substitution scores of
    ``scoring`` (its own gap costs are not looked at).

    Parameters
    ----------
    scoring : Scoring
        A substitution matrix whose scores equal one of :data:`gpualign.scoring.MATRICES`
        (compared over the protein alphabet, whatever its name), or match/mismatch scores
        that BLAST's blastn tabulates (1/-5, 1/-4, 2/-7, 1/-3, 2/-5, 1/-2, 2/-3, 3/-4, 4/-5,
        1/-1, 3/-2, 5/-4, or a multiple of one of them).
    alphabet_name : str or Alphabet
        ``"protein"`` for a matrix, ``"dna"`` for match/mismatch; any other combination has no
        table.

    Returns
    -------
    dict
        ``(gap_open, gap_extend)`` in gpualign's convention (BLAST's ``existence E, extension
        X`` is ``(E + X, X)``) to its :class:`KarlinAltschul`; the key None holds a matrix's
        parameters of ungapped alignments. Empty when nothing is tabulated.

    Examples
    --------
    >>> table = tabulated(Scoring.matrix("BLOSUM62"), "protein")
    >>> sorted(pair for pair in table if pair is not None and pair[1] == 2)
    [(8, 2), (9, 2), (10, 2), (11, 2), (12, 2), (13, 2)]
    >>> table[None].lam
    0.3176
    >>> dna = tabulated(Scoring(match=1, mismatch=-2), "dna")
    >>> dna[(3, 1)].source
    'NCBI BLAST gapped table, match/mismatch 1/-2 2/1 (gap_open 3, gap_extend 1)'
    """
    alphabet = get_alphabet(alphabet_name).name
    if scoring.matrix_scores is not None:
        name = _matrix_of(scoring) if alphabet == "protein" else None
        return dict(_matrix_table(name)) if name else {}
    if alphabet != "dna" or scoring.match <= 0 or scoring.mismatch >= 0:
        return {}
    return dict(_dna_table(scoring.match, scoring.mismatch))


def parameters(scoring: Scoring, alphabet_name: str | Alphabet) -> KarlinAltschul | None:
    """The published gapped Karlin-Altschul parameters of ``scoring``, or None.

    Parameters
    ----------
    scoring : Scoring
        Substitution scores (see :func:`tabulated`) and gap costs in gpualign's convention:
        a gap of length ``L`` costs ``gap_open + (L - 1) * gap_extend``. BLAST's ``existence
        E, extension X`` is ``gap_open = E + X, gap_extend = X``.
    alphabet_name : str or Alphabet
        ``"protein"`` or ``"dna"``.

    Returns
    -------
    KarlinAltschul or None
        None when BLAST tabulates no gapped parameters for these scores and gap costs (BLAST
        itself refuses such protein searches; for match/mismatch gap costs beyond its
        tables it falls back to ungapped statistics, which this module does not compute).

    Examples
    --------
    >>> parameters(Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1), "protein").source
    'NCBI BLAST gapped table, BLOSUM62 11/1 (gap_open 12, gap_extend 1)'
    >>> parameters(Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1), "protein").lam
    0.243
    >>> parameters(Scoring.matrix("BLOSUM62", gap_open=20, gap_extend=1), "protein") is None
    True
    >>> parameters(Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna").k
    0.41
    """
    return tabulated(scoring, alphabet_name).get((scoring.gap_open, scoring.gap_extend))


def bit_scores(raw: np.ndarray, params: KarlinAltschul) -> np.ndarray:
    """Bit scores ``(lam * raw - ln K) / ln 2`` of raw scores.

    Parameters
    ----------
    raw : array_like of int
        Raw alignment scores, any shape; negative entries (the padding of a search's rows
        with fewer hits than asked for) give NaN.
    params : KarlinAltschul

    Returns
    -------
    np.ndarray of float64
        The shape of ``raw``.

    Examples
    --------
    >>> params = parameters(Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1), "protein")
    >>> bit_scores([100, 50, -1], params).round(2)
    array([43.13, 23.87,   nan])
    """
    scores = np.asarray(raw, dtype=np.float64)
    bits = (params.lam * scores - math.log(params.k)) / math.log(2)
    return np.where(scores < 0, np.nan, bits)


def length_adjustment(query_length: int, database_residues: int, database_sequences: int,
                      params: KarlinAltschul) -> int:
    """BLAST's length adjustment ``l``: the query's effective length is ``m - l``, the
    database's ``n - N l``.

    ``l`` is the expected length of a hit that would score an E-value of 1 in the effective
    search space: the fixed point of ``f(l) = beta + alpha / lam * (ln K + ln((m - l) (n -
    N l)))``. As BLAST (``BLAST_ComputeLengthAdjustment``), it is found by at most 20 steps
    that keep the fixed point within ``[low, high]``: ``high`` starts at the largest ``l``
    with ``K (m - l) (n - N l) >= max(m, n)`` (a root of that quadratic), ``low`` at 0; each
    step evaluates ``f`` at the current ``l``, raising ``low`` to ``l`` when ``f(l) >= l``
    (then stopping if ``f(l) - l <= 1``) or lowering ``high`` to ``l`` otherwise, and moves to
    ``f(l)`` if that lies within the bounds, else to ``high`` on the first step and the
    midpoint later. The result is ``floor(low)``, or ``ceil(low)`` when the iteration
    converged and ``f(ceil(low)) >= ceil(low)``; 0 when even ``l = 0`` leaves ``K m n <
    max(m, n)``.

    Parameters
    ----------
    query_length, database_residues, database_sequences : int
        ``m``, ``n`` and ``N``.
    params : KarlinAltschul

    Returns
    -------
    int

    Examples
    --------
    A BLAST 2.2.5 blastp search (BLOSUM62 11/1) of a 274-residue query against 44,233
    sequences of 9,419,815 residues reported an effective HSP length of 94:

    >>> params = parameters(Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1), "protein")
    >>> length_adjustment(274, 9_419_815, 44_233, params)
    94
    """
    m, n, count = float(query_length), float(database_residues), float(database_sequences)
    log_k = math.log(params.k)
    slope = params.alpha / params.lam

    def expected_length(ell: float) -> float:
        return params.beta + slope * (log_k + math.log((m - ell) * (n - count * ell)))

    # high: the smaller root of count*l^2 - (m*count + n)*l + (m*n - max(m, n)/K) = 0, where
    # K (m - l)(n - count*l) falls to max(m, n); as 2c / (b + sqrt(b^2 - 4ac)), which does not
    # cancel.
    b = m * count + n
    c = m * n - max(m, n) / params.k
    if c < 0:
        return 0
    high = 2 * c / (b + math.sqrt(b * b - 4 * count * c))
    low, ell, converged = 0.0, 0.0, False
    for step in range(1, 21):
        proposal = expected_length(ell)
        if proposal >= ell:
            low = ell
            if proposal - low <= 1.0:
                converged = True
                break
            if low == high:
                break
        else:
            high = ell
        if low <= proposal <= high:
            ell = proposal
        else:
            ell = high if step == 1 else (low + high) / 2
    adjustment = math.floor(low)
    if converged:
        above = math.ceil(low)
        if above <= high and expected_length(above) >= above:
            adjustment = above
    return adjustment


def evalues(raw: np.ndarray, query_lengths: np.ndarray, database_residues: int,
            database_sequences: int, params: KarlinAltschul) -> np.ndarray:
    """BLAST's E-values of raw scores: ``E = K * m' * n' * exp(-lam * S)``.

    For a query of length ``m`` the length adjustment ``l`` (:func:`length_adjustment`) gives
    the effective query length ``m' = m - l`` and database length ``n' = max(n - N * l,
    1)``, so the search space ``m' n'`` is BLAST's "effective search space" (the same for
    every hit of the query). ``S`` is the raw score, rounded down to even first when
    ``params.even_scores``. Without composition-based statistics or finite-size correction
    (see the module's description).

    Parameters
    ----------
    raw : array_like of int
        Raw scores, shape ``(queries, ...)``, e.g. the ``(queries, n)`` best scores of a
        search; negative entries (padding) give NaN.
    query_lengths : array_like of int
        One length per query (``raw``'s first axis), or the shape of ``raw``.
    database_residues, database_sequences : int
        ``n`` and ``N`` of the whole database.
    params : KarlinAltschul

    Returns
    -------
    np.ndarray of float64
        The shape of ``raw``.

    Examples
    --------
    A BLAST+ blastn hit (match 2, mismatch -3, BLAST gap costs 5/2; a 21-base query against
    1,331,289 sequences of 1,634,236,772 bases) of score 32 was reported with E-value 4.0824:

    >>> params = parameters(Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2), "dna")
    >>> evalues([[32, 33]], [21], 1_634_236_772, 1_331_289, params).round(4)
    array([[4.0824, 4.0824]])
    """
    scores = np.asarray(raw, dtype=np.int64)
    lengths = np.asarray(query_lengths, dtype=np.int64)
    lengths = lengths.reshape(lengths.shape + (1,) * (scores.ndim - lengths.ndim))
    distinct, where = np.unique(lengths, return_inverse=True)
    space = np.empty(len(distinct), dtype=np.float64)
    for i, length in enumerate(distinct.tolist()):
        ell = length_adjustment(length, database_residues, database_sequences, params)
        effective_database = max(database_residues - database_sequences * ell, 1)
        space[i] = float((length - ell) * effective_database)
    spaces = np.broadcast_to(space[where.reshape(lengths.shape)], scores.shape)
    counted = scores - (scores & 1) if params.even_scores else scores
    values = spaces * params.k * np.exp(-params.lam * counted.astype(np.float64))
    return np.where(scores < 0, np.nan, values)
