"""CUDA backend of database search: Smith-Waterman scores of every query against every
database sequence in 16-bit lanes (``search/kernels/search.cu``), the few pairs that overflow
them rescored in 32 bits by the alignment kernels, and each query's best ``n`` chosen on the
device.

The database (sorted by length) is copied to the GPU once and stays there while it fits the
memory budget with one query's working memory; a larger one is streamed in consecutive
partitions (:func:`partition_plan`), the next one's upload overlapping the search of the one
before, each query's best ``n`` of every partition merged on the host. Queries are taken in
chunks whose score rows (an int32 per database sequence, and the sort that picks the best)
fit the budget; in a chunk, queries of one lane shape (threads a pair and rows a thread,
:func:`lane_shape`) share a launch, one block row per query, so a small database still fills
the GPU with many queries in flight.

Nothing here imports Numba.
"""

from __future__ import annotations

import collections
import itertools
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config
from .._progress import Progress
from ..codes import ALIGN_LOCAL
from ..cuda import launch
from ..cuda.host import PinnedStaging
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget, fits_resident
from ..sequences import DEVICE_PADDING, SequenceSet
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
#: Device bytes a partition's layout takes beyond its pairs' (see :func:`_pair_bytes`): the
#: codes' zero padding, the last offset, and up to 7 bytes that align the int64 arrays.
_LAYOUT_EXTRA = DEVICE_PADDING + 8 + 7
#: Bytes of each of the two page-locked pieces a streamed partition goes to the GPU through,
#: so that a large partition does not lock as much host memory.
_STAGING_BYTES = 1 << 26


def kernel_name(group: int, rows: int, signed: bool) -> str:
    """The kernel of ``group`` threads a pair of subjects and ``rows`` query rows a thread;
    ``signed``: some substitution score plus the gap opening is negative."""
    return f"search_scores<{group}, {rows}, {'true' if signed else 'false'}>"


