"""Progress of long pairs: ``align(progress=...)``, ``align_one_to_many(progress=...)`` and
``edit_distance(progress=...)`` count DP cells (query length x target length, summed over the
pairs) as the work ends, the long pairs' passes and linear-space levels included.

Tiny ``ALIGN_LINEAR_MIN_CELLS``, ``ALIGN_CPU_WAVEFRONT_MIN_CELLS``, ``LONG_ALIGN_MIN_CELLS``
and ``LONG_EDIT_MIN_CELLS`` route pairs of a few hundred symbols through the long engines, and
small leaves give their paths many levels. A recording function checks what a bar would show:
a constant total, a ``done`` that never decreases and ends at the total, and results equal to
those of a run without progress.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import gpualign
from gpualign import _progress, config
from gpualign._progress import Portion, Progress, pass_credits
from gpualign.sequences import SequenceSet

ALIGN_MODES = ("global", "semi-global", "overlap", "local")
EDIT_MODES = ("global", "prefix", "infix")


class Recorder:
    """A ``progress`` function that keeps every ``(done, total)`` it is called with."""

    def __init__(self):
        self.calls: list[tuple[int, int | None]] = []

    def __call__(self, done: int, total: int | None) -> None:
        self.calls.append((done, total))

    def check(self, cells: int | None, total: int | None = -1) -> None:
        """``done`` never decreases and ends at ``cells``; every total is ``total`` (default:
        ``cells``)."""
        total = cells if total == -1 else total
        assert self.calls, "progress was never called"
        done = [d for d, _ in self.calls]
        assert all(a <= b for a, b in zip(done, done[1:], strict=False)), done
        assert done[-1] == cells
        assert {t for _, t in self.calls} == {total}


def _related(rng: np.random.Generator, length: int) -> tuple[str, str]:
    """A random DNA sequence and a mutated copy (substitutions, insertions, deletions)."""
    query = rng.choice(list("ACGT"), length)
    target = []
    for symbol in query:
        roll = rng.random()
        if roll < 0.05:
            continue
        target.append(rng.choice(list("ACGT")) if roll < 0.12 else symbol)
        if roll > 0.96:
            target.append(rng.choice(list("ACGT")))
    return "".join(query), "".join(target)


def _pairs(seed: int, lengths: tuple[int, ...]) -> tuple[list[str], list[str], int]:
    rng = np.random.default_rng(seed)
    pairs = [_related(rng, length) for length in lengths]
    queries, targets = [q for q, _ in pairs], [t for _, t in pairs]
    return queries, targets, sum(len(q) * len(t) for q, t in pairs)


@pytest.fixture
def long_align(backend, monkeypatch):
    """Pairs of 1,000 cells and more are long on both backends; leaves of 64 cells (none
    traced whole)."""
    monkeypatch.setattr(config, "ALIGN_LINEAR_MIN_CELLS", 1000)
    monkeypatch.setattr(config, "ALIGN_LINEAR_LEAF_CELLS", 64)
    monkeypatch.setattr(config, "ALIGN_CPU_WAVEFRONT_MIN_CELLS", 1000)
    monkeypatch.setattr(config, "ALIGN_CPU_SCORES", "numba")
    monkeypatch.setattr(config, "LONG_ALIGN_MIN_CELLS", 1000)
    monkeypatch.setattr(config, "LONG_ALIGN_LEAF_CELLS", 64)
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_CELLS", 0)  # every level split, on CUDA too
    return backend


@pytest.mark.parametrize("task", ["score", "end", "path"])
@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_align_counts_cells(long_align, mode, task):
    """Short and long pairs together: the bar ends at their cells, the results are those of a
    run without progress."""
    queries, targets, cells = _pairs(1, (5, 300, 12, 180))
    recorder = Recorder()
    found = gpualign.align(queries, targets, mode=mode, task=task, backend=long_align,
                           progress=recorder)
    recorder.check(cells)
    plain = gpualign.align(queries, targets, mode=mode, task=task, backend=long_align)
    assert found.score.tolist() == plain.score.tolist()
    assert found.target_end.tolist() == plain.target_end.tolist()
    assert found.cigar == plain.cigar


@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_one_long_path_moves_level_by_level(long_align, mode):
    """One long pair's path: its score passes and its levels each move the bar."""
    queries, targets, cells = _pairs(2, (400,))
    recorder = Recorder()
    gpualign.align(queries, targets, mode=mode, task="path", backend=long_align,
                   progress=recorder)
    recorder.check(cells)
    assert len(recorder.calls) >= 5  # the Myers-Miller levels of 400 rows with 64-cell leaves


