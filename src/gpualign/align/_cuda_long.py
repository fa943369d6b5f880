"""Long alignments on the whole GPU: a wavefront of DP tiles over every SM
(``align/kernels/long.cu``), the CUDA engine of :mod:`gpualign.align._linear`'s protocol.

A batch of problems (whole pairs, or the subproblems of one level of a linear-space alignment)
is cut into tiles of ``config.LONG_ALIGN_THREADS * config.LONG_ALIGN_ROWS_PER_THREAD`` query
rows by ``config.LONG_ALIGN_TILE_COLUMNS`` target columns, computed anti-diagonal of tiles
after anti-diagonal, a block per tile, the tiles of every problem side by side: one launch per
batch whose blocks take tiles in that order and wait for their neighbours' ready flags, one
launch per anti-diagonal, or one launch per batch whose blocks each sweep a band (a tile row)
over all its columns, each column once the band above has handed it over
(``config.LONG_ALIGN_SCHEDULE``; bands that "auto" picks may be shorter:
:func:`batch_schedule`). Tile borders pass through global
memory, ``O(m + n)`` per problem. The host plans the order (:func:`tile_schedule`), lays the
borders out (:func:`border_layout`), and reads the results from the borders: the last row
(``last_rows``), the end cells in the last row or column (searched on the device:
``segment_first_max``) or the best cell that the kernel kept per tile row (any cell: local
alignments). The leaves of linear-space paths run a warp each with a full traceback
(``leaf_paths``), or, in calls of few bands, large ones as bands that keep a traceback nibble a
cell and a warp's walk back (``trace_walk``: :meth:`CudaEngine.leaf_paths`).

:class:`CudaEngine` is the engine; :func:`pair_ends` and :func:`pair_paths` serve
:mod:`._cuda` for pairs of at least ``config.LONG_ALIGN_MIN_CELLS`` cells. Scores are int32 on
the device: problems whose values might not fit (:meth:`TileEngine.fits`) are not sent here.
Nothing here imports Numba.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import config
from ..cuda import launch
from ..cuda.host import device_constant, upload_together
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget
from ..pairs import positions
from ..sequences import SequenceSet
from ._linear import (
    SCOPE_ANY,
    SCOPE_CORNER,
    SCOPE_LAST_ROW_OR_COLUMN,
    SCOPE_START_EDGE,
    SCOPE_START_ROW,
    LinearPaths,
    PairCodes,
    Problems,
    mode_ends,
    mode_paths,
)

KERNEL_FILE = "align/kernels/long.cu"
#: The int64 fields of a problem, in the order of ``enum Field`` in long.cu.
PROBLEM_FIELDS = ("a_base", "b_base", "m", "n", "reverse", "top_excess", "free_top",
                  "free_left", "row_base", "column_base", "slot_base")
#: "Minus infinity" of long.cu (NEG): F of row 0, the empty best cell of a tile row.
NEG = -(1 << 30)
# Every real value stays within this magnitude, far from NEG, so that NEG minus gap costs
# never wraps and never reaches a real value.
_VALUE_LIMIT = 1 << 29

#: ``config.LONG_ALIGN_SCHEDULE`` values: one launch per anti-diagonal of tiles; one launch
#: per batch whose blocks take tiles in order and wait for their neighbours; one launch per
#: batch whose blocks each sweep a band of tile rows over all its columns (long.cu); "auto":
#: per batch, bands when they are few for the GPU, else tickets (:func:`auto_schedule`).
SCHEDULES = ("launches", "tickets", "bands", "auto")


def kernel_name(threads: int, rows_per_thread: int, dna: bool, floor_zero: bool,
                track_best: bool, schedule: str, trace: bool = False) -> str:
    """The name expression of the kernel of one of :data:`SCHEDULES`: a specialization of
    ``long_tiles``, or of ``long_bands`` (which alone writes traceback nibbles: ``trace``).

    Examples
    --------
    >>> kernel_name(64, 8, True, False, False, "tickets")
    'long_tiles<64, 8, true, false, false, true>'
    >>> kernel_name(32, 4, True, True, True, "bands")
    'long_bands<32, 4, true, true, true, false>'
    >>> kernel_name(32, 4, False, False, False, "bands", trace=True)
    'long_bands<32, 4, false, false, false, true>'
    """
    def flag(value: bool) -> str:
        return "true" if value else "false"

    shape = (f"{threads}, {rows_per_thread}, {flag(dna)}, {flag(floor_zero)}, "
             f"{flag(track_best)}")
    if schedule == "bands":
        return f"long_bands<{shape}, {flag(trace)}>"
    if trace:
        raise ValueError("only long_bands writes traceback nibbles")
    return f"long_tiles<{shape}, {flag(schedule == 'tickets')}>"


def long_schedule() -> str:
    """``config.LONG_ALIGN_SCHEDULE``, checked to be one of :data:`SCHEDULES`."""
    if config.LONG_ALIGN_SCHEDULE not in SCHEDULES:
        raise ValueError(f"LONG_ALIGN_SCHEDULE={config.LONG_ALIGN_SCHEDULE!r}: one of "
                         f"{', '.join(SCHEDULES)}")
    return config.LONG_ALIGN_SCHEDULE


#: "auto" runs a batch in bands while it has at most this many bands an SM (one a warp
#: scheduler of current GPUs): below that the GPU waits on each warp's latency, and a band
#: fills and drains its wavefront once rather than once a tile.
AUTO_BANDS_PER_SM = 4


def auto_schedule(bands: int, multiprocessors: int) -> str:
    """The schedule "auto" picks for a batch of ``bands`` tile rows on a GPU of
    ``multiprocessors`` SMs: "bands" for at most :data:`AUTO_BANDS_PER_SM` an SM, else
    "tickets". Measured on an H200: a 100 kb pair (391 bands, 3 an SM) scored 25% faster and
    aligned 20% faster in bands; a 1 Mbp pair (3,907 bands, 30 an SM) scored 3 times slower.

    Examples
    --------
    >>> auto_schedule(391, 132), auto_schedule(3_907, 132)
    ('bands', 'tickets')
    """
    return "bands" if bands <= AUTO_BANDS_PER_SM * multiprocessors else "tickets"


def band_rows_choices() -> tuple[int, ...]:
    """``config.LONG_ALIGN_BAND_ROWS_PER_THREAD``, checked: positive numbers."""
    choices = tuple(int(rows) for rows in config.LONG_ALIGN_BAND_ROWS_PER_THREAD)
    if not choices or min(choices) < 1:
        raise ValueError(f"LONG_ALIGN_BAND_ROWS_PER_THREAD={choices}: positive numbers")
    return choices


def possible_rows_per_thread() -> tuple[int, ...]:
    """The rows a thread that a batch's tiles may have: ``LONG_ALIGN_ROWS_PER_THREAD``, and
    under "auto" those its bands may take (:func:`batch_schedule`)."""
    rows = tile_shape()[1]
    return (rows, *band_rows_choices()) if long_schedule() == "auto" else (rows,)


def _band_counts(m: np.ndarray, heights: list[int]) -> list[int]:
    """Tile rows over problems of ``m`` rows, for tiles of each of ``heights`` query rows."""
    m = np.asarray(m, dtype=np.int64)
    return (-(-m // np.array(heights, dtype=np.int64)[:, None])).sum(axis=1).tolist()


def batch_schedule(m: np.ndarray, multiprocessors: int) -> tuple[str, int]:
    """``(schedule, rows_per_thread)`` of a batch of problems of ``m`` query rows on a GPU of
    ``multiprocessors`` SMs: the configured schedule, "auto" resolved by :func:`auto_schedule`
    over tiles of ``LONG_ALIGN_ROWS_PER_THREAD``; bands that "auto" picks take the first of
    ``LONG_ALIGN_BAND_ROWS_PER_THREAD`` that keeps them at most :data:`AUTO_BANDS_PER_SM` an
    SM. A batch with a problem of more than :data:`BAND_LIMIT` bands runs in "tickets".

    Examples
    --------
    >>> batch_schedule(np.array([50_000, 50_000]), 132)  # a 100 kb pair's halves: 522 bands
    ('bands', 6)
    >>> batch_schedule(np.array([8_300, 8_300]), 132)  # the MT pair's
    ('bands', 4)
    >>> batch_schedule(np.array([4_640_000]), 132)  # a genome: 18,125 tile rows
    ('tickets', 8)
    """
    threads, tile_rows, _ = tile_shape()
    rows, schedule = tile_rows, long_schedule()
    if schedule == "auto":
        limit = AUTO_BANDS_PER_SM * multiprocessors
        choices = band_rows_choices()
        tiles, *bands = _band_counts(m, [threads * choice for choice in (rows, *choices)])
        schedule = auto_schedule(tiles, multiprocessors)
        if schedule == "bands":
            rows = next((choice for choice, count in zip(choices, bands, strict=True)
                         if count <= limit), rows)
    if schedule == "bands" and int(np.max(m)) > BAND_LIMIT * threads * rows:
        return "tickets", tile_rows  # more bands than the hand-over's tags tell apart
    return schedule, rows


def band_order(tile_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(band_problem, band_row)``, int32: the bands of the "bands" schedule in ticket order,
    band ``k`` being tile row ``band_row[k]`` of problem ``band_problem[k]`` (problem ``p``
    has ``tile_rows[p]``), by tile row, then problem, so that the band above each band comes
    before it.

    Examples
    --------
    >>> problem, row = band_order(np.array([2, 1, 3]))
    >>> problem.tolist(), row.tolist()
    ([0, 1, 2, 0, 2, 2], [0, 0, 0, 1, 1, 2])
    """
    tile_rows = np.asarray(tile_rows, dtype=np.int64)
    problem = np.repeat(np.arange(len(tile_rows), dtype=np.int64), tile_rows)
    row = np.arange(len(problem), dtype=np.int64) - np.repeat(np.cumsum(tile_rows) - tile_rows,
                                                            tile_rows)
    by_row = np.lexsort((problem, row))
    return problem[by_row].astype(np.int32), row[by_row].astype(np.int32)


