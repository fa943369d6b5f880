"""Database search beyond one machine: :func:`gpualign.search` with a Dask ``client``.

The database (sorted by length) is cut into partitions of consecutive sorted positions, about
``config.SEARCH_PARTITION_RESIDUES`` residues each. Every partition is one task: a worker
searches it with its own backend (CUDA where it has a GPU, as :func:`gpualign.allpairs`'
workers choose) and sends back the best ``n`` of each query there, as ``(score, sorted
position)``; the client merges them with :func:`~gpualign.search.database.best_hits`, the
backends' own top-n rule, so the hits equal those of a search on one machine. The queries go to
the cluster once (see :func:`gpualign._dask.run_pulled`), a partition with its task. Tasks are
pure: Dask runs the task of a worker that dies again elsewhere, and nothing is lost.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import config
from .._dask import run_pulled
from .._progress import Progress
from ..sequences import SequenceSet
from .database import Database, fold_hits, partition_bounds
from .engine import top_scores_for

__all__ = ["cluster_top_scores"]

#: Partitions a worker holds per thread: the one it searches and the next, so that a GPU
#: worker never waits for the scheduler (or the partition's transfer) between partitions.
_PARTITIONS_IN_FLIGHT_PER_THREAD = 2


def cluster_top_scores(client: Any, queries: SequenceSet, database: Database,
                       table: np.ndarray, gap_open: int, gap_extend: int, n: int,
                       backend: str, progress: Progress | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The backends' ``top_scores`` (see :mod:`gpualign.search._cpu`) on the Dask cluster of
    ``client``: a task per partition of the database, each searched by its worker's backend
    (``backend`` is resolved there), the best ``n`` of each query merged here as the tasks
    finish (``progress`` advances by each one's cells).

    Returns
    -------
    score, subject : np.ndarray of int64, shape (len(queries), n)
        As ``top_scores``: identical to a search on one machine.

    Examples
    --------
    >>> from gpualign.allpairs.cluster import local_cluster
    >>> from gpualign.scoring import Scoring
    >>> db = Database.from_sequences(["TTTT", "ACGTACGT", "GGACGTGG"])
    >>> queries = SequenceSet.from_sequences(["ACGT"])
    >>> table, _ = Scoring().table(queries.alphabet)
    >>> with local_cluster(1, backend="cpu") as client, config.override(
    ...         SEARCH_PARTITION_RESIDUES=8):
    ...     score, subject = cluster_top_scores(client, queries, db, table, 5, 2, 2, "cpu")
    >>> score.tolist(), db.order[subject].tolist()
    ([[8, 8]], [[1, 2]])
    """
    best = np.full((len(queries), n), -1, dtype=np.int64)
    chosen = np.full((len(queries), n), -1, dtype=np.int64)
    subjects = database.sequences
    offsets = subjects.offsets
    query_residues = int(queries.lengths.sum())
    job = (table, gap_open, gap_extend, n, backend)

    def arguments(bounds: tuple[int, int]) -> tuple:
        lo, hi = bounds
        return subjects.view(lo, hi), database.order[lo:hi], lo, job

    for (lo, hi), (part_best, part_chosen) in run_pulled(
            client, _partition_top_scores, (queries,),
            partition_bounds(offsets, max(1, int(config.SEARCH_PARTITION_RESIDUES))),
            arguments, "search-partition", _PARTITIONS_IN_FLIGHT_PER_THREAD):
        # best_hits orders by score, then input index: a total order, so the merge does not
        # depend on the order in which the partitions finish.
        best, chosen = fold_hits(best, chosen, part_best, part_chosen, database.order, n)
        if progress is not None:
            progress.cells_done(query_residues * int(offsets[hi] - offsets[lo]))
    return best, chosen


def _partition_top_scores(queries: SequenceSet, subjects: SequenceSet, order: np.ndarray,
                          first: int, job: tuple) -> tuple[np.ndarray, np.ndarray]:
    """A task: the best ``n`` of each query in the partition of the database that starts at
    sorted position ``first``, its subjects as sorted positions of the whole database."""
    table, gap_open, gap_extend, n, backend = job
    score, subject = top_scores_for(backend)(queries, Database(subjects, order), table,
                                                 gap_open, gap_extend, n)
    return score, np.where(subject >= 0, subject + first, -1)
