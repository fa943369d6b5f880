"""Long alignments in linear space (Myers-Miller, align/_linear.py) on the CPU backend: tiny
``ALIGN_LINEAR_MIN_CELLS`` and leaf sizes force every pair through the level-synchronous
driver with deep recursion; scores and end cells equal the batch path's and the Gotoh oracle's,
CIGARs re-score to the score. The engine's passes (last rows, best cells, leaves) are checked
against plain-Python DPs, its tiles on every core against one core, and the memory it takes
against the full traceback's.
"""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import ALIGN_MODES, align_naive, rescore_alignment
from strategies import mutated
from test_align import SCHEMES, codes_of, parasail_matrix, random_text, relative

import gpualign
from gpualign import Scoring, SequenceSet, config
from gpualign.align import _cpu, _cpu_linear, _linear
from gpualign.align._cpu import CpuEngine
from gpualign.align._linear import PairCodes, Problems
from gpualign.cigar import count_ops
from gpualign.sequences import get_alphabet

DATA = Path(__file__).parent / "data"
#: The mitochondrial genomes: beside the tests, or in the shared data of the checkout's parent.
MT_PLACES = (DATA, Path(__file__).resolve().parents[2] / "shared" / "data")
BLOSUM62 = Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1)
NEG = -(1 << 50)


@pytest.fixture
def linear(monkeypatch):
    """Every non-empty pair with a path goes through the linear-space driver, with leaves of a
    few cells and score passes that run alone on every core from a few cells on."""
    def setup(leaf_cells: int = 3, wavefront_cells: int = 20) -> None:
        monkeypatch.setattr(config, "ALIGN_LINEAR_MIN_CELLS", 0)
        monkeypatch.setattr(config, "ALIGN_LINEAR_LEAF_CELLS", leaf_cells)
        monkeypatch.setattr(config, "ALIGN_CPU_WAVEFRONT_MIN_CELLS", wavefront_cells)
    return setup


def check_long(queries, targets, scoring, mode, alphabet="dna", oracle=True):
    """Linear-space paths (the caller's config) equal the batch path's scores and ends (and
    the oracle's), and every CIGAR re-scores to its score from its start."""
    table, _ = scoring.table(alphabet)
    match_codes = get_alphabet(alphabet).match_codes
    got = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                         alphabet=alphabet, backend="cpu")
    with config.override(ALIGN_LINEAR_MIN_CELLS=1 << 62, ALIGN_CPU_WAVEFRONT_MIN_CELLS=1 << 62):
        want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                              alphabet=alphabet, backend="cpu")
    ends = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="end",
                          alphabet=alphabet, backend="cpu")
    for p, (query, target) in enumerate(zip(queries, targets, strict=True)):
        where = f"pair {p} ({mode}, {scoring.describe()}): {query!r} / {target!r}"
        q, t = codes_of(query, alphabet), codes_of(target, alphabet)
        expected = (int(want.score[p]), int(want.query_end[p]), int(want.target_end[p]))
        if oracle:
            naive = align_naive(q, t, table, scoring.gap_open, scoring.gap_extend, mode,
                                match_codes)
            assert expected == (naive.score, naive.query_end, naive.target_end), where
        assert (int(got.score[p]), int(got.query_end[p]), int(got.target_end[p])) == \
            expected, where
        assert (int(ends.score[p]), int(ends.query_end[p]), int(ends.target_end[p])) == \
            expected, where
        assert rescore_alignment(q, t, int(got.query_start[p]), int(got.target_start[p]),
                                 got.cigar[p], table, scoring.gap_open, scoring.gap_extend,
                                 match_codes) == expected, where
        columns, matches = count_ops(got.cigar[p]), count_ops(got.cigar[p], "=")
        assert got.identity[p] == pytest.approx(matches / columns if columns else 0.0), where
    return got


def test_docstring_examples_run():
    for module in (_linear, _cpu_linear, _cpu):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0


# --- every mode, scheme and shape against the batch path and the oracle -----------------------


