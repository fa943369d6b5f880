"""CUDA backend of database search: Smith-Waterman scores of every query against every
database sequence in 16-bit lanes (``search/kernels/search.cu``), the few pairs that overflow
them rescored in 32 bits by the alignment kernels, and each query's best ``n`` chosen on the
device.

The database (sorted by length) is copied to the GPU once and stays there while it fits the
memory budget; a larger one goes through in consecutive partitions, each query's best ``n`` of
every partition merged on the host. Queries are taken in chunks whose score rows (an int32
per database sequence, and the sort that picks the best) fit the budget; in a chunk, queries
of one lane shape (threads a pair and rows a thread, :func:`lane_shape`) share a launch, one
block row per query, so a small database still fills the GPU with many queries in flight.

Nothing here imports Numba.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import config
from .._progress import Progress
from ..codes import ALIGN_LOCAL
from ..cuda import launch
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget, fits_resident
from ..sequences import SequenceSet
from .database import fold_hits, partition_bounds

KERNEL_FILE = "search/kernels/search.cu"
PROFILE_KERNEL_FILE = "align/kernels/align.cu"  # its build_profiles writes the query profiles
OVERFLOW = -2  # OVERFLOW in search.cu: the pair's best H left the 16-bit range
_PROFILE_PADDING = 0  # profile bytes past a query's end (search.cu)
_MAX_GRID_Y = 65535  # CUDA's limit on a grid's y dimension: queries a launch
#: Device bytes a score of a chunk's rows takes at its peak: the int32 score, and the int64 sort
#: keys, their negation, the argsort's indices and its buffers while the best are chosen.
_BYTES_PER_SCORE = 48
_MAX_CODES = 64  # residue codes whose profile rows of the widest pass fit shared memory


def kernel_name(group: int, rows: int, signed: bool) -> str:
    """The kernel of ``group`` threads a pair of subjects and ``rows`` query rows a thread;
    ``signed``: some substitution score plus the gap opening is negative."""
    return f"search_scores<{group}, {rows}, {'true' if signed else 'false'}>"


def lane_shape(length: int) -> tuple[int, int]:
    """``(group, rows)`` for a query of ``length`` residues, from ``config.SEARCH_GROUPS`` and
    ``config.SEARCH_LANE_ROWS``: the fewest passes of ``group * rows`` rows (each pass after
    the first re-reads the row above it from memory), then the fewest padded rows, then the
    most rows a thread (fewer threads a pair, more pairs in flight).

    Examples
    --------
    >>> lane_shape(394)
    (16, 26)
    """
    def cost(shape: tuple[int, int]) -> tuple[int, int, int]:
        group, rows = shape
        passes = max(1, -(-length // (group * rows)))
        return passes, passes * group * rows, -rows

    return min(((g, r) for g in config.SEARCH_GROUPS for r in config.SEARCH_LANE_ROWS), key=cost)


def fits_lanes(table: np.ndarray, gap_open: int, gap_extend: int) -> bool:
    """Whether the kernel takes this scoring: substitution scores + ``gap_open`` fit a signed
    byte, the gap costs are below the 16-bit lanes' range, and a pass's profile of every
    residue code fits shared memory (not the 256 codes of raw bytes)."""
    shifted = table.astype(np.int64) + gap_open
    return (-128 <= int(shifted.min()) and int(shifted.max()) <= 127
            and 0 <= gap_extend < 1 << 15 and 0 <= gap_open < 1 << 15
            and len(table) <= _MAX_CODES)


def top_scores(queries: SequenceSet, database, table: np.ndarray, gap_open: int,
               gap_extend: int, n: int, progress: Progress | None = None,
               ) -> tuple[np.ndarray, np.ndarray]:
    """Best ``n`` Smith-Waterman scores of every query against every database sequence, with
    the contract of :func:`gpualign.search._cpu.top_scores`: int64 arrays ``(score, subject)``
    of shape ``(len(queries), n)``, best first, subjects as positions in
    ``database.sequences``, ties to the smaller ``database.order``, padded with -1."""
    subjects = database.sequences
    score = np.full((len(queries), n), -1, dtype=np.int64)
    subject = np.full((len(queries), n), -1, dtype=np.int64)
    if not len(queries) or not len(subjects) or n <= 0:
        return score, subject
    table = np.asarray(table)
    order = np.asarray(database.order, dtype=np.int64)
    for first, part in _partitions(subjects):
        resident = _resident(part, order[first:first + len(part)], part is subjects)
        for chunk in _query_chunks(queries, resident):
            rows = _score_rows(queries, chunk, part, resident, table, gap_open, gap_extend)
            best, where = _best(rows, resident.order, n)
            _merge(score, subject, chunk, best, where + first, order, n)
            if progress is not None:
                progress.cells_done(int(queries.lengths[chunk].sum()) * len(part.codes))
    return score, subject


class _Resident:
    """A partition of the database on the device with what every launch over it reads: the
    pairs' columns and where their border rows start, and the input order for the ties."""

    def __init__(self, part: SequenceSet, order: np.ndarray):
        import cupy

        # Not the set itself: the cache below is keyed by it, weakly.
        self.count = len(part)
        self.codes, self.offsets = part.to_device()
        self.columns = _border_columns(part.lengths)
        border_base = np.zeros(len(self.columns), dtype=np.int64)
        np.cumsum(self.columns[:-1], out=border_base[1:])
        self.border_base = cupy.asarray(border_base)
        self.border_entries = int(self.columns.sum())
        self.order = cupy.asarray(order)


