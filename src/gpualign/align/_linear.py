"""Alignments in linear space: Myers and Miller's divide and conquer ("Optimal alignments in
linear space", CABIOS 1988) for every mode, driven level by level over a whole batch of pairs.

Shared by the CPU and CUDA backends (NumPy; no CuPy, and Numba only where first needed:
``_cpu_joins`` for engines that return their rows to the host, ``_cigar_text`` for CIGARs).
The driver never touches a DP cell itself: it describes subproblems (:class:`Problems`) and
hands each recursion level of every pair to an *engine* (:class:`Engine`), so that a GPU
engine gets many subproblems per launch. Memory is ``O(m + n)`` per pair plus the engine's
leaves (at most ``leaf_cells`` cells each).

Conventions (the contract between this driver and the engines):

- Scores are maximized; a gap of length L costs ``gap_open + (L-1)*gap_extend``, that is
  ``excess + L*gap_extend`` with ``excess = gap_open - gap_extend``. The query ``a`` is the
  rows (length m), the target ``b`` the columns (length n); a vertical gap consumes the query
  (``OP_INSERTION``, CIGAR ``I``), a horizontal one the target (``OP_DELETION``, ``D``).
- ``sequences`` is a :class:`PairCodes` of NumPy arrays, the arrays ``align_batch`` of
  ``_cpu.py`` takes: pair ``p`` aligns ``a = q_codes[q_offsets[q_index[p]]:
  q_offsets[q_index[p] + 1]]`` with ``b = t_codes[t_offsets[t_index[p]]:
  t_offsets[t_index[p] + 1]]``. The driver reads only the lengths from it and passes it on to
  every engine call unchanged; a GPU engine copies the codes to the device once (when it is
  built or on first use) and ignores the host arrays afterwards.
- A subproblem ``k`` aligns ``a[a_start:a_end]`` with ``b[b_start:b_end]`` of pair
  ``pair[k]``, both reversed when ``reverse[k]`` is 1 (all coordinates an engine returns are
  those of the DP it ran, after the reversal). Its column 0 is one vertical gap charged
  ``top_excess + i*gap_extend`` at row i (0 when that gap continues a gap opened above the
  subproblem); every other gap costs the usual ``excess + L*gap_extend``.
  ``bottom_excess`` is the same for a vertical gap that ends at the bottom-right corner (read
  by ``leaf_paths`` only).
- The driver sends ``last_rows`` and ``leaf_paths`` only subproblems with both sides non-empty;
  ``best_cells`` only pairs with both sequences non-empty.

Paths are optimal; where several paths are optimal they may differ from the batch traceback's
(the split column of each level is the first best one, a join through the middle row's
diagonal or horizontal step preferred to one through a vertical gap). Scores and end cells
are always those of the batch kernels; start cells are the ones closest to the end among the
optimal ones (the reverse passes' ties), which is where the batch traceback stops in all but
unusual ties.

Progress: every driver takes ``progress``, a function it calls with a number of DP cells each
time a part of its work ends (a score pass, a recursion level), adding up to the cells of its
pairs (``m * n`` summed) when it returns, however much it computed (Myers-Miller about twice
them, the anchored pass of a mode fewer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from .. import config
from .._progress import Portion
from ..cigar import PackedCigars, offsets_of_counts
from ..codes import (
    ALIGN_GLOBAL,
    ALIGN_LOCAL,
    ALIGN_OVERLAP,
    ALIGN_SEMI_GLOBAL,
    OP_DELETION,
    OP_INSERTION,
    OP_MATCH,
)

__all__ = ["Engine", "JoinedPaths", "LinearPaths", "PairCodes", "Problems", "global_paths",
           "mode_ends", "mode_paths", "path_cigars", "path_scores"]

#: ``best_cells`` scopes: where an alignment may end. The first four are the end cells of the
#: modes, with the batch kernels' ties (``_cpu._fill``): the corner (global); the last row,
#: columns from 1, first best column (semi-global); the last row (columns 1 to n-1, first best)
#: or the last column (rows 1 to m, first best), the row winning ties (overlap); any cell or
#: the empty alignment (0, 0) with score 0, ties to the smaller column, then row (local).
SCOPE_CORNER, SCOPE_LAST_ROW, SCOPE_LAST_ROW_OR_COLUMN, SCOPE_ANY = 0, 1, 2, 3
#: The scopes of the anchored reverse passes that find start cells: the last row from column 0
#: (semi-global: the query may start with a gap), the last row from column 0 or the last
#: column from row 0 (overlap), with the same ties as their forward scopes.
SCOPE_START_ROW, SCOPE_START_EDGE = 4, 5

#: Upper bound of the CPU engine's F where no alignment ends in a vertical gap. Engines may use
#: any value so far below every real score of the problem that a sum of two never wins a split
#: (the CUDA engine's is ``-(1 << 30)``, its values bounded by ``TileEngine.fits``).
NO_SCORE = -(1 << 40)


@dataclass
class PairCodes:
    """The pairs of a batch as the backends store them (see the module's conventions).

    Examples
    --------
    >>> import numpy as np
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2], np.uint8)], [np.array([0, 2], np.uint8)])
    >>> codes.a_lengths().tolist(), codes.b_lengths().tolist()
    ([3], [2])
    """

    q_codes: np.ndarray
    q_offsets: np.ndarray
    t_codes: np.ndarray
    t_offsets: np.ndarray
    q_index: np.ndarray
    t_index: np.ndarray

    @classmethod
    def from_lists(cls, queries: list[np.ndarray], targets: list[np.ndarray]) -> PairCodes:
        """Pair ``p`` = ``queries[p]`` with ``targets[p]`` (code arrays)."""
        def packed(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
            offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in arrays], out=offsets[1:])
            codes = np.concatenate(arrays) if arrays else np.zeros(0, np.uint8)
            return codes.astype(np.uint8), offsets

        (q_codes, q_offsets), (t_codes, t_offsets) = packed(queries), packed(targets)
        index = np.arange(len(queries), dtype=np.int64)
        return cls(q_codes, q_offsets, t_codes, t_offsets, index, index.copy())

    def a_lengths(self) -> np.ndarray:
        """Length of each pair's query."""
        return (self.q_offsets[self.q_index + 1] - self.q_offsets[self.q_index]).astype(np.int64)

    def b_lengths(self) -> np.ndarray:
        """Length of each pair's target."""
        return (self.t_offsets[self.t_index + 1] - self.t_offsets[self.t_index]).astype(np.int64)