@pytest.mark.parametrize("mode", ALIGN_MODES)
@pytest.mark.parametrize("leaf_cells", [1, 5, 60])
def test_seeded_random_equal_the_batch_and_the_oracle(linear, mode, leaf_cells):
    linear(leaf_cells)
    rng = np.random.default_rng(21)
    queries, targets = [], []
    for m in (1, 2, 3, 9, 40, 75):
        for n in (1, 2, 5, 33, 80):
            query = random_text(rng, m, n_fraction=0.05)
            queries.append(query)
            targets.append(relative(rng, query, 0.2)[:n] or "A" if rng.random() < 0.6
                           else random_text(rng, n, n_fraction=0.05))
    for scoring in SCHEMES:
        check_long(queries, targets, scoring, mode)


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_protein_blosum62(linear, mode):
    linear(7)
    rng = np.random.default_rng(22)
    amino = "ARNDCQEGHILKMFPSTWYVBZX*"
    queries = [random_text(rng, m, amino) for m in (1, 6, 45, 90)]
    targets = [relative(rng, q, 0.3, amino) + random_text(rng, 4, amino) for q in queries]
    check_long(queries, targets, BLOSUM62, mode, "protein")


@st.composite
def problems(draw):
    symbol = st.sampled_from([0, 1, 2, 3, 4])
    query = draw(st.lists(symbol, min_size=1, max_size=24))
    if draw(st.booleans()):
        target = draw(st.lists(symbol, min_size=1, max_size=24))
    else:
        target = draw(st.lists(symbol, max_size=4)) + mutated(draw, query, symbol) + \
            draw(st.lists(symbol, max_size=4)) or [0]
    gap_open = draw(st.integers(0, 8))
    scoring = Scoring(match=draw(st.integers(0, 6)), mismatch=draw(st.integers(-6, 1)),
                      gap_open=gap_open, gap_extend=draw(st.integers(0, min(gap_open, 4))))
    return query, target, scoring, draw(st.sampled_from(ALIGN_MODES)), \
        draw(st.integers(1, 30)), draw(st.integers(1, 200))


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_hypothesis(problem):
    query, target, scoring, mode, leaf_cells, wavefront_cells = problem
    text = "ACGTN"
    q, t = "".join(text[c] for c in query), "".join(text[c] for c in target)
    with config.override(ALIGN_LINEAR_MIN_CELLS=0, ALIGN_LINEAR_LEAF_CELLS=leaf_cells,
                         ALIGN_CPU_WAVEFRONT_MIN_CELLS=wavefront_cells):
        check_long([q], [t], scoring, mode)


def _mitochondria(count: int) -> tuple[str, str]:
    for place in MT_PLACES:
        files = [next(iter(place.glob(f"MT-{name}.fa*")), None) for name in ("human", "orang")]
        if all(files):
            human, orang = (str(SequenceSet.from_file(f, "dna", invalid="wildcard")[0])
                            for f in files)
            return human[:count], orang[:count]
    pytest.skip("MT-human/MT-orang FASTA not found")


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_real_pairs(linear, mode):
    # Neighbouring 16S genes (~1.5 kb) with leaves of 4 Ki cells, and mitochondrial prefixes
    # (the D-loop: indels near both ends) with leaves of 64 cells: scores equal parasail's.
    import parasail
    from test_align import PARASAIL

    genes = SequenceSet.from_file(DATA / "rdp16s_200.fasta.gz", "dna", invalid="wildcard")
    queries = [str(genes[i]) for i in (0, 2, 4)]
    targets = [str(genes[i]) for i in (1, 3, 5)]
    human, orang = _mitochondria(1500)
    scoring = SCHEMES[0]
    matrix = parasail_matrix(scoring, "dna")
    for pairs, leaf_cells in (((queries, targets), 1 << 12), (([human], [orang]), 64)):
        linear(leaf_cells, 1 << 16)
        result = check_long(*pairs, scoring, mode, oracle=False)
        assert result.score.tolist() == [
            PARASAIL[mode](q, t, 5, 2, matrix).score for q, t in zip(*pairs, strict=True)]
    assert parasail is not None


