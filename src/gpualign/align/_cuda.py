"""CUDA backend of alignment: scores and end cells (``align/kernels/align.cu``), and paths and
the scores of long pairs, warps or a block per pair (``align/kernels/warp.cu``).

One thread aligns one pair, sweeping it in strips of ``config.ALIGN_STRIP_ROWS`` query rows.
Pairs whose every DP value provably fits 16 bits run in the narrow kernel (two 16-bit lanes
per register, DPX instructions); the others run in the wide one (32-bit lanes). The bound is
computed from the lengths and the scoring before the run, so no score is ever wrong. Pairs
with an empty side, or too long even for 32 bits, are computed by the CPU backend, which
defines the results.

Within a width, pairs run in decreasing order of strips, then of target length: a warp's
threads wait for each other after every strip, so they need equal strips and similar targets,
and a thread computes its pair alone, so the longest pairs must start first. Launches are cut
to the memory budget: each warp keeps a border of one row (H and F of every target column of
its lanes) between strips.

Pairs of at least ``config.ALIGN_WARP_MIN_CELLS`` cells (global, semi-global and local scores
and ends) run one warp per pair instead, so that the longest pairs do not leave a launch
waiting for a few threads.

Paths (``task="path"``): warps fill the DP (global, semi-global and local: every cell, finding
the end on the way; overlap: up to the end cell from the score kernels) in bands of 32 lanes,
keeping a 4-bit traceback code per cell, a warp a band, all bands of a pair at once (each a few
columns behind the one above); then one warp per pair walks back and writes the CIGAR (text,
or a word a run for ``packed=True``), and a warp per pair gathers them into one buffer (in
page-locked host memory, written by the GPU, where a batch's are small enough; else one copy to
the host). :func:`_trace_plan` gives each pair its layout from the measured step times: the
height of its lanes (``config.ALIGN_TRACE_LANE_ROWS``: fewer rows make shorter steps and more
bands), or a block of 128, 256 or 512 lanes instead (``config.ALIGN_TRACE_LANES``), the
least work near the pair's fastest while the call's pairs leave the GPU room. Pairs go in
batches of half the memory budget, each batch a fill launch per lane count and height side by
side on a few streams, longest first, then one walk launch; a batch's results are fetched once
the next one is queued.

Pairs of at least ``config.LONG_ALIGN_MIN_CELLS`` cells run on the whole GPU instead: a
wavefront of DP tiles each, many pairs side by side (:mod:`._cuda_long`, every mode's scores and
ends), and their paths in linear space over the same engine (:mod:`._linear`).

Block sizes come from the kernels' ``__launch_bounds__`` (:mod:`gpualign.cuda.launch`). Nothing
here imports Numba: pairs that the GPU cannot take go to the CPU backend, imported only then.
"""

from __future__ import annotations

import codecs
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config
from .._progress import Progress
from ..cigar import PackedCigars, offsets_of_counts, placed_cigars
from ..codes import ALIGN_GLOBAL, ALIGN_LOCAL, ALIGN_OVERLAP
from ..cuda import launch
from ..cuda.host import device_constant, mapped, maps_host_memory, thread_buffers, upload_together
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget, carved, device_chunks, launch_split
from ..cuda.report import device_resources
from ..search.database import partition_bounds
from ..sequences import SequenceSet
from . import _cuda_long
from ._linear import path_cigars

KERNEL_FILE = "align/kernels/align.cu"
WARP_KERNEL_FILE = "align/kernels/warp.cu"
BAND_KERNEL_FILE = "align/kernels/band.cu"
_NARROW_NEG = -32768 + 1024  # Narrow::NEG in align.cu
_PROFILE_PADDING = -128  # profile rows past a query's end (SUB_PROFILE in align.cu)
_NARROW_LIMIT = 32767 - 256  # below the int16 maximum of Narrow's lanes in align.cu, a margin
# The largest wide value in magnitude: Wide::NEG in align.cu and NEG in warp.cu are -(1 << 30),
# so no real value may reach them.
_WIDE_LIMIT = (1 << 30) - (1 << 20)
_MAX_GAP_EXTEND = 1000  # Narrow::NEG in align.cu - gap_extend must not wrap
# How the kernels look up substitution scores (SUB_* in align.cu): DNA match/mismatch from two
# constants, a query profile of int8 scores (16-byte loads per strip and column), or a table in
# shared memory.
_SUB_DNA, _SUB_TABLE, _SUB_PROFILE = 0, 1, 2
_UNKNOWN_SCORE = (1 << 31) - 1  # a path fill's known score when there is none


def _kernel_name(wide: bool, mode: int, affine: bool, substitution: int, find_end: bool,
                 half: int) -> str:
    def flag(value: bool) -> str:
        return "true" if value else "false"

    return (f"align_pairs<{'Wide' if wide else 'Narrow'}, {mode}, {flag(affine)}, "
            f"{substitution}, {flag(find_end)}, {half}>")