@dataclass
class Problems:
    """Subproblems, a struct of equal-length int64 arrays (see the module's conventions).

    Examples
    --------
    >>> p = Problems.of(pair=[0, 0], a_start=[0, 4], a_end=[4, 9], b_start=[0, 3],
    ...                 b_end=[3, 7], reverse=[0, 1], top_excess=3, bottom_excess=3)
    >>> len(p), p.cells().tolist()
    (2, [12, 20])
    """

    pair: np.ndarray
    a_start: np.ndarray
    a_end: np.ndarray
    b_start: np.ndarray
    b_end: np.ndarray
    reverse: np.ndarray
    top_excess: np.ndarray
    bottom_excess: np.ndarray

    @classmethod
    def of(cls, **columns) -> Problems:
        """Problems from sequences or scalars (scalars broadcast to the others' length)."""
        arrays = {name: np.asarray(value, dtype=np.int64) for name, value in columns.items()}
        length = max((array.size for array in arrays.values() if array.ndim), default=1)
        made = {}
        for name, array in arrays.items():  # each broadcast into its own column
            made[name] = np.empty(length, dtype=np.int64)
            made[name][:] = array
        return cls(**made)

    def __len__(self) -> int:
        return len(self.pair)

    def a_length(self) -> np.ndarray:
        """Rows of each subproblem."""
        return self.a_end - self.a_start

    def b_length(self) -> np.ndarray:
        """Columns of each subproblem."""
        return self.b_end - self.b_start

    def cells(self) -> np.ndarray:
        """DP cells of each subproblem (rows x columns)."""
        return self.a_length() * self.b_length()

    def take(self, index: np.ndarray) -> Problems:
        """The subproblems at ``index``."""
        return Problems(*(getattr(self, name)[index] for name in _PROBLEM_COLUMNS))

    @staticmethod
    def concat(parts: list[Problems]) -> Problems:
        """The subproblems of ``parts``, in order."""
        return Problems(*(np.concatenate([getattr(p, name) for p in parts])
                          for name in _PROBLEM_COLUMNS))

    def row_offsets(self) -> np.ndarray:
        """Offsets of each subproblem's row in ``last_rows``' output (``b_length + 1`` each)."""
        offsets = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(self.b_length() + 1, out=offsets[1:])
        return offsets


#: The columns of :class:`Problems`, in order (looked up once: the driver takes and joins
#: problems on every level).
_PROBLEM_COLUMNS = tuple(f.name for f in fields(Problems))


class Engine(Protocol):
    """What a backend computes for the driver; built with the scoring (substitution table,
    gap costs, the alphabet's ``match_codes``), so that its calls take only the work."""

    #: The substitution scores, ``table[query code, target code]`` (host NumPy array).
    table: np.ndarray

    def last_rows(self, sequences: PairCodes, problems: Problems) -> tuple[np.ndarray, np.ndarray]:
        """``(H, F)``, the last DP row of each subproblem, concatenated (offsets
        ``problems.row_offsets()``), int64 or int32: ``H[j]`` is the best score of a global
        alignment of all of the subproblem's ``a`` with ``b[:j]``, ``F[j]`` the best among those
        that end in a vertical gap (far below every real score where none does, see ``NO_SCORE``;
        ``F[0] = H[0]``).
        Memory ``O(b_length)`` per subproblem."""

    def leaf_paths(self, sequences: PairCodes, problems: Problems,
                   scores: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ops, offsets)``: an optimal global path of each subproblem honouring
        ``top_excess`` and ``bottom_excess``, ``OP_*`` codes (uint8) from the top-left corner,
        concatenated (``offsets``: int64, ``len(problems) + 1``). ``=`` for equal codes below
        ``match_codes``, else ``X``. A subproblem has at most ``leaf_cells`` cells or a single
        row (of any length: a full traceback of it takes ``2 * (n + 1)`` bytes). Where
        ``scores`` is given (int64, a slot per subproblem), the engine may write there the
        scores of the paths that it finds on the way; it leaves the other slots as they are."""

    def best_cells(self, sequences: PairCodes, problems: Problems, start_free_top: bool,
                   start_free_left: bool, floor_zero: bool, end_scope: int,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(score, i_end, j_end)`` of each subproblem (int64): the best cell in ``end_scope``
        (a ``SCOPE_*``) of the DP whose row 0 (``start_free_top``) and column 0
        (``start_free_left``) are free (0) rather than gaps, whose cells are floored at 0
        (``floor_zero``: Smith-Waterman), with the ties the scope states.

        An engine may also offer ``split_columns(sequences, problems, excess) -> (column,
        through_gap, score)``: for the top halves then bottom halves of a level's splits, what
        the driver would find in their ``last_rows`` (``_split_columns``), without returning
        the rows (the CUDA engine keeps them on the device).

        Or it may offer ``last_rows_kept(sequences, problems, near) -> (h, f, kept_h, kept_f,
        kept_at)``: ``last_rows`` and, where ``near[k, d] > 0``, more rows of subproblem k,
        ``kept_at[k, d]`` (near ``near[k, d]``, strictly inside it; 0 where none is kept), in
        ``kept_h[d]``, ``kept_f[d]`` at the same offsets. :func:`global_paths` asks each half
        for the rows where its descendants that share its start corner will split (half its
        rows from that corner, a quarter, ...), splits them there and computes only their
        other halves (about a quarter fewer cells in all)."""