def test_mitochondrial_genomes_whole(linear):
    # 16.6 kb x 16.5 kb: the full traceback would take 273 MB; linear space with leaves of
    # 64 Ki cells gives the batch path's score, ends and a CIGAR that re-scores.
    human, orang = _mitochondria(1 << 20)
    linear(1 << 16, 1 << 22)
    for mode in ("global", "local"):
        check_long([human], [orang], SCHEMES[0], mode, oracle=False)


# --- the pieces: joins through gaps, borders, 1-row problems, empty sides ----------------------


def test_vertical_gap_crossing_the_middle_row(linear, monkeypatch):
    # A 30-symbol insertion in the query's middle: the first split crosses it through a
    # vertical gap (a type-2 join), whose open is charged once.
    linear(4)
    joins = []
    split = _linear._joins  # the split search of every engine that returns rows

    def recording(*args):
        column, through_gap, score = split(*args)
        joins.extend(through_gap.tolist())
        return column, through_gap, score

    monkeypatch.setattr(_linear, "_joins", recording)
    rng = np.random.default_rng(23)
    left, right = random_text(rng, 25), random_text(rng, 25)
    for scoring in SCHEMES[:3]:
        result = check_long([left + "G" * 30 + right], [left + right], scoring, "global")
        assert result.cigar[0] == "25=30I25="
    assert any(joins) and not all(joins)


def _border_oracle(a, b, table, gap_open, gap_extend, top_excess, bottom_excess):
    """Best global score of a against b (both non-empty) when a vertical gap down column 0
    from the top costs ``top_excess + L*gap_extend`` and one ending in the bottom-right corner
    ``bottom_excess + L*gap_extend`` (plain Python, full matrices)."""
    m, n = len(a), len(b)
    excess = gap_open - gap_extend
    h = [[0] * (n + 1) for _ in range(m + 1)]
    e = [[NEG] * (n + 1) for _ in range(m + 1)]
    f = [[NEG] * (n + 1) for _ in range(m + 1)]
    for j in range(1, n + 1):
        h[0][j] = -(excess + j * gap_extend)
    for i in range(1, m + 1):
        h[i][0] = -(top_excess + i * gap_extend)
        for j in range(1, n + 1):
            e[i][j] = max(e[i][j - 1], h[i][j - 1] - excess) - gap_extend
            f[i][j] = max(f[i - 1][j], h[i - 1][j] - excess) - gap_extend
            h[i][j] = max(h[i - 1][j - 1] + int(table[a[i - 1]][b[j - 1]]), e[i][j], f[i][j])
    return h, f, max(h[m][n], f[m][n] + excess - bottom_excess)


def _border_score(ops, a, b, table, gap_open, gap_extend, top_excess, bottom_excess):
    """Score of a path under the border charges of :func:`_border_oracle`."""
    codes = PairCodes.from_lists([np.asarray(a, np.uint8)], [np.asarray(b, np.uint8)])
    score = int(_linear.path_scores(codes, _linear.JoinedPaths.of([np.asarray(ops, np.uint8)]),
                                    np.array([0]), table, gap_open, gap_extend)[0])
    excess = gap_open - gap_extend
    vertical = ops == 2
    if vertical.all():
        return score + excess - min(top_excess, bottom_excess)
    return score + (excess - top_excess) * int(vertical[0]) + \
        (excess - bottom_excess) * int(vertical[-1])


