"""Public edit-distance API: pairwise batches and query x target matrices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from .. import config
from .._progress import Progress, ProgressArg
from .._tables import EDIT_COLUMNS, available, named
from ..backend import resolve_backend
from ..cigar import PackedCigars
from ..codes import EDIT_MODE_NAMES, EDIT_TASKS, check_task, edit_mode
from ..pairs import pair_indices, pair_sets
from ..sequences import Alphabet
from ._shared import needs_linear

__all__ = ["EditMatrix", "EditResult", "edit_distance", "edit_distance_matrix"]


@dataclass
class EditResult:
    """Results of :func:`edit_distance`, one entry per pair.

    Attributes
    ----------
    distance : np.ndarray of int32
        Edit distance, or -1 where it exceeds ``k``.
    target_start, target_end : np.ndarray of int32
        0-based half-open target range of an optimal alignment (``task`` "locations" or
        "path"; -1 for pairs over ``k``, and a read-only array of -1 for ``task="distance"``).
        For infix mode the end is the leftmost optimal end, the start the leftmost start of an
        optimal alignment ending there.
    cigar : PackedCigars or None
        Extended CIGAR (``=``, ``X``, ``I`` consumes the query, ``D`` the target) of the
        alignment of the query with ``target[target_start:target_end]`` (``task="path"``;
        None for pairs over ``k``), held as arrays of runs
        (:class:`gpualign.cigar.PackedCigars`): ``cigar[p]`` is pair ``p``'s text, and
        ``cigar.tolist()`` the text of all pairs, built at once. None for the other tasks.
    alphabet : str
        Name of the alphabet the sequences were compared in (inferred for ``"auto"``).
    """

    distance: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    cigar: PackedCigars | None
    mode: str
    task: str
    k: int | None = None
    query_index: np.ndarray | None = field(default=None, repr=False)
    target_index: np.ndarray | None = field(default=None, repr=False)
    alphabet: str = "dna"

    def __len__(self) -> int:
        return len(self.distance)

    def table(self, query_names: Sequence[str],
              target_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
        """The pairs as a table: the header and columns that ``gpualign edit`` writes.

        Parameters
        ----------
        query_names, target_names : sequence of str
            Names of the queries and the targets (e.g. ``SequenceSet.names``), looked up with
            ``query_index`` and ``target_index``.

        Returns
        -------
        header : tuple of str
            ``query, target, distance, target_start, target_end, cigar``.
        columns : list of list or np.ndarray
            One per header entry, one value per pair; None where a value is not available
            (locations with ``task="distance"`` or over ``k``, CIGARs without ``task="path"``),
            which :func:`gpualign.io.write_tsv` writes as ``*``.

        Examples
        --------
        >>> import sys
        >>> from gpualign.io import write_tsv
        >>> r = edit_distance(["ACGT", "ACGT"], ["AGT", "TTACCTTT"], mode="infix",
        ...                   task="path", backend="cpu")
        >>> write_tsv(sys.stdout, *r.table(["q1", "q2"], ["t1", "t2"]))
        ... # doctest: +NORMALIZE_WHITESPACE
        query  target  distance  target_start  target_end  cigar
        q1     t1      1         0             3           1=1I2=
        q2     t2      1         2             6           2=1X1=
        """
        return EDIT_COLUMNS, [
            named(query_names, self.query_index), named(target_names, self.target_index),
            self.distance, available(self.target_start), available(self.target_end),
            self.cigar.tolist() if self.cigar is not None else [None] * len(self)]


@dataclass
class EditMatrix:
    """Sparse result of :func:`edit_distance_matrix` with a cutoff: the pairs within ``k``.

    Attributes
    ----------
    query_index, target_index : np.ndarray of int64
        Row and column of each pair, sorted by query then target.
    distance : np.ndarray of int32
    shape : (number of queries, number of targets)
    alphabet : str
        Name of the alphabet the sequences were compared in (inferred for ``"auto"``).
    """

    query_index: np.ndarray
    target_index: np.ndarray
    distance: np.ndarray
    shape: tuple[int, int]
    k: int
    alphabet: str = "dna"

    def __len__(self) -> int:
        return len(self.distance)

    def to_dense(self, fill: int = -1) -> np.ndarray:
        """Dense int32 matrix with ``fill`` where the distance exceeds ``k``."""
        dense = np.full(self.shape, fill, dtype=np.int32)
        dense[self.query_index, self.target_index] = self.distance
        return dense

    def table(self, query_names: Sequence[str],
              target_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
        """The pairs within ``k`` as a table: the header and columns of
        :meth:`EditResult.table`, with no locations or CIGARs (None, written ``*``).

        Parameters
        ----------
        query_names, target_names : sequence of str
            Names of the queries and the targets, looked up with ``query_index`` and
            ``target_index``.

        Returns
        -------
        header : tuple of str
        columns : list of list or np.ndarray

        Examples
        --------
        >>> import sys
        >>> from gpualign.io import write_tsv
        >>> m = edit_distance_matrix(["ACGT", "TTTT"], ["ACG", "TTT", "ACGT"], k=1,
        ...                          backend="cpu")
        >>> write_tsv(sys.stdout, *m.table(["a", "b"], ["x", "y", "z"]))
        ... # doctest: +NORMALIZE_WHITESPACE
        query  target  distance  target_start  target_end  cigar
        a      x       1         *             *           *
        a      z       0         *             *           *
        b      y       1         *             *           *
        """
        missing = [None] * len(self)
        return EDIT_COLUMNS, [
            named(query_names, self.query_index), named(target_names, self.target_index),
            self.distance, missing, missing, missing]


def _normalize_k(k: int | None) -> int:
    if k is None:
        return -1
    if isinstance(k, (bool, float)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer or None, got {k!r}")
    if k < 0:
        raise ValueError(f"k must be >= 0 (got {k}); use k=None for no cutoff")
    return int(k)


def _backend(backend: str) -> ModuleType:
    """The backend module for ``backend``: imported on first use, so a CUDA run never loads
    Numba."""
    if resolve_backend(backend) == "cuda":
        from . import _cuda

        return _cuda
    from . import _cpu

    return _cpu


def _counter(any_long: bool, cells: int, pairs: int, progress: ProgressArg) -> Progress:
    """The progress of comparing ``pairs`` pairs of ``cells`` DP cells in all: in cells when
    a pair is long (one pair of a genome would hold a bar over pairs at 0 until it ends; the
    backends then move it as its passes and CIGAR levels end), else in pairs."""
    if any_long:
        return Progress(cells, progress, "edit", "cell")
    return Progress(pairs, progress, "edit", "pair")


def _compare_pairs(engine: ModuleType, qset, tset, q_index, t_index, mode, k, task,
                   counter: Progress, positional=False):
    """Run the backend module ``engine`` on index pairs; the engine behind both public
    functions. ``positional``: the pairs are ``queries[i]`` with ``targets[i]``."""
    distance, start, end, cigar = engine.edit_pairs(qset, tset, q_index, t_index, mode, k, task,
                                                    progress=counter, positional=positional)
    if task == "distance":
        # Read-only -1s that take no memory: the task reports no locations.
        start = end = np.broadcast_to(np.int32(-1), distance.shape)
    return distance, start, end, cigar


def edit_distance(queries: Any, targets: Any, *, mode: str = "global", k: int | None = None,
                  task: str = "distance", alphabet: str | Alphabet = "auto",
                  invalid: str = "error", backend: str = "auto", progress: ProgressArg = False,
                  pairs: tuple[Any, Any] | None = None) -> EditResult:
    """Levenshtein distance of ``queries[i]`` with ``targets[i]`` for every ``i``, or of the
    index pairs given as ``pairs``.

    Parameters
    ----------
    queries, targets : SequenceSet, pathlib.Path to FASTA/FASTQ, or list of str/bytes
        Equal numbers of sequences. Plain inputs are encoded with ``alphabet``.
    mode : {"global", "infix", "prefix"} or edlib's {"NW", "HW", "SHW"}
        ``global`` aligns both ends to ends; ``infix`` finds the query anywhere in the target
        (target ends free); ``prefix`` aligns the query with a prefix of the target.
    k : int, optional
        Cutoff: pairs whose distance exceeds ``k`` report -1 (and may stop early).
    task : {"distance", "locations", "path"}
        ``locations`` adds the target range of an optimal alignment; ``path`` adds its CIGAR.
    alphabet : {"auto", "dna", "protein", "bytes"}
        For plain inputs: "auto" infers it from the first records of both sides (a SequenceSet
        keeps its own; see :func:`gpualign.sequences.resolve_alphabet`). In DNA, ``U`` is read
        as ``T`` and ``N`` matches nothing, not even ``N``.
    invalid : {"error", "wildcard"}
        Symbols outside the alphabet raise an error naming record and position, or become the
        wildcard (``N``/``X``).
    backend : {"auto", "cpu", "cuda"}
    progress : bool or callable
        True: a progress bar on stderr (shown once the run outlasts a second) over the pairs,
        or, when a pair is long (``config.LONG_EDIT_MIN_CELLS`` cells or more, or with
        ``task="path"`` a CIGAR in linear space), over the DP cells (query length x target
        length, summed over the pairs): with ``task="path"`` half of a pair's cells when its
        distance is known, the other half as its CIGAR's levels end. A function is called as
        ``progress(done, total)`` instead.
    pairs : (query_index, target_index), optional
        Integer arrays of equal length: compare ``queries[query_index[p]]`` with
        ``targets[target_index[p]]`` instead of pairing by position (the sets may then differ
        in size).

    Returns
    -------
    EditResult

    Examples
    --------
    >>> r = edit_distance(["ACGT", "ACGT"], ["AGT", "TTACCTTT"], mode="infix",
    ...                   task="path", backend="cpu")
    >>> r.distance.tolist(), r.target_start.tolist(), r.target_end.tolist(), r.cigar.tolist()
    ([1, 1], [0, 2], [3, 6], ['1=1I2=', '2=1X1='])
    >>> r.cigar[1], r.cigar.ops.tolist(), r.cigar.lengths.tolist(), r.cigar.offsets.tolist()
    ('2=1X1=', [0, 2, 0, 0, 1, 0], [1, 1, 2, 2, 1, 1], [0, 3, 6])
    """
    mode_code = edit_mode(mode)
    cutoff = _normalize_k(k)
    check_task(task, EDIT_TASKS)
    engine = _backend(backend)  # fails on a bad backend before the inputs are encoded
    qset, tset = pair_sets(queries, targets, alphabet, invalid)
    q_index, t_index = pair_indices(qset, tset, pairs, "edit_distance", "edit_distance_matrix")
    q_len, t_len = qset.lengths[q_index], tset.lengths[t_index]
    cells = q_len.astype(np.int64) * t_len
    long = cells >= max(1, config.LONG_EDIT_MIN_CELLS)
    if task == "path":
        long |= needs_linear(q_len, t_len)
    with _counter(bool(long.any()), int(cells.sum()), len(cells), progress) as counter:
        distance, start, end, cigar = _compare_pairs(engine, qset, tset, q_index, t_index,
                                                     mode_code, cutoff, task, counter,
                                                     positional=pairs is None)
    return EditResult(distance, start, end, cigar, EDIT_MODE_NAMES[mode_code], task, k, q_index,
                      t_index, qset.alphabet.name)


def edit_distance_matrix(queries: Any, targets: Any, *, mode: str = "global",
                         k: int | None = None, alphabet: str | Alphabet = "auto",
                         invalid: str = "error", backend: str = "auto",
                         progress: ProgressArg = False) -> np.ndarray | EditMatrix:
    """Edit distance of every query with every target.

    Without ``k`` returns a dense ``(len(queries), len(targets))`` int32 matrix. With ``k``
    returns an :class:`EditMatrix` holding only the pairs within ``k``, computed row block by row
    block so that large sets never need a dense matrix. ``progress`` (as in
    :func:`edit_distance`) counts the pairs of every block, or their cells when a pair is long.

    Examples
    --------
    >>> edit_distance_matrix(["ACGT", "TTTT"], ["ACG", "TTT", "ACGT"], backend="cpu").tolist()
    [[1, 3, 0], [4, 1, 3]]
    >>> m = edit_distance_matrix(["ACGT", "TTTT"], ["ACG", "TTT", "ACGT"], k=1, backend="cpu")
    >>> m.query_index.tolist(), m.target_index.tolist(), m.distance.tolist()
    ([0, 0, 1], [0, 2, 1], [1, 0, 1])
    """
    mode_code = edit_mode(mode)
    cutoff = _normalize_k(k)
    engine = _backend(backend)
    qset, tset = pair_sets(queries, targets, alphabet, invalid)
    n_queries, n_targets = len(qset), len(tset)
    rows_per_block = max(1, config.MATRIX_BLOCK_PAIRS // max(1, n_targets))
    dense = np.empty((n_queries, n_targets), dtype=np.int32) if cutoff < 0 else None
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    longest = int(qset.lengths.max(initial=0)) * int(tset.lengths.max(initial=0))
    cells = int(qset.lengths.sum(dtype=np.int64)) * int(tset.lengths.sum(dtype=np.int64))
    with _counter(longest >= max(1, config.LONG_EDIT_MIN_CELLS), cells, n_queries * n_targets,
                  progress) as counter:
        for row in range(0, n_queries, rows_per_block):
            rows = np.arange(row, min(n_queries, row + rows_per_block), dtype=np.int64)
            q_index = np.repeat(rows, n_targets)
            t_index = np.tile(np.arange(n_targets, dtype=np.int64), len(rows))
            distance, _, _, _ = _compare_pairs(engine, qset, tset, q_index, t_index, mode_code,
                                               cutoff, "distance", counter)
            if dense is not None:
                dense[rows] = distance.reshape(len(rows), n_targets)
            else:
                within = distance >= 0
                kept.append((q_index[within], t_index[within], distance[within]))
    if dense is not None:
        return dense
    if kept:
        q_all, t_all, d_all = (np.concatenate(parts) for parts in zip(*kept, strict=True))
    else:
        q_all = t_all = np.zeros(0, dtype=np.int64)
        d_all = np.zeros(0, dtype=np.int32)
    return EditMatrix(q_all, t_all, d_all, (n_queries, n_targets), cutoff, qset.alphabet.name)