@dataclass
class _Given:
    """Rows that earlier passes kept for the splits to come, one line per open subproblem: the
    rows where it and its descendants that share one of its corners will split (``rows[k, 0]``
    its own, then its child's, ...; -1: none), whether they are rows of a forward pass from
    its top-left corner (``side`` 0) or of a reverse pass from its bottom-right one (1), and
    where each starts in ``h``, ``f`` (``at``; the row's prefix as long as the subproblem's
    columns and one more)."""

    rows: np.ndarray
    side: np.ndarray
    at: np.ndarray
    h: np.ndarray
    f: np.ndarray

    @classmethod
    def none(cls, count: int, depth: int) -> _Given:
        empty = np.zeros(0, dtype=np.int64)
        return cls(np.full((count, depth), -1, dtype=np.int64), np.zeros(count, dtype=np.int64),
                   np.zeros((count, depth), dtype=np.int64), empty, empty)

    def take(self, index: np.ndarray) -> _Given:
        return _Given(self.rows[index], self.side[index], self.at[index], self.h, self.f)


def _rows_asked(halves: Problems, depth: int, leaf_cells: int) -> np.ndarray:
    """The rows each half's pass keeps, ``(len(halves), depth)``: half its rows from its
    start, a quarter, ... (where its descendant that splits there, about a half, an eighth,
    ... of its cells, will likely be split: more than ``leaf_cells``), else 0.

    Examples
    --------
    >>> half = Problems.of(pair=[0], a_start=0, a_end=400, b_start=0, b_end=400, reverse=0,
    ...                    top_excess=3, bottom_excess=3)
    >>> _rows_asked(half, 4, 2000).tolist()
    [[200, 100, 50, 0]]
    """
    level = np.arange(depth)
    likely_split = (halves.cells()[:, None] >> (2 * level)) > 2 * leaf_cells
    return np.where(likely_split, halves.a_length()[:, None] >> (level + 1), 0)


