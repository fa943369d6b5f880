"""CPU backend of database search: the best Smith-Waterman scores of every query against every
database sequence.

With parasail (and the DNA or protein alphabet), parasail's striped kernels (prefix scan for
linear gaps, as :mod:`gpualign.align` does) score every pair of a task first in 8-bit lanes
(``config.SEARCH_CPU_FIRST_BITS``: twice the pairs' cells per instruction of 16-bit lanes), from
one query profile each built once; the pairs whose score saturates 8 bits are rerun in 16, and
those that saturate 16 in 32, with the wider profiles built only for the queries that have
such pairs, so scores are exact. They are rerun together, gathered over many tasks (they are
few and mostly long: spread over the cores), and fold into the best hits then. A query whose
scoring a width cannot hold (a substitution score or gap cost beyond its range, or, for the
scan kernels, a long query with costly gaps: see
:func:`gpualign.align._parasail.lanes_fit`) starts in the next width.
parasail's C functions are called from a Numba loop over the task's pairs on every core, with
no Python (and no GIL) per pair: through parasail's Python wrappers, the wrapping of each call
held the GIL and threads scaled to about one core. Tasks cover consecutive subjects of
``config.SEARCH_CPU_TASK_RESIDUES`` residues.
Without parasail, the Numba DP of :mod:`gpualign.align` scores each task's pairs on every core.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from .. import config
from .._progress import Progress
from ..align import _cpu as align_cpu
from ..align import _parasail
from ..codes import ALIGN_LOCAL
from ..sequences import SequenceSet
from .database import Database, best_hits, fold_hits

__all__ = ["top_scores"]



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
        sequences. Scores are exact (narrow lanes that saturate are rerun in wider ones).

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
    if _parasail.available(database.alphabet.name):
        score_block, rescore = _parasail_scorers(queries, database.sequences, table, gap_open,
                                                 gap_extend)
    else:  # the Numba DP's scores are exact: no pair waits for a rescoring
        score_block, rescore = _numba_block(queries, database.sequences, table, gap_open,
                                            gap_extend), None

    # Keeping every subject (align_one_to_many without n): rank once, at the end.
    everything = n >= len(database)
    scores = []
    # The (query, subject) pairs that saturated the first pass's lanes: they fold as no
    # candidate (_SATURATED is -1) until rescored together, when they are as many as a
    # block's pairs or at the end. They are few, mostly long: a pass over a block's one or
    # two would keep one core busy and leave the others idle.
    waiting: list[np.ndarray] = []
    for lo, hi in _tasks(offsets, config.SEARCH_CPU_TASK_RESIDUES):
        block = score_block(lo, hi)
        pair_query, pair_subject = np.nonzero(block == _SATURATED)
        if len(pair_query):
            waiting.append(np.stack((pair_query, pair_subject + lo)))
        if everything:
            scores.append(block)
        else:
            block_score, block_chosen = best_hits(block, np.arange(lo, hi, dtype=np.int64),
                                                  database.order, n)
            best, chosen = fold_hits(best, chosen, block_score, block_chosen, database.order,
                                     n)
            if sum(pairs.shape[1] for pairs in waiting) >= block.size:
                best, chosen = _fold_pairs(best, chosen, np.concatenate(waiting, axis=1),
                                           rescore, database.order, n)
                waiting = []
        if progress is not None:
            progress.cells_done(query_residues * int(offsets[hi] - offsets[lo]))
    if everything and scores:
        every_score = np.concatenate(scores, axis=1)
        if waiting:
            pair_query, pair_subject = np.concatenate(waiting, axis=1)
            every_score[pair_query, pair_subject] = rescore(pair_query, pair_subject)
        best, chosen = best_hits(every_score, np.arange(len(database), dtype=np.int64),
                                 database.order, n)
    elif waiting:
        best, chosen = _fold_pairs(best, chosen, np.concatenate(waiting, axis=1), rescore,
                                   database.order, n)
    return best, chosen


def _fold_pairs(best: np.ndarray, chosen: np.ndarray, pairs: np.ndarray, rescore: Callable,
                order: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fold_hits` of the held hits and the exact scores of ``pairs`` (rows: query,
    subject), laid out as one row of candidates a query, padded with -1."""
    pair_query, pair_subject = pairs[:, np.argsort(pairs[0], kind="stable")]
    score = rescore(pair_query, pair_subject)
    counts = np.bincount(pair_query, minlength=len(best))
    column = np.arange(len(pair_query)) - np.repeat(np.cumsum(counts) - counts, counts)
    row_score = np.full((len(best), int(counts.max())), -1, dtype=np.int64)
    row_subject = np.full_like(row_score, -1)
    row_score[pair_query, column] = score
    row_subject[pair_query, column] = pair_subject
    return fold_hits(best, chosen, row_score, row_subject, order, n)


