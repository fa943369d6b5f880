"""Paths in bands of diagonals (``align(..., band=)``, align/_band.py): the answer of the full
DP (score, ends, starts, CIGAR, identity) on every backend, for reads in windows around their
placements (most settled by their bands) and for pairs no band settles (aligned in full), in
global and semi-global modes, with the scorings whose ties are hardest; the bound that decides
checked against brute force, and the mapper's CIGARs the same with and without bands.
"""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

import gpualign
from gpualign import Scoring, config
from gpualign.align import _band, _cpu
from gpualign.align import api as align_api
from gpualign.cigar import PackedCigars
from gpualign.codes import ALIGN_GLOBAL, ALIGN_SEMI_GLOBAL
from gpualign.map.segments import AFFINE_SCORING

SCORINGS = [AFFINE_SCORING,
            Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2),
            Scoring(match=1, mismatch=-1, gap_open=2, gap_extend=2),  # linear gaps
            Scoring(match=1, mismatch=-1, gap_open=3, gap_extend=0),  # bounds met exactly
            Scoring(match=1, mismatch=0, gap_open=0, gap_extend=0)]   # all ties


def _edited(rng: np.random.Generator, text: str, rate: float) -> str:
    out = []
    for base in text:
        r = rng.random()
        if r < rate / 3:
            continue  # deleted
        if r < 2 * rate / 3:
            out.append("ACGTN"[rng.integers(5)])
        elif r < rate:
            out.extend((base, "ACGT"[rng.integers(4)]))
        else:
            out.append(base)
    return "".join(out)


def _pairs(seed: int, count: int, pad: int = 10) -> tuple[list[str], list[str], np.ndarray]:
    """Reads of up to 10% edits in windows of 0 to ``pad`` more bases on each side of their
    source (the bands settle many of them; some reads are cut short by their window's edge),
    one in five beside an unrelated window (few settle), and bands of 0 to 12 diagonals."""
    rng = np.random.default_rng(seed)
    queries, targets = [], []
    for k in range(count):
        length = int(rng.integers(1, 80)) if k % 3 == 0 else int(rng.integers(30, 80))
        left, right = (int(v) for v in rng.integers(0, pad + 1, 2))
        target = "".join("ACGT"[c] for c in rng.integers(0, 4, left + length + right))
        read = _edited(rng, target[left:left + length], rng.random() * 0.1)
        if k % 5 == 0:
            read = "".join("ACGT"[c] for c in rng.integers(0, 4, int(rng.integers(1, 40))))
        if k % 7 == 0:  # a window cut short: the read's end hangs out of it
            target = target[:left + length // 2]
        queries.append(read or "A")
        targets.append(target or "C")
    return queries, targets, rng.integers(0, 13, count)


def test_docstring_examples_run():
    assert doctest.testmod(_band, raise_on_error=True).attempted > 0


@pytest.mark.parametrize("mode", ["semi-global", "global"])
@pytest.mark.parametrize("scoring", SCORINGS, ids=lambda s: s.describe())
def test_band_paths_equal_the_full_dp(backend, mode, scoring, monkeypatch):
    queries, targets, band = _pairs(3, 400, 10 if mode == "semi-global" else 0)
    full = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                          backend=backend)
    engine = align_api._backend(backend)
    in_full = []
    whole = engine.align_pairs

    def counted(qset, tset, q_index, *args, **kwargs):
        in_full.append(len(q_index))
        return whole(qset, tset, q_index, *args, **kwargs)

    monkeypatch.setattr(engine, "align_pairs", counted)
    for packed in (False, True):
        banded = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                                backend=backend, band=band, packed=packed)
        for name in ("score", "query_start", "query_end", "target_start", "target_end",
                     "identity"):
            assert getattr(banded, name).tolist() == getattr(full, name).tolist(), name
        assert list(banded.cigar) == full.cigar
        assert isinstance(banded.cigar, PackedCigars) == packed
    # Both ways were taken: the bands settled many pairs, and the rest was aligned in full.
    settled = len(queries) - in_full[0]
    if scoring.gap_open + scoring.gap_extend > 0:
        assert settled > len(queries) // 4, settled
    assert in_full[0] > len(queries) // 10, in_full