def _search_keeping(sequences: PairCodes, split: Problems, given: _Given, engine: Engine,
                    excess: int, leaf_cells: int, depth: int,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, _Given]:
    """``(middle, column, through_gap, score, kept)``: :func:`_halves` and
    :func:`_split_columns` of the subproblems ``split`` through ``engine.last_rows_kept``: a
    subproblem whose first ``given`` row lies inside it splits there and takes that half's
    row as given; every half computed keeps ``depth`` rows for the descendants that share its
    start corner (:func:`_rows_asked`). ``kept``: the children's given rows, the upper
    children first, as :func:`global_paths` lists them (an upper child takes the rows of its
    parent's top half: the rest of those given, or those its pass kept; a lower child those
    of the bottom half), each cut to the child's columns in a new pool."""
    count = len(split)
    first = given.rows[:, 0]
    usable = (first > split.a_start) & (first < split.a_end)
    middle, both = _halves(split, np.where(usable, first,
                                           split.a_start + split.a_length() // 2))
    given_half = np.concatenate((usable & (given.side == 0), usable & (given.side == 1)))
    computed = np.flatnonzero(~given_half)
    todo = both.take(computed)
    h, f, kept_h, kept_f, kept_at = engine.last_rows_kept(sequences, todo,
                                                          _rows_asked(todo, depth, leaf_cells))
    # Where each half's row starts: the computed in h and f, the given in their pool,
    # numbered on past h's end; a given row is a prefix of the one kept.
    source = np.empty(2 * count, dtype=np.int64)
    todo_starts = todo.row_offsets()[:-1]
    source[computed] = todo_starts
    # The given rows as the halves list them: the top halves', then the bottom halves'.
    given_rows = np.concatenate((given.rows, given.rows))
    given_at = np.concatenate((given.at, given.at))
    source[given_half] = len(h) + given_at[given_half, 0]
    column, through_gap, score = _joins(h, f, source[:count], source[count:],
                                        split.b_length() + 1, excess, given.h, given.f)
    # The children's rows (upper, then lower): a half computed passes on the rows its pass
    # kept (numbered in kept_h flattened), a half given the rest of its rows (numbered in the
    # old pool past kept_h's end).
    rows = np.full((2 * count, depth), -1, dtype=np.int64)
    at = np.zeros((2 * count, depth), dtype=np.int64)
    corner = np.concatenate((split.a_start, split.a_end))
    sign = np.repeat([1, -1], count)
    rows[computed] = np.where(kept_at > 0, corner[computed, None] + sign[computed, None] * kept_at,
                              -1)
    at[computed] = np.arange(depth) * kept_h.shape[1] + todo_starts[:, None]
    rows[given_half, :-1] = given_rows[given_half, 1:]
    at[given_half, :-1] = kept_h.size + given_at[given_half, 1:]
    # Each row cut to its child's columns and one more.
    length = np.concatenate((column + 1, split.b_length() - column + 1))
    held = rows >= 0
    held_length = np.broadcast_to(length[:, None], held.shape)[held]
    pool_at = np.zeros_like(at)
    pool_at[held] = offsets_of_counts(held_length)[:-1]
    pool_h, pool_f = _gather(kept_h.reshape(-1), kept_f.reshape(-1), given.h, given.f,
                             at[held], held_length, pool_at[held])
    kept = _Given(rows, np.repeat([0, 1], count), pool_at, pool_h, pool_f)
    return middle, column, through_gap, score, kept


def _gather(h: np.ndarray, f: np.ndarray, more_h: np.ndarray, more_f: np.ndarray,
            start: np.ndarray, length: np.ndarray, to: np.ndarray,
            ) -> tuple[np.ndarray, np.ndarray]:
    """New arrays holding ``length[k]`` entries of ``h``, ``f`` from ``start[k]`` (past their
    end: of ``more_h``, ``more_f``) at ``to[k]``, for every k."""
    from ._cpu_joins import copy_rows  # Numba: only for engines that keep rows (CPU)

    size = int((to + length).max()) if len(to) else 0
    out_h = np.empty(size, dtype=np.int64)
    out_f = np.empty(size, dtype=np.int64)
    copy_rows(np.asarray(h, dtype=np.int64), np.asarray(f, dtype=np.int64),
               np.asarray(more_h, dtype=np.int64), np.asarray(more_f, dtype=np.int64),
               start, length, to, out_h, out_f)
    return out_h, out_f


def _split_columns(h: np.ndarray, f: np.ndarray, offsets: np.ndarray, count: int,
                   excess: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the optimal paths of ``count`` split subproblems cross their middle row.

    ``h``, ``f``: the forward last rows of the ``count`` top halves, then the reverse last rows
    of their bottom halves (``offsets`` over both). Column j joins the top half's row ending at
    j with the bottom half's reversed row ending at ``n - j``: through a cell (type 1) or
    through one vertical gap crossing the middle (type 2, its open charged once). Returns the
    first best column of each subproblem, whether it joins through a vertical gap, and the
    join's score (the subproblem's optimum: its paths all cross the middle row)."""
    top_start = offsets[:count]
    return _joins(h, f, top_start, offsets[count:-1], offsets[1:count + 1] - top_start,
                  excess)


def _joins(h: np.ndarray, f: np.ndarray, top_start: np.ndarray, bottom_start: np.ndarray,
           length: np.ndarray, excess: int, given_h: np.ndarray | None = None,
           given_f: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_split_columns` of splits whose top halves' rows start at ``top_start`` and
    bottom halves' at ``bottom_start``, ``length`` cells each, wherever they lie: in ``h``,
    ``f``, or past their end in ``given_h``, ``given_f`` (a start of ``len(h) + x`` is
    ``given_h[x]``), so that rows computed and rows given need no copy into one array."""
    h = np.asarray(h, dtype=np.int64)
    f = np.asarray(f, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    given_h = empty if given_h is None else np.asarray(given_h, dtype=np.int64)
    given_f = empty if given_f is None else np.asarray(given_f, dtype=np.int64)
    from ._cpu_joins import best_joins  # Numba: only for engines that return rows (CPU)

    count = len(top_start)
    column = np.empty(count, dtype=np.int64)
    through_gap = np.empty(count, dtype=np.bool_)
    score = np.empty(count, dtype=np.int64)
    best_joins(h, f, given_h, given_f, np.asarray(top_start, dtype=np.int64),
                np.asarray(bottom_start, dtype=np.int64), np.asarray(length, dtype=np.int64),
                excess, column, through_gap, score)
    return column, through_gap, score


def _halves(split: Problems, middle: np.ndarray | None = None) -> tuple[np.ndarray, Problems]:
    """``(middle, halves)``: the row each subproblem of ``split`` (two rows or more) splits at
    (``middle``, strictly inside; default its middle row) and its halves as
    :func:`_search_splits` takes them: the forward top halves (rows to that row), then the
    reverse bottom halves."""
    if middle is None:
        middle = split.a_start + split.a_length() // 2
    top = Problems(split.pair, split.a_start, middle, split.b_start, split.b_end,
                   np.zeros_like(middle), split.top_excess, split.bottom_excess)
    bottom = Problems(split.pair, middle, split.a_end, split.b_start, split.b_end,
                      np.ones_like(middle), split.bottom_excess, split.bottom_excess)
    return middle, Problems.concat([top, bottom])


def _search_splits(sequences: PairCodes, both: Problems, engine: Engine, excess: int,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_split_columns` of the splits whose top halves, then bottom halves, are
    ``both``: by the engine itself when it offers ``split_columns`` (a GPU engine searches the
    rows where it computed them), else in the rows that ``last_rows`` returns."""
    search = getattr(engine, "split_columns", None)
    if search is not None:
        return search(sequences, both, excess)
    h, f = engine.last_rows(sequences, both)
    return _split_columns(h, f, both.row_offsets(), len(both) // 2, excess)


def global_paths(sequences: PairCodes, roots: Problems, gap_open: int, gap_extend: int,
                 engine: Engine, leaf_cells: int, progress: Callable[[int], object] | None = None,
                 share: int | None = None, scores: np.ndarray | None = None,
                 ) -> JoinedPaths:
    """Optimal global paths of the subproblems ``roots`` in linear space (Myers-Miller).

    Each level splits every open subproblem at its middle row: ``engine.last_rows`` gives the
    forward last row of its top half and the reverse last row of its bottom half (one call for
    all subproblems of the level; or the engine's ``split_columns`` searches them itself), the
    best column splits it in two (or three pieces around a vertical gap that crosses the
    middle row). Subproblems of at most ``leaf_cells`` cells, or of one row, are solved by
    ``engine.leaf_paths`` (one call for the leaves of every level, at the end); those with an
    empty side are one gap. With an engine that keeps rows (``last_rows_kept``, the CPU
    engine's), each half's pass also keeps the rows where its descendants that share its
    start corner will split (``config.ALIGN_LINEAR_KEPT_ROWS`` of them): each of them then
    splits there (not exactly at its middle) and computes only its other half.

    Parameters
    ----------
    sequences : PairCodes
        The pairs that ``roots.pair`` indexes.
    roots : Problems
        Forward subproblems (``reverse`` 0); ``top_excess`` and ``bottom_excess`` are usually
        ``gap_open - gap_extend``.
    gap_open, gap_extend : int
        Gap costs: a gap of length L costs ``gap_open + (L-1)*gap_extend``.
    engine : Engine
        The backend's DP.
    leaf_cells : int
        Largest subproblem (cells) solved with a full DP.
    progress : callable, optional
        Called with a number of cells after each level: ``share`` in all, in proportion to
        the cells the levels computed (about twice the roots' cells).
    share : int, optional
        What ``progress`` receives in all (default: the roots' cells).
    scores : np.ndarray of int64, optional
        Filled with the optimal score of each root that the first level splits (its best join
        at the middle row), and of each root solved at once whose score the engine's
        ``leaf_paths`` gives; the others' entries are left as they are.

    Returns
    -------
    JoinedPaths
        Per root, the ``OP_*`` codes (uint8) of its path from the top-left corner.

    Examples
    --------
    >>> import numpy as np
    >>> from gpualign.align._cpu import CpuEngine
    >>> table = np.where(np.eye(5, dtype=bool), 2, -3)
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2, 3, 0, 1], np.uint8)],
    ...                              [np.array([0, 1, 3, 0, 1], np.uint8)])
    >>> roots = Problems.of(pair=[0], a_start=0, a_end=6, b_start=0, b_end=5, reverse=0,
    ...                     top_excess=3, bottom_excess=3)
    >>> global_paths(codes, roots, 5, 2, CpuEngine(table, 5, 2, 4), leaf_cells=4)[0].tolist()
    [0, 0, 2, 0, 0, 0]
    """
    excess = gap_open - gap_extend
    # Pieces of the paths: (root, row, column) where each starts, its length and its
    # operations: one repeated (a gap: op >= 0) or, where op is -1, the leaves' operations
    # from `source` on. Pieces of one root never overlap and the path is monotone, so sorting
    # by start orders them.
    pieces: list[tuple[np.ndarray, ...]] = []

    def add(root: np.ndarray, row: np.ndarray, column: np.ndarray, length: np.ndarray,
            op: np.ndarray | int, source: np.ndarray | int = 0):
        count = len(root)
        pieces.append((root, row, column, np.broadcast_to(length, count),
                       np.broadcast_to(op, count), np.broadcast_to(source, count)))

    root_cells = int(roots.cells().sum())
    # Each level computes the cells of its open subproblems, halving them: about twice the
    # roots' cells in all (about 1.5 times with kept rows: progress then moves slower than the
    # work and catches up at the end).
    portion = Portion(progress, root_cells if share is None else share, 2 * root_cells)
    if _leaves(roots.a_length(), roots.b_length(), leaf_cells).all():
        # Every root a leaf: its path (and, where the engine finds it, its score) as the
        # engine gives it, nothing to split or assemble.
        leaf_ops, offsets = engine.leaf_paths(sequences, roots, scores)
        portion.finish()
        return JoinedPaths(np.asarray(leaf_ops, dtype=np.uint8), offsets)
    open_ = roots
    root = np.arange(len(roots), dtype=np.int64)
    depth = config.ALIGN_LINEAR_KEPT_ROWS
    keeping = hasattr(engine, "last_rows_kept") and not hasattr(engine, "split_columns") \
        and depth > 0
    given = _Given.none(len(roots), max(depth, 1))
    # Leaves of every level, solved together at the end: one engine call, not one a level.
    leaves: list[Problems] = []
    leaf_roots: list[np.ndarray] = []
    level_cells = 0
    while len(open_):
        portion.advance(level_cells)  # the level before this one is done
        rows, columns = open_.a_length(), open_.b_length()
        empty = (rows == 0) | (columns == 0)
        index = np.flatnonzero(empty & (rows + columns > 0))
        add(root[index], open_.a_start[index], open_.b_start[index],
            rows[index] + columns[index], np.where(rows[index] > 0, OP_INSERTION, OP_DELETION))
        leaf = _leaves(rows, columns, leaf_cells)
        index = np.flatnonzero(leaf)
        leaves.append(open_.take(index))
        leaf_roots.append(root[index])
        index = np.flatnonzero(~empty & ~leaf)
        if not len(index):
            break
        level_cells = int(open_.cells()[index].sum())
        split, root = open_.take(index), root[index]
        if keeping:
            middle, column, through_gap, score, given = _search_keeping(
                sequences, split, given.take(index), engine, excess, leaf_cells, depth)
        else:
            middle, halves = _halves(split)
            column, through_gap, score = _search_splits(sequences, halves, engine, excess)
        if scores is not None and open_ is roots:
            scores[root] = score
        column += split.b_start
        # Through a vertical gap: rows middle-1 and middle are two I's of a gap that the top
        # piece may end and the bottom piece may start without opening it again.
        cut_top = np.where(through_gap, middle - 1, middle)
        cut_bottom = np.where(through_gap, middle + 1, middle)
        joined = np.where(through_gap, 0, excess)
        gap = np.flatnonzero(through_gap)
        add(root[gap], cut_top[gap], column[gap], 2, OP_INSERTION)
        upper = Problems(split.pair, split.a_start, cut_top, split.b_start, column,
                         np.zeros_like(middle), split.top_excess, joined)
        lower = Problems(split.pair, cut_bottom, split.a_end, column, split.b_end,
                         np.zeros_like(middle), joined, split.bottom_excess)
        open_ = Problems.concat([upper, lower])
        root = np.concatenate([root, root])
    every_leaf = Problems.concat(leaves) if leaves else None
    leaf_ops = np.zeros(0, dtype=np.uint8)
    if every_leaf is not None and len(every_leaf):
        leaf_ops, offsets = engine.leaf_paths(sequences, every_leaf)
        add(np.concatenate(leaf_roots), every_leaf.a_start, every_leaf.b_start,
            np.diff(offsets), -1, offsets[:-1])
    portion.finish()
    return _assemble(pieces, len(roots), np.asarray(leaf_ops, dtype=np.uint8))


def _leaves(rows: np.ndarray, columns: np.ndarray, leaf_cells: int) -> np.ndarray:
    """Which subproblems of ``rows`` x ``columns`` :func:`global_paths` hands to the engine's
    ``leaf_paths``: both sides non-empty, and one row or at most ``leaf_cells`` cells."""
    return (rows > 0) & (columns > 0) & ((rows <= 1) | (rows * columns <= leaf_cells))


def _assemble(pieces: list[tuple[np.ndarray, ...]], count: int, leaf_ops: np.ndarray,
              ) -> JoinedPaths:
    """The paths of :func:`global_paths`' ``count`` roots from their pieces (its ``add``),
    written one after the other into one array by a compiled loop, on every core.
    (The driver's whole work for 2,000 pairs of 30 kb, with an engine that answers at once,
    took 218-272 ms on the 2-core machine when the pieces were slices joined a root at a time,
    111-134 ms with the compiled loop on one core.)"""
    if not pieces:
        return JoinedPaths(np.zeros(0, dtype=np.uint8), np.zeros(count + 1, dtype=np.int64))
    from ._cpu_joins import write_pieces  # Numba

    owner, row, column, length, op, source = (np.concatenate(part).astype(np.int64)
                                              for part in zip(*pieces, strict=True))
    order = np.lexsort((column, row, owner))
    owner, length, op, source = owner[order], length[order], op[order], source[order]
    at = offsets_of_counts(length)
    paths = np.empty(int(at[-1]), dtype=np.uint8)
    write_pieces(paths, at, length, op, source, leaf_ops)
    return JoinedPaths(paths, offsets_of_counts(
        np.bincount(owner, weights=length, minlength=count).astype(np.int64)))


@dataclass(frozen=True, eq=False)  # a generated __eq__ would compare arrays (ambiguous)
class JoinedPaths(Sequence):
    """Paths of ``OP_*`` codes one after the other in one array: path ``k`` is
    ``ops[offsets[k]:offsets[k + 1]]``, which indexing gives (a view), so that their counts
    and CIGARs are taken from the one array (:func:`path_cigars`).

    Examples
    --------
    >>> import numpy as np
    >>> paths = JoinedPaths.of([np.array([0, 2], np.uint8), np.zeros(0, np.uint8)])
    >>> len(paths), paths[0].tolist(), paths.offsets.tolist()
    (2, [0, 2], [0, 2, 2])
    """

    ops: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, paths: list[np.ndarray]) -> JoinedPaths:
        """``paths`` joined (copied into one array)."""
        ops = np.concatenate(paths).astype(np.uint8, copy=False) if len(paths) else \
            np.zeros(0, dtype=np.uint8)
        return cls(ops, offsets_of_counts(np.array([len(path) for path in paths],
                                                    dtype=np.int64)))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, k: int) -> np.ndarray:
        if not -len(self) <= k < len(self):
            raise IndexError(f"path {k} of {len(self)}")
        k %= len(self)
        return self.ops[self.offsets[k]:self.offsets[k + 1]]

    def op_counts(self, op: int) -> np.ndarray:
        """How many operations of each path are ``op`` (int64, a path each)."""
        if len(self) < config.HOST_SERIAL_PATHS:  # a few: NumPy, a path at a time
            bounds = self.offsets.tolist()
            return np.array([np.count_nonzero(self.ops[lo:hi] == op)
                             for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)],
                            dtype=np.int64)
        from ._cpu_joins import count_op  # Numba

        return count_op(self.ops, self.offsets, op)


@dataclass
class LinearPaths:
    """Results of :func:`mode_paths`, one entry per pair (int64 arrays; ``ops`` the paths)."""

    score: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    ops: JoinedPaths

    def matches(self) -> np.ndarray:
        """``=`` operations of each path."""
        return self.ops.op_counts(OP_MATCH)

    def columns(self) -> np.ndarray:
        """Operations of each path."""
        return np.diff(self.ops.offsets)


# Forward pass of each mode: (row 0 free, column 0 free, floor at 0, end scope), and the scope
# of its anchored reverse pass (None: the alignment starts at (0, 0)).
_FORWARD = {
    ALIGN_GLOBAL: (False, False, False, SCOPE_CORNER),
    ALIGN_SEMI_GLOBAL: (True, False, False, SCOPE_LAST_ROW),
    ALIGN_OVERLAP: (True, True, False, SCOPE_LAST_ROW_OR_COLUMN),
    ALIGN_LOCAL: (True, True, True, SCOPE_ANY),
}
#: The score of a pair that :func:`global_paths` did not split (it then comes from the path).
_UNSCORED = np.iinfo(np.int64).min

_REVERSE = {ALIGN_GLOBAL: None, ALIGN_SEMI_GLOBAL: SCOPE_START_ROW,
            ALIGN_OVERLAP: SCOPE_START_EDGE, ALIGN_LOCAL: SCOPE_ANY}


def _whole(sequences: PairCodes, excess: int) -> Problems:
    """Each pair of ``sequences`` as one forward subproblem; ValueError unless both sequences
    of every pair are non-empty."""
    a_lengths, b_lengths = sequences.a_lengths(), sequences.b_lengths()
    if not (a_lengths.all() and b_lengths.all()):
        raise ValueError("linear-space alignment: every pair needs two non-empty sequences")
    count = len(a_lengths)
    # Made directly (twice as fast as Problems.of): every call of a long pair comes here.
    starts = np.zeros((3, count), dtype=np.int64)  # a_start, b_start, reverse
    excesses = np.full((2, count), excess, dtype=np.int64)
    return Problems(np.arange(count, dtype=np.int64), starts[0], a_lengths, starts[1],
                    b_lengths, starts[2], excesses[0], excesses[1])


def mode_ends(sequences: PairCodes, gap_open: int, gap_extend: int, mode: int, engine: Engine,
              progress: Callable[[int], object] | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Score and end cell of every pair in ``mode``, as the batch kernels report them, from
    one forward score pass (``engine.best_cells``; global pairs on an engine that searches
    splits: from their two halves, :func:`_global_ends`).

    Parameters
    ----------
    sequences : PairCodes
        The pairs, both sequences of each non-empty.
    gap_open, gap_extend : int
        Gap costs: a gap of length L costs ``gap_open + (L-1)*gap_extend``.
    mode : int
        An ``ALIGN_*`` code of :mod:`gpualign.codes`.
    engine : Engine
        The backend's DP.
    progress : callable, optional
        Called with the pairs' cells when the pass ends.

    Returns
    -------
    score, query_end, target_end : np.ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> from gpualign.align._cpu import CpuEngine
    >>> table = np.where(np.eye(5, dtype=bool), 2, -3)
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2, 3], np.uint8)],
    ...                              [np.array([3, 3, 0, 1, 2, 3, 2], np.uint8)])
    >>> score, q_end, t_end = mode_ends(codes, 5, 2, 2, CpuEngine(table, 5, 2, 4))
    >>> int(score[0]), int(q_end[0]), int(t_end[0])
    (8, 4, 6)
    """
    whole = _whole(sequences, gap_open - gap_extend)
    if mode == ALIGN_GLOBAL and hasattr(engine, "split_columns"):
        found = _global_ends(sequences, whole, engine, gap_open - gap_extend)
    else:
        found = engine.best_cells(sequences, whole, *_FORWARD[mode])
    if progress is not None:
        progress(int(whole.cells().sum()))
    return found


def _global_ends(sequences: PairCodes, whole: Problems, engine: Engine, excess: int,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mode_ends` of global alignments on an engine that searches splits itself: each
    pair of two rows or more is split at its middle row, its forward top half and reverse
    bottom half computed side by side (wavefronts half as deep as the pair's), and the best
    join is its score; pairs of one row take ``best_cells``. The ends are the last cells."""
    score = np.empty(len(whole), dtype=np.int64)
    tall = np.flatnonzero(whole.a_length() >= 2)
    if len(tall):
        split = whole if len(tall) == len(whole) else whole.take(tall)
        score[tall] = _search_splits(sequences, _halves(split)[1], engine, excess)[2]
    flat = np.flatnonzero(whole.a_length() < 2)
    if len(flat):
        score[flat] = engine.best_cells(sequences, whole.take(flat),
                                        *_FORWARD[ALIGN_GLOBAL])[0]
    return score, whole.a_end.copy(), whole.b_end.copy()


def mode_paths(sequences: PairCodes, gap_open: int, gap_extend: int, mode: int, engine: Engine,
               leaf_cells: int, progress: Callable[[int], object] | None = None) -> LinearPaths:
    """Optimal alignments of every pair of ``sequences`` in ``mode``, in linear space.

    A forward score pass (``engine.best_cells``) finds the score and end cell as the batch
    kernels do; an anchored pass over the reversed prefixes ending there finds the start cell
    (the optimal one closest to the end); the path between them is a global alignment
    (:func:`global_paths`). Global alignments need neither pass.

    Parameters
    ----------
    sequences : PairCodes
        The pairs, both sequences of each non-empty.
    gap_open, gap_extend : int
        Gap costs: a gap of length L costs ``gap_open + (L-1)*gap_extend``.
    mode : int
        An ``ALIGN_*`` code of :mod:`gpualign.codes`.
    engine : Engine
        The backend's DP.
    leaf_cells : int
        Largest subproblem (cells) solved with a full DP.
    progress : callable, optional
        Called with numbers of cells as the passes end, the pairs' cells in all: a quarter
        when the score pass ends, a quarter when the anchored pass does, the rest level by
        level of the paths (global alignments: all of it for the paths).

    Returns
    -------
    LinearPaths
        Scores, half-open starts and ends, and the operations of each path. A local
        alignment scoring 0 is empty, at (0, 0).

    Examples
    --------
    >>> import numpy as np
    >>> from gpualign.align._cpu import CpuEngine
    >>> table = np.where(np.eye(5, dtype=bool), 2, -3)
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2, 3], np.uint8)],
    ...                              [np.array([3, 3, 0, 1, 2, 3, 2], np.uint8)])
    >>> r = mode_paths(codes, 5, 2, 1, CpuEngine(table, 5, 2, 4), leaf_cells=4)
    >>> int(r.score[0]), int(r.target_start[0]), int(r.target_end[0]), r.ops[0].tolist()
    (8, 2, 6, [0, 0, 0, 0])
    """
    whole = _whole(sequences, gap_open - gap_extend)
    count = len(whole)
    pair = np.arange(count, dtype=np.int64)
    zeros = np.zeros(count, dtype=np.int64)
    cells = int(whole.cells().sum())
    # What the score passes report: the forward pass computes all the cells, the anchored one
    # at most as many, the paths about twice those of their cores.
    quarter = 0 if mode == ALIGN_GLOBAL else cells // 4
    if mode == ALIGN_GLOBAL:
        q_end, t_end = whole.a_end, whole.b_end
        q_start, t_start = zeros, zeros.copy()
        score = None
    else:
        score, q_end, t_end = mode_ends(sequences, gap_open, gap_extend, mode, engine)
        if progress is not None:
            progress(quarter)
        anchored = Problems(pair, zeros, q_end, zeros.copy(), t_end, np.ones(count, np.int64),
                            whole.top_excess, whole.bottom_excess)
        # A local alignment scoring 0 is empty: nothing to anchor.
        live = np.flatnonzero((q_end > 0) & (t_end > 0))
        q_start, t_start = q_end.copy(), t_end.copy()
        if len(live):
            _, i_back, j_back = engine.best_cells(sequences, anchored.take(live), False, False,
                                                  False, _REVERSE[mode])
            q_start[live] -= i_back
            t_start[live] -= j_back
        if progress is not None:
            progress(quarter)
    cores = Problems(pair, q_start, q_end, t_start, t_end, zeros.copy(), whole.top_excess,
                     whole.bottom_excess)
    split_score = np.full(count, _UNSCORED, dtype=np.int64)
    ops = global_paths(sequences, cores, gap_open, gap_extend, engine, leaf_cells, progress,
                       cells - 2 * quarter, split_score)
    if score is None:  # global: the first split's join, or (pairs solved at once) the path's
        score = split_score
        unscored = np.flatnonzero(score == _UNSCORED)
        if len(unscored):
            score[unscored] = path_scores(sequences, ops, unscored, engine.table, gap_open,
                                          gap_extend)
    return LinearPaths(score, q_start, q_end, t_start, t_end, ops)


def path_scores(sequences: PairCodes, paths: JoinedPaths, pairs: np.ndarray,
                table: np.ndarray, gap_open: int, gap_extend: int) -> np.ndarray:
    """Scores (int64) of pairs ``pairs`` by their paths (``paths[p]``: pair ``p``'s, from
    its first cell), by a compiled loop over all of them at once (Numba: a long path scored in
    NumPy took about a third of the host's work after the kernels; figures in
    benchmarks/results/tuning.md).

    Examples
    --------
    >>> import numpy as np
    >>> table = np.where(np.eye(5, dtype=bool), 2, -3)
    >>> codes = PairCodes.from_lists([np.array([0, 1, 2], np.uint8)], [np.array([0, 2], np.uint8)])
    >>> path_scores(codes, JoinedPaths.of([np.array([0, 2, 0], np.uint8)]), np.array([0]),
    ...             table, 5, 2).tolist()
    [-1]
    """
    from ._cpu_joins import score_paths  # Numba

    pairs = np.asarray(pairs, dtype=np.int64)
    return score_paths(paths.ops, paths.offsets, pairs, sequences.q_codes,
                       sequences.q_offsets[sequences.q_index[pairs]], sequences.t_codes,
                       sequences.t_offsets[sequences.t_index[pairs]],
                       np.asarray(table, dtype=np.int64), gap_open, gap_extend)


def path_cigars(paths: JoinedPaths, packed: bool = False) -> list[str] | PackedCigars:
    """The extended CIGARs of paths of ``OP_*`` codes (each first operation first), written
    by compiled loops over all of them at once (Numba, imported here; 2,000 PacBio reads'
    paths took 0.4-0.5 s a path at a time in NumPy): strings, or a :class:`PackedCigars`
    when ``packed``.

    Examples
    --------
    >>> import numpy as np
    >>> path_cigars(JoinedPaths.of([np.array([0, 0, 2], np.uint8), np.zeros(0, np.uint8)]))
    ['2=1I', '']
    >>> path_cigars(JoinedPaths.of([np.array([3, 1, 1], np.uint8)]), packed=True).tolist()
    ['1D2X']
    """
    from .._cigar_text import path_runs, path_texts

    counts = np.diff(paths.offsets)
    # The writers read each path last operation first from its start: all paths reversed,
    # the last path first, as a view (no copy of the operations).
    last_first = paths.ops[::-1]
    room = len(last_first) - paths.offsets[1:]
    if packed:
        return path_runs(last_first, room, counts)
    return path_texts(last_first, room, counts)