#: The resident databases of earlier searches, by their sequences (a database's order is fixed
#: with them), then by device: a database searched again (queries in several calls) is not
#: prepared again. Its codes stay on the device as ``SequenceSet.to_device`` keeps them.
_RESIDENT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _resident(part: SequenceSet, order: np.ndarray, whole: bool) -> _Resident:
    """The :class:`_Resident` of ``part`` on the current device: kept for a whole database,
    made anew for each partition of one too large to stay."""
    import cupy

    if not whole:
        return _Resident(part, order)
    by_device = _RESIDENT.setdefault(part, {})
    device = cupy.cuda.Device().id
    if device not in by_device:
        by_device[device] = _Resident(part, order)
    return by_device[device]


def _partitions(subjects: SequenceSet):
    """``(first, part)``: the whole database when it may stay on the device, else consecutive
    views of at most half the batch budget of residues (one subject at least)."""
    if fits_resident(subjects.codes.nbytes + subjects.offsets.nbytes):
        yield 0, subjects
        return
    for lo, hi in partition_bounds(subjects.offsets, max(1, batch_budget() // 2)):
        part = subjects.view(lo, hi)
        yield lo, part
        part.release_device()


def _border_columns(lengths: np.ndarray) -> np.ndarray:
    """Columns of every pair of consecutive subjects: the longer one's length, rounded up to
    even (the kernel computes two columns a step)."""
    padded = np.zeros(2 * ((len(lengths) + 1) // 2), dtype=np.int64)
    padded[:len(lengths)] = lengths
    longer = padded.reshape(-1, 2).max(axis=1)
    return longer + longer % 2


def _query_chunks(queries: SequenceSet, resident: _Resident):
    """Arrays of query indices whose score rows (and, for queries of several passes, border
    rows) fit the batch budget together; at least one query a chunk."""
    per_row = _BYTES_PER_SCORE * resident.count
    border = 8 * resident.border_entries
    n_codes = queries.alphabet.size
    budget = batch_budget()
    chunk: list[int] = []
    used = 0
    for q, length in enumerate(queries.lengths):
        group, rows = lane_shape(int(length))
        passes = max(1, -(-int(length) // (group * rows)))
        need = per_row + passes * group * rows * n_codes + (border if passes > 1 else 0)
        if chunk and used + need > budget:
            yield np.array(chunk, dtype=np.int64)
            chunk, used = [], 0
        chunk.append(q)
        used += need
    if chunk:
        yield np.array(chunk, dtype=np.int64)


def launch_plan(lengths: np.ndarray) -> list[tuple[tuple[int, int], np.ndarray]]:
    """The launches that score queries of ``lengths``: ``(lane shape, positions)``, the queries
    of one shape (:func:`lane_shape`) together, those of one pass apart from those of several
    (only these get border rows), at most ``_MAX_GRID_Y`` a launch (a grid's y dimension).

    Examples
    --------
    >>> plan = launch_plan(np.array([560, 1030, 50, 570]))  # 1030: two passes of 32 x 18
    >>> [(shape, members.tolist()) for shape, members in plan]
    [((4, 14), [2]), ((32, 18), [0, 3]), ((32, 18), [1])]
    """
    shapes = [lane_shape(int(length)) for length in lengths]
    plan = []
    for shape in sorted(set(shapes)):
        members = np.array([k for k, s in enumerate(shapes) if s == shape], dtype=np.int64)
        several = np.asarray(lengths)[members] > shape[0] * shape[1]
        for apart in (members[~several], members[several]):
            for lo in range(0, len(apart), _MAX_GRID_Y):
                plan.append((shape, apart[lo:lo + _MAX_GRID_Y]))
    return plan


def _score_rows(queries: SequenceSet, chunk: np.ndarray, part: SequenceSet,
                resident: _Resident, table: np.ndarray, gap_open: int, gap_extend: int):
    """Exact scores of the queries ``chunk`` against every subject of the partition ``part``
    (on the device as ``resident``): a CuPy int32 array of shape ``(len(chunk), len(part))``."""
    import cupy

    if not fits_lanes(table, gap_open, gap_extend):
        return _rescored(queries, chunk, part, table, gap_open, gap_extend)
    rows = cupy.empty((len(chunk), len(part)), dtype=cupy.int32)
    # Subjects of more columns than a group should sweep alone (the sorted database's last
    # ones) go to the alignment kernels, which spread a long pair over the whole GPU.
    short = int(np.searchsorted(part.lengths, config.SEARCH_LONG_SUBJECT, side="right"))
    shifted_table = table.astype(np.int64) + gap_open
    signed = bool(shifted_table.min() < 0)
    shifted = cupy.asarray(shifted_table.astype(np.int16).ravel())
    n_codes = len(table)
    # Launches of different shapes overlap on a few streams, so that one launch's last blocks
    # do not leave the GPU idle before the next starts; `held` keeps every launch's buffers
    # until all have finished. Blocking streams: their work starts after what the default
    # stream was given before (the database's and the table's uploads).
    streams = [cupy.cuda.Stream() for _ in range(max(1, config.SEARCH_STREAMS))]
    held = []
    short_pairs = (short + 1) // 2
    stride_short = int(resident.columns[:short_pairs].sum())
    launches = launch_plan(queries.lengths[chunk]) if short else []
    for launch_index, ((group, lane_rows), members) in enumerate(launches):
        pass_rows = group * lane_rows
        lengths = queries.lengths[chunk[members]]
        passes = np.maximum(1, -(-lengths // pass_rows))
        profile_rows = (passes * pass_rows).astype(np.int32)
        # Border rows (a pass's last row for the next) only for queries of several passes,
        # which launch apart from the others of their shape.
        stride = stride_short if bool((passes > 1).any()) else 0
        kernel = get_kernel(KERNEL_FILE, kernel_name(group, lane_rows, signed))
        lane_bytes = 4 * -(-lane_rows // 4)  # ProfileLayout in search.cu
        shared = launch.reserve_shared(kernel, (n_codes + 1) * group * lane_bytes)
        (blocks,), block = launch.grid(kernel, short_pairs,
                                       items_per_block=launch.block_threads(kernel) // group)
        with streams[launch_index % len(streams)]:
            profiles, profile_base = _profiles(queries.take(chunk[members]), profile_rows,
                                               shifted, n_codes)
            arguments = (resident.codes, resident.offsets, np.int32(short),
                         np.int64(len(part)), profiles, profile_base,
                         cupy.asarray(profile_rows), cupy.asarray(members), np.int32(n_codes),
                         np.int32(gap_open), np.int32(gap_extend), np.uint32(1),
                         cupy.empty(max(1, stride * len(members)), dtype=cupy.uint64),
                         resident.border_base, np.int64(stride), rows)
            kernel((blocks, len(members)), block, arguments, shared_mem=shared)
        held.append(arguments)
    for stream in streams:
        stream.synchronize()
    if short < len(part):
        long_index = np.arange(short, len(part), dtype=np.int64)
        rows[:, short:] = cupy.asarray(_wide_scores(
            queries, np.repeat(chunk, len(long_index)), part, np.tile(long_index, len(chunk)),
            table, gap_open, gap_extend).reshape(len(chunk), -1).astype(np.int32))
    overflow = cupy.nonzero(rows == OVERFLOW)
    if len(overflow[0]):
        q_local, s_local = (cupy.asnumpy(a).astype(np.int64) for a in overflow)
        rows[overflow] = cupy.asarray(_wide_scores(queries, chunk[q_local], part, s_local, table,
                                                   gap_open, gap_extend).astype(np.int32))
    return rows


def _profiles(members: SequenceSet, profile_rows: np.ndarray, shifted, n_codes: int):
    """The query profiles of ``members`` on the device, ``profile_rows`` rows each per residue
    code, and where each starts."""
    import cupy

    sizes = profile_rows.astype(np.int64) * n_codes
    base = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=base[1:])
    profiles = cupy.empty(int(sizes.sum()), dtype=cupy.int8)
    base_device = cupy.asarray(base)
    build = get_kernel(PROFILE_KERNEL_FILE, "build_profiles")
    q_codes, q_offsets = members.to_device()
    build(*launch.grid(build, len(members), items_per_block=1),  # a block per query
          (q_codes, q_offsets, base_device, cupy.asarray(profile_rows), shifted,
           np.int32(n_codes), np.int32(_PROFILE_PADDING), profiles))
    return profiles, base_device


def _wide_scores(queries: SequenceSet, q_index: np.ndarray, part: SequenceSet,
                 s_index: np.ndarray, table: np.ndarray, gap_open: int,
                 gap_extend: int) -> np.ndarray:
    """Local scores of the pairs ``(queries[q_index], part[s_index])`` by the alignment
    kernels, which widen their lanes as the pairs need."""
    from ..align import _cuda as align_cuda

    return align_cuda.align_pairs(queries, part, q_index, s_index, table, gap_open, gap_extend,
                                  ALIGN_LOCAL, "score")[0]


def _rescored(queries, chunk, part, table, gap_open, gap_extend):
    """Every score of ``chunk`` x ``part`` by the alignment kernels (a scoring the search
    kernel cannot take)."""
    import cupy

    q_index = np.repeat(chunk, len(part))
    s_index = np.tile(np.arange(len(part), dtype=np.int64), len(chunk))
    scores = _wide_scores(queries, q_index, part, s_index, table, gap_open, gap_extend)
    return cupy.asarray(scores.reshape(len(chunk), len(part)).astype(np.int32))


def _best(rows, order, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best ``n`` (score, position), best first, ties to the smaller ``order`` (a
    CuPy array)."""
    import cupy

    take = min(n, rows.shape[1])
    # One sort key: the score above, the complement of the input position below.
    keys = (rows.astype(cupy.int64) << 32) | (0xFFFFFFFF - order)
    where = cupy.argsort(-keys, axis=1)[:, :take]
    best = cupy.take_along_axis(rows, where, axis=1)
    return cupy.asnumpy(best).astype(np.int64), cupy.asnumpy(where).astype(np.int64)


def _merge(score: np.ndarray, subject: np.ndarray, chunk: np.ndarray, best: np.ndarray,
           where: np.ndarray, order: np.ndarray, n: int) -> None:
    """Fold a partition's best ``(best, where)`` of the queries ``chunk`` into
    ``score``/``subject`` by the backends' top-n rule."""
    score[chunk], subject[chunk] = fold_hits(score[chunk], subject[chunk], best, where, order,
                                             n)