def test_a_band_whose_optimum_ties_the_bound_is_aligned_in_full(backend):
    # A path outside the band scores as much as the band's best: the full DP's path is the
    # one outside (settling on a tie would give another).
    scoring = Scoring(match=1, mismatch=-1, gap_open=3, gap_extend=0)
    full = gpualign.align(["CCCAAAC"], ["CAACCACAA"], mode="semi-global", scoring=scoring,
                          task="path", backend=backend)
    banded = gpualign.align(["CCCAAAC"], ["CAACCACAA"], mode="semi-global", scoring=scoring,
                            task="path", backend=backend, band=2)
    table, _ = scoring.table("dna")
    bound = _band.best_outside(np.array([7]), np.array([9]), np.array([2]), ALIGN_SEMI_GLOBAL,
                               table, scoring.gap_open, scoring.gap_extend)
    assert full.score.tolist() == bound.tolist()
    assert banded.cigar == full.cigar == ["1=3I3="]


def test_band_paths_of_bytes(backend):
    # 256 codes: on the GPU the substitution table is read from global memory, not shared.
    rng = np.random.default_rng(12)
    targets = [bytes(rng.integers(0, 256, int(rng.integers(20, 60))).tolist())
               for _ in range(80)]
    queries = [target[3:-3] for target in targets]
    scoring = SCORINGS[1]
    banded = gpualign.align(queries, targets, mode="semi-global", scoring=scoring, task="path",
                            alphabet="bytes", backend=backend, band=2)
    full = gpualign.align(queries, targets, mode="semi-global", scoring=scoring, task="path",
                          alphabet="bytes", backend=backend)
    assert banded.cigar == full.cigar and banded.score.tolist() == full.score.tolist()


def test_band_paths_of_the_smallest_pairs_and_widest_bands(backend):
    # Queries longer than their targets, one symbol each side, bands of 0 and wider than
    # either sequence; N against N, which scores a mismatch.
    texts = ["A", "C", "AC", "NN", "ACGT", "TTTTT", "ACGTACGTAC"]
    pairs = list(itertools.product(texts, repeat=2))
    queries, targets = [q for q, _ in pairs], [t for _, t in pairs]
    for mode, band in itertools.product(("semi-global", "global"), (0, 1, 3, 50)):
        banded = gpualign.align(queries, targets, mode=mode, scoring=SCORINGS[1], task="path",
                                backend=backend, band=band)
        full = gpualign.align(queries, targets, mode=mode, scoring=SCORINGS[1], task="path",
                              backend=backend)
        assert banded.cigar == full.cigar and banded.score.tolist() == full.score.tolist()


@pytest.mark.parametrize("mode", [ALIGN_SEMI_GLOBAL, ALIGN_GLOBAL])
def test_best_outside_bounds_every_path_that_leaves_the_band(mode):
    # Brute force: every path of small pairs, scored; those with a cell outside the band
    # never score above the bound.
    rng = np.random.default_rng(11)
    for scoring in SCORINGS[:3]:
        table, _ = scoring.table("dna")
        for _ in range(25):
            m, n = (int(v) for v in rng.integers(1, 6, 2))
            a, b = rng.integers(0, 4, m).tolist(), rng.integers(0, 4, n).tolist()
            paths = list(_paths_of(m, n, mode))
            for band in range(0, 5):
                low, width, _usable = _band.band_diagonals(np.array([m]), np.array([n]),
                                                           np.array([band]), mode)
                bound = _band.best_outside(np.array([m]), np.array([n]), np.array([band]),
                                           mode, table, scoring.gap_open, scoring.gap_extend)[0]
                for cells, moves in paths:
                    if all(low[0] <= j - i < low[0] + width[0] for i, j in cells):
                        continue
                    assert _scored(a, b, cells[0], moves, table, scoring) <= bound, \
                        (a, b, band, cells)


def _paths_of(m: int, n: int, mode: int):
    """Every path of an m x n DP: its cells (from its start) and moves ("M", "I" down, "D"
    right); global from (0, 0) to (m, n), semi-global from any (0, j) to any (m, j)."""
    starts = [0] if mode == ALIGN_GLOBAL else range(n + 1)

    def walk(i, j, cells, moves):
        if i == m and (mode != ALIGN_GLOBAL or j == n):
            yield cells, moves
        for move, (di, dj) in (("M", (1, 1)), ("I", (1, 0)), ("D", (0, 1))):
            if i + di <= m and j + dj <= n:
                yield from walk(i + di, j + dj, cells + [(i + di, j + dj)], moves + move)

    for j0 in starts:
        yield from walk(0, j0, [(0, j0)], "")