def test_align_one_to_many_counts_the_search(long_align):
    """The search's cells: known in advance for a SequenceSet, counted for an iterable."""
    rng = np.random.default_rng(3)
    query, first = _related(rng, 200)
    others = [_related(rng, length)[1] for length in (30, 250, 7)]
    subjects = [first, *others]
    cells = len(query) * sum(len(s) for s in subjects)
    for targets, total in ((SequenceSet.from_sequences(subjects, "dna"), cells),
                           (iter(subjects), None)):
        recorder = Recorder()
        hits = gpualign.align_one_to_many(query, targets, n=2, task="path", backend=long_align,
                                          progress=recorder)
        recorder.check(cells, total)
        assert hits.target_index.tolist()[0] == 0


def test_align_progress_bar_runs(long_align):
    """``progress=True``: a bar on stderr (silent for a run under a second), same results."""
    queries, targets, _ = _pairs(4, (300, 20))
    shown = gpualign.align(queries, targets, task="path", backend=long_align, progress=True)
    plain = gpualign.align(queries, targets, task="path", backend=long_align)
    assert shown.cigar == plain.cigar


@pytest.fixture
def long_edit(backend, monkeypatch):
    """Pairs of 1,000 cells and more are long (and get their CIGARs in linear space)."""
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 1000)
    return backend


@pytest.mark.parametrize("task", ["distance", "locations", "path"])
@pytest.mark.parametrize("mode", EDIT_MODES)
def test_edit_counts_cells_with_a_long_pair(long_edit, mode, task):
    queries, targets, cells = _pairs(5, (6, 350, 40, 9))
    recorder = Recorder()
    found = gpualign.edit_distance(queries, targets, mode=mode, task=task, backend=long_edit,
                                   progress=recorder)
    recorder.check(cells)
    plain = gpualign.edit_distance(queries, targets, mode=mode, task=task, backend=long_edit)
    assert found.distance.tolist() == plain.distance.tolist()
    assert found.cigar == plain.cigar
    if task == "path":
        assert len(recorder.calls) >= 4  # the CIGAR's half moves level by level


@pytest.mark.parametrize("k", [None, 3])
def test_edit_counts_pairs_without_a_long_pair(long_edit, k):
    """No long pair: the bar counts pairs, as before."""
    queries, targets, _ = _pairs(6, (5, 20, 30, 9, 12))
    recorder = Recorder()
    gpualign.edit_distance(queries, targets, k=k, task="path", backend=long_edit,
                           progress=recorder)
    recorder.check(len(queries))


def test_edit_over_k_long_pairs_still_end_the_bar(long_edit):
    """Long pairs over ``k`` have no CIGAR to trace: their cells are counted anyway."""
    queries, targets, cells = _pairs(7, (300, 200))
    recorder = Recorder()
    found = gpualign.edit_distance(queries, targets, k=2, mode="infix", task="path",
                                   backend=long_edit, progress=recorder)
    assert found.distance.tolist() == [-1, -1]
    recorder.check(cells)


@pytest.mark.parametrize("k", [None, 4])
def test_edit_matrix_counts_every_block(long_edit, small_batches, k):
    """One count over the blocks of the matrix: pairs, or cells with a long pair."""
    queries, targets, _ = _pairs(8, (5, 9, 30))
    recorder = Recorder()
    gpualign.edit_distance_matrix(queries, targets, k=k, backend=long_edit, progress=recorder)
    recorder.check(len(queries) * len(targets))
    queries, targets, _ = _pairs(9, (5, 300, 30))
    recorder = Recorder()
    gpualign.edit_distance_matrix(queries, targets, k=k, backend=long_edit, progress=recorder)
    recorder.check(sum(map(len, queries)) * sum(map(len, targets)))


def test_progress_caps_at_its_total():
    recorder = Recorder()
    with Progress(10, recorder, "test", "cell") as progress:
        progress.pairs_done(np.array([4, 3]))
        progress.cells_done(7)
        progress.cells_done(2)
    assert recorder.calls == [(7, 10), (10, 10)]


def test_pairs_progress_ignores_cells():
    recorder = Recorder()
    with Progress(2, recorder, "test", "pair") as progress:
        progress.pairs_done(np.array([40]))
        progress.cells_done(100)
        progress.pairs_done(np.array([9]))
    assert recorder.calls == [(1, 2), (2, 2)]


def test_portion_never_passes_its_share():
    moves: list[int] = []
    portion = Portion(moves.append, share=9, work=10)
    for computed in (4, 4, 4, 4):  # more than estimated
        portion.advance(computed)
    portion.finish()
    assert sum(moves) == 9 and all(m > 0 for m in moves)
    Portion(None, share=9, work=10).finish()  # no progress: nothing to call


def test_pass_credits_add_up():
    first, second = pass_credits(np.array([0, 3, 101]), np.array([5, 7, 99]), True)
    assert (first + second).tolist() == [0, 21, 9999]
    first, second = pass_credits(np.array([3]), np.array([7]), False)
    assert first.tolist() == [21] and second.tolist() == [0]


def test_doctests():
    assert doctest.testmod(_progress, raise_on_error=True).attempted > 0