def tile_shape() -> tuple[int, int, int]:
    """``(threads, rows_per_thread, tile_columns)`` from the config, checked: threads a
    multiple of 32 up to 1024, the others positive."""
    threads = int(config.LONG_ALIGN_THREADS)
    rows = int(config.LONG_ALIGN_ROWS_PER_THREAD)
    columns = int(config.LONG_ALIGN_TILE_COLUMNS)
    if threads % 32 or not 32 <= threads <= 1024:
        raise ValueError(f"LONG_ALIGN_THREADS={threads}: a multiple of 32 from 32 to 1024")
    if rows < 1 or columns < 1:
        raise ValueError(f"LONG_ALIGN_ROWS_PER_THREAD={rows}, LONG_ALIGN_TILE_COLUMNS="
                         f"{columns}: positive numbers")
    return threads, rows, columns


@dataclass(frozen=True)
class TileSchedule:
    """The launches of a wavefront over a batch of problems.

    Attributes
    ----------
    order : np.ndarray of int32
        The problems by decreasing number of tile anti-diagonals (stable): launch ``d`` takes
        the first ``active[d]`` of them, those that have tiles on anti-diagonal ``d``.
    first_block : np.ndarray or cupy.ndarray of int64
        Where :func:`tile_schedule`'s ``xp`` built it. For launch ``d``, at ``offset[d]``:
        ``active[d] + 1`` cumulative tile counts (0 first), so that block ``b`` computes a
        tile of problem ``order[k]`` for the ``k`` with ``first_block[offset[d] + k] <= b <
        first_block[offset[d] + k + 1]``.
    offset, active, blocks : np.ndarray of int64
        Per launch: where its counts start, its problems, its blocks (tiles).
    """

    order: np.ndarray
    first_block: np.ndarray
    offset: np.ndarray
    active: np.ndarray
    blocks: np.ndarray


def tile_schedule(tile_rows: np.ndarray, tile_columns: np.ndarray, xp=np) -> TileSchedule:
    """Plan the launches of a batch whose problem ``p`` has ``tile_rows[p]`` x
    ``tile_columns[p]`` tiles (at least 1 x 1): launch ``d`` computes every tile ``(I, J)``
    with ``I + J = d``, block ``b`` of problem ``order[k]`` the tile of row ``I = max(0, d -
    tile_columns + 1) + b - first_block[k]``. ``first_block``, an entry per launch and
    problem (hundreds of thousands for thousands of reads), is computed by the array module
    ``xp``: NumPy, or CuPy where it goes to the device anyway; the rest is NumPy.

    Examples
    --------
    >>> s = tile_schedule(np.array([2, 1]), np.array([2, 3]))
    >>> s.order.tolist(), s.active.tolist(), s.blocks.tolist()
    ([0, 1], [2, 2, 2], [2, 3, 2])
    >>> s.first_block[s.offset[1]:s.offset[1] + 3].tolist()
    [0, 2, 3]
    """
    tile_rows = np.asarray(tile_rows, dtype=np.int64)
    tile_columns = np.asarray(tile_columns, dtype=np.int64)
    diagonals = tile_rows + tile_columns - 1
    order = np.argsort(-diagonals, kind="stable")
    launches = int(diagonals.max()) if len(diagonals) else 0
    # Launch d: the problems with more than d anti-diagonals, a prefix of `order`.
    active = len(order) - np.searchsorted(np.sort(diagonals), np.arange(launches), side="right")
    starts = np.zeros(launches + 1, dtype=np.int64)
    np.cumsum(active, out=starts[1:])
    offset = starts[:-1] + np.arange(launches)  # each launch's counts start with its 0
    # An entry per launch d and problem k of it: the tiles of k on anti-diagonal d.
    entry = xp.arange(int(starts[-1]), dtype=xp.int64)
    launch_starts = xp.asarray(starts)
    d = xp.searchsorted(launch_starts[1:], entry, side="right")
    k = entry - launch_starts[d]
    rows, columns = xp.asarray(tile_rows[order])[k], xp.asarray(tile_columns[order])[k]
    counts = xp.minimum(d, rows - 1) - xp.maximum(0, d - columns + 1) + 1
    cumulative = xp.cumsum(counts)
    within = cumulative - (cumulative - counts)[launch_starts[:-1]][d]  # minus launches before
    first_block = xp.zeros(int(starts[-1]) + launches, dtype=xp.int64)
    first_block[entry + d + 1] = within
    blocks = getattr(xp, "asnumpy", np.asarray)(first_block[xp.asarray(offset + active)])
    return TileSchedule(order.astype(np.int32), first_block, offset, active, blocks)


@dataclass(frozen=True)
class BorderLayout:
    """Where each problem's borders lie in the batch's arrays (see long.cu): ``row_base``
    (``n + 1`` cells of ``rows``), ``column_base`` (``tile_rows * tile_height + 1`` cells of
    ``columns``), ``slot_base`` (``tile_rows`` corners and best cells), and the totals."""

    row_base: np.ndarray
    column_base: np.ndarray
    slot_base: np.ndarray
    rows: int
    columns: int
    slots: int


def _groups(sizes: np.ndarray, budget: int):
    """Yield ``(lo, hi)``: consecutive items of ``sizes`` bytes in groups of at most
    ``budget`` bytes, each of at least one item.

    Examples
    --------
    >>> list(_groups(np.array([3, 3, 9, 1]), 6))
    [(0, 2), (2, 3), (3, 4)]
    """
    lo = 0
    while lo < len(sizes):
        fit = int(np.searchsorted(np.cumsum(sizes[lo:]), budget, side="right"))
        hi = lo + max(1, fit)
        yield lo, hi
        lo = hi


def _starts(sizes: np.ndarray) -> tuple[np.ndarray, int]:
    """Exclusive cumulative sums of ``sizes`` and their total."""
    ends = np.cumsum(sizes, dtype=np.int64)
    return ends - sizes, int(ends[-1]) if len(ends) else 0


