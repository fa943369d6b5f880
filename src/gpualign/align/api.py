"""Public API of pairwise alignment: :func:`align`."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import config
from .._checks import integer
from .._progress import Progress, ProgressArg
from .._tables import alignment_table
from ..backend import resolve_backend
from ..cigar import PackedCigars
from ..codes import (
    ALIGN_GLOBAL,
    ALIGN_LOCAL,
    ALIGN_MODE_NAMES,
    ALIGN_SEMI_GLOBAL,
    ALIGN_TASKS,
    align_mode,
    check_task,
)
from ..pairs import pair_indices, pair_sets
from ..scoring import Scoring
from ..search.database import Database
from ..search.engine import top_scores_for
from ..sequences import Alphabet, SequenceSet, as_sequence_set, resolve_alphabet
from ..streaming import Batch, iter_batches
from ._band import band_results

__all__ = ["AlignResult", "align", "align_one_to_many"]


@dataclass
class AlignResult:
    """Results of :func:`align`, one entry per pair. Coordinates are 0-based, half-open.

    Attributes
    ----------
    score : np.ndarray of int64
        Score of an optimal alignment.
    query_end, target_end : np.ndarray of int64
        Where it ends (``task`` "end" or "path"; -1 for "score"). On ties: the smaller target
        end, then the smaller query end.
    query_start, target_start : np.ndarray of int64
        Where it starts (``task="path"``; -1 otherwise).
    cigar : list of str, PackedCigars, or None
        Extended CIGAR (``=``, ``X``, ``I`` consumes the query, ``D`` the target) of
        ``query[query_start:query_end]`` against ``target[target_start:target_end]``
        (``task="path"``; empty for an empty alignment): strings, or arrays of runs
        (:class:`gpualign.cigar.PackedCigars`, a sequence of the same strings) with
        ``packed=True``.
    identity : np.ndarray of float64 or None
        ``=`` columns / alignment columns (``task="path"``; 0 for an empty alignment).
    """

    score: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    cigar: list[str] | PackedCigars | None
    identity: np.ndarray | None
    mode: str
    task: str
    scoring: Scoring
    query_index: np.ndarray | None = field(default=None, repr=False)
    target_index: np.ndarray | None = field(default=None, repr=False)
    #: Names of the targets (:func:`align_one_to_many`, which may stream them from a file).
    target_name: list[str] | None = field(default=None, repr=False)
    #: Name of the alphabet the sequences were aligned in (inferred for ``"auto"``).
    alphabet: str = "dna"

    def __len__(self) -> int:
        return len(self.score)

    def table(self, query_names: Sequence[str],
              target_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
        """The alignments as a table: the header and columns that ``gpualign align`` writes.

        Parameters
        ----------
        query_names, target_names : sequence of str
            Names of the queries and the targets (e.g. ``SequenceSet.names``), looked up with
            ``query_index`` and ``target_index``.

        Returns
        -------
        header : tuple of str
            ``query, target, identity, score, query_start, query_end, target_start,
            target_end, cigar``.
        columns : list of list or np.ndarray
            One per header entry, one value per pair: identity as text with four decimals;
            None where a value was not computed (starts, CIGAR and identity without
            ``task="path"``, ends with ``task="score"``), which
            :func:`gpualign.io.write_tsv` writes as ``*``.

        Examples
        --------
        >>> import sys
        >>> from gpualign.io import write_tsv
        >>> r = align(["ACGTACGT"], ["TTACGAACGTTT"], mode="semi-global", task="path")
        >>> write_tsv(sys.stdout, *r.table(["read"], ["window"]))
        ... # doctest: +NORMALIZE_WHITESPACE
        query  target  identity  score  query_start  query_end  target_start  target_end  cigar
        read   window  0.8750    11     0            8          2             10          3=1X4=
        """
        return alignment_table(self, query_names, target_names)


def _backend(backend: str):
    """The backend module for ``backend``: imported on first use, so a CUDA run never loads
    Numba."""
    if resolve_backend(backend) == "cuda":
        from . import _cuda
        return _cuda
    from . import _cpu
    return _cpu


def _scoring(scoring: Scoring | None) -> Scoring:
    """``scoring``, checked, or the default."""
    scoring = Scoring() if scoring is None else scoring
    if not isinstance(scoring, Scoring):
        raise TypeError(f"scoring must be a gpualign.Scoring, got {type(scoring).__name__}")
    return scoring


def align(queries: Any, targets: Any, *, mode: str = "global", scoring: Scoring | None = None,
          task: str = "score", alphabet: str | Alphabet = "auto", invalid: str = "error",
          backend: str = "auto", pairs: tuple[Any, Any] | None = None,
          progress: ProgressArg = False, packed: bool = False, band: Any = None,
          ) -> AlignResult:
    """Align ``queries[i]`` with ``targets[i]`` for every ``i`` (or the index ``pairs``).

    Parameters
    ----------
    queries, targets : SequenceSet, pathlib.Path to FASTA/FASTQ, or list of str/bytes
        Plain inputs are encoded with ``alphabet``.
    mode : {"global", "local", "semi-global", "overlap"} (or "NW", "SW")
        ``global``: Needleman-Wunsch, end to end. ``local``: Smith-Waterman. ``semi-global``:
        the query end to end, gaps at both ends of the target free (reads against windows;
        parasail ``sg_dx``). ``overlap``: all four ends free (parasail ``sg``).
    scoring : Scoring
        Substitution scores and gap costs (default ``Scoring()``: +2/-3, gap 5 + 2 per extra
        symbol). A gap of length L costs ``gap_open + (L-1)*gap_extend``, as in parasail.
    task : {"score", "end", "path"}
        ``end`` adds where the alignment ends; ``path`` also where it starts, its CIGAR and
        identity.
    alphabet, invalid : as in :func:`gpualign.edit_distance`; "auto" is protein for a scoring
        with a substitution matrix.
    backend : {"auto", "cpu", "cuda"}
        ``"cuda"`` computes scores, end cells and paths (CIGARs) on the GPU. "auto": CUDA
        when a GPU is present.
    pairs : (query_index, target_index), optional
        Compare these index pairs instead of pairing by position.
    progress : bool or callable
        True: a progress bar on stderr (shown once the run outlasts a second) over the DP
        cells of the call (query length x target length, summed over the pairs); a function
        is called as ``progress(done, total)`` instead. It moves as batches of pairs finish
        and, for a long pair, as its score passes end and level by level of its path in
        linear space.
    packed : bool
        ``task="path"``: the CIGARs as arrays of runs (:class:`gpualign.cigar.PackedCigars`)
        instead of a list of strings, for many pairs whose CIGARs are processed as numbers
        (no string is made per pair; :func:`gpualign.cigar.op_counts` and
        :func:`gpualign.cigar.cigar_runs` read the arrays).
    band : int or array of int, optional
        ``task="path"``, modes "global" and "semi-global": compute each pair's DP only in a
        band of diagonals, ``band`` (one for all, or one a pair) wider on each side than the
        diagonals that end-to-end placements use (semi-global: target start 0 to
        ``n - m``; global: between 0 and ``n - m``). The answer is the full DP's (the same
        score, ends and path; pairs so large that the full DP finds their path in linear
        space get an optimal path as it does, which may differ from its among equal ones): a
        pair whose band does not prove that no path outside it scores as well (its optimum
        against the best a path with ``band + 1`` gaps can score) is aligned in full. Much
        faster for pairs that align near those diagonals, such as reads in windows around
        their placements.

    Returns
    -------
    AlignResult

    Examples
    --------
    >>> from gpualign import Scoring
    >>> r = align(["ACGTACGT"], ["TTACGAACGTTT"], mode="semi-global", task="path",
    ...           scoring=Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2))
    >>> int(r.score[0]), int(r.target_start[0]), int(r.target_end[0]), r.cigar[0]
    (11, 2, 10, '3=1X4=')
    >>> align(["ACGTACGT"], ["TTACGAACGTTT"], mode="semi-global", task="path", band=1,
    ...       scoring=Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)).cigar
    ['3=1X4=']
    """
    mode_code = align_mode(mode)
    check_task(task, ALIGN_TASKS)
    scoring = _scoring(scoring)
    engine = _backend(backend)
    qset, tset = pair_sets(queries, targets, alphabet, invalid,
                           matrix=scoring.matrix_scores is not None)
    q_index, t_index = pair_indices(qset, tset, pairs, "align", "align_one_to_many")
    scoring.check_covered(qset, "queries")
    scoring.check_covered(tset, "targets")
    band = _band_widths(band, len(q_index), mode_code, task)
    cells = qset.lengths[q_index].astype(np.int64) * tset.lengths[t_index]
    with Progress(int(cells.sum()), progress, "align", "cell") as counter:
        return _aligned(engine, qset, tset, q_index, t_index, scoring, mode_code, task, counter,
                        packed=bool(packed), band=band)


def _band_widths(band: Any, count: int, mode_code: int, task: str) -> np.ndarray | None:
    """:func:`align`'s ``band`` as one int64 a pair (None without), checked."""
    if band is None:
        return None
    if task != "path" or mode_code not in (ALIGN_GLOBAL, ALIGN_SEMI_GLOBAL):
        raise ValueError(f"band: for task='path' in the modes 'global' and 'semi-global', got "
                         f"task={task!r}, mode={ALIGN_MODE_NAMES[mode_code]!r}")
    values = np.asarray(band)
    if values.ndim > 1 or (values.ndim == 1 and len(values) != count) or \
            not np.issubdtype(values.dtype, np.integer) or (values < 0).any():
        raise ValueError(f"band: a non-negative int or one for each of the {count} pairs")
    return np.broadcast_to(values.astype(np.int64), (count,))