def test_path_scores_rescore_the_paths():
    """path_scores (Numba) against the naive rescoring of each path's CIGAR: random pairs,
    random paths through them (runs of every operation, gaps at both ends, empty and one-symbol
    sides), a chosen subset of the pairs in a shuffled order."""
    rng = np.random.default_rng(5)
    table = np.where(np.eye(5, dtype=bool), 3, -2)
    table[4, :] = table[:, 4] = -1
    queries, targets, paths = [], [], []
    for _ in range(300):
        m, n = (int(x) for x in rng.integers(0, 40, size=2))
        a = rng.integers(0, 5, size=m).astype(np.uint8)
        b = rng.integers(0, 5, size=n).astype(np.uint8)
        ops, i, j = [], 0, 0
        while i < m or j < n:
            op = int(rng.integers(0, 3)) if i < m and j < n else (2 if i < m else 3)
            if op == 0:  # a diagonal step, labelled as the symbols say
                op = 0 if a[i] == b[j] and a[i] < 4 else 1
            elif op == 1:
                op = 3
            ops.append(op)
            i, j = i + (op != 3), j + (op != 2)
        queries.append(a)
        targets.append(b)
        paths.append(np.array(ops, dtype=np.uint8))
    codes = PairCodes.from_lists(queries, targets)
    joined = _linear.JoinedPaths.of(paths)
    chosen = rng.permutation(len(paths))[:200]
    got = _linear.path_scores(codes, joined, chosen, table, 7, 2)
    texts = _linear.path_cigars(joined)
    want = [rescore_alignment(queries[p], targets[p], 0, 0, texts[p], table, 7, 2)[0]
            for p in chosen.tolist()]
    assert got.tolist() == want


@pytest.mark.parametrize("scoring", SCHEMES + [BLOSUM62], ids=lambda s: s.describe())
def test_borders_of_subproblems(scoring):
    # Leaves and whole recursions with top/bottom excess 0 (a gap continuing across the border)
    # or the usual excess: optimal under those charges, 1-row and 1-column problems included.
    rng = np.random.default_rng(24)
    alphabet = "protein" if scoring.matrix_name else "dna"
    table, _ = scoring.table(alphabet)
    go, ge = scoring.gap_open, scoring.gap_extend
    engine = CpuEngine(table, go, ge, get_alphabet(alphabet).match_codes)
    symbols = len(table) - 1
    for _ in range(60):
        m, n = rng.integers(1, 12, 2)
        a = rng.integers(0, symbols, m).astype(np.uint8)
        b = np.concatenate([a[rng.integers(0, 3):], rng.integers(0, symbols, rng.integers(0, 4))])
        b = (b if len(b) else a[:1])[:n].astype(np.uint8)
        codes = PairCodes.from_lists([a], [b])
        top, bottom = (int(x) for x in rng.choice([0, go - ge], 2))
        _, _, best = _border_oracle(a, b, table, go, ge, top, bottom)
        root = Problems.of(pair=[0], a_start=0, a_end=len(a), b_start=0, b_end=len(b),
                           reverse=0, top_excess=top, bottom_excess=bottom)
        ops, offsets = engine.leaf_paths(codes, root)
        assert offsets.tolist() == [0, len(ops)]
        for leaf_cells in (1, 4, 1 << 20):
            path = ops if leaf_cells == 1 << 20 else \
                _linear.global_paths(codes, root, go, ge, engine, leaf_cells)[0]
            assert np.count_nonzero(path != 3) == len(a) and np.count_nonzero(path != 2) == len(b)
            assert _border_score(path, a, b, table, go, ge, top, bottom) == best, \
                (a.tolist(), b.tolist(), top, bottom, leaf_cells)


class _BothHalves:
    """The CPU engine without ``last_rows_kept``: the driver computes both halves of every
    split."""

    def __init__(self, engine):
        self.engine, self.table = engine, engine.table

    def last_rows(self, sequences, problems):
        return self.engine.last_rows(sequences, problems)

    def leaf_paths(self, sequences, problems, scores=None):
        return self.engine.leaf_paths(sequences, problems, scores)


