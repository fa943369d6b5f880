"""CPU backend of database search: the best Smith-Waterman scores of every query against every
database sequence.

With parasail (and the DNA or protein alphabet), one query profile each (16-bit lanes, built
once) runs through parasail's striped kernel (prefix scan for linear gaps, as
:mod:`gpualign.align` does) against the subjects of a task; the pairs whose score saturates 16
bits are rerun with 32-bit profiles, built only for the queries that have such pairs, so
scores are exact. parasail's C functions are called
from a Numba loop over the task's pairs on every core, with no Python (and no GIL) per pair:
through parasail's Python wrappers, the wrapping of each call held the GIL and threads scaled
to about one core. Tasks cover consecutive subjects of ``config.SEARCH_CPU_TASK_RESIDUES``
residues. Without parasail, the Numba DP of :mod:`gpualign.align` scores each task's pairs on
every core.
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

    # Keeping every subject (align_one_to_many without n): rank once, at the end.
    everything = n >= len(database)
    scores = []
    for lo, hi in _tasks(offsets, config.SEARCH_CPU_TASK_RESIDUES):
        block = score_block(lo, hi)
        if everything:
            scores.append(block)
        else:
            block_score, block_chosen = best_hits(block, np.arange(lo, hi, dtype=np.int64),
                                                  database.order, n)
            best, chosen = fold_hits(best, chosen, block_score, block_chosen, database.order,
                                     n)
        if progress is not None:
            progress.cells_done(query_residues * int(offsets[hi] - offsets[lo]))
    if everything and scores:
        best, chosen = best_hits(np.concatenate(scores, axis=1),
                                 np.arange(len(database), dtype=np.int64), database.order, n)
    return best, chosen


def _tasks(offsets: np.ndarray, residues: int) -> list[tuple[int, int]]:
    """Consecutive ranges of sequences of about ``residues`` residues each (a sequence longer
    than that is a range of its own)."""
    count = len(offsets) - 1
    cuts = np.searchsorted(offsets[1:], np.arange(residues, int(offsets[-1]), residues),
                           side="left") + 1
    bounds = np.unique(np.concatenate(([0], np.minimum(cuts, count), [count])))
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


@functools.cache
def _parasail_c(kind: str):
    """parasail's C functions of ``kind`` ("striped" or "scan") with integer arguments (pointers
    as 64-bit integers: the same calling convention), which Numba calls without the GIL:
    ``(sw_profile_16, sw_profile_32, result_is_saturated, result_get_score, result_free)``."""
    import parasail

    library = ctypes.CDLL(parasail._lib._name)
    pointer, integer = ctypes.c_int64, ctypes.c_int

    def function(name: str, restype, *argtypes):
        found = getattr(library, name)
        found.restype, found.argtypes = restype, list(argtypes)
        return found

    return (function(f"parasail_sw_{kind}_profile_16", pointer, pointer, pointer, integer, integer,
                     integer),
            function(f"parasail_sw_{kind}_profile_32", pointer, pointer, pointer, integer, integer,
                     integer),
            function("parasail_result_is_saturated", integer, pointer),
            function("parasail_result_get_score", integer, pointer),
            function("parasail_result_free", None, pointer))


#: The score :func:`_pair_scorers`' 16-bit pass writes for a pair that saturates its lanes.
_SATURATED = -1


@functools.cache
def _pair_scorers(kind: str) -> tuple[Callable, Callable]:
    """Numba functions scoring (query, subject) pairs with parasail's C kernels of ``kind`` on
    every core: every pair of a block in 16 bits (:data:`_SATURATED` where that saturates),
    then the listed pairs in 32 bits; compiled once per process (they hold the functions'
    addresses)."""
    narrow, wide, saturated, get_score, free = _parasail_c(kind)

    @numba.njit(parallel=True, nogil=True)
    def score_pairs(profiles, subject_texts, starts, lengths, gap_open, gap_extend,
                    out):  # pragma: no cover - compiled
        queries, subjects = out.shape
        # Subject-major: prange hands each thread a contiguous range of pairs, so that each
        # range holds every query (their lengths differ widely) with subjects of one length.
        for pair in numba.prange(queries * subjects):
            k = pair // queries
            q = pair - k * queries
            if profiles[q] == 0 or lengths[k] == 0:
                continue  # an empty side: no local alignment scores above 0
            result = narrow(profiles[q], subject_texts + starts[k], lengths[k], gap_open,
                            gap_extend)
            out[q, k] = _SATURATED if saturated(result) != 0 else get_score(result)
            free(result)

    @numba.njit(parallel=True, nogil=True)
    def rescore_pairs(profiles, subject_texts, starts, lengths, gap_open, gap_extend,
                      pair_query, pair_subject, out):  # pragma: no cover - compiled
        for p in numba.prange(len(pair_query)):
            q, k = pair_query[p], pair_subject[p]
            result = wide(profiles[q], subject_texts + starts[k], lengths[k], gap_open,
                          gap_extend)
            out[q, k] = get_score(result)
            free(result)

    return score_pairs, rescore_pairs


def _parasail_block(queries: SequenceSet, subjects: SequenceSet, table: np.ndarray,
                    gap_open: int, gap_extend: int) -> Callable[[int, int], np.ndarray]:
    """The function that scores every query against subjects ``lo .. hi - 1`` with parasail:
    a 16-bit profile per query, built here once, and a 32-bit one for each query with a pair
    that saturates 16 bits, built when the first such pair comes."""
    import parasail

    matrix = _parasail.matrix(queries.alphabet.symbols, table)
    score_pairs, rescore_pairs = _pair_scorers(_parasail.kernel_kind(gap_open, gap_extend))
    symbols = np.frombuffer(queries.alphabet.symbols, dtype=np.uint8)
    texts = [symbols[queries.codes_of(q)].tobytes() for q in range(len(queries))]
    # parasail takes no empty sequence; an empty query scores 0 everywhere (profile 0).
    narrow = [parasail.profile_create_16(text, matrix) if text else None for text in texts]
    wide: dict[int, Any] = {}
    narrow_profiles = np.array([_address(profile) for profile in narrow], dtype=np.int64)
    wide_profiles = np.zeros(len(queries), dtype=np.int64)

    def score_block(lo: int, hi: int) -> np.ndarray:
        out = np.zeros((len(queries), hi - lo), dtype=np.int64)
        base = subjects.offsets[lo]
        block_text = symbols[subjects.codes[base:subjects.offsets[hi]]]
        starts = subjects.offsets[lo:hi] - base
        lengths = subjects.lengths[lo:hi].astype(np.int32)
        score_pairs(narrow_profiles, block_text.ctypes.data, starts, lengths, gap_open,
                    gap_extend, out)
        pair_query, pair_subject = np.nonzero(out == _SATURATED)
        if len(pair_query):
            for q in np.unique(pair_query).tolist():
                if q not in wide:
                    wide[q] = parasail.profile_create_32(texts[q], matrix)
                    wide_profiles[q] = _address(wide[q])
            rescore_pairs(wide_profiles, block_text.ctypes.data, starts, lengths, gap_open,
                          gap_extend, pair_query, pair_subject, out)
        return out

    # The C kernels read the profiles through their addresses: they must live as long as this.
    score_block.profiles = (narrow, wide)
    return score_block


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
