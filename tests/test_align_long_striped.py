"""The CPU engine's score passes in linear space (``align/_cpu_linear.score_pass``, striped
16-lane tiles) against full Gotoh matrices in plain Python: last rows of H and F and the best
cell of every scope, with tiles whose widths fall on either side of the lanes' multiples and
of the last partial vector, one subproblem per core and one on every core, int32 and int64
work rows, and scores too large for int32.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_align import SCHEMES

from gpualign import config
from gpualign.align import _cpu_linear
from gpualign.align._linear import (
    SCOPE_ANY,
    SCOPE_CORNER,
    SCOPE_LAST_ROW,
    SCOPE_LAST_ROW_OR_COLUMN,
    SCOPE_START_EDGE,
    SCOPE_START_ROW,
    PairCodes,
    Problems,
)

NEG = -(1 << 50)
#: (free_top, free_left, floor_zero) of each scope, as the modes and their reverse passes use.
SCOPES = {SCOPE_CORNER: (False, False, False), SCOPE_LAST_ROW: (True, False, False),
          SCOPE_LAST_ROW_OR_COLUMN: (True, True, False), SCOPE_ANY: (True, True, True),
          SCOPE_START_ROW: (False, False, False), SCOPE_START_EDGE: (False, False, False)}


def _matrices(a, b, table, gap_open, gap_extend, top_excess, free_top, free_left, floor_zero):
    """Full H and F (plain Python) with the borders of ``_cpu_linear._borders``."""
    m, n = len(a), len(b)
    h = [[0] * (n + 1) for _ in range(m + 1)]
    e = [[NEG] * (n + 1) for _ in range(m + 1)]
    f = [[NEG] * (n + 1) for _ in range(m + 1)]
    for j in range(1, n + 1):
        h[0][j] = 0 if free_top else -(gap_open - gap_extend + j * gap_extend)
    for i in range(1, m + 1):
        h[i][0] = 0 if free_left else -(top_excess + i * gap_extend)
        for j in range(1, n + 1):
            e[i][j] = max(e[i][j - 1] - gap_extend, h[i][j - 1] - gap_open)
            f[i][j] = max(f[i - 1][j] - gap_extend, h[i - 1][j] - gap_open)
            value = max(h[i - 1][j - 1] + int(table[a[i - 1]][b[j - 1]]), e[i][j], f[i][j])
            h[i][j] = max(value, 0) if floor_zero else value
    return h, f


def _best(h, scope):
    """The best cell of ``scope`` with the ties that ``_linear``'s scopes document."""
    m, n = len(h) - 1, len(h[0]) - 1
    if scope == SCOPE_CORNER:
        return h[m][n], m, n
    if scope == SCOPE_ANY:
        cells = [(h[i][j], -j, -i) for i in range(1, m + 1) for j in range(1, n + 1)]
        score, column, row = max(cells + [(0, 0, 0)])
        return score, -row, -column
    first = 0 if scope in (SCOPE_START_ROW, SCOPE_START_EDGE) else 1
    row_best = max((h[m][j], -j) for j in range(first, n + 1 if scope in (
        SCOPE_LAST_ROW, SCOPE_START_ROW) else n))
    if scope in (SCOPE_LAST_ROW, SCOPE_START_ROW):
        return row_best[0], m, -row_best[1]
    column_best = max((h[i][n], -i) for i in range(first, m + 1))
    if row_best[0] >= column_best[0]:
        return row_best[0], m, -row_best[1]
    return column_best[0], -column_best[1], n


def _check(a, b, table, gap_open, gap_extend, scope, top_excess, reverse=0):
    free_top, free_left, floor_zero = SCOPES[scope]
    codes = PairCodes.from_lists([a], [b])
    problem = Problems.of(pair=[0], a_start=0, a_end=len(a), b_start=0, b_end=len(b),
                          reverse=reverse, top_excess=top_excess, bottom_excess=top_excess)
    h, f, score, i_end, j_end = _cpu_linear.score_pass(
        codes, problem, table, gap_open, gap_extend, free_top, free_left, floor_zero, scope)
    x, y = (a[::-1], b[::-1]) if reverse else (a, b)
    full_h, full_f = _matrices(x, y, table, gap_open, gap_extend, top_excess, free_top,
                               free_left, floor_zero)
    where = (x.tolist(), y.tolist(), gap_open, gap_extend, scope)
    assert h.tolist() == full_h[-1], where
    assert f[1:].tolist() == full_f[-1][1:], where
    assert (int(score[0]), int(i_end[0]), int(j_end[0])) == _best(full_h, scope), where