def test_kept_rows_spare_passes_and_paths_stay_optimal(monkeypatch):
    # Each half's pass keeps the rows where its descendants that share its start corner split
    # (its child, grandchild, ...), so each of them computes only its other half: about a
    # quarter fewer cells in all (0.76 here; 0.80 with one row kept a pass), with the same
    # optimal scores (the full matrices' best) and paths that score them.
    scoring = SCHEMES[0]
    table, _ = scoring.table("dna")
    go, ge = scoring.gap_open, scoring.gap_extend
    engine = CpuEngine(table, go, ge, get_alphabet("dna").match_codes)
    cells = {"last_rows": 0, "last_rows_kept": 0}
    for name in cells:
        method = getattr(CpuEngine, name)

        def counted(self, sequences, problems, *rest, method=method, name=name):
            cells[name] += int(problems.cells().sum())
            return method(self, sequences, problems, *rest)

        monkeypatch.setattr(CpuEngine, name, counted)
    rng = np.random.default_rng(41)
    queries = [rng.integers(0, 4, int(rng.integers(150, 260))).astype(np.uint8)
               for _ in range(4)]
    targets = []
    for a in queries:  # 10% substitutions, 5% deletions
        b = np.where(rng.random(len(a)) < 0.1, rng.integers(0, 4, len(a)), a)
        targets.append(b[rng.random(len(a)) >= 0.05].astype(np.uint8))
    codes = PairCodes.from_lists(queries, targets)
    excess = go - ge
    roots = Problems.of(pair=np.arange(4), a_start=0, a_end=[len(a) for a in queries],
                        b_start=0, b_end=[len(b) for b in targets], reverse=0,
                        top_excess=excess, bottom_excess=excess)
    kept_scores, plain_scores = np.zeros(4, np.int64), np.zeros(4, np.int64)
    kept = _linear.global_paths(codes, roots, go, ge, engine, 64, scores=kept_scores)
    plain = _linear.global_paths(codes, roots, go, ge, _BothHalves(engine), 64,
                                 scores=plain_scores)
    assert cells["last_rows_kept"] < 0.78 * cells["last_rows"]
    assert kept_scores.tolist() == plain_scores.tolist()
    for k, (a, b) in enumerate(zip(queries, targets, strict=True)):
        _, _, best = _border_oracle(a, b, table, go, ge, excess, excess)
        assert kept_scores[k] == best
        for path in (kept[k], plain[k]):
            assert _border_score(path, a, b, table, go, ge, excess, excess) == best


@pytest.mark.parametrize("on_every_core", [False, True])
def test_given_rows_are_the_halves_they_stand_for(monkeypatch, on_every_core):
    # Every row the driver takes as given, however many levels ago a pass kept it, equals
    # that half of the subproblem computed afresh (its prefix as long as the subproblem's
    # columns and one more), from passes on one core and on every core alike.
    monkeypatch.setattr(config, "ALIGN_CPU_WAVEFRONT_MIN_CELLS", 1 if on_every_core else 1 << 62)
    scoring = SCHEMES[1]
    table, _ = scoring.table("dna")
    go, ge = scoring.gap_open, scoring.gap_extend
    engine = CpuEngine(table, go, ge, get_alphabet("dna").match_codes)
    search = _linear._search_keeping
    checked = []

    def checking(sequences, split, given, *rest):
        first = given.rows[:, 0]
        checked[-1] += int(((first > split.a_start) & (first < split.a_end)).sum())
        for d in range(given.rows.shape[1]):  # the subproblem's row, then its descendants'
            row = given.rows[:, d]
            usable = (row > split.a_start) & (row < split.a_end)
            _, both = _linear._halves(split, np.where(usable, row, split.a_start + 1))
            for k in np.flatnonzero(usable).tolist():
                half = both.take(np.array([k + len(split) * int(given.side[k])]))
                h, f = engine.last_rows(sequences, half)
                start = given.at[k, d]
                assert given.h[start:start + len(h)].tolist() == h.tolist()
                assert given.f[start:start + len(f)].tolist() == f.tolist()
        return search(sequences, split, given, *rest)

    monkeypatch.setattr(_linear, "_search_keeping", checking)
    rng = np.random.default_rng(43)
    queries = [rng.integers(0, 4, int(rng.integers(300, 500))).astype(np.uint8)
               for _ in range(3)]
    targets = [np.where(rng.random(len(a)) < 0.15, rng.integers(0, 4, len(a)), a)
               [rng.random(len(a)) >= 0.05].astype(np.uint8) for a in queries]
    codes = PairCodes.from_lists(queries, targets)
    excess = go - ge
    roots = Problems.of(pair=np.arange(3), a_start=0, a_end=[len(a) for a in queries],
                        b_start=0, b_end=[len(b) for b in targets], reverse=0,
                        top_excess=excess, bottom_excess=excess)
    for depth in (1, 3):
        monkeypatch.setattr(config, "ALIGN_LINEAR_KEPT_ROWS", depth)
        checked.append(0)
        _linear.global_paths(codes, roots, go, ge, engine, 64)
    # With one row kept a pass, only rows kept one level up are given; with three, more
    # subproblems find theirs, kept two or more levels up.
    assert 20 < checked[0] < checked[1]