def align_encoded(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
                  t_index: np.ndarray, scoring: Scoring, mode: str, task: str, backend: str,
                  packed: bool = False, known_scores: np.ndarray | None = None,
                  meanwhile: Callable[[], None] | None = None) -> AlignResult:
    """:func:`align` of the index pairs ``(q_index, t_index)`` of sets already encoded in one
    alphabet that ``scoring`` covers, with no copy and no check of them: for callers that
    checked them (the search aligns its hits in the database it searched, and on the GPU
    reads the copies it left there). ``known_scores``: the pairs' scores where the caller has
    them (a search's hits), which lets a GPU path stop early (the backends' ``align_pairs``).
    ``meanwhile``: the caller's own work, called exactly once before this returns: while the
    GPU computes the paths where the backend can (the search builds its result meanwhile),
    else after the alignments.

    Examples
    --------
    >>> sets = SequenceSet.from_sequences(["ACGT", "TTACGA"])
    >>> r = align_encoded(sets, sets, np.array([0]), np.array([1]), Scoring(), "local",
    ...                   "path", "cpu")
    >>> int(r.score[0]), r.cigar
    (6, ['3='])
    """
    pending = [] if meanwhile is None else [meanwhile]

    def run_pending() -> None:  # the caller's work, once: by the backend, or after it
        while pending:
            pending.pop()()

    result = _aligned(_backend(backend), qset, tset, np.asarray(q_index, dtype=np.int64),
                      np.asarray(t_index, dtype=np.int64), scoring, align_mode(mode), task,
                      None, packed, known_scores, run_pending)
    run_pending()
    return result


