"""CPU backend of database search: the best Smith-Waterman scores of every query against every
database sequence.

With parasail (and the DNA or protein alphabet), one query profile each (16-bit lanes, built
once) runs through the striped kernel (prefix scan for linear gaps, as :mod:`gpualign.align`
does) against the subjects of a task; a subject whose score saturates 16 bits is rerun in 32,
so scores are exact. Tasks cover consecutive subjects of ``config.SEARCH_CPU_TASK_RESIDUES``
residues and run on every core: in worker processes forked from this one when it runs a single
thread on Linux (a script, the CLI) and the search has at least
``config.SEARCH_CPU_PROCESS_MIN_CELLS`` cells, else on threads (parasail's ctypes calls release
the GIL, but each call's Python wrapping holds it: threads scale poorly past a few cores).
Without parasail, the Numba DP of :mod:`gpualign.align` scores each task's pairs on every core.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from .. import config
from .._progress import Progress
from ..align import _cpu as align_cpu
from ..align import _parasail
from ..codes import ALIGN_LOCAL
from ..sequences import SequenceSet
from .database import Database, best_hits

__all__ = ["top_scores"]

T = TypeVar("T")
#: Tasks submitted ahead per worker: enough to keep every worker busy.
_TASKS_IN_FLIGHT_PER_THREAD = 4


def top_scores(queries: SequenceSet, database: Database, table: np.ndarray, gap_open: int,
               gap_extend: int, n: int, progress: Progress | None = None,
               ) -> tuple[np.ndarray, np.ndarray]:
    """Best ``n`` Smith-Waterman (local, affine: open + (len-1)*extend, the project's gap
    convention) scores of every query against every database sequence.

    Returns
    -------
    score, subject : np.ndarray of int64, shape (len(queries), n)
        Row ``q`` best first; ``subject`` holds sorted positions ``k`` (index into
        ``database.sequences``); ties: the smaller ``database.order[k]`` (input order) first.
        Rows are padded with score -1, subject -1 where the database has fewer than ``n``
        sequences. Scores are exact (16-bit lanes that saturate are rerun in 32 bits).

    ``progress`` (if given) is advanced in DP cells, ``len(query) * len(subject)``, as tasks
    finish.

    Examples
    --------
    >>> from gpualign.scoring import Scoring
    >>> db = Database.from_sequences(["TTTT", "ACGTACGT", "GGACGTGG"])
    >>> queries = SequenceSet.from_sequences(["ACGT"])
    >>> table, _ = Scoring().table(queries.alphabet)
    >>> score, subject = top_scores(queries, db, table, 5, 2, 2)
    >>> score.tolist(), db.order[subject].tolist()
    ([[8, 8]], [[1, 2]])
    """
    best = np.full((len(queries), n), -1, dtype=np.int64)
    chosen = np.full((len(queries), n), -1, dtype=np.int64)
    query_residues = int(queries.lengths.sum())
    offsets = database.sequences.offsets
    simd = _parasail.available(database.alphabet.name)
    score_block = (_parasail_block if simd else _numba_block)(
        queries, database.sequences, table, gap_open, gap_extend)

    def block_best(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        return best_hits(score_block(lo, hi), np.arange(lo, hi, dtype=np.int64),
                         database.order, n)

    cells = query_residues * int(offsets[-1])
    for (lo, hi), (block_score, block_chosen) in _run(
            block_best, _tasks(offsets, config.SEARCH_CPU_TASK_RESIDUES), threaded=simd,
            processes=simd and cells >= config.SEARCH_CPU_PROCESS_MIN_CELLS):
        best, chosen = best_hits(np.concatenate((best, block_score), axis=1),
                                 np.concatenate((chosen, block_chosen), axis=1),
                                 database.order, n)
        if progress is not None:
            progress.cells_done(query_residues * int(offsets[hi] - offsets[lo]))
    return best, chosen


def _tasks(offsets: np.ndarray, residues: int) -> list[tuple[int, int]]:
    """Consecutive ranges of sequences of about ``residues`` residues each (a sequence longer
    than that is a range of its own)."""
    count = len(offsets) - 1
    cuts = np.searchsorted(offsets[1:], np.arange(residues, int(offsets[-1]), residues),
                           side="left") + 1
    bounds = np.unique(np.concatenate(([0], np.minimum(cuts, count), [count])))
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _run(work: Callable[[int, int], T], tasks: list[tuple[int, int]], threaded: bool,
         processes: bool = False) -> Iterator[tuple[tuple[int, int], T]]:
    """``work`` of every task with its range, in task order: on every core (``threaded``; a
    few tasks per worker in flight, so that finished results wait in bounded memory) in
    forked processes where :func:`_can_fork` and ``processes``, else on threads; or one after
    the other (work that runs on every core itself)."""
    if not threaded:
        for task in tasks:
            yield task, work(*task)
        return
    workers = os.cpu_count() or 1
    if processes and workers > 1 and _can_fork():
        global _FORKED_WORK
        # The workers inherit `work` (with its parasail profiles) by forking: nothing is
        # pickled but the task ranges and the results.
        _FORKED_WORK = work
        try:
            pool: Executor = ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("fork"))
            with pool:
                yield from _in_order(pool, _forked, tasks, workers)
        finally:
            _FORKED_WORK = None
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpualign-search") as pool:
        yield from _in_order(pool, work, tasks, workers)


#: The work of a forked search (set in the parent before its workers fork).
_FORKED_WORK: Callable | None = None


def _forked(lo: int, hi: int):
    """A forked worker's task: the work its parent set before forking."""
    return _FORKED_WORK(lo, hi)