def _tasks(offsets: np.ndarray, residues: int) -> list[tuple[int, int]]:
    """Consecutive ranges of sequences of about ``residues`` residues each (a sequence longer
    than that is a range of its own)."""
    count = len(offsets) - 1
    cuts = np.searchsorted(offsets[1:], np.arange(residues, int(offsets[-1]), residues),
                           side="left") + 1
    bounds = np.unique(np.concatenate(([0], np.minimum(cuts, count), [count])))
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


@functools.cache
def _parasail_c(kind: str, bits: int):
    """parasail's C functions for ``bits``-bit lanes of ``kind`` ("striped" or "scan") with
    integer arguments (pointers as 64-bit integers: the same calling convention), which Numba
    calls without the GIL: ``(sw_profile, result_is_saturated, result_get_score,
    result_free)``."""
    import parasail

    library = ctypes.CDLL(parasail._lib._name)
    pointer, integer = ctypes.c_int64, ctypes.c_int

    def function(name: str, restype, *argtypes):
        found = getattr(library, name)
        found.restype, found.argtypes = restype, list(argtypes)
        return found

    return (function(f"parasail_sw_{kind}_profile_{bits}", pointer, pointer, pointer, integer,
                     integer, integer),
            function("parasail_result_is_saturated", integer, pointer),
            function("parasail_result_get_score", integer, pointer),
            function("parasail_result_free", None, pointer))


#: parasail's lane widths in bits, narrowest first: a pair is rescored in the next one when its
#: score saturates a width.
_WIDTHS = (8, 16, 32)

#: The score :func:`_pair_scorers` write for a pair that the width cannot score exactly: its
#: score saturates the lanes, or the query has no profile of that width (see
#: :func:`gpualign.align._parasail.lanes_fit`).
_SATURATED = -1


def _widths() -> tuple[int, ...]:
    """The lane widths of the passes, from ``config.SEARCH_CPU_FIRST_BITS`` to 32 bits."""
    first = config.SEARCH_CPU_FIRST_BITS
    if first not in _WIDTHS:
        raise ValueError(f"config.SEARCH_CPU_FIRST_BITS={first!r}: one of {_WIDTHS}")
    return _WIDTHS[_WIDTHS.index(first):]


@functools.cache
def _pair_scorers(kind: str, bits: int) -> tuple[Callable, Callable]:
    """Numba functions scoring (query, subject) pairs with parasail's ``bits``-bit C kernels
    of ``kind`` on every core, :data:`_SATURATED` where that width cannot: every pair of a
    block (the first pass), and listed pairs (the rescoring in wider lanes); compiled once per
    process and only if called (they hold the functions' addresses)."""
    kernel, saturated, get_score, free = _parasail_c(kind, bits)

    @numba.njit(nogil=True)
    def score_pair(profile, query_length, subject, subject_length, gap_open,
                   gap_extend):  # pragma: no cover - compiled
        if query_length == 0 or subject_length == 0:
            return 0  # an empty side: no local alignment scores above 0
        if profile == 0:
            return _SATURATED  # no profile of this width: a wider one scores the query
        result = kernel(profile, subject, subject_length, gap_open, gap_extend)
        score = _SATURATED if saturated(result) != 0 else get_score(result)
        free(result)
        return score

    @numba.njit(parallel=True, nogil=True)
    def score_block(profiles, query_lengths, subject_texts, starts, lengths, gap_open,
                    gap_extend, out):  # pragma: no cover - compiled
        queries, subjects = out.shape
        # Subject-major: prange hands each thread a contiguous range of pairs, so that each
        # range holds every query (their lengths differ widely) with subjects of one length.
        for pair in numba.prange(queries * subjects):
            k = pair // queries
            q = pair - k * queries
            out[q, k] = score_pair(profiles[q], query_lengths[q], subject_texts + starts[k],
                                   lengths[k], gap_open, gap_extend)

    @numba.njit(parallel=True, nogil=True)
    def score_listed(profiles, query_lengths, subject_texts, starts, lengths, gap_open,
                     gap_extend, pair_query, pair_subject, out):  # pragma: no cover - compiled
        # The pairs come costliest first and are dealt round-robin to the threads' stripes:
        # each stripe gets a like share (contiguous ranges would give one thread the longest).
        stripes = min(numba.get_num_threads(), len(pair_query))
        for stripe in numba.prange(stripes):
            for p in range(stripe, len(pair_query), stripes):
                q, k = pair_query[p], pair_subject[p]
                out[p] = score_pair(profiles[q], query_lengths[q], subject_texts + starts[k],
                                    lengths[k], gap_open, gap_extend)

    return score_block, score_listed