def _reversed_problem(codes, problem, k):
    a = codes.q_codes[problem.a_start[k]:problem.a_end[k]]
    b = codes.t_codes[problem.b_start[k]:problem.b_end[k]]
    return (a[::-1], b[::-1]) if problem.reverse[k] else (a, b)


@pytest.mark.parametrize("alone", [False, True])
@pytest.mark.parametrize("tile_columns", [3, 2048])
@pytest.mark.parametrize("value_type", [np.int32, np.int64])
def test_last_rows_and_best_cells(monkeypatch, alone, tile_columns, value_type):
    # The score passes on one core per subproblem and in tiles on every core, with tiles of a
    # few columns or of all, in int32 and int64 work rows: last rows equal the full matrices'
    # (forward and reversed, top excess 0 or not), best cells the batch DP's end cells in
    # every mode.
    monkeypatch.setattr(_cpu_linear, "_on_every_core",
                        lambda cells, threads: np.full(len(cells), alone))
    monkeypatch.setattr(_cpu_linear, "_TILE_COLUMNS", tile_columns)
    monkeypatch.setattr(_cpu_linear, "_value_type", lambda *args: value_type)
    rng = np.random.default_rng(25)
    scoring = SCHEMES[0]
    table, _ = scoring.table("dna")
    go, ge = scoring.gap_open, scoring.gap_extend
    engine = CpuEngine(table, go, ge, 4)
    for _ in range(40):
        a = rng.integers(0, 5, rng.integers(1, 40)).astype(np.uint8)
        b = np.concatenate([rng.integers(0, 5, rng.integers(0, 5)), a[rng.integers(0, 4):]])
        b = (b if len(b) else a).astype(np.uint8)
        codes = PairCodes.from_lists([a], [b])
        m, n = len(a), len(b)
        cut = [int(rng.integers(0, m)), int(rng.integers(0, n))]
        problem = Problems.of(pair=[0], a_start=cut[0], a_end=m, b_start=cut[1], b_end=n,
                              reverse=int(rng.integers(0, 2)),
                              top_excess=int(rng.choice([0, go - ge])), bottom_excess=go - ge)
        h, f = engine.last_rows(codes, problem)
        x, y = _reversed_problem(codes, problem, 0)
        full_h, full_f, _ = _border_oracle(x, y, table, go, ge, int(problem.top_excess[0]),
                                           go - ge)
        assert h.tolist() == full_h[-1]
        for got, want in zip(f[1:].tolist(), full_f[-1][1:], strict=True):
            assert got == want if want > NEG // 2 else got <= _linear.NO_SCORE
        assert f[0] == h[0]
        whole = PairCodes.from_lists([x.copy()], [y.copy()])
        for mode in range(4):
            score, q_end, t_end = _linear.mode_ends(whole, go, ge, mode, engine)
            naive = align_naive(x.tolist(), y.tolist(), table, go, ge,
                                gpualign.codes.ALIGN_MODE_NAMES[mode], 4)
            assert (int(score[0]), int(q_end[0]), int(t_end[0])) == \
                (naive.score, naive.query_end, naive.target_end)