def value_bounds(m: np.ndarray, n: np.ndarray, table: np.ndarray, gap_open: int,
                 gap_extend: int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, bounds ``(high, low)`` on every value the kernels compute (shifted scores,
    gap states, the padding rows' candidates), for every mode.

    No alignment of an ``m``-prefix and an ``n``-prefix scores above ``max(s, 0) * min(m, n)``;
    none of the global ones scores below all-gaps, ``-(2 * open + (m + n) * extend)``, and
    every mode's DP values are at least the global ones."""
    top = max(int(table.max()), 0)
    m = m.astype(np.int64)
    n = n.astype(np.int64)
    high = top * np.minimum(m, n) + top + gap_open
    low = -(2 * gap_open + (m + n) * gap_extend) - gap_open - gap_extend - 128
    return high, low


def align_pairs(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
                table: np.ndarray, gap_open: int, gap_extend: int, mode: int, task: str,
                progress: Progress | None = None, packed: bool = False,
                known_scores: np.ndarray | None = None,
                meanwhile: Callable[[], None] | None = None,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                           list[str | None] | PackedCigars | None, np.ndarray | None]:
    """Align index pairs on the current CUDA device, with the results and the contract of the
    CPU backend's :func:`gpualign.align._cpu.align_pairs`: int64 arrays ``score, query_start,
    query_end, target_start, target_end`` (-1 where ``task`` reports no such value), the CIGARs
    (strings, or a :class:`PackedCigars` when ``packed``) and the identities (None unless
    ``task="path"``); ``progress`` moves by the cells of the pairs done. ``known_scores``: the
    pairs' exact local scores where the caller has them (a search's hits), with which the fill
    of a local path stops once it has passed the first cell of that score; the results are the
    same (they must be exact: the bands of a pair that stop early compute their last columns
    from an empty row, whose cells could reach a lower score first).
    ``meanwhile``: the caller's work, called once the paths' launches are queued, while the
    GPU computes them (at most once; not at all by the other tasks)."""
    if task == "path":
        return _paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode, progress,
                      packed, known_scores, meanwhile)
    score, q_end, t_end = _scores(qset, tset, q_index, t_index, table, gap_open, gap_extend,
                                  mode, want_end=task == "end", progress=progress)
    if task == "score":
        q_end[:] = -1
        t_end[:] = -1
    missing = np.full(len(score), -1, dtype=np.int64)
    return score, missing, q_end, missing.copy(), t_end, None, None


def _scores(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode, want_end,
            progress=None):
    """Scores and end cells of index pairs: int64 arrays ``score, query_end, target_end``
    (every mode reports its ends, except local alignments without ``want_end``: theirs are
    meaningless); ``progress`` (a :class:`Progress`) moves as groups of pairs are done."""
    import cupy

    count = len(q_index)
    score = np.zeros(count, dtype=np.int64)
    q_end = np.full(count, -1, dtype=np.int64)
    t_end = np.full(count, -1, dtype=np.int64)
    m = qset.lengths[q_index]
    n = tset.lengths[t_index]
    dna = _dna_scores(qset, table)
    engine = _long_engine(qset, table, gap_open, gap_extend, dna)
    cells = m.astype(np.int64) * n
    # Pairs long enough for the whole GPU: a wavefront of tiles each (every mode and end).
    # Pairs long for a warp join them: beside pairs that long they would be the tail of the
    # thread kernels (a thread's pair of 5e7 cells takes about 0.3 s).
    tiled = np.zeros(count, dtype=bool)
    if (cells >= config.LONG_ALIGN_MIN_CELLS).any():  # the tile shape is checked only then
        tiled = _long_pairs(engine, m, n, min(config.LONG_ALIGN_MIN_CELLS,
                                              config.ALIGN_WARP_MIN_CELLS))
        if not (tiled & (cells >= config.LONG_ALIGN_MIN_CELLS)).any():
            tiled[:] = False
    if tiled.any():
        chosen = np.flatnonzero(tiled)
        score[chosen], q_end[chosen], t_end[chosen] = _cuda_long.pair_ends(
            engine, qset, tset, q_index[chosen], t_index[chosen], mode,
            progress.cells_done if progress is not None else None)
        if len(chosen) == count:  # one long pair, say: nothing more to sort out
            return score, q_end, t_end
    high, low = value_bounds(m, n, table, gap_open, gap_extend)
    shifted = table.astype(np.int64) + gap_open
    profile = not dna and shifted.min() >= -127 and shifted.max() <= 127
    # Substitution scores live in int16 tables (int8 bytes for DNA in the narrow kernel).
    narrow_ok = gap_extend <= _MAX_GAP_EXTEND and (
        (shifted.min() >= -128 and shifted.max() <= 127) if dna else True)
    wide_ok = shifted.min() >= -32768 and shifted.max() <= 32767
    on_gpu = (m > 0) & (n > 0) & (high < _WIDE_LIMIT) & (low > -_WIDE_LIMIT) & wide_ok
    # The lowest value plus the lowest (shifted) substitution must stay above Narrow's floor.
    narrow = on_gpu & narrow_ok & (high < _NARROW_LIMIT) & \
        (low > _NARROW_NEG + max(256, -int(shifted.min())))
    find_end = want_end and mode == ALIGN_LOCAL
    done = progress.pairs_done if progress is not None else _ignore
    # Long for the batch: only pairs far above the mean would hold a launch up (a warp computes
    # a pair at a fraction of what 32 threads compute on 32 pairs).
    threshold = max(config.ALIGN_WARP_MIN_CELLS,
                    config.ALIGN_WARP_MIN_RATIO * float(cells.mean()) if len(cells) else 0.0)
    long = on_gpu & ~tiled & (cells >= threshold) & (mode != ALIGN_OVERLAP)
    if long.any():
        chosen = np.flatnonzero(long)
        chosen = chosen[warp_fits(m[chosen], n[chosen], table, gap_open, gap_extend,
                                  qset.alphabet.size)]
        long[:] = False
        long[chosen] = True
        score[chosen], q_end[chosen], t_end[chosen] = _warp_scores(
            qset, tset, q_index[chosen], t_index[chosen], table, gap_open, gap_extend, mode)
        done(cells[chosen])
    half = config.ALIGN_STRIP_ROWS // 2
    if config.ALIGN_STRIP_ROWS % 2 or half < 1:
        raise ValueError(f"ALIGN_STRIP_ROWS={config.ALIGN_STRIP_ROWS}: a positive even number")
    # The thread kernels' pairs (none, for a batch of long pairs: then nothing goes to the
    # device here) in lanes: 0 narrow, 1 wide.
    thread = np.flatnonzero(on_gpu & ~long & ~tiled)
    if len(thread):
        substitution = _SUB_DNA if dna else _SUB_PROFILE if profile else _SUB_TABLE
        setup = _Setup(mode, gap_open != gap_extend, substitution, find_end, half,
                       shifted.astype(np.int16), qset.alphabet.size, gap_open, gap_extend)
        lanes = np.where(narrow[thread], 0, 1).astype(np.uint8)
        thread_q = q_index[thread]
        thread_t = thread_q if t_index is q_index else t_index[thread]
        for part, sequences, q_local, t_local in device_chunks(qset, tset, thread_q, thread_t,
                                                               config.ALIGN_GPU_CHUNK_PAIRS):
            pairs = thread[part]
            profiles = setup.profiles(sequences)
            chunk = _Chunk(sequences, profiles, cupy.asarray(q_local), cupy.asarray(t_local),
                           cupy.asarray(n[pairs]))
            chunk_lanes = cupy.asarray(lanes[part])
            order = _kernel_order(chunk, chunk_lanes, half)
            bounds = np.cumsum(cupy.bincount(chunk_lanes, minlength=2).get()[:2])
            for wide, first, last in ((False, 0, bounds[0]), (True, bounds[0], bounds[1])):
                if last > first:
                    launch_split(functools.partial(setup.run, wide, chunk), order[first:last],
                                 (8 if wide else 4) * (int(n[pairs].mean()) + 2) + 32)
            for host, device in zip((score, q_end, t_end), chunk.results, strict=True):
                host[pairs] = device.get()
            done(cells[pairs])
    rest = np.flatnonzero(~on_gpu & ~tiled)
    if len(rest):
        # The CPU's DP (task "end": never parasail, whose 32-bit scores could clip the pairs
        # that are here for being too large).
        from . import _cpu

        s, _, qe, _, te, _, _ = _cpu.align_pairs(qset, tset, q_index[rest], t_index[rest], table,
                                                 gap_open, gap_extend, mode, "end")
        score[rest], q_end[rest], t_end[rest] = s, qe, te
        done(cells[rest])
    return score, q_end, t_end


def _ignore(_cells) -> None:
    """What :func:`_scores` reports progress to without a :class:`Progress`."""


def _kernel_order(chunk, lanes, half: int):
    """The chunk's pairs in the thread kernels' order (on the device): by ``lanes`` (narrow,
    wide), then strips and target length, both descending. A warp's threads wait for
    each other after every strip, so they need equal strips and similar targets; a thread
    computes its pair alone, so the longest pairs must start first."""
    q_offsets = chunk.sequences[1]
    m = q_offsets[chunk.q_index + 1] - q_offsets[chunk.q_index]
    strips = (m + 2 * half - 1) // (2 * half)
    n = chunk.target_lengths
    most_strips, longest = int(strips.max()) + 1, int(n.max()) + 1
    key = (lanes.astype(np.int64) * most_strips + most_strips - strips) * longest + longest - n
    return key.argsort()


def _lane_heights(lanes: int) -> np.ndarray:
    """The rows a lane of ``lanes`` (32: ``config.ALIGN_TRACE_LANE_ROWS``; a block:
    ``config.ALIGN_TRACE_BLOCK_LANE_ROWS``, at most 4,096 rows a band: a block's threads share
    its registers), checked and sorted."""
    name = "ALIGN_TRACE_LANE_ROWS" if lanes == 32 else "ALIGN_TRACE_BLOCK_LANE_ROWS"
    return _checked_heights(name, tuple(getattr(config, name)), lanes)


@functools.lru_cache(maxsize=64)
def _checked_heights(name: str, setting: tuple, lanes: int) -> np.ndarray:
    """:func:`_lane_heights` of the setting ``name`` (kept per setting: a call asks for each
    lane count's several times)."""
    heights = sorted(int(rows) for rows in setting)
    if not heights or not all(rows in (2, 4) or (rows > 0 and rows % 8 == 0)
                              for rows in heights):
        raise ValueError(f"{name}={list(setting)}: 2, 4 or positive multiples of 8")
    if lanes > 32:
        heights = [rows for rows in heights if rows <= 4096 // lanes] or heights[:1]
    result = np.array(heights, dtype=np.int64)
    result.flags.writeable = False  # shared by every caller
    return result


def trace_layout(rows_end: np.ndarray, columns_end: np.ndarray,
                 lanes: np.ndarray | int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Per pair filled by ``lanes`` lanes (32: heights of ``config.ALIGN_TRACE_LANE_ROWS``;
    128, 256, 512: of ``config.ALIGN_TRACE_BLOCK_LANE_ROWS``, at most 4,096 rows a band), the
    rows each lane of ``warp_fill`` keeps and the 32-bit words of its traceback codes (a nibble
    a cell): the fewest bands, then the lowest lanes that cover the rows."""
    rows_end = rows_end.astype(np.int64)
    if np.ndim(lanes) == 0:
        rows = _lane_rows(rows_end, int(lanes))
    else:
        lanes = np.asarray(lanes, dtype=np.int64)
        rows = np.zeros(len(rows_end), dtype=np.int64)
        for count in np.unique(lanes).tolist():
            these = lanes == count
            rows[these] = _lane_rows(rows_end[these], count)
    return rows, _trace_words(rows_end, columns_end, lanes, rows)


def _pair_bands(rows_end: np.ndarray, lanes, rows) -> np.ndarray:
    """The bands of pairs of ``rows_end`` rows filled by ``lanes`` lanes of ``rows`` rows (at
    least one: a pipelined fill gives every pair a warp)."""
    return np.maximum(1, -(-np.asarray(rows_end, dtype=np.int64) // (lanes * rows)))


def _border_rows(lanes, bands) -> np.ndarray:
    """The border rows of a pair's path fill: one a band where its bands are pipelined (a warp
    of lanes each), else two that the bands use in turn (``warp.cu``)."""
    return np.where(np.asarray(lanes) == 32, bands, 2)


#: The byte that fills a batch's border rows: each cell then reads as not yet written
#: (UNWRITTEN in warp.cu) until a pipelined band's warp writes it.
_UNWRITTEN_BYTE = 0x80


def _trace_words(rows_end: np.ndarray, columns_end: np.ndarray, lanes, rows) -> np.ndarray:
    """The 32-bit words of the traceback codes of pairs filled by ``lanes`` lanes of ``rows``
    rows (:func:`trace_layout`)."""
    bands = -(-rows_end // (lanes * rows))
    nibbles = bands * (columns_end.astype(np.int64) + lanes - 1) * lanes * rows
    return (nibbles + 31) // 32 * 4  # each pair's codes start 16-byte aligned


def _lane_rows(rows_end: np.ndarray, lanes: int) -> np.ndarray:
    """:func:`trace_layout`'s rows a lane for pairs of ``rows_end`` rows, all in ``lanes``."""
    heights = _lane_heights(lanes)
    bands = np.maximum(1, -(-rows_end // (lanes * heights[-1])))
    need = -(-rows_end // (lanes * bands))
    return heights[np.minimum(np.searchsorted(heights, need), len(heights) - 1)]


#: The time of a step of the path fill (``warp_fill``), in ns, by lane count and the rows a lane
#: keeps: one pair alone on an H100, local alignment (``benchmarks/bench_fill_steps.py``,
#: ``benchmarks/results/fill-steps-nvidia-h100-80gb-hbm3-2026-11-26.md``). A step costs far
#: from linearly in the rows (the cells of a lane overlap, a block's warps meet at a barrier
#: each step); rows past the last measured count are extrapolated along its last segment.
_FILL_STEP_NS = {
    32: ((2, 4, 8, 16, 24, 32, 48), (185, 222, 450, 480, 649, 782, 1090)),
    128: ((2, 4, 8, 16, 24, 32), (242, 388, 613, 623, 748, 902)),
    256: ((2, 4, 8, 16), (290, 523, 667, 908)),
    512: ((2, 4, 8), (433, 706, 1070)),
}


def _step_ns(lanes: int, rows: np.ndarray) -> np.ndarray:
    """:data:`_FILL_STEP_NS` at ``rows`` (a lane count's measured heights, interpolated and
    extrapolated linearly)."""
    return np.interp(rows, *_step_points(lanes))


@functools.cache
def _step_points(lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """:data:`_FILL_STEP_NS` of ``lanes`` with one more point, far past any lane's rows, along
    its last segment: one interpolation then also extrapolates."""
    heights, times = _FILL_STEP_NS[lanes]
    far = 1 << 20
    slope = (times[-1] - times[-2]) / (heights[-1] - heights[-2])
    return (np.array([*heights, far], dtype=np.float64),
            np.array([*times, times[-1] + (far - heights[-1]) * slope], dtype=np.float64))


#: A pair's fill takes the layout of least work (warp-time) whose time is within this factor of
#: its fastest (a faster layout for less than that would only take warps from the other pairs).
_LANE_SLACK = 1.25

#: Pipelined bands (paths in warps): the steps by which a band's warp trails the one above: its
#: first lane reads the row that the last lane of the band above writes 31 steps after its
#: first, in chunks of 32 columns loaded a chunk ahead (warp.cu), so 63 to 95 steps. The bands
#: below the first also do a little more a step (the chunks' loads and shuffles), which the
#: step times (:data:`_FILL_STEP_NS`, one band) do not see: this lag is fitted to a measured
#: fill (on an H100, a 1,489 x 1,494 protein pair in 12 bands of 4-row lanes: about 0.5 ms).
_PIPELINE_LAG_STEPS = 80

#: Pipelined bands: a pair takes several warps only where they would fill it in at most this
#: fraction of the time of its fastest fill by one warp or block.
_PIPELINE_GAIN = 0.6


def _trace_plan(rows_end: np.ndarray, columns_end: np.ndarray, multiprocessors: int,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair, the layout that fills its traceback codes: a warp of lanes of each height of
    ``config.ALIGN_TRACE_LANE_ROWS`` (its bands pipelined, a warp each), or a block of 128,
    256 or 512 lanes (``config.ALIGN_TRACE_LANES``; the rows of :func:`trace_layout`). Of the
    layouts whose fill (:data:`_FILL_STEP_NS` a step) finishes within ``_LANE_SLACK`` of the
    pair's fastest, the one of least work (warp-time), while the call's work fits the device's
    ``multiprocessors`` at ``config.ALIGN_TRACE_WARPS_PER_SM`` warps each; else the least work
    that finishes by the least time at which the call fits (a batch of many pairs: the most
    efficient layouts). (A pair's own time, not the call's: a local path that stops at its
    known score may take far less than its model says.)
    Returns the lanes, the rows a lane keeps, the words of the pair's codes
    (:func:`_trace_words`) and the fill's time (ns): everything a call of paths needs of its
    layout, computed once."""
    allowed = sorted(set(config.ALIGN_TRACE_LANES))
    if not allowed or not set(allowed) <= {32, 128, 256, 512}:
        raise ValueError(f"ALIGN_TRACE_LANES={config.ALIGN_TRACE_LANES}: some of 32, 128, 256 "
                         "and 512")
    rows_end = np.asarray(rows_end, dtype=np.int64)
    columns_end = np.asarray(columns_end, dtype=np.int64)
    if len(rows_end) == 0:
        return tuple(np.zeros(0, dtype=dtype) for dtype in (np.int64, np.int64, np.int64,
                                                            np.float64))
    setting = (tuple(allowed), tuple(config.ALIGN_TRACE_LANE_ROWS),
               tuple(config.ALIGN_TRACE_BLOCK_LANE_ROWS))
    lanes = _plan_lanes(*setting)
    # Every pair with every layout: the rows a lane keeps, its bands, a step's time (read from
    # tables for all but very tall pairs: a call of a few hundred pairs then costs the host a
    # few array operations), then the fill's time and work.
    if int(rows_end.max()) < _PLAN_TABLE_ROWS:
        rows, bands, step = (table[rows_end] for table in _plan_tables(*setting))
    else:
        rows, bands, step = _plan_rows(rows_end, lanes)
    band_time = (columns_end[:, None] + lanes - 1) * step
    pipelined = lanes == 32
    cost = np.where(pipelined, band_time + (bands - 1) * (_PIPELINE_LAG_STEPS * step),
                    bands * band_time)
    work = np.where(pipelined, bands * band_time, cost * (lanes // 32))
    # A pair takes several pipelined warps only where they fill it much faster than one warp
    # or block can: their warps share the multiprocessors with the other pairs' (which the
    # step times, measured alone, do not see).
    several = pipelined & (bands > 1)
    alone = np.where(several, np.inf, cost).min(axis=1)  # (inf: no single warp or block fits)
    allowed = ~several | (cost <= _PIPELINE_GAIN * alone[:, None])
    reachable = np.where(allowed, cost, np.inf)
    capacity = multiprocessors * config.ALIGN_TRACE_WARPS_PER_SM
    pace = reachable.min(axis=1) * _LANE_SLACK
    pairs = np.arange(len(cost))

    def least_work(time: float) -> np.ndarray:  # the allowed layout of least work done by then
        return np.argmin(np.where(reachable <= np.maximum(pace, time)[:, None], work, np.inf),
                         axis=1)

    def fits(time: float, chosen: np.ndarray) -> bool:  # the call's work fits the device
        took = max(time, float(cost[pairs, chosen].max()))  # for as long as it takes
        return float(work[pairs, chosen].sum()) <= took * capacity

    chosen = least_work(0.0)  # few pairs (a search's hits): each at about its fastest
    if not fits(0.0, chosen):
        # Too many for that: the least time that fits is one of the costs (the work can only
        # fall as the time grows, so fitting can only become true); at the largest, every pair
        # takes its layout of least work.
        times = np.unique(cost[allowed])
        lo, hi = 0, len(times) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(float(times[mid]), least_work(float(times[mid]))):
                hi = mid
            else:
                lo = mid + 1
        chosen = least_work(float(times[lo]))
    pair_lanes, pair_rows = lanes[chosen], rows[pairs, chosen]
    return (pair_lanes, pair_rows, _trace_words(rows_end, columns_end, pair_lanes, pair_rows),
            cost[pairs, chosen])


#: Pairs of fewer rows than this take their rows, bands and step times in :func:`_trace_plan`
#: from tables made once per lane setting (:func:`_plan_tables`).
_PLAN_TABLE_ROWS = 1 << 14


@functools.lru_cache(maxsize=8)
def _plan_lanes(allowed: tuple, lane_rows: tuple, block_lane_rows: tuple) -> np.ndarray:
    """The lanes of each layout of :func:`_trace_plan` for the settings
    ``config.ALIGN_TRACE_LANES``, ``ALIGN_TRACE_LANE_ROWS`` and ``ALIGN_TRACE_BLOCK_LANE_ROWS``:
    32 once for each height of a warp's lanes (pipelined bands), then each block's."""
    heights = len(_checked_heights("ALIGN_TRACE_LANE_ROWS", lane_rows, 32)) if 32 in allowed \
        else 0
    result = np.array([32] * heights + [count for count in allowed if count > 32],
                      dtype=np.int64)
    result.flags.writeable = False  # shared by every caller
    return result


def _plan_rows(rows_end: np.ndarray, lanes: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For pairs of ``rows_end`` rows with every layout of ``lanes`` (:func:`_plan_lanes`):
    the rows a lane keeps (a warp's layouts: each height in turn; a block's:
    :func:`_lane_rows`), the bands and the time of a step (:func:`_step_ns`), arrays of shape
    ``(pairs, layouts)``."""
    warp_heights = _lane_heights(32) if (lanes == 32).any() else np.zeros(0, dtype=np.int64)
    columns = [np.full(len(rows_end), height, dtype=np.int64) for height in warp_heights]
    columns += [_lane_rows(rows_end, int(count)) for count in lanes[len(warp_heights):]]
    rows = np.stack(columns, axis=1)
    step = np.stack([_step_ns(int(count), rows[:, k]) for k, count in enumerate(lanes)], axis=1)
    return rows, _pair_bands(rows_end[:, None], lanes, rows), step


@functools.lru_cache(maxsize=8)
def _plan_tables(allowed: tuple, lane_rows: tuple, block_lane_rows: tuple,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_plan_rows` of every row count below ``_PLAN_TABLE_ROWS``, by row count, for the
    settings of :func:`_plan_lanes` (the key: :func:`_lane_rows` reads the last two)."""
    tables = _plan_rows(np.arange(_PLAN_TABLE_ROWS, dtype=np.int64),
                        _plan_lanes(allowed, lane_rows, block_lane_rows))
    for table in tables:
        table.flags.writeable = False  # shared by every call
    return tables


def warp_fits(m: np.ndarray, n: np.ndarray, table: np.ndarray, gap_open: int,
              gap_extend: int, n_codes: int, lanes: np.ndarray | int = 32,
              rows: np.ndarray | None = None) -> np.ndarray:
    """Per pair of ``m`` rows (its end row, for paths) and ``n`` columns, whether the warp
    kernels can run it with ``lanes`` lanes of ``rows`` rows (default: :func:`trace_layout`'s):
    every value fits their int32 lanes, padding rows included (each loses at most ``gap_open``
    against the row above), and the substitution table (int16, with ``gap_open`` added and a
    padding row) fits in shared memory."""
    if rows is None:
        rows, _ = trace_layout(m, n, lanes)
    band = np.asarray(lanes, dtype=np.int64) * rows
    padded = -(-m.astype(np.int64) // band) * band
    high, low = value_bounds(padded, n, table, gap_open, gap_extend)
    low = low - (padded - m) * gap_open
    shifted = table.astype(np.int64) + gap_open
    table_ok = shifted.min() >= -32768 and shifted.max() <= 32767 and \
        _warp_table_bytes(n_codes) + _WARP_STATIC_SHARED <= _shared_per_block()
    return (m > 0) & (n > 0) & (high < _WIDE_LIMIT) & (low > -_WIDE_LIMIT) & table_ok


#: Bytes of ``warp_fill``'s static shared memory at most (512 lanes: the hand-off between
#: its 16 warps and their best cells), which the opt-in limit must hold beside the table.
_WARP_STATIC_SHARED = 448


def _warp_table_bytes(n_codes: int) -> int:
    """Dynamic shared memory of ``warp_fill``: its int16 substitution table and padding row."""
    return 2 * (n_codes + 1) * n_codes


def _shared_per_block() -> int:
    """Shared memory a block of the current device may opt in to (``warp_fill``'s table
    and its static shared memory, :data:`_WARP_STATIC_SHARED`, share it)."""
    import cupy

    return launch.device_limits(cupy.cuda.Device().id).shared_per_block_optin


def _pipelined_warps_per_block(kernel, shared: int) -> int:
    """Warps a block of a pipelined path fill (``warp_fill`` with 32 lanes, a warp a band):
    one, so that the bands of a pair spread over the multiprocessors (the warps of one slow
    each other down), unless each block's copy of the substitution table (``shared`` bytes)
    would then let a multiprocessor hold fewer blocks than it could (the bytes alphabet's
    table takes 131 KB); then as many as the kernel's block holds."""
    import cupy

    resources = device_resources(cupy.cuda.Device().id)
    per_block = shared + _WARP_STATIC_SHARED + resources.reserved_shared_per_block
    if resources.shared_per_sm // per_block >= resources.max_blocks_per_sm:
        return 1
    return launch.block_threads(kernel) // 32


def _warp_grid(kernel, pairs: int):
    """``(grid, block)`` of a warp-per-pair kernel: one warp of its block for each pair."""
    return launch.grid(kernel, pairs, launch.block_threads(kernel) // 32)


def _warp_scores(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode):
    """Scores, query ends and target ends of long pairs, one warp per pair (global and
    semi-global: row m; local: the best cell)."""
    import cupy

    m = qset.lengths[q_index].astype(np.int64)
    n = tset.lengths[t_index].astype(np.int64)
    rows, _ = trace_layout(m, n)  # a warp a pair
    score = np.zeros(len(m), dtype=np.int64)
    q_end, t_end = m.copy(), n.copy()
    shifted = cupy.asarray((table.astype(np.int64) + gap_open).astype(np.int16).ravel())
    n_codes = qset.alphabet.size
    shared = _warp_table_bytes(n_codes)
    order = np.lexsort((-(m * n), rows))  # by lane height, the longest first
    for part, sequences, q_local, t_local in device_chunks(
            qset, tset, q_index[order], t_index[order], config.ALIGN_GPU_CHUNK_PAIRS):
        positions = order[part]
        for height in np.unique(rows[positions]).tolist():
            same = np.flatnonzero(rows[positions] == height)
            kernel = get_kernel(WARP_KERNEL_FILE, f"warp_fill<{height}, {mode}, false, false, 32>")
            launch.reserve_shared(kernel, shared)
            run = functools.partial(
                _warp_score_launch, kernel, sequences, q_local[same], t_local[same],
                m[positions[same]], n[positions[same]], positions[same],
                (shifted, n_codes, gap_open, gap_extend, shared, mode), (score, q_end, t_end))
            launch_split(run, np.arange(len(same)), int(16 * (n[positions[same]].max() + 1)))
    return score, q_end, t_end


def _warp_score_launch(kernel, sequences, q_local, t_local, m, n, where, scheme, results,
                       members):
    """One launch of :func:`_warp_scores` for the pairs ``members`` of a group; their scores
    and ends go to the host arrays ``results`` (score, query end, target end) at
    ``where[members]``."""
    import cupy

    shifted, n_codes, gap_open, gap_extend, shared, mode = scheme
    size = len(members)
    m, n = m[members], n[members]
    # warp.cu's rows (_PATH_INDEX_ROWS, _PATH_SIZE_ROWS): a score fill reads the pairs, their
    # sizes and their border rows' places; it writes the score and the end cell.
    index = np.zeros((len(_PATH_INDEX_ROWS), size), dtype=np.int64)
    index[_Q_INDEX], index[_T_INDEX] = q_local[members], t_local[members]
    index[_BORDER_BASE, 1:] = np.cumsum(2 * (n[:-1] + 1))
    sizes = np.zeros((len(_PATH_SIZE_ROWS), size), dtype=np.int32)
    sizes[_PATH_SIZE_ROWS.index("rows_end")] = m
    sizes[_PATH_SIZE_ROWS.index("columns_end")] = n
    index_dev, sizes_dev = upload_together([index, sizes])
    border = cupy.empty(2 * int(2 * (n + 1).sum()), dtype=cupy.int32)
    values = cupy.zeros((_SCORE_ROWS, size), dtype=cupy.int32)
    unused = cupy.zeros(4, dtype=cupy.int32)  # the arguments of paths only
    kernel(*_warp_grid(kernel, size),
           (*sequences, index_dev, sizes_dev, values, np.int32(size), np.int32(0),
            np.int32(size), shifted, np.int32(n_codes), np.int32(gap_open),
            np.int32(gap_extend), unused.view(cupy.uint32), border, unused, unused, unused,
            unused, unused, unused), shared_mem=shared)
    got = values.get()
    score, q_end, t_end = (got[_TRACE_OUTPUTS.index(name)] for name in ("score", "q_end", "t_end"))
    results[0][where[members]] = score
    results[2][where[members]] = t_end
    if mode == ALIGN_LOCAL:
        results[1][where[members]] = q_end


def _dna_scores(qset, table) -> bool:
    """Whether ``table`` is DNA match/mismatch: the kernels then need no table."""
    if qset.alphabet.name != "dna":
        return False
    table = np.ascontiguousarray(table)
    return _is_match_mismatch(table.tobytes(), table.dtype.str, len(table),
                              qset.alphabet.match_codes)


def _long_engine(qset, table, gap_open, gap_extend,
                 dna: bool | None = None) -> _cuda_long.CudaEngine:
    """The tiled engine of long pairs for this scoring (DNA match/mismatch without a table;
    ``dna``: :func:`_dna_scores`, where the caller has it)."""
    return _cuda_long.CudaEngine(table, gap_open, gap_extend, qset.alphabet.match_codes,
                                 _dna_scores(qset, table) if dna is None else dna)


def _long_pairs(engine, m, n, min_cells: int | None = None) -> np.ndarray:
    """Which pairs of ``m`` x ``n`` symbols run on the tiled engine: at least ``min_cells``
    cells (default ``config.LONG_ALIGN_MIN_CELLS``), and values that fit its int32 lanes."""
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    least = config.LONG_ALIGN_MIN_CELLS if min_cells is None else min_cells
    long = m * n >= least
    if long.any():  # the bounds (and the tile shape they ask of the device) only where needed
        long &= engine.fits(m, n, engine.gap_open - engine.gap_extend)
    return long


def _paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode, progress=None,
           packed=False, known_scores=None, meanwhile=None):
    """Scores, coordinates and paths of index pairs: :func:`align_pairs` for
    ``task="path"``. Pairs of at least ``config.LONG_ALIGN_MIN_CELLS`` cells are aligned in
    linear space on the tiled engine (:func:`._cuda_long.pair_paths`), the others with a
    traceback each (:func:`_traced_paths`); ``progress`` moves as each part is done."""
    m, n = qset.lengths[q_index], tset.lengths[t_index]
    cells = m.astype(np.int64) * n
    done = progress.pairs_done if progress is not None else _ignore
    # The tiled engine is made only where some pair is long enough to need it.
    long = cells >= config.LONG_ALIGN_MIN_CELLS
    if long.any():
        engine = _long_engine(qset, table, gap_open, gap_extend)
        long = _long_pairs(engine, m, n)
    if not long.any():
        found = _traced_paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode,
                              packed, known_scores, meanwhile)
        done(cells)
        return found
    count = len(q_index)
    results = [np.empty(count, dtype=np.int64) for _ in range(5)]
    identity = np.zeros(count, dtype=np.float64)
    chosen = np.flatnonzero(long)
    found = _cuda_long.pair_paths(engine, qset, tset, q_index[chosen], t_index[chosen], mode,
                                  progress.cells_done if progress is not None else None)
    for values, computed in zip(results, (found.score, found.query_start, found.query_end,
                                          found.target_start, found.target_end), strict=True):
        values[chosen] = computed
    matches, columns = found.matches(), found.columns()
    identity[chosen] = np.divide(matches, columns, out=np.zeros(len(chosen)), where=columns > 0)
    pieces = [(chosen, path_cigars(found.ops, packed))]
    short = np.flatnonzero(~long)
    if len(short):
        *values, cigars, short_identity = _traced_paths(
            qset, tset, q_index[short], t_index[short], table, gap_open, gap_extend, mode,
            packed, None if known_scores is None else known_scores[short])
        done(cells[short])
        for whole, part in zip(results, values, strict=True):
            whole[short] = part
        identity[short] = short_identity
        pieces.append((short, cigars))
    return (*results, placed_cigars(pieces, count, packed), identity)


def _traced_paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode,
                  packed=False, known_scores=None, meanwhile=None):
    """Scores, coordinates and paths of index pairs with a traceback each: warps (a warp a
    band) or a block per pair on the GPU, the CPU backend for those that do not fit.

    The pairs go in batches of at most half the memory budget, in the order of their lane
    count and height (a fill launch each), the largest first. A batch's fills run side by
    side on ``config.ALIGN_TRACE_STREAMS`` streams, then one launch walks every pair back;
    its CIGARs (text, or a word a run when ``packed``) are then gathered into one buffer,
    which comes to the host (:meth:`_TraceResults.fetch_oldest`) while the next batch runs.
    ``meanwhile`` (the caller's work) runs when the host would first wait for the GPU: once the
    first batches are queued."""
    import cupy

    m = qset.lengths[q_index]
    n = tset.lengths[t_index]
    # The path kernels find the ends (and scores) of global, semi-global and local alignments
    # as they fill the whole DP; overlap ends come from the score kernels first, and its fill
    # stops there.
    find_end = mode != ALIGN_OVERLAP
    if find_end:
        score, q_end, t_end = np.zeros(len(m), dtype=np.int64), m.astype(np.int64), \
            n.astype(np.int64)
    else:
        score, q_end, t_end = _scores(qset, tset, q_index, t_index, table, gap_open, gap_extend,
                                      mode, want_end=True)
    count = len(q_index)
    # A local fill stops past the first cell of a known score (the largest int32: unknown).
    known = np.full(count, _UNKNOWN_SCORE, dtype=np.int64)
    if known_scores is not None and mode == ALIGN_LOCAL:
        known[:] = known_scores
    q_start = np.full(count, -1, dtype=np.int64)
    t_start = np.full(count, -1, dtype=np.int64)
    identity = np.zeros(count, dtype=np.float64)
    lanes, rows, words, cost = _trace_plan(q_end, t_end,
                                           device_resources(cupy.cuda.Device().id).sms)
    # Bytes of a pair on the device: codes, border rows (8 bytes a cell), its last row, its
    # CIGAR (text: at most 2 bytes a column; runs: a word a run) and the gathered copy of it
    # that waits to be fetched, its bands' warps and best cells, and its rows of the batch's
    # index, size and result arrays.
    bands = _pair_bands(q_end, lanes, rows)
    pair_bytes = 4 * words + (8 * _border_rows(lanes, bands) + 4) * (t_end + 1) + \
        (8 if packed else 4) * (q_end + t_end) + 20 * bands + 174
    n_codes = qset.alphabet.size
    on_gpu = (m > 0) & (n > 0) & (pair_bytes <= config.PATH_MAX_BYTES_PER_PAIR) & \
        warp_fits(np.maximum(q_end, 0), np.maximum(t_end, 0), table, gap_open, gap_extend,
                  n_codes, lanes, rows)
    chosen = np.flatnonzero(on_gpu)
    shape = lanes * 1024 + rows  # a launch takes pairs of one lane count and height
    # Blocks, then the tallest lanes (the longest pairs) first, so that they start first.
    chosen = chosen[np.lexsort((-pair_bytes[chosen], -shape[chosen]))]
    shifted = (table.astype(np.int64) + gap_open).astype(np.int16)  # s + gap_open, see warp.cu
    setup = _TraceSetup(mode, find_end, shifted, n_codes, qset.alphabet.match_codes, gap_open,
                        gap_extend, packed,
                        launch.side_streams("align paths", config.ALIGN_TRACE_STREAMS))
    results = _TraceResults(score if find_end else None, q_end, t_end, q_start, t_start,
                            identity, packed, meanwhile)
    try:
        for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index[chosen],
                                                               t_index[chosen],
                                                               config.ALIGN_GPU_CHUNK_PAIRS):
            positions = chosen[part]
            # The launches wait for the sequences' and the table's uploads on the current
            # stream (recorded once a batch, after its own uploads).
            chunk = _TraceChunk(setup, results, sequences, q_local, t_local, positions,
                                lanes[positions], rows[positions], q_end[positions],
                                t_end[positions], known[positions], words[positions],
                                cost[positions])
            budget = batch_budget()  # with the chunk's sequences on the device
            for lo, hi in partition_bounds(offsets_of_counts(pair_bytes[positions]),
                                           budget // 2):
                # Halved if out of memory.
                launch_split(chunk.run, np.arange(lo, hi), 1, budget)
            # This chunk's sequences may go (the next chunk's reuse their memory on the current
            # stream) once every launch that reads them has finished.
            results.before_waiting()
            while results.queued:
                results.fetch_oldest(in_thread=False)
    finally:
        results.close()
    pieces = results.pieces
    rest = np.flatnonzero(~on_gpu)
    if len(rest):
        from . import _cpu

        s, qs, qe, ts, te, cigars, ident = _cpu.align_pairs(
            qset, tset, q_index[rest], t_index[rest], table, gap_open, gap_extend, mode, "path",
            packed=packed)
        score[rest], q_start[rest], q_end[rest], t_start[rest], t_end[rest] = s, qs, qe, ts, te
        identity[rest] = ident
        pieces.append((rest, cigars))
    return score, q_start, q_end, t_start, t_end, placed_cigars(pieces, count, packed), identity


#: Rows of band.cu's results (its enum BandResult).
BAND_OUTPUTS = ("score", "query_start", "target_start", "target_end", "matches", "columns",
                "runs")
#: Reachable values of a band stay within this, far above band.cu's minus infinity (-2^29).
_BAND_LIMIT = 1 << 28


def band_paths(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
               table: np.ndarray, gap_open: int, gap_extend: int, mode: int, low: np.ndarray,
               width: np.ndarray) -> tuple:
    """Global or semi-global paths of index pairs in bands of diagonals on the GPU (a thread a
    pair, ``band.cu``): the contract of the CPU backend's
    :func:`gpualign.align._cpu.band_paths`. The pairs go in the order of their widths, then
    query lengths (a warp's lanes then sweep bands of about one shape), in launches that fit
    the memory budget;
    pairs whose values might not fit the kernel's int32 report columns -1, as those whose
    traceback leaves the band (the caller aligns them in full)."""
    import cupy

    count = len(q_index)
    results = np.zeros((len(BAND_OUTPUTS), count), dtype=np.int64)
    results[BAND_OUTPUTS.index("columns")] = -1
    m = qset.lengths[q_index].astype(np.int64)
    n = tset.lengths[t_index].astype(np.int64)
    width = np.asarray(width, dtype=np.int64)
    worst = max(-int(table.min()), 0) + gap_open + gap_extend  # the most a column loses
    high = max(int(table.max()), 0) * np.minimum(m, n)
    fits = (high < _BAND_LIMIT) & ((m + n + width) * worst < _BAND_LIMIT)
    chosen = np.flatnonzero(fits)
    # A warp's lanes take its widest band and longest query: pairs alike share warps.
    chosen = chosen[np.lexsort((m[chosen], width[chosen]))]
    low = np.asarray(low, dtype=np.int32)
    # Bytes of a pair on the device: its traceback bytes, two rows, its operations and runs,
    # its rows of the index and result arrays.
    pair_bytes = m * width + 8 * (width + 1) + 5 * (m + n) + 80
    table32 = np.ascontiguousarray(table, dtype=np.int32)
    launched: list[tuple[np.ndarray, np.ndarray]] = []  # each launch's pairs and run words

    def run(members: np.ndarray, sequences: tuple, start: int, q_local: np.ndarray,
            t_local: np.ndarray) -> None:  # the pairs chosen[members] of a chunk from start
        pairs = chosen[members]
        size = len(pairs)
        warp_first = np.arange(0, size, 32)
        wide = np.maximum.reduceat(width[pairs], warp_first).astype(np.int32)
        rows = np.maximum.reduceat(m[pairs], warp_first)
        warp_cells = offsets_of_counts(2 * 32 * (wide.astype(np.int64) + 1))
        warp_trace = offsets_of_counts(32 * rows * wide)
        room = offsets_of_counts(m[pairs] + n[pairs])
        (q_dev, t_dev, low_dev, width_dev, wide_dev, cells_at, trace_at, room_dev,
         table_dev) = upload_together([
            q_local[members - start], t_local[members - start],
            low[pairs], width[pairs].astype(np.int32), wide,
            warp_cells[:-1], warp_trace[:-1], room[:-1], table32])
        cells, trace, ops, found = carved(
            (int(warp_cells[-1]), np.int32), (int(warp_trace[-1]), np.uint8),
            (int(room[-1]), np.uint8), ((len(BAND_OUTPUTS), size), np.int32))
        fill = get_kernel(BAND_KERNEL_FILE,
                          f"band_fill<{'true' if mode == ALIGN_GLOBAL else 'false'}>")
        fill(*launch.grid(fill, size),
             (*sequences, q_dev, t_dev, low_dev, width_dev, wide_dev, cells_at, trace_at,
              room_dev, table_dev, np.int32(len(table32)), np.int32(qset.alphabet.match_codes),
              np.int32(gap_open), np.int32(gap_extend), np.int32(size), cells, trace, ops,
              found))
        first = cupy.zeros(size + 1, dtype=cupy.int64)
        cupy.cumsum(found[BAND_OUTPUTS.index("runs")], out=first[1:])
        words = cupy.empty(int(first[-1]), dtype=cupy.uint32)
        write = get_kernel(BAND_KERNEL_FILE, "band_runs")
        write(*launch.grid(write, size), (ops, room_dev, found, first, np.int32(size), words))
        results[:, pairs] = found.get()
        launched.append((pairs, words.get()))

    for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index[chosen],
                                                           t_index[chosen],
                                                           config.ALIGN_GPU_CHUNK_PAIRS):
        budget = batch_budget()
        positions = np.arange(part.start, part.stop)
        # Launches of half the budget (the warps' padding aside); one that still runs out of
        # memory is halved (launch_split).
        for lo, hi in partition_bounds(offsets_of_counts(pair_bytes[chosen[part]]), budget // 2):
            launch_split(functools.partial(run, sequences=sequences, start=part.start,
                                           q_local=q_local, t_local=t_local),
                         positions[lo:hi], 1, budget)
    # Every launch's words moved to their pairs' places, in the pairs' order: the CIGARs in
    # one pass (the pairs left out have no runs).
    runs = results[BAND_OUTPUTS.index("runs")]
    first = offsets_of_counts(runs)
    words = np.empty(int(first[-1]), dtype=np.uint32)
    for pairs, launch_words in launched:
        pair_runs = runs[pairs]
        words[np.repeat(first[pairs] - offsets_of_counts(pair_runs)[:-1], pair_runs)
              + np.arange(len(launch_words))] = launch_words
    return (*results[:BAND_OUTPUTS.index("runs")], PackedCigars.from_words(words, runs))


@functools.lru_cache(maxsize=64)
def _is_match_mismatch(data: bytes, dtype: str, size: int, match_codes: int) -> bool:
    """Whether the ``size`` x ``size`` table of these bytes scores one value on its diagonal
    (up to ``match_codes``) and another everywhere else: then the DNA kernels compute
    substitutions without a table (kept by table: every call asks)."""
    table = np.frombuffer(data, dtype=dtype).reshape(size, size)
    diagonal = np.eye(size, dtype=bool)
    diagonal[match_codes:, match_codes:] = False
    return len(np.unique(table[diagonal])) <= 1 and len(np.unique(table[~diagonal])) <= 1


class _Setup:
    """The kernel arguments shared by every launch of one :func:`_scores` call."""

    def __init__(self, mode, affine, substitution, find_end, half, shifted_table, n_codes,
                 gap_open, gap_extend):
        self.mode, self.affine, self.substitution = mode, affine, substitution
        self.find_end, self.half = find_end, half
        self.shifted_table = shifted_table
        self.n_codes = n_codes
        self.gap_open, self.gap_extend = gap_open, gap_extend
        self.match = int(shifted_table[0, 0])
        self.mismatch = int(shifted_table[0, 1]) if n_codes > 1 else self.match

    def profiles(self, sequences):
        """``(profiles, profile_base, padded_rows)`` of every query record on the device
        (empty unless the kernels read query profiles): record k's rows are padded to whole
        strips and 16 bytes, so that every strip's load is aligned."""
        import cupy

        if self.substitution != _SUB_PROFILE:
            empty = cupy.zeros(1, dtype=cupy.int64)
            return cupy.zeros(16, dtype=cupy.int8), empty, empty.astype(cupy.int32)
        q_codes, q_offsets = sequences[:2]
        unit = max(2 * self.half, 16)
        lengths = q_offsets[1:] - q_offsets[:-1]
        padded = ((lengths + unit - 1) // unit * unit).astype(cupy.int32)
        sizes = padded.astype(cupy.int64) * self.n_codes
        base = cupy.zeros(len(sizes), dtype=cupy.int64)
        if len(sizes) > 1:
            cupy.cumsum(sizes[:-1], out=base[1:])
        profiles = cupy.empty(int(sizes.sum()) + 16, dtype=cupy.int8)
        if len(sizes):
            build = get_kernel(KERNEL_FILE, "build_profiles")
            build(*launch.grid(build, len(sizes), items_per_block=1),  # a block per record
                  (q_codes, q_offsets, base, padded, cupy.asarray(self.shifted_table.ravel()),
                   np.int32(self.n_codes), np.int32(_PROFILE_PADDING), profiles))
        return profiles, base, padded

    def run(self, wide, chunk, members):
        """Align the pairs ``members`` (device positions in ``chunk``) in one launch; their
        scores and ends go to ``chunk.results``."""
        import cupy

        size = len(members)
        q_index, t_index = chunk.q_index[members], chunk.t_index[members]
        # Warp w's border segment: 32 lanes x (its longest target + 2) cells.
        warps = (size + 31) // 32
        longest = cupy.zeros(warps * 32, dtype=cupy.int64)
        longest[:size] = chunk.target_lengths[members]
        segment = 32 * (longest.reshape(warps, 32).max(axis=1) + 2)
        warp_border = cupy.zeros(warps, dtype=cupy.int64)
        if warps > 1:
            cupy.cumsum(segment[:-1], out=warp_border[1:])
        # Wide lanes take linear gaps as affine ones (open = extend): their linear variant gave
        # wrong scores on an H200 (A x 700 against C x 700, mismatch -5000 and gaps 20: -4,880
        # for -28,000; test_cuda_scores_with_a_very_negative_mismatch_stay_exact), while every
        # case on narrow lanes was right.
        kernel = get_kernel(KERNEL_FILE, _kernel_name(wide, self.mode, self.affine or wide,
                                                      self.substitution, self.find_end,
                                                      self.half))
        shared = launch.reserve_shared(
            kernel, 2 * self.n_codes ** 2 if self.substitution == _SUB_TABLE else 0)
        table = cupy.asarray(self.shifted_table.ravel())
        border = cupy.empty(int(segment.sum()) * (2 if wide else 1), dtype=cupy.uint32)
        results = [cupy.empty(size, dtype=cupy.int32) for _ in range(3)]
        q_codes, q_offsets, t_codes, t_offsets = chunk.sequences
        kernel(*launch.grid(kernel, size),
               (q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, np.int32(size), table,
                np.int32(self.n_codes), np.int32(self.match), np.int32(self.mismatch),
                *chunk.profiles, np.int32(self.gap_open), np.int32(self.gap_extend), border,
                warp_border, *results), shared_mem=shared)
        for whole, part in zip(chunk.results, results, strict=True):
            whole[members] = part


class _Chunk:
    """A chunk of pairs on the device: sequences, query profiles, index arrays, target
    lengths, and the int32 results (score, query end, target end) its launches fill."""

    def __init__(self, sequences, profiles, q_index, t_index, target_lengths):
        import cupy

        self.sequences, self.profiles = sequences, profiles
        self.q_index, self.t_index = q_index, t_index
        self.target_lengths = target_lengths
        self.results = [cupy.zeros(len(q_index), dtype=cupy.int32) for _ in range(3)]


class _TraceSetup:
    """The kernel arguments shared by every path launch of one :func:`_traced_paths` call, and
    the streams its launches take in turn."""

    def __init__(self, mode, find_end, table, n_codes, match_codes, gap_open, gap_extend,
                 packed, streams):
        self.mode, self.find_end = mode, find_end
        self.n_codes, self.match_codes = n_codes, match_codes
        self.table = device_constant(table)
        self.gap_open, self.gap_extend = gap_open, gap_extend
        self.packed, self.streams = packed, streams


#: The rows of a batch's per-pair arrays (warp.cu's IndexRow, SizeRow and ResultRow, in that
#: order; each array goes over in one copy): indices and offsets (int64), sizes (int32) and the
#: results of a path launch (int32: one copy back). ``written``: the pair's CIGAR text bytes, or
#: its runs when packed; then the columns of ``=``, ``X`` and ``I`` and of all operations, and
#: the runs of each of ``=XID``.
_PATH_INDEX_ROWS = ("q_index", "t_index", "trace_base", "border_base", "band_base", "last_base",
                    "written_base", "order")
_PATH_SIZE_ROWS = ("rows_end", "columns_end", "known", "pair_rows", "pair_lanes")
_TRACE_OUTPUTS = ("score", "q_end", "t_end", "q_start", "t_start", "written", "matches",
                  "mismatches", "inserted", "columns", "match_runs", "mismatch_runs",
                  "insert_runs", "delete_runs")
_Q_INDEX, _T_INDEX, _TRACE_BASE, _BORDER_BASE, _WRITTEN_BASE, _ORDER = (
    _PATH_INDEX_ROWS.index(name)
    for name in ("q_index", "t_index", "trace_base", "border_base", "written_base", "order"))
_WRITTEN = _TRACE_OUTPUTS.index("written")
_RUNS_ROW = _TRACE_OUTPUTS.index("match_runs")
_SCORE_ROWS = _TRACE_OUTPUTS.index("t_end") + 1  # what a score fill writes: score and ends


class _TraceResults:
    """Host arrays of :func:`_traced_paths` that the batches fill: scores (None: known before),
    query and target ends, starts, identities; the CIGARs as ``pieces`` (positions, CIGARs);
    and the batches queued on the device whose results are not fetched yet."""

    def __init__(self, score, q_end, t_end, q_start, t_start, identity, packed,
                 meanwhile=None):
        self.score, self.q_end, self.t_end = score, q_end, t_end
        self.q_start, self.t_start, self.identity = q_start, t_start, identity
        self.packed = packed
        self.meanwhile = meanwhile  # the caller's work, run before the host first waits
        self.pieces: list = []
        # A thread stores the batches fetched while later ones are queued (made on first use:
        # a call of one batch stores it here).
        self.finisher: ThreadPoolExecutor | None = None
        self.finished: list = []  # the futures of store()
        # (positions ascending, the batch's pairs in that order, its results in page-locked
        # memory, its gathered CIGARs there or on the device, the event that ends their
        # copies, what the launches read), oldest first; the last keeps every buffer of a
        # batch until its results are fetched.
        self.queued: list = []
        self.batches = 0  # queued so far: the page-locked buffers alternate

    def before_waiting(self) -> None:
        """Run the caller's work (once) before the host waits for the GPU: the launches queued
        so far keep the GPU busy meanwhile."""
        work, self.meanwhile = self.meanwhile, None
        if work is not None:
            work()

    def fetch_oldest(self, in_thread: bool = True) -> None:
        """Wait for the oldest queued batch's results (in page-locked memory, the gathered
        CIGARs too where the GPU wrote them there, else copied now) and store them,
        ``in_thread`` on the finisher thread while the host queues the next batch."""
        where, order, values, gathered, gathered_event, _ = self.queued.pop(0)
        # What is still on the device is copied on a stream that waits for nothing else (the
        # current one would wait for the next batch queued there too).
        copy = launch.side_streams("align path copies", 1, non_blocking=True)[0]
        copy.wait_event(gathered_event)
        if isinstance(values, np.ndarray):  # copied to page-locked memory with the batch
            gathered_event.synchronize()
            values = values[:, order]  # a copy: the pairs in the order of `where`
        else:
            values = values.get(stream=copy)[:, order]
        written = int(values[_WRITTEN].sum())
        size = written if self.packed else written + len(where)  # text: a newline each
        if isinstance(gathered, np.ndarray):  # the GPU wrote it there: a copy to keep
            gathered = gathered[:size].copy()
        else:
            gathered = gathered[:size].get(stream=copy)
        if not in_thread:
            self.store(where, values, gathered)
            return
        if self.finisher is None:
            self.finisher = ThreadPoolExecutor(max_workers=1)
        self.finished.append(self.finisher.submit(self.store, where, values, gathered))

    def close(self) -> None:
        """Wait for the finisher thread; raise what a store on it raised."""
        if self.finisher is not None:
            self.finisher.shutdown(wait=True)
        for future in self.finished:
            future.result()

    def store(self, where, values, gathered):
        """Store the results of the pairs at positions ``where`` (ascending; host arrays;
        ``values``: the rows of ``_TRACE_OUTPUTS``; ``gathered``: their runs, or their CIGAR
        texts each followed by a newline, in that order)."""
        score, q_end, t_end, q_start, t_start, written, matches, mismatches, inserted, columns = \
            values[:_RUNS_ROW]
        if self.score is not None:
            self.score[where] = score
        self.q_end[where] = q_end
        self.t_end[where] = t_end
        self.q_start[where] = q_start
        self.t_start[where] = t_start
        self.identity[where] = np.divide(matches, columns, out=np.zeros(len(where)),
                                         where=columns > 0)
        if self.packed:  # a word a run: its length above two bits of operation
            # With the walk's counts of each operation, which op_counts then reads.
            op_columns = np.stack([matches, mismatches, inserted,
                                   columns - matches - mismatches - inserted], axis=1)
            cigars = PackedCigars.from_words(gathered, written,
                                             counts=(op_columns, values[_RUNS_ROW:].T))
        else:
            # One decode (latin-1: a character per byte) and one split for the batch: CIGARs
            # hold no newline, and the last newline leaves an empty string behind.
            cigars = codecs.latin_1_decode(gathered)[0].split("\n")[:-1]
        self.pieces.append((where, cigars))


class _TraceChunk:
    """The pairs of one device chunk (``positions`` in the call, sorted by lane count and
    height, then bytes); :meth:`run` fills, walks back and gathers a batch of them."""

    def __init__(self, setup, results, sequences, q_local, t_local, positions, lanes, rows,
                 rows_end, columns_end, known, words, cost):
        self.setup, self.results, self.sequences = setup, results, sequences
        self.q_local, self.t_local, self.positions = q_local, t_local, positions
        self.lanes, self.rows = lanes, rows
        self.rows_end, self.columns_end, self.known = rows_end, columns_end, known
        self.words, self.cost = words, cost  # the cost: _trace_plan's time of the fill
        # Where the lane shape changes (the chunk is sorted by it): a fill launch each.
        shapes = lanes * 1024 + rows
        self.shape_starts = np.flatnonzero(shapes[1:] != shapes[:-1]) + 1

    def run(self, members):
        """Queue the batch ``members`` (indices into the chunk, consecutive): one upload of
        its index arrays, a fill per lane shape on the setup's streams (the longest first,
        each on the least loaded), then one walk back and the gathering of its CIGARs (in the
        order of the pairs' positions) on the current stream
        (:meth:`_TraceResults.fetch_oldest` fetches it). At most two batches are queued:
        this one and the one the host fetches meanwhile."""
        import cupy

        try:
            self._queue(members)
        except cupy.cuda.memory.OutOfMemoryError:
            # The batches still queued hold memory: fetch them before the batch is halved.
            self.results.before_waiting()
            while self.results.queued:
                self.results.fetch_oldest(in_thread=False)
            raise

    def _queue(self, members):
        """:meth:`run`, which fetches the batches queued before when it runs out of memory."""
        import cupy

        setup, results = self.setup, self.results
        if len(results.queued) >= 2:
            results.before_waiting()
        while len(results.queued) >= 2:
            results.fetch_oldest()
        size = len(members)
        rows_end = self.rows_end[members]
        columns_end = self.columns_end[members]
        lanes = self.lanes[members]
        bands = _pair_bands(rows_end, lanes, self.rows[members])
        index = np.empty((len(_PATH_INDEX_ROWS), size), dtype=np.int64)
        index[_Q_INDEX], index[_T_INDEX] = self.q_local[members], self.t_local[members]
        # Each pair's space in the batch's buffers, summed at once: its codes, its border rows
        # (:func:`_border_rows`), its bands (pipelined: a warp and a best cell each), its last
        # row, and its CIGAR (text: at most 2 bytes a column; runs: a word each, 4-byte
        # aligned) of at most rows + columns operations.
        spaces = np.stack([self.words[members], _border_rows(lanes, bands) * (columns_end + 1),
                           bands, columns_end + 1,
                           (4 if setup.packed else 2) * (rows_end + columns_end)])
        ends = np.cumsum(spaces, axis=1)
        index[_TRACE_BASE:_WRITTEN_BASE + 1] = ends - spaces
        trace_words, border_pairs, all_bands, last_cells, written_bytes = ends[:, -1].tolist()
        # The CIGARs are gathered in the order of the pairs' positions in the call, so that a
        # call of one batch needs no reordering of them on the host.
        order = np.argsort(self.positions[members], kind="stable")
        index[_ORDER] = order
        sizes = np.stack([rows_end, columns_end, self.known[members], self.rows[members],
                          lanes]).astype(np.int32)  # as _PATH_SIZE_ROWS
        # The pair of each of the batch's bands, which a pipelined fill's warps take in turn.
        warp_pair = np.repeat(np.arange(size, dtype=np.int32), bands)
        index_dev, sizes_dev, warp_pair_dev = upload_together([index, sizes, warp_pair])
        # The batch's results go to page-locked memory of the thread (its CIGARs written there
        # by the GPU) where they fit config.ALIGN_PATH_STAGING_BYTES, else stay on the device
        # until fetched.
        gathered_bytes = written_bytes + (0 if setup.packed else size) + 4
        staged = 4 * len(_TRACE_OUTPUTS) * size + gathered_bytes <= config.ALIGN_PATH_STAGING_BYTES
        slot = results.batches % 2  # at most two batches are queued
        results.batches += 1
        direct = False
        if staged:
            buffers = thread_buffers()
            host_values = buffers.get(f"align paths values {slot}", len(_TRACE_OUTPUTS) * size,
                                      np.int32).reshape(len(_TRACE_OUTPUTS), size)
            name = f"align paths gathered {slot}"
            host_gathered = buffers.get(name, gathered_bytes, np.uint8)
            direct = buffers.pinned(name) and maps_host_memory(cupy.cuda.Device().id)
        launches = self._launches(members)
        # Every buffer sized by the batch comes from one allocation before the first launch,
        # so that running out of memory (launch_split then halves the batch) wastes none.
        (values, gathered_base, tickets, finished, stops, trace, border, band_bests, last_row,
         written, *gathered) = carved(
            ((len(_TRACE_OUTPUTS), size), np.int32), (size + 1, np.int64),
            (len(launches), np.int32), (size, np.int32), (size, np.int32),
            (trace_words + 4, np.uint32),
            (2 * border_pairs + 2, np.int32), ((all_bands, 4), np.int32),
            (last_cells + 1, np.int32), (written_bytes + 4, np.uint8),
            *([] if direct else [(gathered_bytes, np.uint8)]))
        gathered = mapped(host_gathered) if direct else gathered[0]
        current = cupy.cuda.get_current_stream()
        # The results, the gathering's offsets, each launch's tickets and each pair's finished
        # bands and stop start at 0 (they lie side by side); the border rows as not yet written.
        values.data.memset_async(0, stops.data.ptr + stops.nbytes - values.data.ptr, current)
        border.data.memset_async(_UNWRITTEN_BYTE, border.nbytes, current)
        ready = current.record()  # the uploads above, and the sequences' before them
        find_end = "true" if setup.find_end else "false"
        runs = "true" if setup.packed else "false"
        shared = _warp_table_bytes(setup.n_codes)
        stride = np.int32(size)
        # A fill launch a lane shape, the longest first, each on the stream with the least
        # queued so far (a launch takes about its longest pair's fill).
        queued = [0.0] * len(setup.streams)
        launched = []
        band_ends = np.cumsum(bands).tolist()
        for launch_index, (lo, hi, longest) in enumerate(launches):
            lanes, height = int(self.lanes[members[lo]]), int(self.rows[members[lo]])
            least = queued.index(min(queued))
            queued[least] += longest
            stream = setup.streams[least]
            stream.wait_event(ready)
            fill = get_kernel(WARP_KERNEL_FILE, f"warp_fill<{height}, {setup.mode}, true, "
                                                f"{find_end}, {lanes}>")
            launch.reserve_shared(fill, shared)
            if lanes == 32:  # pipelined: a warp a band
                warps = band_ends[hi - 1] - (band_ends[lo - 1] if lo else 0)
                per_block = _pipelined_warps_per_block(fill, shared)
                shape = launch.grid(fill, warps, per_block)[0], (32 * per_block,)
            else:  # a block a pair
                shape = launch.grid(fill, hi - lo, 1)
            with stream:
                # Pairs lo .. hi - 1 of the batch's arrays. A local fill writes each pair's
                # score and end cell, where trace_back starts.
                fill(*shape,
                     (*self.sequences, index_dev, sizes_dev, values, stride, np.int32(lo),
                      np.int32(hi), setup.table, np.int32(setup.n_codes),
                      np.int32(setup.gap_open), np.int32(setup.gap_extend), trace, border,
                      last_row, warp_pair_dev, tickets[launch_index:], finished, stops,
                      band_bests), shared_mem=shared)
                launched.append(stream.record())
        for event in launched:
            current.wait_event(event)
        # One walk for the whole batch once every fill is done (a launch per lane shape would
        # cost the host more than the walks of the other shapes wait).
        back = get_kernel(WARP_KERNEL_FILE, f"trace_back<{setup.mode}, {find_end}, {runs}>")
        back(*launch.grid(back, 32 * size),  # a warp a pair
             (*self.sequences, index_dev, sizes_dev, values, stride, np.int32(0), stride,
              np.int32(setup.match_codes), np.int32(setup.gap_open), last_row, trace,
              written))
        # Only what was written comes back: gathered pair after pair in the order of their
        # positions (text: each followed by a newline), its total known once the batch's
        # values are fetched; where the GPU can write page-locked host memory, straight there.
        lengths = values[_WRITTEN][index_dev[_ORDER]]
        cupy.cumsum(lengths if setup.packed else lengths + 1, dtype=cupy.int64,
                    out=gathered_base[1:])
        gather = get_kernel(WARP_KERNEL_FILE, f"gather_paths<{runs}>")
        gather(*_warp_grid(gather, size),
               (written, index_dev, values, stride, gathered_base, stride, gathered))
        if staged:
            values.get(stream=current, out=host_values, blocking=False)
        word = np.uint32 if setup.packed else np.uint8  # runs: a word each
        results.queued.append((self.positions[members][order], order,
                               host_values if staged else values,
                               host_gathered.view(word) if direct else gathered.view(word),
                               current.record(),
                               (index_dev, sizes_dev, warp_pair_dev, trace, border, band_bests,
                                last_row, written)))

    def _launches(self, members):
        """``(lo, hi, cost)`` of each fill launch of the batch ``members`` (consecutive
        indices into the chunk, which is sorted by lane shape): pairs ``lo .. hi - 1`` of the
        batch share a lane shape, and the launch takes about its longest pair's fill
        (``cost``); the longest first."""
        first, end = int(members[0]), int(members[-1]) + 1
        starts = self.shape_starts
        bounds = [first, *starts[(starts > first) & (starts < end)].tolist(), end]
        launches = [(lo - first, hi - first, float(self.cost[lo:hi].max()))
                    for lo, hi in zip(bounds, bounds[1:], strict=False)]
        return sorted(launches, key=lambda item: -item[2])