def _aligned(engine, qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
             t_index: np.ndarray, scoring: Scoring, mode_code: int, task: str,
             counter: Progress | None, packed: bool = False,
             known_scores: np.ndarray | None = None,
             meanwhile: Callable[[], None] | None = None,
             band: np.ndarray | None = None) -> AlignResult:
    """:func:`align` of checked, encoded pairs on the backend module ``engine`` (in bands of
    ``band`` diagonals where given: :mod:`._band`)."""
    table, _ = scoring.table(qset.alphabet)
    if band is not None:
        found = band_results(engine, qset, tset, q_index, t_index, table, scoring.gap_open,
                             scoring.gap_extend, mode_code, band, counter, packed)
    else:
        found = engine.align_pairs(qset, tset, q_index, t_index, table, scoring.gap_open,
                                   scoring.gap_extend, mode_code, task, counter, packed=packed,
                                   known_scores=known_scores, meanwhile=meanwhile)
    score, q_start, q_end, t_start, t_end, cigar, identity = found
    return AlignResult(score, q_start, q_end, t_start, t_end, cigar, identity,
                       ALIGN_MODE_NAMES[mode_code], task, scoring, q_index, t_index,
                       alphabet=qset.alphabet.name)


#: The search databases (sorted batches) of target sets in memory, by the set, then by the
#: batch's bounds: a set searched again (one query at a time) is not sorted again, and stays on
#: the GPU as the search backend keeps a database it has seen.
_SORTED_BATCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def align_one_to_many(query: Any, targets: Any, *, mode: str = "local",
                      scoring: Scoring | None = None, task: str = "score",
                      n: int | None = None, min_score: int | None = None,
                      alphabet: str | Alphabet = "auto", invalid: str = "error",
                      backend: str = "auto", progress: ProgressArg = False) -> AlignResult:
    """Align one query with every target and keep the best: the ``n`` highest scores and/or
    those ``>= min_score`` (all targets when both are None), best first (ties: lower target
    index). Targets from a file or an iterator are streamed in batches, so the collection need
    not fit in memory; only the kept targets are held for the final ``task``.

    ``mode="local"`` (database search) scores the targets with the engine of
    :func:`gpualign.search`, batch by batch: each batch sorted by length, its best ``n`` kept.
    The sorted batches of a :class:`SequenceSet` of targets are kept while the set lives (on
    the GPU too, while they fit), so that a loop of queries over one set sorts and copies it
    once; that holds a second copy of its residues.

    Parameters
    ----------
    query : str, bytes, array of codes, or a SequenceSet of one sequence
    targets : SequenceSet, pathlib.Path to FASTA/FASTQ, or iterable of sequences
    mode, scoring, task, alphabet, invalid, backend : as in :func:`align`
        (``mode`` defaults to ``"local"``: database search).
    n : int, optional
        Keep at most this many targets.
    min_score : int, optional
        Keep only targets scoring at least this.
    progress : bool or callable
        As in :func:`align`, over the cells of the search (the query against every target);
        the total is None (a bar that counts) when the targets are streamed. The final
        ``task`` on the kept targets is not counted.

    Returns
    -------
    AlignResult
        One entry per kept target; ``target_index`` is its position in ``targets``,
        ``target_name`` its name, ``query_index`` is 0.

    Examples
    --------
    >>> hits = align_one_to_many("ACGTACGT", ["TTTT", "ACGTTCGT", "GGACGTACGTGG"], n=2,
    ...                          task="path")
    >>> hits.target_index.tolist(), hits.score.tolist(), hits.cigar
    ([2, 1], [16, 11], ['8=', '4=1X3='])
    """
    if n is not None:
        n = integer(n, "n", 1)
    if min_score is not None:
        min_score = integer(min_score, "min_score")
    mode_code = align_mode(mode)
    check_task(task, ALIGN_TASKS)
    scoring = _scoring(scoring)
    query = query if isinstance(query, SequenceSet) else [query]
    alpha, (query, targets) = resolve_alphabet(alphabet, query, targets,
                                               matrix=scoring.matrix_scores is not None)
    qset = as_sequence_set(query, alpha, invalid=invalid, role="query")
    if len(qset) != 1:
        raise ValueError(f"query: a SequenceSet of {len(qset)} sequences; pass one sequence")
    kept_index = np.zeros(0, dtype=np.int64)
    kept_score = np.zeros(0, dtype=np.int64)
    kept: dict[int, tuple[np.ndarray, str]] = {}
    engine = _backend(backend)
    top_scores = top_scores_for(backend) if mode_code == ALIGN_LOCAL else None
    scoring.check_covered(qset, "queries")
    total = int(qset.lengths[0]) * int(targets.lengths.sum()) \
        if isinstance(targets, SequenceSet) else None
    with Progress(total, progress, "align", "cell") as counter:
        for batch in iter_batches(targets, alpha, invalid=invalid, role="targets",
                                  batch_residues=config.ALIGN_CPU_BATCH_RESIDUES):
            scoring.check_covered(batch.sequences, "targets")
            if top_scores is None:
                zeros = np.zeros(len(batch), dtype=np.int64)
                found = np.arange(len(batch))
                scores = _aligned(engine, qset, batch.sequences, zeros, found, scoring,
                                  mode_code, "score", counter).score
            else:
                found, scores = _searched(top_scores, qset, _sorted_batch(targets, batch),
                                          scoring, n, counter)
            kept_index, kept_score = _keep(kept, kept_index, kept_score, batch, found, scores,
                                           min_score, n)
    chosen = kept_index.tolist()
    subjects = SequenceSet.from_codes([kept[i][0] for i in chosen],
                                      [kept[i][1] for i in chosen], alpha)
    zeros = np.zeros(len(chosen), dtype=np.int64)
    result = align(qset, subjects, mode=ALIGN_MODE_NAMES[mode_code], scoring=scoring, task=task,
                   backend=backend, pairs=(zeros, np.arange(len(chosen))))
    result.target_index = kept_index
    result.target_name = subjects.names
    return result