@pytest.mark.parametrize("scope", [_linear.SCOPE_CORNER, _linear.SCOPE_LAST_ROW,
                                   _linear.SCOPE_LAST_ROW_OR_COLUMN, _linear.SCOPE_ANY,
                                   _linear.SCOPE_START_ROW, _linear.SCOPE_START_EDGE])
def test_a_pass_of_many_subproblems_on_every_core_or_one_per_core(monkeypatch, scope):
    # Subproblems of many sizes, directions and top excesses in one pass: every other one on
    # every core together (tiles of a few rows and columns, many a diagonal, the subproblems'
    # tiles interleaved) and the others dealt one per core, against all of them one per core:
    # the same last rows and best cells, each in its place.
    monkeypatch.setattr(_cpu_linear, "_TILES_PER_THREAD", 64)
    monkeypatch.setattr(_cpu_linear, "_TILE_COLUMNS", 3)
    rng = np.random.default_rng(7)
    scoring = SCHEMES[0]
    table, _ = scoring.table("dna")
    go, ge = scoring.gap_open, scoring.gap_extend
    count = 9
    lengths = [(int(rng.integers(1, 90)), int(rng.integers(1, 90))) for _ in range(count)]
    codes = PairCodes.from_lists([rng.integers(0, 5, m).astype(np.uint8) for m, _ in lengths],
                                 [rng.integers(0, 5, n).astype(np.uint8) for _, n in lengths])
    problems = Problems.of(pair=np.arange(count), a_start=0, a_end=[m for m, _ in lengths],
                           b_start=0, b_end=[n for _, n in lengths],
                           reverse=rng.integers(0, 2, count),
                           top_excess=rng.choice([0, go - ge], count), bottom_excess=go - ge)
    every_other = np.arange(count) % 2 == 1
    free_top = scope != _linear.SCOPE_CORNER
    free_left = scope in (_linear.SCOPE_LAST_ROW_OR_COLUMN, _linear.SCOPE_ANY,
                          _linear.SCOPE_START_EDGE)
    floor_zero = scope == _linear.SCOPE_ANY
    results = []
    for together in (every_other, np.zeros(count, dtype=bool)):
        monkeypatch.setattr(_cpu_linear, "_on_every_core",
                            lambda cells, threads, chosen=together: chosen)
        results.append(_cpu_linear.score_pass(codes, problems, table, go, ge, free_top,
                                              free_left, floor_zero, scope))
    for mixed, apart in zip(*results, strict=True):
        assert mixed.tolist() == apart.tolist()


def test_deal_gives_each_core_its_share():
    # The largest first, each to the core with the least work: no core ends far behind.
    cells = np.random.default_rng(3).integers(1, 1000, 200)
    start, dealt = _cpu_linear._deal(cells, 16)
    assert sorted(dealt.tolist()) == list(range(200))
    loads = [int(cells[dealt[start[w]:start[w + 1]]].sum()) for w in range(16)]
    assert max(loads) <= cells.sum() / 16 + cells.max()
    assert max(loads) - min(loads) <= cells.max()


def test_work_rows_are_int64_where_int32_could_overflow():
    table, _ = SCHEMES[0].table("dna")
    problem = Problems.of(pair=[0], a_start=0, a_end=100_000, b_start=0, b_end=100_000,
                          reverse=0, top_excess=3, bottom_excess=3)
    assert _cpu_linear._value_type(problem, table, 5, 2) is np.int32
    assert _cpu_linear._value_type(problem, table, 1 << 20, 1 << 10) is np.int64


def test_empty_sides(linear):
    # Pairs with an empty side stay on the batch path (nothing to split) and keep its answers;
    # the driver itself refuses them.
    linear()
    queries, targets = ["", "ACGT", "", "A"], ["ACGT", "", "", "C"]
    for mode in ALIGN_MODES:
        check_long(queries, targets, SCHEMES[0], mode)
    codes = PairCodes.from_lists([np.zeros(0, np.uint8)], [np.zeros(3, np.uint8)])
    with pytest.raises(ValueError, match="non-empty"):
        _linear.mode_paths(codes, 5, 2, 0, CpuEngine(np.eye(5), 5, 2, 4), 4)