@pytest.mark.parametrize("on_every_core", [False, True])
@pytest.mark.parametrize("tile_columns", [1, 15, 16, 17, 2048])
@pytest.mark.parametrize("value_type", [np.int32, np.int64])
def test_score_pass_equals_full_matrices(monkeypatch, on_every_core, tile_columns, value_type):
    # Widths from 1 to past 3 vectors of 16 lanes (a last vector of 1 to 16 real lanes), every
    # scope and scheme, similar pairs (long gaps across lanes) and unrelated ones.
    monkeypatch.setattr(config, "ALIGN_CPU_WAVEFRONT_MIN_CELLS", 1 if on_every_core else 1 << 62)
    monkeypatch.setattr(_cpu_linear, "_TILE_COLUMNS", tile_columns)
    monkeypatch.setattr(_cpu_linear, "_value_type", lambda *args: value_type)
    rng = np.random.default_rng(31)
    for scoring in SCHEMES:
        table, _ = scoring.table("dna")
        for _ in range(6):
            a = rng.integers(0, 4, rng.integers(1, 40)).astype(np.uint8)
            if rng.random() < 0.5:
                b = rng.integers(0, 4, rng.integers(1, 60)).astype(np.uint8)
            else:
                cut = int(rng.integers(0, len(a)))
                b = np.concatenate([a[:cut], rng.integers(0, 4, rng.integers(0, 25)),
                                    a[cut:]]).astype(np.uint8)
            for scope in SCOPES:
                _check(a, b, table, scoring.gap_open, scoring.gap_extend, scope,
                       int(rng.choice([0, scoring.gap_open - scoring.gap_extend])),
                       int(rng.integers(0, 2)))


@pytest.mark.parametrize("on_every_core", [False, True])
@pytest.mark.parametrize("tile_columns", [1, 17, 2048])
def test_kept_rows_equal_full_matrices(monkeypatch, on_every_core, tile_columns):
    # A pass of several subproblems, each asked for up to three rows (some none, some past
    # the end): the last rows as score_pass gives them, and each kept row (the one asked for,
    # where it lies strictly inside) as in the full matrices, its column 0 the gap down to it.
    monkeypatch.setattr(config, "ALIGN_CPU_WAVEFRONT_MIN_CELLS", 1 if on_every_core else 1 << 62)
    monkeypatch.setattr(_cpu_linear, "_TILE_COLUMNS", tile_columns)
    rng = np.random.default_rng(37)
    for scoring in SCHEMES:
        table, _ = scoring.table("dna")
        go, ge = scoring.gap_open, scoring.gap_extend
        count = 5
        queries = [rng.integers(0, 4, rng.integers(2, 120)).astype(np.uint8)
                   for _ in range(count)]
        targets = [rng.integers(0, 4, rng.integers(1, 90)).astype(np.uint8)
                   for _ in range(count)]
        codes = PairCodes.from_lists(queries, targets)
        m = np.array([len(a) for a in queries])
        reverse = rng.integers(0, 2, count)
        top_excess = rng.choice([0, go - ge], count)
        problems = Problems.of(pair=np.arange(count), a_start=0, a_end=m, b_start=0,
                               b_end=[len(b) for b in targets], reverse=reverse,
                               top_excess=top_excess, bottom_excess=top_excess)
        near = np.array([[0, 0, 0], [1, 0, 0], [m[2] // 2, m[2] // 4, m[2] // 8],
                         [m[3] // 2, m[3] // 4, 0], [m[4] + 3, m[4] // 2, 0]])
        h, f, kept_h, kept_f, kept_at = _cpu_linear.last_rows_kept(codes, problems, table, go,
                                                                   ge, near)
        want_h, want_f, _, _, _ = _cpu_linear.score_pass(codes, problems, table, go, ge,
                                                         False, False, False, SCOPE_CORNER)
        assert h.tolist() == want_h.tolist() and f.tolist() == want_f.tolist()
        assert not kept_at[0].any() and kept_at[4, 0] == 0  # none asked for; none inside
        if not on_every_core:  # the rows asked for that lie inside
            assert kept_at.tolist() == np.where((near > 0) & (near < m[:, None]), near,
                                                0).tolist()
        offsets = problems.row_offsets()
        for k, d in zip(*np.nonzero(kept_at), strict=True):
            assert 0 < kept_at[k, d] < m[k]
            a, b = queries[k], targets[k]
            x, y = (a[::-1], b[::-1]) if reverse[k] else (a, b)
            full_h, full_f = _matrices(x, y, table, go, ge, int(top_excess[k]), False, False,
                                       False)
            row = slice(offsets[k], offsets[k + 1])
            assert kept_h[d, row].tolist() == full_h[kept_at[k, d]]
            assert kept_f[d, row][1:].tolist() == full_f[kept_at[k, d]][1:]
            assert kept_f[d, row][0] == kept_h[d, row][0]
        assert np.count_nonzero(kept_at[1:]) >= (5 if not on_every_core else 2)


def test_scores_too_large_for_int32():
    # Costs that _value_type sends to int64 work rows give the exact values.
    table = np.where(np.eye(5, dtype=bool), 3 << 24, -(5 << 24)).astype(np.int64)
    gap_open, gap_extend = 7 << 24, 2 << 24
    rng = np.random.default_rng(32)
    a = rng.integers(0, 4, 50).astype(np.uint8)
    b = np.concatenate([a[:20], rng.integers(0, 4, 9), a[30:]]).astype(np.uint8)
    problem = Problems.of(pair=[0], a_start=0, a_end=len(a), b_start=0, b_end=len(b),
                          reverse=0, top_excess=0, bottom_excess=0)
    assert _cpu_linear._value_type(problem, table, gap_open, gap_extend) is np.int64
    for scope in SCOPES:
        _check(a, b, table, gap_open, gap_extend, scope, gap_open - gap_extend)