def _can_fork() -> bool:
    """Whether worker processes may be forked from this one: on Linux, and only while this
    process runs no other thread (forking a threaded process can deadlock the child on a lock
    another thread held) but tqdm's monitor of progress bars, which takes no lock the workers
    use."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    return sys.platform.startswith("linux") and all(t.name == "tqdm_monitor" for t in others)


def _in_order(pool: Executor, work: Callable, tasks: list[tuple[int, int]],
              workers: int) -> Iterator[tuple[tuple[int, int], T]]:
    """Submit ``work`` of every task to ``pool``, a few per worker ahead, and yield the results
    in task order."""
    pending: collections.deque = collections.deque()
    for task in tasks:
        pending.append((task, pool.submit(work, *task)))
        if len(pending) >= _TASKS_IN_FLIGHT_PER_THREAD * workers:
            done, future = pending.popleft()
            yield done, future.result()
    while pending:
        done, future = pending.popleft()
        yield done, future.result()


def _parasail_block(queries: SequenceSet, subjects: SequenceSet, table: np.ndarray,
                    gap_open: int, gap_extend: int) -> Callable[[int, int], np.ndarray]:
    """The function that scores every query against subjects ``lo .. hi - 1`` with parasail:
    one 16-bit profile per query, built here once."""
    import parasail

    matrix = _parasail.matrix(queries.alphabet.symbols, table)
    kind = _parasail.kernel_kind(gap_open, gap_extend)
    narrow = getattr(parasail, f"sw_{kind}_profile_16")
    wide = getattr(parasail, f"sw_{kind}_32")
    symbols = np.frombuffer(queries.alphabet.symbols, dtype=np.uint8)
    texts = [symbols[queries.codes_of(q)].tobytes() for q in range(len(queries))]
    # parasail takes no empty sequence; an empty query scores 0 everywhere.
    profiles = [parasail.profile_create_16(text, matrix) if text else None for text in texts]

    def score_block(lo: int, hi: int) -> np.ndarray:
        out = np.zeros((len(queries), hi - lo), dtype=np.int64)
        subject_texts = [symbols[subjects.codes_of(k)].tobytes() for k in range(lo, hi)]
        for q, profile in enumerate(profiles):
            if profile is None:
                continue
            row = out[q]
            for j, subject in enumerate(subject_texts):
                if not subject:
                    continue
                result = narrow(profile, subject, gap_open, gap_extend)
                if result.saturated:
                    result = wide(texts[q], subject, gap_open, gap_extend, matrix)
                row[j] = result.score
        return out

    return score_block


def _numba_block(queries: SequenceSet, subjects: SequenceSet, table: np.ndarray,
                 gap_open: int, gap_extend: int) -> Callable[[int, int], np.ndarray]:
    """The function that scores every query against subjects ``lo .. hi - 1`` with the
    alignment backend's DP (parallel over the pairs)."""

    def score_block(lo: int, hi: int) -> np.ndarray:
        width = hi - lo
        q_index = np.repeat(np.arange(len(queries), dtype=np.int64), width)
        t_index = np.tile(np.arange(lo, hi, dtype=np.int64), len(queries))
        score = align_cpu.align_pairs(queries, subjects, q_index, t_index, table, gap_open,
                                      gap_extend, ALIGN_LOCAL, "score")[0]
        return score.reshape(len(queries), width)

    return score_block