def _sorted_batch(targets: Any, batch: Batch) -> Database:
    """The search database of ``batch``: kept in :data:`_SORTED_BATCHES` for a set in memory,
    made anew for a batch read from a file or an iterable."""
    if not isinstance(targets, SequenceSet):
        return Database.from_set(batch.sequences)
    databases = _SORTED_BATCHES.setdefault(targets, {})
    bounds = (batch.start, batch.start + len(batch))
    if bounds not in databases:
        databases[bounds] = Database.from_set(batch.sequences)
    return databases[bounds]


def _searched(top_scores, qset: SequenceSet, database: Database, scoring: Scoring,
              n: int | None, counter: Progress) -> tuple[np.ndarray, np.ndarray]:
    """The best ``n`` local scores of the query ``qset`` in ``database`` (a batch; all of them
    for None, which ``min_score`` then filters) by the search backend's ``top_scores``: the
    targets' positions in the batch and their scores, best first (ties: the lower position)."""
    table, _ = scoring.table(qset.alphabet)
    keep = len(database) if n is None else min(n, len(database))
    score, subject = top_scores(qset, database, table, scoring.gap_open, scoring.gap_extend,
                                keep, counter)
    found = subject[0] >= 0
    return database.order[subject[0][found]], score[0][found]


def _keep(kept: dict[int, tuple[np.ndarray, str]], kept_index: np.ndarray,
          kept_score: np.ndarray, batch: Batch, found: np.ndarray, scores: np.ndarray,
          min_score: int | None, n: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The best targets so far, with those of ``batch`` at positions ``found`` scoring
    ``scores``: their indices and scores, best first, and their codes and names in ``kept``
    (updated in place)."""
    if min_score is not None:
        passed = scores >= min_score
        found, scores = found[passed], scores[passed]
    index = np.concatenate((kept_index, batch.start + found))
    score = np.concatenate((kept_score, scores))
    order = np.lexsort((index, -score))[:n]
    kept_index, kept_score = index[order], score[order]
    keep = set(kept_index.tolist())
    for i in [i for i in kept if i not in keep]:
        del kept[i]
    for i in keep - kept.keys():  # new in the list: from this batch
        position = i - batch.start
        kept[i] = (batch.sequences.codes_of(position).copy(),
                   batch.sequences.names[position])
    return kept_index, kept_score
