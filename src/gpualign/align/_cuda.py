"""CUDA backend of alignment: scores and end cells (``align/kernels/align.cu``), and paths and
the scores of long pairs, one warp per pair (``align/kernels/warp.cu``).

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

Paths (``task="path"``): one warp per pair fills the DP (global, semi-global and local: every
cell, finding the end on the way; overlap: up to the end cell from the score kernels), keeping
a 4-bit traceback code per cell, then one thread per pair walks back and writes the CIGAR, and
a warp per pair packs the texts, each followed by a newline, for one decode on the host. A pair
far longer than the others of its call (``config.ALIGN_TRACE_BLOCK_MIN_CELLS``,
``config.ALIGN_TRACE_BLOCK_RATIO``) is filled by a block of 128 lanes instead, so that its
wavefront takes fewer, shorter steps. A launch holds as many pairs as the memory budget allows,
pairs of one lane count and height (``config.ALIGN_TRACE_LANE_ROWS``) together, longest first;
its results are fetched once the next launch is queued.

Pairs of at least ``config.LONG_ALIGN_MIN_CELLS`` cells run on the whole GPU instead: a
wavefront of DP tiles each, many pairs side by side (:mod:`._cuda_long`, every mode's scores and
ends), and their paths in linear space over the same engine (:mod:`._linear`).

Block sizes come from the kernels' ``__launch_bounds__`` (:mod:`gpualign.cuda.launch`). Nothing
here imports Numba: pairs that the GPU cannot take go to the CPU backend, imported only then.
"""

from __future__ import annotations

import codecs
import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config
from .._progress import Progress
from ..codes import ALIGN_LOCAL, ALIGN_OVERLAP
from ..cuda import launch
from ..cuda.loader import get_kernel
from ..cuda.memory import device_chunks, launch_split
from ..cuda.report import device_resources
from ..sequences import SequenceSet
from . import _cuda_long
from ._linear import cigar_text