def border_layout(m: np.ndarray, n: np.ndarray, tile_height: int) -> BorderLayout:
    """The :class:`BorderLayout` of problems of ``m`` rows and ``n`` columns in tiles of
    ``tile_height`` rows.

    Examples
    --------
    >>> layout = border_layout(np.array([5, 3]), np.array([4, 2]), tile_height=4)
    >>> layout.row_base.tolist(), layout.column_base.tolist(), layout.slot_base.tolist()
    ([0, 5], [0, 9], [0, 2])
    """
    m = np.asarray(m, dtype=np.int64)
    tile_rows = -(-m // tile_height)
    row_base, rows = _starts(np.asarray(n, dtype=np.int64) + 1)
    column_base, columns = _starts(tile_rows * tile_height + 1)
    slot_base, slots = _starts(tile_rows)
    return BorderLayout(row_base, column_base, slot_base, rows, columns, slots)


def problem_bytes(m: np.ndarray, n: np.ndarray, tile_height: int | np.ndarray,
                  tile_width: int) -> np.ndarray:
    """Device bytes of each problem in a batch: borders, corners, best cells, its fields and
    its share of the schedule (an entry a tile anti-diagonal, built on the device from about
    ten int64 arrays of that length: :func:`tile_schedule`). ``tile_height`` may be an array
    that broadcasts against ``m`` (a column of heights: a row of sizes each)."""
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    tile_rows = -(-m // tile_height)
    tile_columns = -(-n // tile_width)
    return (8 * (n + 1) + 8 * (tile_rows * tile_height + 1) + 16 * tile_rows
            + 8 * len(PROBLEM_FIELDS) + 80 * (tile_rows + tile_columns) + 16)


def fits_int32(m: np.ndarray, n: np.ndarray, top_excess: np.ndarray | int,
               table_range: tuple[int, int], gap_open: int, gap_extend: int,
               tile_height: int) -> np.ndarray:
    """Per problem, whether every value of the tiled DP fits long.cu's int32 lanes with room
    below NEG: no alignment of prefixes scores above ``max(s, 0) * min(m, n)``, none of the
    global ones below all gaps, and each of the padding rows of the last tile row (up to
    ``tile_height - 1``) adds at most the best substitution score or loses at most a gap.
    ``table_range``: the lowest and highest substitution scores.

    Examples
    --------
    >>> fits_int32(np.array([10, 1 << 29]), np.array([10, 10]), np.array([2, 2]), (-1, 1),
    ...            3, 1, 64).tolist()
    [True, False]
    """
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    top = max(int(table_range[1]), 0)
    worst = max(-int(table_range[0]), 0)
    pad = tile_height - 1
    high = top * (np.minimum(m, n) + pad)
    low = (np.asarray(top_excess, dtype=np.int64) + 2 * gap_open + (m + n + pad) * gap_extend
           + pad * (worst + gap_open))
    return (high < _VALUE_LIMIT) & (low < _VALUE_LIMIT)


@dataclass
class TileResults:
    """What a run of the wavefront leaves on the host, per problem ``p`` of the batch.

    Attributes
    ----------
    h, f : np.ndarray of int64
        Row ``m`` of every problem: H and F of columns ``0..n``, problem ``p`` at
        ``row_base[p]`` (its cell 0 is the boundary, H(m, 0), F = H(m, 0)).
    best : np.ndarray of int64 or None
        With ``track_best``: ``(score, i, j)`` of the best cell (any row and column >= 1; the
        larger score, then the smaller column, then the smaller row), one row per problem.
    """

    h: np.ndarray
    f: np.ndarray
    row_base: np.ndarray
    best: np.ndarray | None


class TileEngine:
    """Runs batches of DP problems as wavefronts of tiles on the current CUDA device.

    Parameters
    ----------
    table : np.ndarray
        Substitution scores, ``table[query code, target code]`` (int16 range).
    gap_open, gap_extend : int
        A gap of length L costs ``gap_open + (L - 1) * gap_extend``.
    match_codes : int
        Codes below it match themselves (the alphabet's ``match_codes``).
    dna : bool
        Whether ``table`` is match/mismatch (codes below ``match_codes`` score its diagonal,
        everything else its off-diagonal): then the kernel needs no table, as long as both
        scores plus ``gap_open`` fit a signed byte (long.cu's ``byte_score``; else the table).

    Examples
    --------
    >>> engine = TileEngine(np.array([[2, -3], [-3, 2]]), 5, 2, 2, True)  # doctest: +SKIP
    """

    def __init__(self, table: np.ndarray, gap_open: int, gap_extend: int, match_codes: int,
                 dna: bool) -> None:
        self.table = np.asarray(table, dtype=np.int64)
        self.gap_open, self.gap_extend = int(gap_open), int(gap_extend)
        self.match_codes = int(match_codes)
        lowest, highest = int(self.table.min()), int(self.table.max())
        self._table_range = (lowest, highest)
        self.dna = bool(dna and -128 <= lowest + self.gap_open
                        and highest + self.gap_open <= 127)
        # and a band's hand-over keeps gap_open - gap_extend + 1 in 16 bits (long.cu's Links)
        self._table_fits = (-32768 <= lowest and highest + self.gap_open <= 32767
                            and self.gap_open - self.gap_extend < 0xffff)
        self.n_codes = len(self.table)
        self.match = int(self.table[0, 0])
        self.mismatch = int(self.table[0, 1]) if self.n_codes > 1 else self.match

    def fits(self, m: np.ndarray, n: np.ndarray, top_excess: np.ndarray | int) -> np.ndarray:
        """Per problem, whether it may run here: non-empty, values that fit int32, a
        substitution table that fits int16 with ``gap_open`` added (long.cu's shifted scores).
        ``top_excess``: one for every problem, or one each."""
        threads = tile_shape()[0]
        # The tallest tiles (or traced bands) pad the most rows.
        rows = max(*possible_rows_per_thread(), *trace_rows_choices())
        m = np.asarray(m, dtype=np.int64)
        n = np.asarray(n, dtype=np.int64)
        return (m > 0) & (n > 0) & self._table_fits & fits_int32(
            m, n, top_excess, self._table_range, self.gap_open, self.gap_extend, threads * rows)

    def run(self, a_codes, b_codes, fields: np.ndarray, floor_zero: bool,
            track_best: bool) -> TileResults:
        """Compute problems given by ``fields`` (int64, one row per problem, the first eight
        columns of :data:`PROBLEM_FIELDS`; every problem non-empty and :meth:`fits`) over the
        device code arrays ``a_codes``, ``b_codes``, in batches cut to the memory budget."""
        threads, rows_per_thread, width = tile_shape()
        height = threads * rows_per_thread
        fields = np.asarray(fields, dtype=np.int64).reshape(-1, 8)
        m, n = fields[:, 2], fields[:, 3]
        layout = border_layout(m, n, height)
        h = np.empty(layout.rows, dtype=np.int64)
        f = np.empty(layout.rows, dtype=np.int64)
        best = np.empty((len(m), 3), dtype=np.int64) if track_best else None
        results = TileResults(h, f, layout.row_base, best)
        for first, plan in self._batches(fields):
            borders = self._launches(a_codes, b_codes, plan, floor_zero, track_best)
            plan.collect(borders, self.gap_extend, first, results)
        return results

    def _batches(self, fields: np.ndarray, budget: int | None = None):
        """Yield ``(first problem, BatchPlan)`` of consecutive problems of ``fields`` cut to
        the memory budget (``budget``: :meth:`_budget`'s answer, where the caller has just
        asked it)."""
        threads, _, width = tile_shape()
        m, n = fields[:, 2], fields[:, 3]
        # Sized for whichever height the batch takes (taller tiles pad more rows, shorter
        # ones have more tile rows).
        heights = threads * np.array(possible_rows_per_thread())
        sizes = problem_bytes(m, n, heights[:, None], width).max(axis=0)
        budget = self._budget() if budget is None else budget
        multiprocessors = self._multiprocessors() if long_schedule() == "auto" else 0
        for lo, hi in _groups(sizes, budget):
            schedule, rows = batch_schedule(m[lo:hi], multiprocessors)
            yield lo, BatchPlan.of(fields[lo:hi], threads, rows, width, schedule)

    def _multiprocessors(self) -> int:
        """SMs of the current GPU."""
        import cupy

        from ..cuda.report import device_resources

        return device_resources(cupy.cuda.Device().id).sms

    def _budget(self) -> int:
        """Device bytes a batch may take."""
        return batch_budget()

    def _device_table(self):
        """The substitution table on the device (int16; kept for every engine of that table)."""
        return device_constant(self.table.astype(np.int16))

    def _launches(self, a_codes, b_codes, plan: BatchPlan, floor_zero: bool, track_best: bool,
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        """Run the wavefront of one batch; return its borders on the host: ``rows``, int32
        ``(cells, 2)``, and (``track_best``) the best cell of each tile row, int32
        ``(slots, 3)``."""
        rows, _, best = self._wavefront(a_codes, b_codes, plan, floor_zero, track_best)
        return rows.get(), best[:plan.layout.slots].get() if track_best else None

    def _wavefront(self, a_codes, b_codes, plan: BatchPlan, floor_zero: bool, track_best: bool,
                   trace=None, bands_on_device=None):
        """Run the wavefront of one batch; return its borders on the device: ``rows``,
        ``columns`` and ``best`` (see :meth:`_launches`). ``trace``: a batch in bands also
        writes its traceback nibbles, ``(words, word_base)`` on the device (long.cu's
        trace_walk lays them out). ``bands_on_device``: a batch in bands whose
        :meth:`BatchPlan.band_arrays` the caller copied to the device (with its own)."""
        import cupy

        threads, rows_per_thread, width = plan.shape
        layout = plan.layout
        schedule_name = plan.schedule_name
        bands = schedule_name == "bands"
        if bands:  # the ticket counter, a word that keeps the rows 8-byte aligned, the rows
            # Bands hand their bottom rows over through `rows` as tagged words: none before.
            flags = cupy.zeros(2 + 2 * layout.rows, dtype=cupy.int32)
            counter, rows = flags[:1], flags[2:].reshape(layout.rows, 2)
        else:  # the ticket counter, then the tile rows' counters of tiles done (one memset)
            flags = cupy.zeros(1 + max(layout.slots, 1), dtype=cupy.int32)
            counter, done = flags[:1], flags[1:]
            rows = cupy.empty((layout.rows, 2), dtype=cupy.int32)
        columns = cupy.empty((layout.columns, 2), dtype=cupy.int32)
        best = cupy.empty((max(layout.slots, 1), 3), dtype=cupy.int32)
        if track_best and not bands:  # a band writes its best cell outright
            best[:, 0] = NEG
            best[:, 1:] = 0
        table = self._device_table()
        name = kernel_name(threads, rows_per_thread, self.dna, floor_zero, track_best,
                           schedule_name, trace is not None)
        kernel = get_kernel(KERNEL_FILE, name)
        if launch.block_threads(kernel) != threads:  # the kernel's wavefront needs them all
            raise launch.KernelResourceError(
                f"{name} runs {launch.block_threads(kernel)} threads a block, not {threads}: "
                "lower LONG_ALIGN_ROWS_PER_THREAD (LONG_ALIGN_BAND_ROWS_PER_THREAD for bands "
                "under \"auto\", LONG_ALIGN_TRACE_ROWS_PER_THREAD for traced leaves) or "
                "LONG_ALIGN_THREADS")
        shared = launch.reserve_shared(kernel, shared_bytes(threads, width, self.n_codes,
                                                            self.dna, bands))
        scoring = (table, np.int32(self.n_codes), np.int32(self.match), np.int32(self.mismatch),
                   np.int32(self.match_codes), np.int32(self.gap_open),
                   np.int32(self.gap_extend))
        if bands:
            problems, band_problem, band_row = (bands_on_device if bands_on_device is not None
                                                else upload_together(plan.band_arrays()))
            words, word_base = trace if trace is not None else (_NULL, _NULL)
            kernel(*launch.grid(kernel, len(band_row), items_per_block=1),
                   (a_codes, b_codes, problems, band_problem, band_row, counter,
                    *scoring, rows, columns, best, words, word_base), shared_mem=shared)
            return rows, columns, best
        schedule = plan.schedule(cupy)
        corners = cupy.empty(max(layout.slots, 1), dtype=cupy.int32)
        first_ticket = np.zeros(len(schedule.blocks) + 1, dtype=np.int64)
        np.cumsum(schedule.blocks, out=first_ticket[1:])
        problems, order, offset, active, ticket_starts = upload_together([
            plan.packed, schedule.order, schedule.offset, schedule.active.astype(np.int32),
            first_ticket])

        def run(blocks: int, diagonal: int) -> None:
            kernel(*launch.grid(kernel, blocks, items_per_block=1),
                   (a_codes, b_codes, problems, order, schedule.first_block, offset, active,
                    ticket_starts, np.int32(len(schedule.blocks)), np.int32(diagonal), counter,
                    done, *scoring, np.int32(width), rows, columns, corners, best),
                   shared_mem=shared)

        if schedule_name == "tickets":
            run(int(first_ticket[-1]), 0)
        else:
            for d, blocks in enumerate(schedule.blocks.tolist()):
                run(blocks, d)
        return rows, columns, best


#: A null device pointer, for the trace arguments of a band kernel that writes none.
_NULL = np.uint64(0)

#: Columns of a group of a score-only band's hand-over (long.cu's link_group(false)), the
#: largest group (LINK_GROUP_MAX, which sizes the ring); traced bands hand over 16 at a time.
LINK_GROUP = 32

#: Most bands a problem of the "bands" schedule may have: the hand-over's tags (long.cu's
#: TAG_MASK) tell that many apart; a batch with a taller problem runs in tiles ("tickets").
BAND_LIMIT = 0x7FFF


def band_ring(threads: int) -> int:
    """Bytes of ``long_bands``' ring of target codes: the smallest power of two that holds two
    groups of :data:`LINK_GROUP` columns and the ``threads`` before them (long.cu's band_ring:
    a group's start writes the next group's codes while the last threads still read columns
    ``threads - 2`` before it).

    Examples
    --------
    >>> band_ring(32), band_ring(64), band_ring(128)
    (128, 128, 256)
    """
    return 1 << (threads + 2 * LINK_GROUP - 1).bit_length()


def shared_bytes(threads: int, tile_columns: int, n_codes: int, dna: bool,
                 bands: bool = False) -> int:
    """Dynamic shared memory of ``long_tiles`` (or, ``bands``, ``long_bands``): the tile's
    top row (int2 a column; not a band's), the exchange between warps (two int2 a warp), the
    substitution table (int16, unless DNA), the tile's target codes (a band: their ring,
    :func:`band_ring`).

    Examples
    --------
    >>> shared_bytes(64, 512, 5, True), shared_bytes(64, 512, 5, True, bands=True)
    (4640, 160)
    """
    table = 0 if dna else 2 * n_codes ** 2
    if bands:
        return 16 * (threads // 32) + table + band_ring(threads)
    return 8 * tile_columns + 16 * (threads // 32) + table + tile_columns


@dataclass(frozen=True)
class BatchPlan:
    """What the host prepares for one batch of consecutive problems: their ``fields`` with the
    border bases (``packed``, the rows of ``enum Field`` in long.cu), the border layout, the
    tile rows of each problem, the tile shape ``(threads, rows_per_thread, tile_columns)``,
    and the launches (:meth:`schedule`, planned on each call); ``schedule_name``, one of
    :data:`SCHEDULES` but "auto" (a band sweeps all its columns: the tile columns serve the
    tile schedules only)."""

    fields: np.ndarray
    packed: np.ndarray
    layout: BorderLayout
    tile_rows: np.ndarray
    shape: tuple[int, int, int]
    schedule_name: str

    def schedule(self, xp=np) -> TileSchedule:
        """The launches of the tiles (:func:`tile_schedule` with ``xp``); the "bands" schedule
        needs only :func:`band_order`."""
        return tile_schedule(self.tile_rows, -(-self.fields[:, 3] // self.shape[2]), xp)

    @classmethod
    def of(cls, fields: np.ndarray, threads: int, rows_per_thread: int, tile_columns: int,
           schedule_name: str) -> BatchPlan:
        """The plan of problems ``fields`` (the first eight columns of
        :data:`PROBLEM_FIELDS`) in tiles of that shape."""
        height = threads * rows_per_thread
        layout = border_layout(fields[:, 2], fields[:, 3], height)
        tile_rows = -(-fields[:, 2] // height)
        packed = np.ascontiguousarray(np.concatenate(
            (fields, layout.row_base[:, None], layout.column_base[:, None],
             layout.slot_base[:, None]), axis=1))
        return cls(fields, packed, layout, tile_rows, (threads, rows_per_thread, tile_columns),
                   schedule_name)

    def band_arrays(self) -> list[np.ndarray]:
        """What a batch in bands takes to the device: its packed problems and
        :func:`band_order`."""
        return [self.packed, *band_order(self.tile_rows)]

    def collect(self, borders, gap_extend: int, first: int, results: TileResults) -> None:
        """Put what the batch's ``borders`` (:meth:`TileEngine._launches`) hold into
        ``results``, whose problems ``first ..`` are this batch's."""
        rows, best = borders
        layout, fields = self.layout, self.fields
        m = fields[:, 2]
        host_rows = rows.astype(np.int64)
        # Cell 0 of row m is the boundary: column 0's gap down to row m, which ends in F.
        left = np.where(fields[:, 7] != 0, 0, -(fields[:, 5] + m * gap_extend))
        host_rows[layout.row_base] = left[:, None]
        # The batch's problems are consecutive, so their rows are one slice of the results.
        at = int(results.row_base[first])
        results.h[at:at + layout.rows] = host_rows[:, 0]
        results.f[at:at + layout.rows] = host_rows[:, 1]
        if results.best is not None:
            kept = best.astype(np.int64)
            owner = np.repeat(np.arange(len(m)), self.tile_rows)
            # Per problem, the larger score, then the smaller column, then the smaller row.
            ranked = np.lexsort((kept[:, 1], kept[:, 2], -kept[:, 0], owner))
            results.best[first:first + len(m)] = kept[ranked[layout.slot_base]]


def leaf_trace_bytes(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Traceback bytes of each leaf of ``leaf_paths``: its warp stores them step-major, bands
    of 32 rows of ``n + 31`` steps (long.cu's ``trace_index``).

    Examples
    --------
    >>> leaf_trace_bytes(np.array([3, 33]), np.array([4, 1])).tolist()
    [1120, 2048]
    """
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    return -(-m // 32) * (n + 31) * 32


def leaf_bytes(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Device bytes of each leaf of ``leaf_paths``: its traceback bytes, scratch row, path
    (as written, and packed), its six fields and three bases (scratch row, traceback, path),
    its path's length, end and start in the packed paths.

    Examples
    --------
    >>> leaf_bytes(np.array([3]), np.array([4])).tolist()
    [1266]
    """
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    return leaf_trace_bytes(m, n) + 8 * (n + 1) + 2 * (m + n) + 8 * (6 + 3 + 2) + 4


#: Steps of a band whose nibbles a thread stores at once (long.cu's SWEEP_UNROLL).
TRACE_BLOCK_STEPS = 8

#: Bytes of the shared-memory window through which trace_walk reads a band's nibbles
#: (long.cu's WALK_WINDOW_BYTES).
TRACE_WINDOW_BYTES = 16384


def trace_rows_choices() -> tuple[int, ...]:
    """``config.LONG_ALIGN_TRACE_ROWS_PER_THREAD``, checked: each 1, 2, 4 or 8 (a thread's
    nibbles of a step within one word of its chunk, long.cu's store_chunk), and bands of at
    most 4,096 rows of ``LONG_ALIGN_THREADS`` threads (a block of their steps fits the walk's
    window, :data:`TRACE_WINDOW_BYTES`)."""
    choices = tuple(int(rows) for rows in config.LONG_ALIGN_TRACE_ROWS_PER_THREAD)
    if not choices or not set(choices) <= {1, 2, 4, 8}:
        raise ValueError(f"LONG_ALIGN_TRACE_ROWS_PER_THREAD={choices}: each 1, 2, 4 or 8")
    threads = tile_shape()[0]
    if 4 * threads * max(choices) > TRACE_WINDOW_BYTES:
        raise ValueError(f"LONG_ALIGN_THREADS={threads} x LONG_ALIGN_TRACE_ROWS_PER_THREAD="
                         f"{max(choices)}: traced bands of at most "
                         f"{TRACE_WINDOW_BYTES // 4} rows")
    return choices


def traced_leaf_sizes(m: np.ndarray, n: np.ndarray, rows: int) -> np.ndarray:
    """Per leaf of ``m`` x ``n`` cells, the device bytes it takes traced in halves in bands of
    ``rows`` rows a thread over the GPU (:func:`traced_leaf_bytes`), or 0 where a warp takes
    it instead: where it has at most ``LONG_ALIGN_LEAF_CELLS`` cells, one row, more bands than
    the hand-over tells apart, or more than ``LONG_ALIGN_TRACE_BYTES`` traced (a band pads its
    rows: a leaf of a few rows and many columns takes far more than half a byte a cell).

    Examples
    --------
    >>> sizes = traced_leaf_sizes(np.array([1, 600, 600]), np.array([10**6, 400, 500]), 4)
    >>> (sizes > 0).tolist()
    [False, False, True]
    """
    threads = tile_shape()[0]
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    traced = traced_leaf_bytes(m, n, rows)
    return np.where((m * n > int(config.LONG_ALIGN_LEAF_CELLS)) & (m > 1)
                    & (-(-m // (threads * rows)) <= BAND_LIMIT)
                    & (traced <= int(config.LONG_ALIGN_TRACE_BYTES)), traced, 0)


def trace_words(m: np.ndarray, n: np.ndarray, threads: int, rows: int) -> np.ndarray:
    """32-bit words of each traced leaf's nibbles: ``rows`` words a thread and block of
    :data:`TRACE_BLOCK_STEPS` steps, ``n + threads - 1`` steps (rounded up to whole blocks)
    a band of ``threads * rows`` rows (long.cu's trace_walk), rounded up to 32 words so that
    every leaf starts on a whole 128 bytes.

    Examples
    --------
    >>> trace_words(np.array([128, 129]), np.array([10, 10]), 32, 4).tolist()
    [768, 1536]
    """
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    blocks = -(-(n + threads - 1) // TRACE_BLOCK_STEPS)
    words = -(-m // (threads * rows)) * blocks * threads * rows
    return -(-words // 32) * 32


def traced_halves(leaves: np.ndarray) -> np.ndarray:
    """The halves of traced ``leaves`` (rows of leaf_paths' six fields) as problems (the first
    eight :data:`PROBLEM_FIELDS`): a leaf of m rows splits at row m // 2, as ``_linear._halves``
    splits a subproblem (here on the leaves' fields, the codes' bases in them); the top halves run
    forward from its top-left corner, the bottom halves reversed from its bottom-right one
    (column 0's gap there charged the leaf's bottom excess), all the top halves first.

    Examples
    --------
    >>> traced_halves(np.array([[10, 20, 5, 7, 3, 0]])).tolist()
    [[10, 20, 2, 7, 0, 3, 0, 0], [12, 20, 3, 7, 1, 0, 0, 0]]
    """
    middle = leaves[:, 2] // 2
    top = np.zeros((len(leaves), 8), dtype=np.int64)
    top[:, :4] = leaves[:, :4]
    top[:, 2] = middle
    top[:, 5] = leaves[:, 4]
    bottom = top.copy()
    bottom[:, 0] += middle
    bottom[:, 2] = leaves[:, 2] - middle
    bottom[:, 4] = 1
    bottom[:, 5] = leaves[:, 5]
    return np.concatenate((top, bottom))


def traced_leaf_bytes(m: np.ndarray, n: np.ndarray, rows: int) -> np.ndarray:
    """Device bytes of each leaf traced in halves (:func:`traced_halves`) in bands of
    ``rows`` rows a thread: the halves' nibbles and borders in bands, the leaf's path and
    spans, its fields, bases and split.

    Examples
    --------
    >>> int(traced_leaf_bytes(np.array([128]), np.array([10]), 4)[0]) > 128 * 10 // 2
    True
    """
    threads, _, width = tile_shape()
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    halves = np.array((m // 2, m - m // 2))
    bands = 4 * trace_words(halves, n, threads, rows) + problem_bytes(halves, n, threads * rows,
                                                                      width)
    # the path's room; six fields, two trace bases, a path base, five split fields, the split
    # found and two spans
    return bands[0] + bands[1] + m + n + 8 * (6 + 2 + 1 + 5 + 3 + 2)


def problem_fields(sequences: PairCodes, problems: Problems, free_top: bool,
                   free_left: bool) -> np.ndarray:
    """The first eight :data:`PROBLEM_FIELDS` of ``problems`` (int64, a row each): where their
    codes start in ``sequences``' code arrays, their sizes, orientation, top excess and free
    borders.

    Examples
    --------
    >>> codes = PairCodes.from_lists([np.zeros(3, np.uint8), np.zeros(5, np.uint8)],
    ...                              [np.zeros(4, np.uint8), np.zeros(2, np.uint8)])
    >>> problems = Problems.of(pair=[1], a_start=1, a_end=5, b_start=0, b_end=2, reverse=1,
    ...                        top_excess=3, bottom_excess=3)
    >>> problem_fields(codes, problems, True, False).tolist()
    [[4, 4, 4, 2, 1, 3, 1, 0]]
    """
    fields = np.empty((len(problems), 8), dtype=np.int64)
    fields[:, 0] = sequences.q_offsets[sequences.q_index[problems.pair]] + problems.a_start
    fields[:, 1] = sequences.t_offsets[sequences.t_index[problems.pair]] + problems.b_start
    fields[:, 2] = problems.a_length()
    fields[:, 3] = problems.b_length()
    fields[:, 4] = problems.reverse
    fields[:, 5] = problems.top_excess
    fields[:, 6] = free_top
    fields[:, 7] = free_left
    return fields


class CudaEngine(TileEngine):
    """The CUDA engine of the linear-space driver (:class:`gpualign.align._linear.Engine`):
    its score passes (``last_rows``, ``best_cells``) run as wavefronts of tiles, its leaves a
    warp each with a full traceback.

    The codes of ``sequences`` go to the device on the first call that gets them and stay
    there for the engine's next calls with the same object.

    Examples
    --------
    >>> engine = CudaEngine(np.array([[2, -3], [-3, 2]]), 5, 2, 2, True)  # doctest: +SKIP
    """

    def __init__(self, table: np.ndarray, gap_open: int, gap_extend: int, match_codes: int,
                 dna: bool) -> None:
        super().__init__(table, gap_open, gap_extend, match_codes, dna)
        self._codes: tuple[PairCodes, object, object] | None = None

    def adopt_codes(self, sequences: PairCodes, queries: SequenceSet,
                    targets: SequenceSet) -> None:
        """Take the device copies of the sets whose codes ``sequences`` holds
        (:meth:`~gpualign.SequenceSet.to_device`: made once a set and kept with it, as the
        batch kernels keep theirs) as :meth:`device_codes`' answer, where they exist or fit
        in half the batch budget; else :meth:`device_codes` copies the codes for the call."""
        copied = sum(s.codes.nbytes for s in (queries, targets) if not s.on_device())
        if copied == 0 or copied <= batch_budget() // 2:
            self._codes = (sequences, queries.to_device()[0], targets.to_device()[0])

    def device_codes(self, sequences: PairCodes):
        """``(query codes, target codes)`` of ``sequences`` on the device."""
        import cupy

        if self._codes is None or self._codes[0] is not sequences:
            self._codes = (sequences, cupy.asarray(sequences.q_codes),
                           cupy.asarray(sequences.t_codes))
        return self._codes[1], self._codes[2]

    def last_rows(self, sequences: PairCodes, problems: Problems,
                  ) -> tuple[np.ndarray, np.ndarray]:
        """``(H, F)``: the last DP row of each subproblem's global alignment (offsets
        ``problems.row_offsets()``; ``F[0] = H[0]``)."""
        done = self.run(*self.device_codes(sequences),
                        problem_fields(sequences, problems, False, False), False, False)
        return done.h, done.f

    def split_columns(self, sequences: PairCodes, problems: Problems, excess: int,
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(column, through_gap, score)`` of each split of a level of
        :func:`._linear.global_paths` (``problems``: the forward top halves, then the reverse
        bottom halves, as it would send them to :meth:`last_rows`): what
        ``_linear._split_columns`` finds in their last rows, searched where the rows lie
        (``split_columns`` of long.cu), so that only three numbers a split come back to the
        host. The rows of a group of splits stay on the device together: groups of at most a
        quarter of the memory budget."""
        count = len(problems) // 2
        fields = problem_fields(sequences, problems, False, False)
        m, n = fields[:, 2], fields[:, 3]
        left = -(fields[:, 5] + m * self.gap_extend)  # H and F of cell 0 (column 0's gap)
        codes = self.device_codes(sequences)
        sizes = 16 * (n[:count] + 1)  # both halves' rows, an int2 a cell
        column = np.empty(count, dtype=np.int64)
        through_gap = np.empty(count, dtype=bool)
        score = np.empty(count, dtype=np.int64)
        whole_budget = self._budget()
        for lo, hi in _groups(sizes, whole_budget // 4):
            # the group's top halves, then bottoms
            group = np.concatenate((np.arange(lo, hi), np.arange(count + lo, count + hi)))
            # The budget asked above holds for the first group; later ones ask again (the
            # group before still holds its rows).
            rows, row_base = self._device_rows(*codes, fields[group],
                                               whole_budget if lo == 0 else None)
            size = hi - lo
            splits = np.stack((row_base[:size], row_base[size:], n[lo:hi], left[lo:hi],
                               left[count + lo:count + hi]), axis=1)
            column[lo:hi], through_gap[lo:hi], score[lo:hi] = self._split_launch(rows, splits,
                                                                                 excess)
        return column, through_gap, score

    def _split_launch(self, rows, splits: np.ndarray, excess: int,
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One launch of ``split_columns`` (long.cu) over the device ``rows``, a block per row
        of ``splits`` (its ``SplitField`` columns): the columns, through-gap flags and scores
        (one copy back)."""
        (splits_dev,) = upload_together([splits])
        column, through_gap, score = self._split_search(rows, splits_dev, len(splits),
                                                        excess).get()
        return column, through_gap.astype(bool), score

    def _split_search(self, rows, splits, count: int, excess: int, found=None):
        """``split_columns`` (long.cu) of ``count`` splits over the device ``rows``, a block a
        split (device ``splits``: its ``SplitField`` columns; ``excess``: gap open minus
        extend): a device array of their columns, through-gap flags and scores, ``(3,
        count)`` int64 (``found``, where the caller gives one)."""
        import cupy

        kernel = get_kernel(KERNEL_FILE, "split_columns")
        if found is None:
            found = cupy.empty((3, count), dtype=cupy.int64)
        kernel(*launch.grid(kernel, count, items_per_block=1),
               (rows, splits, np.int32(excess), found))
        return found

    def _device_rows(self, a_codes, b_codes, fields: np.ndarray, budget: int | None = None):
        """``(rows, row_base)``: the last row of every problem of ``fields`` (global, the first
        eight :data:`PROBLEM_FIELDS`) on the device, int32 ``(H, F)`` pairs, problem ``p``'s
        ``n + 1`` cells from ``row_base[p]``, cell 0 unset; batches cut to ``budget``
        (:meth:`_batches`)."""
        import cupy

        batches = list(self._batches(fields, budget))
        if len(batches) == 1:  # the batch's rows are all of them
            plan = batches[0][1]
            return self._wavefront(a_codes, b_codes, plan, False, False)[0], plan.layout.row_base
        row_base, cells = _starts(fields[:, 3] + 1)  # as border_layout lays rows out
        rows = cupy.empty((cells, 2), dtype=cupy.int32)
        for first, plan in batches:
            batch_rows, _, _ = self._wavefront(a_codes, b_codes, plan, False, False)
            at = int(row_base[first])
            rows[at:at + plan.layout.rows] = batch_rows
        return rows, row_base

    def trace_rows(self, m: np.ndarray) -> int | None:
        """The rows a thread of the traced bands of problems of ``m`` query rows: the first of
        ``LONG_ALIGN_TRACE_ROWS_PER_THREAD`` at which they make at most
        ``LONG_ALIGN_TRACE_BANDS_PER_SM`` bands an SM (a wavefront of more no longer waits on
        each warp's latency), None where none does."""
        choices = trace_rows_choices()
        threads = tile_shape()[0]
        limit = config.LONG_ALIGN_TRACE_BANDS_PER_SM * self._multiprocessors()
        bands = _band_counts(m, [threads * rows for rows in choices])
        return next((rows for rows, count in zip(choices, bands, strict=True)
                     if count <= limit), None)

    def leaf_cells(self, m: np.ndarray) -> int:
        """The largest leaf of linear-space paths of pairs of ``m`` query rows:
        ``LONG_ALIGN_TRACE_CELLS`` (traced whole over the GPU) where the pairs have
        :meth:`trace_rows` and that is the larger, else ``LONG_ALIGN_LEAF_CELLS``."""
        leaf_cells = int(config.LONG_ALIGN_LEAF_CELLS)
        if self.trace_rows(m) is not None:
            return max(leaf_cells, int(config.LONG_ALIGN_TRACE_CELLS))
        return leaf_cells

    def leaf_paths(self, sequences: PairCodes, problems: Problems,
                   scores: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ops, offsets)``: an optimal global path of each forward subproblem, ``OP_*``
        codes first operation first, concatenated (``offsets``: int64). Small leaves take a
        warp each (``leaf_paths`` of long.cu: the CPU engine's DP, traceback and ties), large
        ones (:func:`traced_leaf_sizes`) bands over the GPU that keep a traceback nibble a cell,
        then a warp's walk a half (:meth:`_traced_launch`); groups of either cut to the memory
        budget (the traced ones also to ``LONG_ALIGN_TRACE_BYTES``; the budget is asked only
        where a route has more than one leaf, since a group holds at least one). ``scores``
        (optional, a slot per subproblem): the traced leaves' scores are written there (their
        best join at the middle row), the others' left as they are."""
        if np.any(problems.reverse):
            raise ValueError("leaf_paths: the driver's leaves run forward")
        m, n = problems.a_length(), problems.b_length()
        leaves = np.stack((
            sequences.q_offsets[sequences.q_index[problems.pair]] + problems.a_start,
            sequences.t_offsets[sequences.t_index[problems.pair]] + problems.b_start,
            m, n, problems.top_excess, problems.bottom_excess), axis=1).astype(np.int64)
        # The rows of the call's traced bands, from the leaves that may be traced (the
        # fewest bands where even the last choice makes too many: leaf_cells, from the
        # pairs' rows, let leaves this large through).
        large = (m * n > int(config.LONG_ALIGN_LEAF_CELLS)) & (m > 1)
        rows = (self.trace_rows(m[large]) if large.any() else None) or trace_rows_choices()[-1]
        traced_sizes = traced_leaf_sizes(m, n, rows)
        traced = traced_sizes > 0
        budget = None
        codes = self.device_codes(sequences)
        routes = []  # per route: its leaves' paths one after the other, and their offsets
        # Per route: its leaves, their device bytes (asked only of a route of several leaves,
        # to group them), its launch and its own bound on a group's bytes.
        for chosen, sizes_of, run, limit in (
                (~traced, lambda index: leaf_bytes(m[index], n[index]), self._leaf_launch,
                 None),
                (traced, lambda index: traced_sizes[index],
                 functools.partial(self._traced_launch, rows=rows),
                 int(config.LONG_ALIGN_TRACE_BYTES))):
            index = np.flatnonzero(chosen)
            if not len(index):
                routes.append((np.zeros(0, np.uint8), np.zeros(1, np.int64)))
                continue
            parts_ops, parts_counts = [], []
            groups = [(0, 1)]
            if len(index) > 1:
                budget = self._budget() if budget is None else budget
                groups = _groups(sizes_of(index), budget if limit is None
                                 else min(budget, limit))
            for lo, hi in groups:
                ops, counts, known = run(codes, leaves[index[lo:hi]])
                if scores is not None and known is not None:
                    scores[index[lo:hi]] = known
                parts_ops.append(ops)
                parts_counts.append(counts)
            route_offsets = np.zeros(len(index) + 1, dtype=np.int64)
            if parts_counts:
                np.cumsum(np.concatenate(parts_counts), out=route_offsets[1:])
            routes.append((np.concatenate(parts_ops) if parts_ops else np.zeros(0, np.uint8),
                           route_offsets))
        return _merged_routes(traced, routes)

    def _leaf_launch(self, codes, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
        """One launch of ``leaf_paths`` over ``leaves`` (rows of its six fields): their paths
        one after the other, their lengths (packed on the device by ``pack_leaf_paths``, so
        that only the paths come back: 2,000 PacBio reads' 75,000 leaves took 32 ms on an H100
        and their packing on the host 0.2 s), and None for their scores (the warps keep
        none)."""
        import cupy

        m, n = leaves[:, 2], leaves[:, 3]
        row_base, rows = _starts(n + 1)
        trace_base, traces = _starts(leaf_trace_bytes(m, n))
        ops_base, room = _starts(m + n)
        kernel = get_kernel(KERNEL_FILE, "leaf_paths")
        ops = cupy.empty(room, dtype=cupy.uint8)
        counts = cupy.empty(len(m), dtype=cupy.int32)
        leaves_dev, row_base_dev, trace_base_dev, ops_base_dev = upload_together(
            [leaves, row_base, trace_base, ops_base])
        kernel(*launch.grid(kernel, 32 * len(m)),  # a warp a leaf
               (*codes, leaves_dev, np.int32(len(m)),
                self._device_table(), np.int32(self.n_codes),
                np.int32(self.match_codes), np.int32(self.gap_open), np.int32(self.gap_extend),
                cupy.empty((rows, 2), dtype=cupy.int32), row_base_dev,
                cupy.empty(traces, dtype=cupy.uint8), trace_base_dev, ops, ops_base_dev,
                counts))
        return (*_packed_paths(ops, ops_base_dev, leaves_dev, counts), None)

    def _traced_launch(self, codes, leaves: np.ndarray, rows: int,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The large ``leaves`` (rows of leaf_paths' six fields), each split at its middle row
        (:func:`traced_halves`): their halves as one batch of problems in bands of ``rows``
        rows a thread that keep a traceback nibble a cell (``long_bands``), the column where
        each leaf's path crosses its middle row found in the halves' last rows
        (``split_columns``), then a warp's walk a half from there (``trace_walk``): the
        leaves' paths one after the other and their lengths, as :meth:`_leaf_launch` returns
        them, and their scores (the best joins). Two wavefronts of half the rows take less
        time than one of all of them: its bands start one after the other (on an H100 the MT
        pair's halves, side by side, took 1.72 ms against 2.32 for the whole pair)."""
        import cupy

        threads = tile_shape()[0]
        count = len(leaves)
        halves = traced_halves(leaves)
        plan = BatchPlan.of(halves, threads, rows, tile_shape()[2], "bands")
        word_base, words = _starts(trace_words(halves[:, 2], halves[:, 3], threads, rows))
        trace = cupy.empty(words, dtype=cupy.uint32)
        # Each leaf's room for its path, then the spans of the paths and the splits found
        # (int64, 8-byte aligned): one copy brings them all back.
        ops_base, room = _starts(leaves[:, 2] + leaves[:, 3])
        room = -(-room // 8) * 8
        left = -(halves[:, 5] + halves[:, 2] * self.gap_extend)  # cell 0 of a last row
        row_base = plan.layout.row_base
        splits = np.stack((row_base[:count], row_base[count:], leaves[:, 3], left[:count],
                           left[count:]), axis=1)
        *bands_dev, leaves_dev, word_base_dev, ops_base_dev, splits_dev = upload_together(
            [*plan.band_arrays(), leaves, word_base, ops_base, splits])
        last_rows, _, _ = self._wavefront(*codes, plan, False, False, (trace, word_base_dev),
                                          bands_dev)
        out = cupy.empty(room + 40 * count, dtype=cupy.uint8)
        tail = out[room:].view(cupy.int64)
        found = self._split_search(last_rows, splits_dev, count,
                                   self.gap_open - self.gap_extend,
                                   tail[2 * count:].reshape(3, count))
        walk = get_kernel(KERNEL_FILE, f"trace_walk<{threads}, {rows}>")
        walk(*launch.grid(walk, 2 * count, items_per_block=1),  # a warp a half
             (*codes, leaves_dev, trace, word_base_dev, found, np.int32(self.match_codes), out,
              ops_base_dev, tail))
        written = out.get()
        spans = written[room:].view(np.int64)
        ops = [written[start:end] for start, end in zip(spans[:count].tolist(),
                                                         spans[count:2 * count].tolist(),
                                                         strict=True)]
        return (np.concatenate(ops), np.array([len(path) for path in ops], dtype=np.int64),
                spans[4 * count:].copy())

    def best_cells(self, sequences: PairCodes, problems: Problems, start_free_top: bool,
                   start_free_left: bool, floor_zero: bool, end_scope: int,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(score, i_end, j_end)`` (int64) of each subproblem: the best cell in ``end_scope``
        (a ``SCOPE_*`` of :mod:`._linear`), with its ties: the last row's first best column;
        the last row (before the last column) against the last column's first best row, the
        row winning ties; any cell by the larger score, smaller column, smaller row, the empty
        alignment ``(0, 0)`` scoring 0 first. The START scopes count row and column 0 too."""
        fields = problem_fields(sequences, problems, start_free_top, start_free_left)
        m, n = fields[:, 2], fields[:, 3]
        codes = self.device_codes(sequences)
        if end_scope == SCOPE_ANY:
            done = self.run(*codes, fields, floor_zero, True)
            score, i_end, j_end = done.best.T.copy()
            empty = score <= 0  # (0, 0) scores 0 and comes first
            score[empty], i_end[empty], j_end[empty] = 0, 0, 0
            return score, i_end, j_end
        edge = end_scope in (SCOPE_LAST_ROW_OR_COLUMN, SCOPE_START_EDGE)
        # Columns searched in the last row: the corner alone; else from 1 (column 0 is the
        # boundary, added below) up to n, or before it when the last column competes (it
        # holds (m, n)).
        lo = n.copy() if end_scope == SCOPE_CORNER else np.ones_like(n)
        hi = n if edge else n + 1
        score, j_end, column, i = self._edge_maxima(*codes, fields, floor_zero, lo, hi, edge)
        j_end += lo
        i_end = m.copy()
        if end_scope == SCOPE_CORNER:
            return score, i_end, j_end
        if end_scope in (SCOPE_START_ROW, SCOPE_START_EDGE):
            # Cell 0 of the last row (column 0's gap down to row m, or free) comes first.
            left = np.where(start_free_left, 0, -(fields[:, 5] + m * self.gap_extend))
            first = left >= score
            score[first], j_end[first] = left[first], 0
        if edge:
            i += 1
            if end_scope == SCOPE_START_EDGE:  # row 0 of the last column comes first
                top_right = np.where(start_free_top, 0,
                                     -(self.gap_open + (n - 1) * self.gap_extend))
                up = top_right >= column
                column[up], i[up] = top_right[up], 0
            wins = column > score
            score[wins], i_end[wins], j_end[wins] = column[wins], i[wins], n[wins]
        return score, i_end, j_end

    def _edge_maxima(self, a_codes, b_codes, fields: np.ndarray, floor_zero: bool,
                     lo: np.ndarray, hi: np.ndarray, want_right: bool):
        """Per problem of ``fields`` (as :meth:`run` takes them): the maximum of H over
        columns ``lo .. hi - 1`` of its last row and the first column (from ``lo``) where it
        occurs, then (``want_right``; else None) the maximum over rows 1..m of its last column
        and the first row (from 1) where it occurs; ``(NEG, -1)`` where empty. Searched batch
        by batch where the wavefront left the borders: only these numbers leave the device."""
        count = len(fields)
        m = fields[:, 2]
        found = [np.empty(count, dtype=np.int64) for _ in range(4)]
        for first, plan in self._batches(fields):
            rows, columns, _ = self._wavefront(a_codes, b_codes, plan, floor_zero, False)
            at = slice(first, first + len(plan.fields))
            base = plan.layout.row_base
            found[0][at], found[1][at] = self._segment_first_max(rows, base + lo[at],
                                                                 base + hi[at])
            if want_right:
                base = plan.layout.column_base + 1  # row 1 of the last column
                found[2][at], found[3][at] = self._segment_first_max(columns, base,
                                                                     base + m[at])
        return (*found[:2], *(found[2:] if want_right else (None, None)))

    def _segment_first_max(self, values, starts: np.ndarray, stops: np.ndarray,
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Per segment ``starts[k] .. stops[k]`` of the device borders ``values`` (int32
        ``(cells, 2)``): the maximum of H and the position, from ``starts[k]``, of its first
        occurrence (``(NEG, -1)`` when empty); ``segment_first_max`` of long.cu, a block a
        segment."""
        import cupy

        count = len(starts)
        kernel = get_kernel(KERNEL_FILE, "segment_first_max")
        best = cupy.empty(count, dtype=cupy.int32)
        at = cupy.empty(count, dtype=cupy.int64)
        (segments,) = upload_together([np.stack((starts, stops), axis=1).astype(np.int64)])
        kernel(*launch.grid(kernel, count, items_per_block=1), (values, segments, best, at))
        return best.get().astype(np.int64), at.get()


def _packed_paths(ops, ops_base, leaves, counts) -> tuple[np.ndarray, np.ndarray]:
    """The paths that a launch wrote backwards into the device ``ops`` (leaf k's
    ``counts[k]`` operations ending at ``ops_base[k] + m + n``, ``leaves`` as leaf_paths takes
    them) packed one after the other on the device (``pack_leaf_paths``, a warp a leaf), and
    their lengths, on the host."""
    import cupy

    count = len(counts)
    ends = cupy.cumsum(counts, dtype=cupy.int64)
    packed = cupy.empty(len(ops), dtype=cupy.uint8)
    pack = get_kernel(KERNEL_FILE, "pack_leaf_paths")
    pack(*launch.grid(pack, 32 * count),  # a warp a leaf
         (ops, ops_base, leaves, counts, ends - counts, np.int32(count), packed))
    counts = counts.get().astype(np.int64)
    return packed[:int(counts.sum())].get(), counts


def _merged_routes(second: np.ndarray, routes: list[tuple[np.ndarray, np.ndarray]],
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(ops, offsets)`` of leaves whose paths two routes computed: ``routes[1]`` those
    where ``second``, ``routes[0]`` the others, each ``(ops, offsets)`` in the leaves' order.
    Copied a run of consecutive leaves of one route at a time (the routes mostly take whole
    levels: few runs).

    Examples
    --------
    >>> first = (np.array([1, 1, 2], np.uint8), np.array([0, 2, 3]))
    >>> second = (np.array([7, 8, 8, 8], np.uint8), np.array([0, 1, 4]))
    >>> ops, offsets = _merged_routes(np.array([True, False, True, False]), [first, second])
    >>> ops.tolist(), offsets.tolist()
    ([7, 1, 1, 8, 8, 8, 2], [0, 1, 3, 6, 7])
    """
    second = np.asarray(second, dtype=bool)
    if not second.any() or second.all():  # one route (or no leaf): its paths as they are
        return routes[int(second.any())]
    count = len(second)
    lengths = np.empty(count, dtype=np.int64)
    lengths[~second] = np.diff(routes[0][1])
    lengths[second] = np.diff(routes[1][1])
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # Each leaf's place in its route.
    rank = np.where(second, np.cumsum(second), np.cumsum(~second)) - 1
    ops = np.empty(int(offsets[-1]), dtype=np.uint8)
    starts = np.flatnonzero(np.diff(second.astype(np.int8))) + 1
    for lo, hi in zip(np.r_[0, starts].tolist(), np.r_[starts, count].tolist(), strict=True):
        route_ops, route_offsets = routes[int(second[lo])]
        first, last = int(rank[lo]), int(rank[hi - 1]) + 1
        ops[offsets[lo]:offsets[hi]] = route_ops[route_offsets[first]:route_offsets[last]]
    return ops, offsets


def _records_used(sequences: SequenceSet, index: np.ndarray) -> tuple[SequenceSet, np.ndarray]:
    """``(records, local)``: the set whose records the pairs' ``index`` into ``sequences`` use,
    and their index into it. ``sequences`` itself (nothing copied, and its device copy is the
    one kept with it) where the pairs use at least half of its residues: at once when they use
    every record in order (pairs by position: a whole call's host work before its launch is a
    millisecond of small steps like this one); else a new set of just the records used.

    Examples
    --------
    >>> s = SequenceSet.from_sequences(["ACGT", "GG", "T"])
    >>> records, local = _records_used(s, np.array([2, 2]))
    >>> len(records), local.tolist()
    (1, [0, 0])
    >>> _records_used(s, np.array([0, 2]))[0] is s
    True
    """
    size = len(sequences)
    if len(index) == size and (index == positions(size)).all():
        return sequences, index
    unique, local = np.unique(index, return_inverse=True)
    if 2 * int(sequences.lengths[unique].sum()) >= len(sequences.codes):
        return sequences, index
    return sequences.take(unique), local


def _pair_codes(engine: CudaEngine, qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
                t_index: np.ndarray) -> PairCodes:
    """The pairs as :class:`PairCodes` over the records they use (all that goes to the
    device: the sets' own device copies where the pairs use most of them,
    :meth:`CudaEngine.adopt_codes`)."""
    queries, q_local = _records_used(qset, q_index)
    targets, t_local = _records_used(tset, t_index)
    sequences = PairCodes(queries.codes, queries.offsets, targets.codes, targets.offsets,
                          q_local.astype(np.int64), t_local.astype(np.int64))
    engine.adopt_codes(sequences, queries, targets)
    return sequences


def pair_ends(engine: CudaEngine, qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
              t_index: np.ndarray, mode: int, progress: Callable[[int], object] | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(score, query_end, target_end)`` (int64) of whole pairs in ``mode``, as the batch
    kernels report them (every pair non-empty and :meth:`TileEngine.fits`); ``progress`` is
    called with the cells done."""
    return mode_ends(_pair_codes(engine, qset, tset, q_index, t_index), engine.gap_open,
                     engine.gap_extend, mode, engine, progress)


def pair_paths(engine: CudaEngine, qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray,
               t_index: np.ndarray, mode: int,
               progress: Callable[[int], object] | None = None) -> LinearPaths:
    """Optimal alignments of whole pairs in ``mode`` in linear space (:func:`._linear.
    mode_paths` with this engine, its leaves :meth:`CudaEngine.leaf_cells` of the pairs'
    query lengths): scores and ends as the batch kernels report them; ``progress`` is called
    with the cells done, level by level."""
    leaf_cells = engine.leaf_cells(qset.lengths[q_index])
    return mode_paths(_pair_codes(engine, qset, tset, q_index, t_index), engine.gap_open,
                      engine.gap_extend, mode, engine, leaf_cells, progress)