def lane_shape(length: int, large: bool = False) -> tuple[int, int]:
    """``(group, rows)`` for a query of ``length`` residues, from ``config.SEARCH_GROUPS`` and
    ``config.SEARCH_LANE_ROWS`` (``large``: a database of ``config.SEARCH_LARGE_SUBJECTS``
    sequences or more, ``config.SEARCH_LARGE_GROUPS`` and ``config.SEARCH_LARGE_LANE_ROWS``):
    the fewest passes of ``group * rows`` rows (each pass after the first re-reads the row
    above it from memory), then the fewest padded rows, then the most rows a thread (fewer
    threads a pair, more pairs in flight).

    Examples
    --------
    >>> lane_shape(394), lane_shape(394, large=True)
    ((16, 26), (16, 26))
    >>> lane_shape(600), lane_shape(600, large=True)
    ((32, 20), (16, 38))
    """
    groups = config.SEARCH_LARGE_GROUPS if large else config.SEARCH_GROUPS
    heights = config.SEARCH_LARGE_LANE_ROWS if large else config.SEARCH_LANE_ROWS

    def cost(shape: tuple[int, int]) -> tuple[int, int, int]:
        group, rows = shape
        passes = max(1, -(-length // (group * rows)))
        return passes, passes * group * rows, -rows

    return min(((g, r) for g in groups for r in heights), key=cost)


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
    large = len(subjects) >= config.SEARCH_LARGE_SUBJECTS
    passes, profile = _query_passes(queries, large)
    for first, part, resident, budget in _partitions(subjects, order, passes, profile):
        for chunk in _query_chunks(resident, budget, passes, profile):
            rows = _score_rows(queries, chunk, part, resident, table, gap_open, gap_extend,
                               large)
            best, where = _best(rows, resident.order, n)
            _merge(score, subject, chunk, best, where + first, order, n)
            if progress is not None:
                progress.cells_done(int(queries.lengths[chunk].sum()) * len(part.codes))
    return score, subject


class _Resident:
    """A database, or a partition of one, on the device with what every launch over it reads:
    the codes and offsets, the pairs' columns and where their border rows start, and the input
    order for the ties."""

    def __init__(self, count: int, columns: np.ndarray, codes, offsets, order, border_base):
        # Not the set itself: the cache below is keyed by it, weakly.
        self.count = count
        self.columns = columns
        self.border_entries = int(columns.sum())
        self.codes, self.offsets = codes, offsets
        self.order = order
        self.border_base = border_base


#: The resident databases of earlier searches, by their sequences (a database's order is fixed
#: with them), then by device: a database searched again (queries in several calls) is not
#: prepared again. Its codes stay on the device as ``SequenceSet.to_device`` keeps them.
_RESIDENT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: When each kept database was last searched (a count of searches), by its sequences: a
#: database that does not fit beside the kept ones makes the least recently searched go.
_LAST_SEARCHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SEARCHES = itertools.count()
#: Searches running now, by database (its sequences' id) and device: their databases stay.
_SEARCHING: collections.Counter = collections.Counter()
#: Guards the four above: searches run in several threads of one process (Dask workers).
_KEPT_LOCK = threading.RLock()


def _resident(subjects: SequenceSet, order: np.ndarray) -> _Resident:
    """The :class:`_Resident` of a whole database on the current device, kept between
    searches."""
    import cupy

    with _KEPT_LOCK:
        by_device = _RESIDENT.setdefault(subjects, {})
        device = cupy.cuda.Device().id
        if device not in by_device:
            columns = _border_columns(subjects.lengths)
            by_device[device] = _Resident(len(subjects), columns, *subjects.to_device(),
                                          cupy.asarray(order),
                                          cupy.asarray(_border_base(columns)))
        return by_device[device]


def _drop_kept(sequences: SequenceSet, device: int) -> None:
    """Forget the database ``sequences`` kept on ``device`` and its copy there (if kept)."""
    with _KEPT_LOCK:
        if _RESIDENT.get(sequences, {}).pop(device, None) is not None:
            sequences.release_device(device)


def _release_kept(needs: int, keep: SequenceSet) -> bool:
    """Drop the databases that earlier searches left on the current device (not ``keep``, nor
    one that another thread is searching), the least recently searched first, until ``needs``
    bytes fit beside the others; whether they do. A program that searches many databases
    (``align_one_to_many`` over the batches of a large set) keeps on the device only those
    that fit."""
    import cupy

    device = cupy.cuda.Device().id
    with _KEPT_LOCK:
        kept = [sequences for sequences, by_device in list(_RESIDENT.items())
                if device in by_device and sequences is not keep
                and not _SEARCHING[id(sequences), device]]
        for sequences in sorted(kept, key=lambda s: _LAST_SEARCHED.get(s, -1)):
            _drop_kept(sequences, device)
            if fits_resident(needs):
                return True
    return False


def _is_kept(subjects: SequenceSet) -> bool:
    """Whether an earlier search left the whole database on the current device."""
    import cupy

    return cupy.cuda.Device().id in _RESIDENT.get(subjects, {})


def _partitions(subjects: SequenceSet, order: np.ndarray, passes: np.ndarray,
                profile: np.ndarray):
    """``(first, part, resident, budget)`` for each part of the database in turn, ``budget``
    the bytes its query chunks may use: the whole database, kept on the device, where it fits
    with the working memory of one query (:func:`_query_passes`) against it; else the
    partitions of :func:`partition_plan`, streamed (:func:`_streamed`)."""
    import cupy

    several = bool((passes > 1).any())
    largest = int(profile.max())
    layout, work = _whole_bytes(subjects, several)
    device = cupy.cuda.Device().id
    with _KEPT_LOCK:
        _LAST_SEARCHED[subjects] = next(_SEARCHES)
        needs = work + largest + (0 if _is_kept(subjects) else layout + _LAYOUT_EXTRA)
        resident = _resident(subjects, order) \
            if fits_resident(needs) or _release_kept(needs, keep=subjects) else None
        if resident is not None:
            _SEARCHING[id(subjects), device] += 1
        elif not _SEARCHING[id(subjects), device]:
            _drop_kept(subjects, device)  # kept by an earlier search, no longer fits
    if resident is not None:
        try:
            yield 0, subjects, resident, batch_budget()
        finally:
            with _KEPT_LOCK:
                _SEARCHING[id(subjects), device] -= 1
                if not _SEARCHING[id(subjects), device]:
                    del _SEARCHING[id(subjects), device]
        return
    budget = batch_budget()
    yield from _streamed(subjects, order, partition_plan(subjects.lengths, budget, several,
                                                         largest), budget)


#: The totals of :func:`_pair_bytes` of the databases searched before, by their sequences, then
#: by ``several_passes``: summing them takes a pass over every subject, which a database
#: searched again (queries in several calls) need not pay again.
_WHOLE_BYTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _whole_bytes(subjects: SequenceSet, several_passes: bool) -> tuple[int, int]:
    """The whole database's layout bytes and one query's working bytes against it: the sums
    of :func:`_pair_bytes`."""
    by_passes = _WHOLE_BYTES.setdefault(subjects, {})
    if several_passes not in by_passes:
        layout, work = _pair_bytes(subjects.lengths, several_passes)
        by_passes[several_passes] = int(layout.sum()), int(work.sum())
    return by_passes[several_passes]


def partition_plan(lengths: np.ndarray, budget: int, several_passes: bool,
                   profile_bytes: int) -> list[tuple[int, int]]:
    """``(lo, hi)`` ranges of the sorted database sequences of ``lengths`` that a search
    streams through the device in turn, cut by :func:`~gpualign.search.database.partition_bounds`
    so that two partitions' layouts (the next is uploaded while this one is searched) and one
    query's working memory against a partition fit ``budget`` bytes together: half of it for
    the layouts, half for the query (its score row, its ``profile_bytes`` and, when
    ``several_passes``, the border rows of every pair). Each pair of the kernel (sequences
    ``2p``, ``2p + 1``) costs the larger of its share of each half, so partitions start at even
    positions and the border rows of the pairs are exact; a pair above the budget is a
    partition of its own.

    Examples
    --------
    >>> partition_plan(np.array([10, 10, 10, 10, 40, 40]), 600, False, 0)
    [(0, 4), (4, 6)]
    >>> partition_plan(np.array([10, 10, 10, 10, 40, 40]), 600, True, 0)  # border rows
    [(0, 2), (2, 4), (4, 6)]
    """
    layout, work = _pair_bytes(lengths, several_passes)
    share = max(1, (budget - 2 * _LAYOUT_EXTRA - profile_bytes) // 2)
    cost = np.zeros(len(layout) + 1, dtype=np.int64)
    np.cumsum(np.maximum(2 * layout, work), out=cost[1:])
    return [(2 * lo, min(2 * hi, len(lengths))) for lo, hi in partition_bounds(cost, share)]


def _pair_bytes(lengths: np.ndarray, several_passes: bool) -> tuple[np.ndarray, np.ndarray]:
    """Device bytes each pair of the kernel (sequences ``2p``, ``2p + 1``; the last alone for
    an odd count) adds to a partition's layout (residues, offset and order of each sequence,
    the pair's border base) and to one query's working memory against it (a score of each
    sequence; the pair's border rows when ``several_passes``)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.arange(0, len(lengths), 2)
    members = np.minimum(2, len(lengths) - starts)
    residues = np.add.reduceat(lengths, starts) if len(lengths) else starts
    layout = residues + 16 * members + 8
    work = _BYTES_PER_SCORE * members
    if several_passes:
        work = work + 8 * _border_columns(lengths)
    return layout, work


def _packed_layout(residues: int, count: int) -> tuple[int, int]:
    """Where the int64 arrays of a streamed partition of ``count`` sequences and ``residues``
    residues start in its device buffer, and where they end: the codes and their
    ``DEVICE_PADDING`` zeros first, then from the next multiple of 8 the offsets
    (``count + 1``), the input order (``count``) and the border bases (one a pair)."""
    start = -(-(residues + DEVICE_PADDING) // 8) * 8
    return start, start + 8 * (2 * count + 1 + (count + 1) // 2)


def _unpacked(buffer, residues: int, count: int) -> tuple:
    """Views of a partition's codes (with their padding), offsets, order and border bases in
    ``buffer`` (uint8, NumPy or CuPy), laid out as :func:`_packed_layout` says (and in the
    order of :class:`_Resident`'s arguments)."""
    start, end = _packed_layout(residues, count)
    numbers = buffer[start:end].view(np.int64)
    return (buffer[:residues + DEVICE_PADDING], numbers[:count + 1],
            numbers[count + 1:2 * count + 1], numbers[2 * count + 1:])


def _layout_pieces(part: SequenceSet, order: np.ndarray,
                   columns: np.ndarray) -> list[np.ndarray]:
    """The bytes of the partition ``part``'s device layout (:func:`_packed_layout`) in order:
    its codes, zeros up to its int64 arrays, and its offsets, ``order`` and the border bases of
    its pairs of ``columns``."""
    residues = len(part.codes)
    start, _ = _packed_layout(residues, len(part))
    numbers = np.concatenate((part.offsets, order, _border_base(columns))).astype(np.int64)
    return [part.codes, np.zeros(start - residues, dtype=np.uint8), numbers.view(np.uint8)]


class _UploadSlot:
    """One of the two device buffers a streamed database's partitions take in turn, and the
    event that ends the last search of the partition in it (the next upload waits for it; at
    first, the work queued on the current stream before the buffer was allocated there, which
    may still use its memory)."""

    def __init__(self, size: int):
        import cupy

        self.buffer = cupy.empty(size, dtype=cupy.uint8)
        self.searched = cupy.cuda.get_current_stream().record()


def _upload(slot: _UploadSlot, part: SequenceSet, order: np.ndarray,
            staging: PinnedStaging, device: int):
    """Queue the copy of the partition ``part`` (its sequences' input ``order``) into
    ``slot`` on the copy stream of ``staging``, after the slot's last search: the partition's
    :class:`_Resident` and the event that ends the copy. Runs on the upload thread."""
    import cupy

    with cupy.cuda.Device(device):
        staging.stream.wait_event(slot.searched)
        columns = _border_columns(part.lengths)
        position = 0
        for piece in _layout_pieces(part, order, columns):
            staging.copy(slot.buffer[position:position + len(piece)], piece)
            position += len(piece)
        resident = _Resident(len(part), columns, *_unpacked(slot.buffer, len(part.codes),
                                                             len(part)))
        return resident, staging.stream.record()


def _streamed(subjects: SequenceSet, order: np.ndarray, bounds: list[tuple[int, int]],
              budget: int):
    """``(first, part, resident, budget)`` of each partition ``bounds`` of a database that may
    not stay on the device, the next partition's upload overlapping this one's search.

    Two device buffers take the partitions in turn, so that at most two are on the device;
    the query chunks get what they leave of ``budget``. A thread packs the next partition
    through page-locked memory (:class:`~gpualign.cuda.host.PinnedStaging`) and queues its
    copy on a stream of its own, non-blocking so that it waits for no launch of the search (and
    none for it), once the buffer's last search has ended; the caller's stream waits for the
    copy's event before the search reads the partition.

    Not :func:`gpualign.cuda.pipeline.run`: its ``Stage.enqueue`` would stage a partition and
    queue its search, but the search is synchronous on the host (pairs that overflow rescored,
    long subjects aligned, each chunk's best taken), so the next partition's upload would wait
    for it; here the upload runs on its own thread meanwhile.
    """
    import cupy

    sizes = [_packed_layout(int(subjects.offsets[hi] - subjects.offsets[lo]), hi - lo)[1]
             for lo, hi in bounds]
    slots = [_UploadSlot(max(sizes)) for _ in range(min(2, len(bounds)))]
    chunk_budget = budget - len(slots) * max(sizes)
    device = cupy.cuda.Device().id
    staging = PinnedStaging(cupy.cuda.Stream(non_blocking=True), min(_STAGING_BYTES, max(sizes)))
    try:
        with ThreadPoolExecutor(max_workers=1,
                                thread_name_prefix="gpualign-search-upload") as uploader:

            def upload(k: int):
                lo, hi = bounds[k]
                part = subjects.view(lo, hi)
                return part, uploader.submit(_upload, slots[k % 2], part, order[lo:hi], staging,
                                             device)

            coming = upload(0)
            for k, (lo, _hi) in enumerate(bounds):
                part, uploaded = coming
                resident, copied = uploaded.result()
                if k + 1 < len(bounds):
                    # Into the other slot: its partition (k - 1) has been searched.
                    coming = upload(k + 1)
                cupy.cuda.get_current_stream().wait_event(copied)
                # The alignment kernels (overflowing pairs, long subjects) read the partition
                # where it already is, not from a copy of their own.
                part.adopt_device_copy(resident.codes, resident.offsets)
                yield lo, part, resident, chunk_budget
                # The search is done on the host; its last work is on the current stream.
                slots[k % 2].searched = cupy.cuda.get_current_stream().record()
                part.release_device()
    finally:
        staging.stream.synchronize()  # no copy may still read the staging pieces


def _border_columns(lengths: np.ndarray) -> np.ndarray:
    """Columns of every pair of consecutive subjects: the longer one's length, rounded up to
    even (the kernel computes two columns a step)."""
    padded = np.zeros(2 * ((len(lengths) + 1) // 2), dtype=np.int64)
    padded[:len(lengths)] = lengths
    longer = padded.reshape(-1, 2).max(axis=1)
    return longer + longer % 2


def _border_base(columns: np.ndarray) -> np.ndarray:
    """Where each pair's border rows start: the columns of the pairs before it."""
    base = np.zeros(len(columns), dtype=np.int64)
    np.cumsum(columns[:-1], out=base[1:])
    return base


def _query_passes(queries: SequenceSet, large: bool) -> tuple[np.ndarray, np.ndarray]:
    """The passes of each query's lane shape (:func:`lane_shape`, ``large``) and the bytes of
    its profile (a byte a residue code for each row of its passes)."""
    lengths, which = np.unique(queries.lengths, return_inverse=True)
    pass_rows = np.array([group * rows for group, rows in
                          (lane_shape(length, large) for length in lengths.tolist())],
                         dtype=np.int64)
    passes = np.maximum(1, -(-lengths // pass_rows))
    profile = passes * pass_rows * queries.alphabet.size
    return passes[which], profile[which]


def _query_chunks(resident: _Resident, budget: int, passes: np.ndarray, profile: np.ndarray):
    """Arrays of query indices whose score rows against ``resident``, profiles and, for queries
    of several passes (``passes``), border rows fit ``budget`` bytes together; at least one
    query a chunk."""
    border = 8 * resident.border_entries
    needs = _BYTES_PER_SCORE * resident.count + profile + np.where(passes > 1, border, 0)
    chunk: list[int] = []
    used = 0
    for q, need in enumerate(needs.tolist()):
        if chunk and used + need > budget:
            yield np.array(chunk, dtype=np.int64)
            chunk, used = [], 0
        chunk.append(q)
        used += need
    if chunk:
        yield np.array(chunk, dtype=np.int64)


def launch_plan(lengths: np.ndarray, large: bool = False,
                ) -> list[tuple[tuple[int, int], np.ndarray]]:
    """The launches that score queries of ``lengths``: ``(lane shape, positions)``, the queries
    of one shape (:func:`lane_shape`) together, those of one pass apart from those of several
    (only these get border rows), at most ``_MAX_GRID_Y`` a launch (a grid's y dimension).

    Examples
    --------
    >>> plan = launch_plan(np.array([560, 1030, 50, 570]))  # 1030: two passes of 32 x 18
    >>> [(shape, members.tolist()) for shape, members in plan]
    [((4, 14), [2]), ((32, 18), [0, 3]), ((32, 18), [1])]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    distinct, which = np.unique(lengths, return_inverse=True)  # a shape per distinct length
    shape_of = [lane_shape(length, large) for length in distinct.tolist()]
    shapes = sorted(set(shape_of))
    query_shape = np.array([shapes.index(shape) for shape in shape_of], dtype=np.int64)[which]
    plan = []
    for number, shape in enumerate(shapes):
        members = np.flatnonzero(query_shape == number)
        several = lengths[members] > shape[0] * shape[1]
        for apart in (members[~several], members[several]):
            for lo in range(0, len(apart), _MAX_GRID_Y):
                plan.append((shape, apart[lo:lo + _MAX_GRID_Y]))
    return plan


def _score_rows(queries: SequenceSet, chunk: np.ndarray, part: SequenceSet,
                resident: _Resident, table: np.ndarray, gap_open: int, gap_extend: int,
                large: bool = False):
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
    # until all have finished. Each stream waits for what the current stream was given before:
    # the table's upload, and a streamed partition's copy (on a stream of its own, which the
    # current one waits for).
    streams = launch.side_streams("search", config.SEARCH_STREAMS)
    prior_work = cupy.cuda.get_current_stream().record()
    for stream in streams:
        stream.wait_event(prior_work)
    held = []
    short_pairs = (short + 1) // 2
    stride_short = int(resident.columns[:short_pairs].sum())
    launches = launch_plan(queries.lengths[chunk], large) if short else []
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