def _scored(a, b, start, moves, table, scoring) -> int:
    """A path's score: its substitutions, and each run of one gap kind at its cost."""
    (i, j), score, previous = start, 0, ""
    for move in moves:
        if move == "M":
            score += int(table[a[i], b[j]])
            i, j = i + 1, j + 1
        else:
            score -= scoring.gap_extend if move == previous else scoring.gap_open
            i, j = (i + 1, j) if move == "I" else (i, j + 1)
        previous = move
    return score


def test_bands_whose_traceback_would_be_too_large_are_aligned_in_full(backend, monkeypatch):
    # Bands of more cells than a traceback may take go to the full DP (in linear space when
    # the pair is that large too): the same answers, none of them from a band.
    queries, targets, band = _pairs(6, 60)
    monkeypatch.setattr(config, "ALIGN_LINEAR_MIN_CELLS", 40)
    full = gpualign.align(queries, targets, mode="semi-global", scoring=AFFINE_SCORING,
                          task="path", backend=backend)
    engine = align_api._backend(backend)
    monkeypatch.setattr(engine, "band_paths", None)  # never called: every band is too large
    banded = gpualign.align(queries, targets, mode="semi-global", scoring=AFFINE_SCORING,
                            task="path", backend=backend, band=band + 10)
    assert banded.cigar == full.cigar and banded.score.tolist() == full.score.tolist()


def test_the_cuda_fill_leaves_pairs_out_of_its_values_to_the_full_dp(backend, monkeypatch):
    # Bounds the GPU's int32 cannot take (forced tiny here) and budgets that split the pairs
    # into many launches: the answer is the same.
    if backend == "cuda":
        from gpualign.align import _cuda

        monkeypatch.setattr(_cuda, "_BAND_LIMIT", 2_000)
    monkeypatch.setattr(config, "GPU_BATCH_BYTES", 6_000)
    queries, targets, band = _pairs(5, 300)
    banded = gpualign.align(queries, targets, mode="semi-global", scoring=AFFINE_SCORING,
                            task="path", backend=backend, band=band)
    full = gpualign.align(queries, targets, mode="semi-global", scoring=AFFINE_SCORING,
                          task="path", backend=backend)
    assert banded.cigar == full.cigar and banded.score.tolist() == full.score.tolist()


def test_cpu_band_batch_walks_the_band_to_its_edges():
    # A path on the band's only diagonal is inside it; one that must step off it by one
    # column (into the diagonal just past the band) is reported as leaving it.
    table, _ = SCORINGS[1].table("dna")
    qset = gpualign.SequenceSet.from_sequences(["ACGTACGT", "ACGTACGT"], "dna")
    tset = gpualign.SequenceSet.from_sequences(["ACGTACGT", "ACGTACGTT"], "dna")
    found = _cpu.band_paths(qset, tset, np.array([0, 1]), np.array([0, 1]), table, 5, 2,
                            ALIGN_GLOBAL, np.array([0, 0]), np.array([1, 1]))
    assert found[5].tolist() == [8, -1] and found[6].tolist() == ["8=", ""]


def test_cpu_band_batch_reports_a_traceback_that_leaves_its_band():
    # A query that fits only far from its band: the traceback walks out, columns -1.
    qset = gpualign.SequenceSet.from_sequences(["GGGGGGGG"], "dna")
    tset = gpualign.SequenceSet.from_sequences(["GGGGGGGGTTTTTTTTTTTT"], "dna")
    table, _ = SCORINGS[1].table("dna")
    found = _cpu.band_paths(qset, tset, np.array([0]), np.array([0]), table, 5, 2,
                            ALIGN_GLOBAL, np.array([0]), np.array([1]))
    assert found[5].tolist() == [-1]


@pytest.mark.parametrize("task, mode, band, message", [
    ("score", "semi-global", 3, "task='path'"),
    ("path", "local", 3, "mode='local'"),
    ("path", "global", -1, "non-negative"),
    ("path", "global", [1, 2, 3], "each of the 2 pairs"),
    ("path", "global", 1.5, "non-negative int"),
])
def test_band_errors(backend, task, mode, band, message):
    with pytest.raises(ValueError, match=message):
        gpualign.align(["ACGT", "AC"], ["ACGT", "AG"], mode=mode, task=task, band=band,
                       backend=backend)