def test_local_alignment_scoring_zero_is_empty(linear):
    linear()
    result = check_long(["AAAA"], ["CCCC"], SCHEMES[0], "local")
    assert result.cigar == [""] and result.query_end.tolist() == [0]


def test_joined_paths_count_and_write_as_the_paths_apart():
    # The driver's paths come joined in one array; their CIGARs (read reversed, as a view) and
    # counts must be those of the same paths given one by one.
    rng = np.random.default_rng(5)
    paths = [rng.integers(0, 4, size, dtype=np.uint8) for size in (0, 1, 7, 0, 300, 2)]
    joined = _linear.JoinedPaths.of(paths)
    assert [path.tolist() for path in joined] == [path.tolist() for path in paths]
    assert joined[-1].tolist() == paths[-1].tolist()
    assert joined[np.int64(4)].tolist() == paths[4].tolist()
    with pytest.raises(IndexError):
        joined[len(paths)]
    nothing = _linear.JoinedPaths.of([])
    assert len(nothing) == 0 and _linear.path_cigars(nothing) == []
    assert joined.op_counts(0).tolist() == [int((path == 0).sum()) for path in paths]
    texts = [_linear.path_cigars(_linear.JoinedPaths.of([path]))[0] for path in paths]
    assert _linear.path_cigars(joined) == texts
    assert _linear.path_cigars(joined, packed=True).tolist() == texts
    assert texts[2] == "".join(f"{len(run)}{'=XID'[run[0]]}" for run in
                               np.split(paths[2], np.flatnonzero(np.diff(paths[2])) + 1))


# --- memory ------------------------------------------------------------------------------------


def test_pairs_that_do_not_fit_fail_before_any_work(linear, monkeypatch):
    linear()
    monkeypatch.setattr(_cpu, "_available_memory", lambda: 1 << 10)
    monkeypatch.setattr(_cpu, "mode_paths", lambda *args: pytest.fail("work started"))
    with pytest.raises(ValueError, match=r"linear space need .* GiB .*query 4 x target 5"):
        gpualign.align(["ACGT"], ["ACGTT"], task="path", backend="cpu")


_PEAK = """
import sys
import numpy as np
from gpualign import align, config


def high_water_mib():
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


linear = sys.argv[1] == "linear"
rng = np.random.default_rng(0)
q = "".join(rng.choice(list("ACGT"), 12000))
t = q[:5000] + q[5100:] + "ACGT" * 25
for wavefront in (1, 1 << 62):  # every kernel compiled before the peak is read
    with config.override(ALIGN_LINEAR_MIN_CELLS=0 if linear else 1 << 62,
                         ALIGN_LINEAR_LEAF_CELLS=64, ALIGN_CPU_WAVEFRONT_MIN_CELLS=wavefront):
        align([q[:300]], [t[:300]], task="path", backend="cpu")
config.ALIGN_LINEAR_MIN_CELLS = 1 << 20 if linear else 1 << 62
before = high_water_mib()
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the high-water mark restarts from the current size
r = align([q], [t], task="path", backend="cpu")
print(int(r.score[0]), high_water_mib() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux's clear_refs")
def test_memory_of_a_long_pair_is_linear():
    # 12 kb x 12 kb: the batch traceback takes 144 MB more at its peak, the linear path
    # (routed because its traceback would exceed ALIGN_LINEAR_MIN_CELLS) almost nothing.
    def run(path: str) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", _PEAK, path], check=True,
                             capture_output=True, text=True).stdout.split()
        return int(out[0]), int(out[1])

    batch_score, batch_mib = run("batch")
    linear_score, linear_mib = run("linear")
    assert linear_score == batch_score
    assert batch_mib >= 100 and linear_mib <= 16, (batch_mib, linear_mib)