def _parasail_scorers(queries: SequenceSet, subjects: SequenceSet, table: np.ndarray,
                      gap_open: int, gap_extend: int,
                      ) -> tuple[Callable[[int, int], np.ndarray],
                                 Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """Two functions scoring with parasail: ``score_block(lo, hi)``, every query against
    subjects ``lo .. hi - 1`` in the first width of :func:`_widths` (a profile per query,
    built here once), :data:`_SATURATED` where that saturates; and ``rescore(pair_query,
    pair_subject)``, the exact scores of such pairs (subjects as positions in ``subjects``)
    in the next widths, with a width's profiles built when the first pair of their query
    comes."""
    import parasail

    matrix = _parasail.matrix(queries.alphabet.symbols, table)
    kind = _parasail.kernel_kind(gap_open, gap_extend)
    widths = _widths()
    symbols = np.frombuffer(queries.alphabet.symbols, dtype=np.uint8)
    texts = [symbols[queries.codes_of(q)].tobytes() for q in range(len(queries))]
    query_lengths = queries.lengths.astype(np.int64)
    # parasail takes no empty sequence: an empty query has no profile (it scores 0 anyway).
    fits = {bits: _parasail.lanes_fit(bits, kind, query_lengths, table, gap_open, gap_extend)
            & (query_lengths > 0) for bits in widths}
    addresses = {bits: np.zeros(len(queries), dtype=np.int64) for bits in widths}
    # The C kernels read the profiles through their addresses: kept alive as long as the
    # functions returned (through build).
    kept: dict[tuple[int, int], Any] = {}

    def build(bits: int, wanted: list[int]) -> None:
        create = getattr(parasail, f"profile_create_{bits}")
        for q in wanted:
            if fits[bits][q] and (bits, q) not in kept:
                kept[bits, q] = create(texts[q], matrix)
                addresses[bits][q] = _address(kept[bits, q])

    build(widths[0], list(range(len(queries))))

    def score_block(lo: int, hi: int) -> np.ndarray:
        out = np.empty((len(queries), hi - lo), dtype=np.int64)
        base = subjects.offsets[lo]
        block_text = symbols[subjects.codes[base:subjects.offsets[hi]]]
        _pair_scorers(kind, widths[0])[0](
            addresses[widths[0]], query_lengths, block_text.ctypes.data,
            subjects.offsets[lo:hi] - base, subjects.lengths[lo:hi].astype(np.int32),
            gap_open, gap_extend, out)
        return out

    def rescore(pair_query: np.ndarray, pair_subject: np.ndarray) -> np.ndarray:
        listed, pair_listed = np.unique(pair_subject, return_inverse=True)
        taken = subjects.take(listed)
        text = symbols[taken.codes]
        lengths = taken.lengths.astype(np.int32)
        costliest = np.argsort(-(query_lengths[pair_query] * lengths[pair_listed]),
                               kind="stable")
        out = np.full(len(pair_query), _SATURATED, dtype=np.int64)
        for bits in widths[1:]:
            left = costliest[out[costliest] == _SATURATED]
            if not len(left):
                break
            build(bits, np.unique(pair_query[left]).tolist())
            scored = np.empty(len(left), dtype=np.int64)
            _pair_scorers(kind, bits)[1](
                addresses[bits], query_lengths, text.ctypes.data, taken.offsets[:-1],
                lengths, gap_open, gap_extend, pair_query[left], pair_listed[left], scored)
            out[left] = scored
        if (out == _SATURATED).any():
            raise OverflowError("a Smith-Waterman score saturates parasail's 32-bit lanes")
        return out

    return score_block, rescore


def _address(profile: Any) -> int:
    """The C address of a parasail profile (0 for None: an empty query)."""
    if profile is None:
        return 0
    return ctypes.cast(profile.pointer, ctypes.c_void_p).value or 0


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