KERNEL_FILE = "align/kernels/align.cu"
WARP_KERNEL_FILE = "align/kernels/warp.cu"
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
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                           list[str | None] | None, np.ndarray | None]:
    """Align index pairs on the current CUDA device, with the results and the contract of the
    CPU backend's :func:`gpualign.align._cpu.align_pairs`: int64 arrays ``score, query_start,
    query_end, target_start, target_end`` (-1 where ``task`` reports no such value), the CIGAR
    strings and the identities (None unless ``task="path"``); ``progress`` moves by the cells
    of the pairs done."""
    if task == "path":
        return _paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode, progress)
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
    high, low = value_bounds(m, n, table, gap_open, gap_extend)
    engine = _long_engine(qset, table, gap_open, gap_extend)
    dna = engine.dna
    shifted = table.astype(np.int64) + gap_open
    profile = not dna and shifted.min() >= -127 and shifted.max() <= 127
    # Substitution scores live in int16 tables (int8 bytes for DNA in the narrow kernel).
    narrow_ok = gap_extend <= _MAX_GAP_EXTEND and (
        (shifted.min() >= -128 and shifted.max() <= 127) if dna else True)
    wide_ok = shifted.min() >= -32768 and shifted.max() <= 32767
    on_gpu = (m > 0) & (n > 0) & (high < _WIDE_LIMIT) & (low > -_WIDE_LIMIT) & wide_ok
    narrow = on_gpu & narrow_ok & (high < _NARROW_LIMIT) & (low > _NARROW_NEG + 256)
    find_end = want_end and mode == ALIGN_LOCAL
    cells = m.astype(np.int64) * n
    done = progress.pairs_done if progress is not None else _ignore
    # Pairs long enough for the whole GPU: a wavefront of tiles each (every mode and end).
    tiled = _long_pairs(engine, m, n)
    if tiled.any():
        chosen = np.flatnonzero(tiled)
        score[chosen], q_end[chosen], t_end[chosen] = _cuda_long.pair_ends(
            engine, qset, tset, q_index[chosen], t_index[chosen], mode,
            progress.cells_done if progress is not None else None)
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
    substitution = _SUB_DNA if dna else _SUB_PROFILE if profile else _SUB_TABLE
    setup = _Setup(mode, gap_open != gap_extend, substitution, find_end, half,
                   shifted.astype(np.int16), qset.alphabet.size, gap_open, gap_extend)
    # Lanes: 0 narrow, 1 wide, 2 not on the thread kernels.
    lanes = np.where(on_gpu & ~long & ~tiled, np.where(narrow, 0, 1), 2).astype(np.uint8)
    for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index, t_index,
                                                           config.ALIGN_GPU_CHUNK_PAIRS):
        profiles = setup.profiles(sequences)
        chunk = _Chunk(sequences, profiles, cupy.asarray(q_local), cupy.asarray(t_local),
                       cupy.asarray(n[part]))
        chunk_lanes = cupy.asarray(lanes[part])
        order = _kernel_order(chunk, chunk_lanes, half)
        bounds = np.cumsum(cupy.bincount(chunk_lanes, minlength=3).get()[:2])
        for wide, first, last in ((False, 0, bounds[0]), (True, bounds[0], bounds[1])):
            if last > first:
                launch_split(functools.partial(setup.run, wide, chunk), order[first:last],
                             (8 if wide else 4) * (int(n[part].mean()) + 2) + 32)
        inside = lanes[part] < 2
        for host, device in zip((score, q_end, t_end), chunk.results, strict=True):
            np.copyto(host[part], device.get(), where=inside)
        done(cells[part][inside])
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
    wide, the rest), then strips and target length, both descending. A warp's threads wait for
    each other after every strip, so they need equal strips and similar targets; a thread
    computes its pair alone, so the longest pairs must start first."""
    q_offsets = chunk.sequences[1]
    m = q_offsets[chunk.q_index + 1] - q_offsets[chunk.q_index]
    strips = (m + 2 * half - 1) // (2 * half)
    n = chunk.target_lengths
    most_strips, longest = int(strips.max()) + 1, int(n.max()) + 1
    key = (lanes.astype(np.int64) * most_strips + most_strips - strips) * longest + longest - n
    return key.argsort()


def _lane_heights(name: str) -> np.ndarray:
    """The lane heights of setting ``name`` (``ALIGN_TRACE_LANE_ROWS`` or
    ``ALIGN_TRACE_BLOCK_LANE_ROWS``), checked and sorted."""
    setting = getattr(config, name)
    heights = np.sort(np.asarray(setting, dtype=np.int64))
    allowed = np.isin(heights, (2, 4)) | ((heights % 8 == 0) & (heights > 0))
    if len(heights) == 0 or not allowed.all():
        raise ValueError(f"{name}={setting}: 2, 4 or positive multiples of 8")
    return heights


def trace_layout(rows_end: np.ndarray, columns_end: np.ndarray,
                 lanes: np.ndarray | int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Per pair filled by ``lanes`` lanes (32: heights of ``config.ALIGN_TRACE_LANE_ROWS``;
    128: of ``config.ALIGN_TRACE_BLOCK_LANE_ROWS``), the rows each lane of ``warp_fill`` keeps
    and the 32-bit words of its traceback codes (a nibble a cell): the fewest bands, then the
    lowest lanes that cover the rows."""
    rows_end = rows_end.astype(np.int64)
    lanes = np.broadcast_to(np.asarray(lanes, dtype=np.int64), rows_end.shape)
    rows = np.zeros(len(rows_end), dtype=np.int64)
    for count, name in ((32, "ALIGN_TRACE_LANE_ROWS"), (128, "ALIGN_TRACE_BLOCK_LANE_ROWS")):
        these = lanes == count
        if these.any():
            heights = _lane_heights(name)
            bands = np.maximum(1, -(-rows_end[these] // (count * heights[-1])))
            need = -(-rows_end[these] // (count * bands))
            rows[these] = heights[np.minimum(np.searchsorted(heights, need), len(heights) - 1)]
    bands = -(-rows_end // (lanes * rows))
    nibbles = bands * (columns_end.astype(np.int64) + lanes - 1) * lanes * rows
    return rows, (nibbles + 31) // 32 * 4  # each pair's codes start 16-byte aligned


def trace_lanes(rows_end: np.ndarray, columns_end: np.ndarray,
                multiprocessors: int) -> np.ndarray:
    """Per pair, the lanes that fill its traceback codes: 128 (a block) for a pair of at least
    ``config.ALIGN_TRACE_BLOCK_MIN_CELLS`` cells and ``config.ALIGN_TRACE_BLOCK_RATIO`` times
    the mean of the pairs, or of that many cells in a call of no more pairs than the device
    has ``multiprocessors`` (a warp a pair would leave most of them idle); else 32 (a warp)."""
    cells = rows_end.astype(np.int64) * columns_end
    few = len(cells) <= multiprocessors
    ratio = 0.0 if few or not len(cells) else config.ALIGN_TRACE_BLOCK_RATIO * float(cells.mean())
    return np.where(cells >= max(config.ALIGN_TRACE_BLOCK_MIN_CELLS, ratio), 128, 32)


def warp_fits(m: np.ndarray, n: np.ndarray, table: np.ndarray, gap_open: int,
              gap_extend: int, n_codes: int, lanes: np.ndarray | int = 32) -> np.ndarray:
    """Per pair of ``m`` rows (its end row, for paths) and ``n`` columns, whether the warp
    kernels can run it with ``lanes`` lanes: every value fits their int32 lanes, padding rows
    included (each loses at most ``gap_open`` against the row above), and the substitution
    table (int16, with ``gap_open`` added and a padding row) fits in shared memory."""
    rows, _ = trace_layout(m, n, lanes)
    band = np.asarray(lanes, dtype=np.int64) * rows
    padded = -(-m.astype(np.int64) // band) * band
    high, low = value_bounds(padded, n, table, gap_open, gap_extend)
    low = low - (padded - m) * gap_open
    shifted = table.astype(np.int64) + gap_open
    table_ok = shifted.min() >= -32768 and shifted.max() <= 32767 and \
        _warp_table_bytes(n_codes) + _WARP_STATIC_SHARED <= _shared_per_block()
    return (m > 0) & (n > 0) & (high < _WIDE_LIMIT) & (low > -_WIDE_LIMIT) & table_ok


#: Bytes of ``warp_fill``'s static shared memory at most (128 lanes: the hand-off between
#: warps and their best cells), which the opt-in limit must hold beside the table.
_WARP_STATIC_SHARED = 128


def _warp_table_bytes(n_codes: int) -> int:
    """Dynamic shared memory of ``warp_fill``: its int16 substitution table and padding row."""
    return 2 * (n_codes + 1) * n_codes


def _shared_per_block() -> int:
    """Shared memory a block of the current device may opt in to (``warp_fill``'s table
    and its static shared memory, :data:`_WARP_STATIC_SHARED`, share it)."""
    import cupy

    return launch.device_limits(cupy.cuda.Device().id).shared_per_block_optin


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
    border_base = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(2 * (n + 1), out=border_base[1:])
    border = cupy.empty(2 * int(border_base[-1]), dtype=cupy.int32)
    score, row_end, end = (cupy.zeros(size, dtype=cupy.int32) for _ in range(3))
    unused = cupy.zeros(1, dtype=cupy.int64)  # the trace and last-row arguments
    kernel(*_warp_grid(kernel, size),
           (*sequences, cupy.asarray(q_local[members]), cupy.asarray(t_local[members]),
            cupy.asarray(m.astype(np.int32)), cupy.asarray(n.astype(np.int32)), np.int32(size),
            shifted, np.int32(n_codes), np.int32(gap_open), np.int32(gap_extend),
            unused.view(cupy.uint32), unused, border, cupy.asarray(border_base[:-1]),
            unused.view(cupy.int32), unused, score, end, row_end), shared_mem=shared)
    results[0][where[members]] = score.get()
    results[2][where[members]] = end.get()
    if mode == ALIGN_LOCAL:
        results[1][where[members]] = row_end.get()


def _long_engine(qset, table, gap_open, gap_extend) -> _cuda_long.CudaEngine:
    """The tiled engine of long pairs for this scoring (DNA match/mismatch without a table)."""
    dna = qset.alphabet.name == "dna" and _is_match_mismatch(table, qset.alphabet.match_codes)
    return _cuda_long.CudaEngine(table, gap_open, gap_extend, qset.alphabet.match_codes, dna)


def _long_pairs(engine, m, n) -> np.ndarray:
    """Which pairs of ``m`` x ``n`` symbols run on the tiled engine: at least
    ``config.LONG_ALIGN_MIN_CELLS`` cells, and values that fit its int32 lanes."""
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    return (m * n >= config.LONG_ALIGN_MIN_CELLS) & \
        engine.fits(m, n, np.full(len(m), engine.gap_open - engine.gap_extend))


def _paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode, progress=None):
    """Scores, coordinates and paths of index pairs: :func:`align_pairs` for
    ``task="path"``. Pairs of at least ``config.LONG_ALIGN_MIN_CELLS`` cells are aligned in
    linear space on the tiled engine (:func:`._cuda_long.pair_paths`), the others with a
    traceback each (:func:`_traced_paths`); ``progress`` moves as each part is done."""
    engine = _long_engine(qset, table, gap_open, gap_extend)
    cells = qset.lengths[q_index].astype(np.int64) * tset.lengths[t_index]
    done = progress.pairs_done if progress is not None else _ignore
    long = _long_pairs(engine, qset.lengths[q_index], tset.lengths[t_index])
    if not long.any():
        found = _traced_paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode)
        done(cells)
        return found
    count = len(q_index)
    results = [np.empty(count, dtype=np.int64) for _ in range(5)]
    cigar: list[str] = [""] * count
    identity = np.zeros(count, dtype=np.float64)
    chosen = np.flatnonzero(long)
    found = _cuda_long.pair_paths(engine, qset, tset, q_index[chosen], t_index[chosen], mode,
                                  config.LONG_ALIGN_LEAF_CELLS,
                                  progress.cells_done if progress is not None else None)
    for values, computed in zip(results, (found.score, found.query_start, found.query_end,
                                          found.target_start, found.target_end), strict=True):
        values[chosen] = computed
    matches, columns = found.matches(), found.columns()
    identity[chosen] = np.divide(matches, columns, out=np.zeros(len(chosen)), where=columns > 0)
    for p, ops in zip(chosen.tolist(), found.ops, strict=True):
        cigar[p] = cigar_text(ops)
    short = np.flatnonzero(~long)
    if len(short):
        *values, texts, short_identity = _traced_paths(
            qset, tset, q_index[short], t_index[short], table, gap_open, gap_extend, mode)
        done(cells[short])
        for whole, part in zip(results, values, strict=True):
            whole[short] = part
        identity[short] = short_identity
        for p, text in zip(short.tolist(), texts, strict=True):
            cigar[p] = text
    return (*results, cigar, identity)


def _traced_paths(qset, tset, q_index, t_index, table, gap_open, gap_extend, mode):
    """Scores, coordinates and paths of index pairs with a traceback each: one warp per pair
    on the GPU, the CPU backend for those that do not fit."""
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
    q_start = np.full(count, -1, dtype=np.int64)
    t_start = np.full(count, -1, dtype=np.int64)
    cigar: list[str] = [""] * count
    identity = np.zeros(count, dtype=np.float64)
    lanes = trace_lanes(q_end, t_end, device_resources(cupy.cuda.Device().id).sms)
    rows, words = trace_layout(q_end, t_end, lanes)
    # Bytes of a pair on the device: codes, two border rows, its last row, its operations, its
    # CIGAR text and the packed copy of it that waits to be fetched.
    pair_bytes = 4 * words + 20 * (t_end + 1) + 5 * (q_end + t_end) + 96
    n_codes = qset.alphabet.size
    on_gpu = (m > 0) & (n > 0) & (pair_bytes <= config.PATH_MAX_BYTES_PER_PAIR) & \
        warp_fits(np.maximum(q_end, 0), np.maximum(t_end, 0), table, gap_open, gap_extend,
                  n_codes, lanes)
    chosen = np.flatnonzero(on_gpu)
    shape = lanes * 1024 + rows  # a launch takes pairs of one lane count and height
    chosen = chosen[np.lexsort((-pair_bytes[chosen], shape[chosen]))]
    shifted = (table.astype(np.int64) + gap_open).astype(np.int16)  # s + gap_open, see trace.cu
    setup = _TraceSetup(mode, find_end, shifted, n_codes, qset.alphabet.match_codes, gap_open,
                        gap_extend)
    streams = launch.side_streams("align paths", config.ALIGN_TRACE_STREAMS)
    results = _TraceResults(score if find_end else None, q_end, t_end, q_start, t_start,
                            identity, cigar, streams)
    # A thread turns each launch's results into CIGAR strings.
    with ThreadPoolExecutor(max_workers=1) as finisher:
        results.finisher = finisher
        for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index[chosen],
                                                               t_index[chosen],
                                                               config.ALIGN_GPU_CHUNK_PAIRS):
            positions = chosen[part]
            # The launches wait for the sequences' and the table's uploads on the current
            # stream: an event recorded once, as an event recorded on the legacy default stream
            # waits for every launch queued before it.
            uploaded = cupy.cuda.get_current_stream().record()
            for kind in np.unique(shape[positions]).tolist():
                same = np.flatnonzero(shape[positions] == kind)
                group = _TraceGroup(setup, sequences, q_local[same], t_local[same],
                                    *divmod(kind, 1024),
                                    q_end[positions[same]], t_end[positions[same]],
                                    words[positions[same]], positions[same], results, uploaded)
                launch_split(group.run, np.arange(len(same)),
                             len(streams) * (int(pair_bytes[positions[same]].mean()) + 1))
            # This chunk's sequences may go (the next chunk's reuse their memory on the current
            # stream) once every launch that reads them has finished.
            while results.queued:
                results.fetch_oldest()
    for future in results.finished:
        future.result()  # raises what a store() raised
    rest = np.flatnonzero(~on_gpu)
    if len(rest):
        from . import _cpu

        s, qs, qe, ts, te, texts, ident = _cpu.align_pairs(
            qset, tset, q_index[rest], t_index[rest], table, gap_open, gap_extend, mode, "path")
        score[rest], q_start[rest], q_end[rest], t_start[rest], t_end[rest] = s, qs, qe, ts, te
        identity[rest] = ident
        for k, p in enumerate(rest.tolist()):
            cigar[p] = texts[k]
    return score, q_start, q_end, t_start, t_end, cigar, identity


def _is_match_mismatch(table: np.ndarray, match_codes: int) -> bool:
    """Whether ``table`` scores one value on its diagonal (up to ``match_codes``) and another
    everywhere else: then the DNA kernels compute substitutions without a table."""
    diagonal = np.eye(len(table), dtype=bool)
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
        kernel = get_kernel(KERNEL_FILE, _kernel_name(wide, self.mode, self.affine,
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
    """The kernel arguments shared by every path launch of one :func:`_paths` call."""

    def __init__(self, mode, find_end, table, n_codes, match_codes, gap_open, gap_extend):
        import cupy

        self.mode, self.find_end = mode, find_end
        self.n_codes, self.match_codes = n_codes, match_codes
        self.table = cupy.asarray(table.ravel())
        self.gap_open, self.gap_extend = gap_open, gap_extend


class _TraceResults:
    """Host arrays of :func:`_paths` that the launches fill: scores (None: known before), query
    and target ends, starts, identities, CIGARs; and the launches queued on the device whose
    results are not fetched yet."""

    def __init__(self, score, q_end, t_end, q_start, t_start, identity, cigar, streams):
        self.score, self.q_end, self.t_end = score, q_end, t_end
        self.q_start, self.t_start, self.identity, self.cigar = q_start, t_start, identity, cigar
        self.finisher: ThreadPoolExecutor | None = None
        self.finished: list = []  # the futures of store()
        self.streams = streams  # the launches take them in turn
        self.launches = 0
        # (positions, stream, device results, device packed texts), oldest first
        self.queued: list = []

    def next_free_stream(self):
        """The stream of the next launch, each in turn, after fetching the launch still
        queued on it (a copy queued on a stream behind a newer launch would wait for that
        one too): up to one launch a stream runs while the host waits for the oldest."""
        while len(self.queued) >= len(self.streams):
            self.fetch_oldest()
        self.launches += 1
        return self.streams[(self.launches - 1) % len(self.streams)]

    def queue(self, where, stream, values, packed) -> None:
        """Note a launch queued on ``stream``."""
        self.queued.append((where, stream, values, packed))

    def fetch_oldest(self) -> None:
        """Copy the oldest queued launch's results to the host (waiting for its stream only)
        and hand them to the finisher thread."""
        where, stream, values, packed = self.queued.pop(0)
        values = values.get(stream=stream)
        text_bytes = int(values[_TEXT_LENGTH].sum()) + len(where)  # a newline each
        self.finished.append(self.finisher.submit(self.store, where, values,
                                                  packed[:text_bytes].get(stream=stream)))

    def store(self, where, values, text):
        """Store the results of the pairs at positions ``where`` (host arrays; ``values``: the
        rows of ``_TRACE_OUTPUTS``; ``text``: their CIGARs, each followed by a newline)."""
        score, q_end, t_end, q_start, t_start, _, matches, columns = values
        if self.score is not None:
            self.score[where] = score
        self.q_end[where] = q_end
        self.t_end[where] = t_end
        self.q_start[where] = q_start
        self.t_start[where] = t_start
        self.identity[where] = np.divide(matches, columns, out=np.zeros(len(where)),
                                         where=columns > 0)
        # One decode (latin-1: a character per byte) and one split for the launch: CIGARs hold
        # no newline, and the last newline leaves an empty string behind.
        cigars = codecs.latin_1_decode(text)[0].split("\n")[:-1]
        for p, cigar in zip(where.tolist(), cigars, strict=True):
            self.cigar[p] = cigar


#: The per-pair outputs of a path launch, rows of one int32 array (one copy to the host).
_TRACE_OUTPUTS = ("score", "q_end", "t_end", "q_start", "t_start", "text_length", "matches",
                  "columns")
_TEXT_LENGTH = _TRACE_OUTPUTS.index("text_length")


class _TraceGroup:
    """The pairs of one lane count and height in one device chunk; :meth:`run` fills and walks
    back a part of them (one launch of each kernel) and stores their results at
    ``positions``."""

    def __init__(self, setup, sequences, q_local, t_local, lanes, height, rows_end, columns_end,
                 words, positions, results, uploaded):
        self.setup, self.sequences = setup, sequences
        self.lanes, self.height = lanes, height
        self.q_local, self.t_local = q_local, t_local
        self.rows_end, self.columns_end, self.words = rows_end, columns_end, words
        self.positions, self.results = positions, results
        self.uploaded = uploaded  # the event after the uploads the launches read

    def run(self, members):
        """Queue the fill, the walk back and the packing of the pairs ``members`` on the next
        stream (:meth:`_TraceResults.queue`)."""
        stream = self.results.next_free_stream()
        stream.wait_event(self.uploaded)
        with stream:
            self._queue(members, stream)

    def _queue(self, members, stream):
        import cupy

        setup, size = self.setup, len(members)
        rows_end = self.rows_end[members]
        columns_end = self.columns_end[members]

        def bases(sizes):
            offsets = np.zeros(size + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            return offsets

        trace_base = bases(self.words[members])
        border_base = bases(2 * (columns_end + 1))
        last_base = bases(columns_end + 1)
        ops_base = bases(rows_end + columns_end)
        text_base = bases(2 * (rows_end + columns_end))
        # The index arrays go over in two copies: int64 and int32 rows.
        wide = cupy.asarray(np.stack([self.q_local[members], self.t_local[members],
                                      trace_base[:-1], border_base[:-1], last_base[:-1],
                                      ops_base[:-1], text_base[:-1]]))
        q_index, t_index, trace_dev, border_dev, last_dev, ops_dev, text_dev = wide
        narrow = cupy.asarray(np.stack([rows_end, columns_end]).astype(np.int32))
        rows_dev, columns_dev = narrow
        trace = cupy.empty(int(trace_base[-1]) + 4, dtype=cupy.uint32)
        border = cupy.empty(2 * int(border_base[-1]) + 2, dtype=cupy.int32)
        last_row = cupy.empty(int(last_base[-1]) + 1, dtype=cupy.int32)
        ops = cupy.empty(int(ops_base[-1]) + 1, dtype=cupy.uint8)
        text = cupy.empty(int(text_base[-1]) + 1, dtype=cupy.uint8)
        values = cupy.zeros((len(_TRACE_OUTPUTS), size), dtype=cupy.int32)
        score, q_end, t_end, q_start, t_start, length, matches, columns = values
        find_end = "true" if setup.find_end else "false"
        fill = get_kernel(WARP_KERNEL_FILE,
                          f"warp_fill<{self.height}, {setup.mode}, true, {find_end}, "
                          f"{self.lanes}>")
        shared = launch.reserve_shared(fill, _warp_table_bytes(setup.n_codes))
        # A local fill writes each pair's score and end cell, where trace_back starts.
        fill(*launch.grid(fill, size, launch.block_threads(fill) // self.lanes),
             (*self.sequences, q_index, t_index, rows_dev, columns_dev, np.int32(size),
              setup.table, np.int32(setup.n_codes), np.int32(setup.gap_open),
              np.int32(setup.gap_extend), trace, trace_dev, border, border_dev, last_row,
              last_dev, score, t_end, q_end), shared_mem=shared)
        del border
        back = get_kernel(WARP_KERNEL_FILE, f"trace_back<{setup.mode}, {find_end}>")
        back(*launch.grid(back, size),
             (*self.sequences, q_index, t_index, rows_dev, columns_dev, np.int32(size),
              np.int32(self.height), np.int32(self.lanes), np.int32(setup.match_codes),
              np.int32(setup.gap_open),
              last_row, last_dev, trace, trace_dev, ops, ops_dev, text, text_dev, score, q_end,
              t_end, q_start, t_start, length, matches, columns))
        del trace, ops, last_row
        # Only the written text comes back: packed on the device, pair after pair, each
        # followed by a newline (its total is known once the launch's values are fetched).
        packed_base = cupy.zeros(size + 1, dtype=cupy.int64)
        cupy.cumsum(length + 1, out=packed_base[1:])
        packed = cupy.empty(int(text_base[-1]) + size, dtype=cupy.uint8)
        gather = get_kernel(WARP_KERNEL_FILE, "gather_text")
        gather(*_warp_grid(gather, size),
               (text, text_dev, length, packed_base, np.int32(size), packed))
        self.results.queue(self.positions[members], stream, values, packed)
