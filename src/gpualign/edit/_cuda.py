"""CUDA backend of edit distance.

Pairs are binned by query length (``config.EDIT_KERNEL_BINS``) and each bin goes to the kernel
specialization made for it: one pair per thread for short queries, a query's words spread over
lanes of a warp for long ones; queries longer than the last bin run in passes over slices of
their rows. The per-pair bookkeeping (lengths, bins, the order by bin) runs on the GPU and the
kernels write their results in place, so that a million pairs cost little more than their
kernels.

Pairs are processed in chunks (``config.EDIT_GPU_CHUNK_PAIRS``). Sequence sets move to the GPU
once when they fit in free memory; otherwise each chunk gathers the sequences it needs. A launch
that runs out of memory is split. For ``task="path"`` the CIGARs are traced on the GPU too
(``kernels/path.cu``), in batches whose stored delta vectors fit the memory budget, and come
back as arrays of runs (:class:`~gpualign.cigar.PackedCigars`), with no text to write or split.
Pairs whose results need no dynamic programming
(an empty side, or a global length difference over ``k``) are filled in on the host
(:mod:`._shared`), exactly as the CPU backend computes them, without loading it (nor Numba).

Long pairs (at least ``config.LONG_EDIT_MIN_CELLS`` cells, or with ``task="path"`` a full
traceback over ``config.PATH_MAX_BYTES_PER_PAIR``) run over the whole device instead
(``kernels/long.cu``: bands of the query on as many warps as there are bands), and their CIGARs
come in linear space (:mod:`._linear`: each level of splits one launch of the same kernel, the
small leaves traced by ``kernels/path.cu``). A long pair whose linear-space memory does not fit
the budget is refused, naming it, before any work.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from .. import config
from .._progress import Progress, pass_credits
from ..cigar import PackedCigars
from ..codes import EDIT_GLOBAL, EDIT_INFIX
from ..cuda.host import mapped, maps_host_memory, pinned_empty
from ..cuda.launch import grid
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget, device_chunks, fits_resident, free_bytes, launch_split
from ._linear import NO_OP, edits_of_buffer, hirschberg, packed_of_buffer
from ._shared import needs_linear, trivial_cigars, trivial_results

if TYPE_CHECKING:
    from ..sequences import SequenceSet

KERNEL_FILE = "edit/kernels/myers.cu"
PATH_KERNEL_FILE = "edit/kernels/path.cu"
LONG_KERNEL_FILE = "edit/kernels/long.cu"

#: HELD_CODES of long.cu: alphabets whose matching codes are all below it (DNA) get the long
#: kernel that holds its match words of a band in shared memory.
LONG_HELD_CODES = 4


#: What a kernel tracks along the query's last row (TRACK_* in myers.cu): nothing until the last
#: column (global), the smallest value, or the smallest value and its leftmost/rightmost column.
TRACK_FINAL, TRACK_BEST, TRACK_FIRST_END, TRACK_LAST_END = range(4)

#: TRACK_ROW of long.cu: the whole last row of a problem, for the splits of a linear-space CIGAR.
TRACK_ROW = 4

#: Largest subproblem (cells) of a linear-space CIGAR on the GPU that is traced in full: path.cu
#: traces a subproblem on one thread, so leaves stay small and the levels above them, which run
#: over the whole device, do the bulk of the work.
GPU_LEAF_CELLS = 1 << 14


def _kernel_name(lanes: int, words_per_lane: int, dna: bool, track: int) -> str:
    return f"myers_edit<{lanes}, {words_per_lane}, {'true' if dna else 'false'}, {track}>"


def run_kernel(sequences, index, order, t_length, alphabet, lanes: int, words_per_lane: int,
               top_delta: int, reverse: int, track: int, cutoff: int, outputs,
               pass_from_end: int = 0, borders=None):
    """Launch one pass of a kernel over the pairs ``order`` (a device int64 array).

    ``sequences`` is ``(q_codes, q_offsets, t_codes, t_offsets)`` on the device, ``index``
    ``(q_index, t_index, first)``: device arrays of each pair's query and target, or (with
    ``first >= 0``) ``first + pair`` for both. ``t_length`` holds the target symbols to use per
    pair, ``top_delta`` the horizontal delta of the top row (0: free start in the target, 1:
    D[0][j] = j), ``track`` one of the ``TRACK_*`` values; the results go to the per-pair device
    arrays ``outputs`` = (distance, end), ends only from ``TRACK_FIRST_END`` and
    ``TRACK_LAST_END``. Queries longer than the kernel's rows run in passes over
    row slices, numbered back from the last one (``pass_from_end``); ``borders`` is then
    ``(h_in, h_out)``: int8 ``(len(order), columns)`` arrays of the horizontal deltas entering and
    leaving the slice, and only the last pass writes ``outputs``.
    """
    import cupy

    q_codes, q_offsets, t_codes, t_offsets = sequences
    q_index, t_index, first = index
    size = len(order)
    if borders is None:
        borders = (_zeros(cupy.int8),) * 2
    dna = alphabet.name == "dna"
    words = lanes * words_per_lane
    if dna:
        table = _zeros(cupy.uint32)
    else:
        table = cupy.zeros(size * alphabet.size * words, dtype=cupy.uint32)
        builder = get_kernel(KERNEL_FILE, "build_match_table")
        builder(*grid(builder, size * words),
                (q_codes, q_offsets, q_index, order, np.int64(first), np.int32(size),
                 np.int32(words), np.int32(alphabet.size), np.int32(alphabet.match_codes),
                 np.int32(reverse), np.int32(pass_from_end), table))
    distance, end = outputs
    kernel = get_kernel(KERNEL_FILE, _kernel_name(lanes, words_per_lane, dna, track))
    if dna and 1 < lanes < 32:
        # The driver would give these kernels' shared-memory tables all it can, for occupancy,
        # leaving an L1 cache too small for the target bytes that their many groups per warp
        # read a column at a time.
        kernel.preferred_shared_memory_carveout = config.EDIT_COOPERATIVE_SHARED_CARVEOUT
    # Blocks of exactly the kernel's launch bounds (BLOCK_THREADS in myers.cu), the stride of
    # its shared-memory tables.
    kernel(*grid(kernel, size * lanes),
           (q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, order, np.int64(first),
            t_length, table, np.int32(alphabet.size), np.int32(size), np.int32(top_delta),
            np.int32(reverse), np.int32(cutoff), np.int32(pass_from_end), borders[0],
            borders[1], np.int64(borders[1].shape[1]), distance, end))


def positional_index(first: int) -> tuple:
    """``index`` (see :func:`run_kernel`) of pairs ``first + i`` with ``first + i``."""
    import cupy

    dummy = _zeros(cupy.int64)
    return dummy, dummy, first


def _zeros(dtype):
    """A one-element zero device array of ``dtype`` for arguments a launch does not read."""
    import cupy

    return _dummies(cupy.cuda.Device().id)[np.dtype(dtype).name]


@functools.cache
def _dummies(device: int) -> dict:
    import cupy

    with cupy.cuda.Device(device):
        # int8: a (pairs, columns) border array of one pair and one column
        return {"int8": cupy.zeros((1, 1), dtype=cupy.int8),
                "int32": cupy.zeros(1, dtype=cupy.int32),
                "uint32": cupy.zeros(1, dtype=cupy.uint32),
                "int64": cupy.zeros(1, dtype=cupy.int64)}


def _run_sliced(sequences, index, order, t_length, alphabet, top_delta: int, reverse: int,
                track: int, cutoff: int, outputs):
    """All passes over the pairs ``order`` whose queries are longer than the last bin."""
    import cupy

    lanes, per_lane = config.EDIT_SLICE_KERNEL
    rows = lanes * per_lane * 32
    q_offsets = sequences[1]
    q_index, _, first = index
    qi = order + first if first >= 0 else q_index[order]
    longest = int((q_offsets[qi + 1] - q_offsets[qi]).max())
    columns = max(1, int(t_length[order].max()))
    borders = [cupy.zeros((len(order), columns), dtype=cupy.int8) for _ in range(2)]
    passes = -(-longest // rows)
    for number in range(passes):
        run_kernel(sequences, index, order, t_length, alphabet, lanes, per_lane, top_delta,
                   reverse, track, cutoff, outputs, passes - 1 - number,
                   (borders[number % 2], borders[1 - number % 2]))


def bin_limits() -> np.ndarray:
    """Largest query length in 32-bit words of each kernel bin (after checking the bins)."""
    lanes_ok = (1, 2, 4, 8, 16, 32)
    for max_words, lanes, per_lane in config.EDIT_KERNEL_BINS:
        if lanes not in lanes_ok or per_lane < 1 or lanes * per_lane < max_words:
            raise ValueError(f"EDIT_KERNEL_BINS entry {(max_words, lanes, per_lane)}: lanes must "
                             f"be one of {lanes_ok} and lanes * words_per_lane >= max_words")
    lanes, per_lane = config.EDIT_SLICE_KERNEL
    if lanes not in lanes_ok[1:] or per_lane < 1:
        raise ValueError(f"EDIT_SLICE_KERNEL {config.EDIT_SLICE_KERNEL}: a cooperative kernel "
                         f"(lanes in {lanes_ok[1:]}) is needed for slices")
    if len(config.EDIT_KERNEL_BINS) > 30:
        raise ValueError("EDIT_KERNEL_BINS: at most 30 bins (the GPU counts pairs per bin in 32 "
                         "slots, with the sliced queries and the CPU's pairs)")
    return np.array([b[0] for b in config.EDIT_KERNEL_BINS], dtype=np.int64)


@functools.cache
def _bin_streams(device: int) -> tuple:
    """Streams on which the kernel bins of a chunk run side by side (per device)."""
    import cupy

    with cupy.cuda.Device(device):
        return tuple(cupy.cuda.Stream(non_blocking=True) for _ in range(config.EDIT_GPU_STREAMS))


@functools.cache
def _device_limits(device: int, bins: tuple) -> object:
    """``bin_limits()`` on a device (``bins``: the config they come from, as the cache key)."""
    import cupy

    with cupy.cuda.Device(device):
        return cupy.asarray(bin_limits())


def gpu_results(sequences, alphabet, index, count: int, mode, k, want_start, distance=None):
    """The GPU work of one chunk of ``count`` pairs, given by ``index`` = ``(q_index, t_index,
    first)`` on the device (see :func:`run_kernel`). ``distance``, if given, is the array the
    kernels write the distances to (else a new device array).

    Returns device ``(distance, start, end)`` (start and end None unless ``want_start``) and the
    device positions of the pairs that need no dynamic programming (an empty side, or a global
    length difference over ``k``), left to the host, whose entries are -1. The pairs are binned
    and sorted by bin on the GPU (two kernels, one small copy of the bin counts to the host),
    and each bin's launches run on their own stream: a launch ends in a partly filled wave of
    blocks, and the bins fill each other's.
    """
    import cupy

    q_codes, q_offsets, t_codes, t_offsets = sequences
    q_index, t_index, first = index
    device = cupy.cuda.Device().id
    limits = _device_limits(device, config.EDIT_KERNEL_BINS)
    keys = len(limits) + 2  # the bins, queries run in slices, pairs left to the host
    key = cupy.empty(count, dtype=cupy.int32)
    t_len = cupy.empty(count, dtype=cupy.int32)
    counts = cupy.zeros(keys, dtype=cupy.int32)
    plan = get_kernel(KERNEL_FILE, "plan_pairs")
    plan(*grid(plan, count),
         (q_offsets, t_offsets, q_index, t_index, np.int64(first), np.int32(count), limits,
          np.int32(len(limits)), np.int32(k if mode == EDIT_GLOBAL else -1), key, t_len, counts))
    bounds = np.concatenate(([0], np.cumsum(counts.get())))
    order = cupy.empty(count, dtype=cupy.int64)
    cursor = cupy.asarray(bounds[:-1].astype(np.int32))
    sort = get_kernel(KERNEL_FILE, "order_pairs")
    sort(*grid(sort, count), (key, np.int32(count), cursor, order))

    if distance is None:
        distance = cupy.full(count, -1, dtype=cupy.int32)
    start = end = None
    if want_start:
        start, end = (cupy.full(count, -1, dtype=cupy.int32) for _ in range(2))
    main = cupy.cuda.get_current_stream()
    ready = main.record()
    streams = _bin_streams(device)
    # Longest queries first: blocks start in launch order, so the last, partly filled wave is
    # made of the shortest-running blocks.
    for number, bin_id in enumerate(np.flatnonzero(np.diff(bounds)[:-1])[::-1]):
        stream = streams[number % len(streams)]
        stream.wait_event(ready)
        with stream:
            _run_bin(sequences, alphabet, index, t_len, order[bounds[bin_id]:bounds[bin_id + 1]],
                     bin_id == len(limits), bin_id, mode, k, (distance, start, end))
    for stream in streams:
        main.wait_event(stream.record())
    return (distance, start, end), order[bounds[-2]:]


def _run_bin(sequences, alphabet, index, t_len, members, sliced, bin_id, mode, k, outputs):
    """Forward pass (and the backward pass for infix starts) of one kernel bin's pairs (or, with
    ``sliced``, of the queries longer than the last bin)."""
    import cupy

    distance, start, end = outputs
    want_start = start is not None
    if sliced:
        lanes, per_lane = config.EDIT_SLICE_KERNEL
    else:
        _, lanes, per_lane = config.EDIT_KERNEL_BINS[bin_id]
    table_bytes = 0 if alphabet.name == "dna" else alphabet.size * lanes * per_lane * 4
    # Sliced passes keep two int8 borders per target column of every pair of a launch.
    per_pair = 64 + table_bytes + (2 * int(t_len[members].max()) if sliced else 0)

    def run(part, length, top_delta, reverse, track, cutoff, results):
        if sliced:
            _run_sliced(sequences, index, part, length, alphabet, top_delta, reverse, track,
                        cutoff, results)
        else:
            run_kernel(sequences, index, part, length, alphabet, lanes, per_lane, top_delta,
                       reverse, track, cutoff, results)

    if mode == EDIT_GLOBAL:
        track = TRACK_FINAL
    else:
        track = TRACK_FIRST_END if want_start else TRACK_BEST
    top_delta = 0 if mode == EDIT_INFIX else 1
    ends = end if want_start else _zeros(cupy.int32)  # written only by the end-tracking kernels
    launch_split(lambda part: run(part, t_len, top_delta, 0, track, k, (distance, ends)),
                 members, per_pair)
    if not want_start:
        return
    aligned = distance[members] >= 0
    start[members] = cupy.where(aligned, 0, -1)
    if mode == EDIT_GLOBAL:
        end[members] = cupy.where(aligned, t_len[members], -1)
    if mode != EDIT_INFIX:
        return
    # Leftmost start of an optimal alignment ending at ``end``: the longest reversed target
    # prefix (of target[:end]) that the reversed query matches at the same cost.
    again = members[aligned & (end[members] > 0)]
    if not len(again):
        return
    ignored = cupy.empty(len(distance), dtype=cupy.int32)
    length = cupy.empty(len(distance), dtype=cupy.int32)

    def backward(part):
        run(part, end, 1, 1, TRACK_LAST_END, -1, (ignored, length))
        start[part] = end[part] - length[part]

    launch_split(backward, again, per_pair)


def _chunk_on_gpu(sequences, alphabet, q_index, t_index, mode, k, out, positional, want_cigars,
                  pinned):
    """Distances, starts and ends of one chunk of pairs on the GPU, copied into the host
    arrays ``out`` = (distance, start, end); start and end are None for ``task="distance"``,
    and are then neither computed nor copied. With ``positional``, ``q_index`` is ``t_index``
    and holds consecutive numbers, which the kernels compute instead of reading. With
    ``want_cigars`` the CIGARs are traced on the GPU too. ``pinned``: ``out[0]`` is
    page-locked.

    Returns the chunk-local indices of the pairs left to the host (their entries, and CIGARs,
    are to be filled in by the caller) and the CIGARs (None without ``want_cigars``).
    """
    import cupy

    if positional and len(q_index):
        index = positional_index(int(q_index[0]))
    else:
        qi = cupy.asarray(q_index, dtype=cupy.int64)
        ti = qi if t_index is q_index else cupy.asarray(t_index, dtype=cupy.int64)
        index = (qi, ti, -1)
    # For distances alone, and where the device can, the kernels write them straight into the
    # page-locked host array (the pairs left to the host are filled in by the caller), so no copy
    # waits for the last kernel. Starts need the distances again on the GPU, which would then
    # read them over the bus.
    direct = pinned and out[1] is None and maps_host_memory(cupy.cuda.Device().id)
    results, trivial = gpu_results(sequences, alphabet, index, len(q_index), mode, k,
                                   out[1] is not None, mapped(out[0]) if direct else None)
    copies = zip(results[1:], out[1:], strict=True) if direct else zip(results, out, strict=True)
    for device, host in copies:
        if host is not None:
            device.get(out=host)
    cigars = None
    if want_cigars:
        cigars = gpu_cigars(sequences, alphabet, index, results[1:], out[1] < 0)
    trivial_local = trivial.get()
    cupy.cuda.get_current_stream().synchronize()  # the distances written to host memory
    return trivial_local, cigars


def gpu_cigars(sequences, alphabet, index, device_range, no_alignment):
    """CIGARs of a chunk's pairs, traced on the GPU (path.cu) from the target ranges found,
    ``device_range`` = (start, end) on the device (start -1: no alignment). ``no_alignment`` is
    the host mask of the pairs without one (their CIGAR is None). Pairs go to the GPU in batches
    whose scratch memory (the stored delta vectors) fits the memory budget.
    """
    import cupy

    q_index, t_index, first = index
    d_start, d_end = device_range
    q_offsets = sequences[1]
    pairs = len(d_start)
    if first >= 0:
        q_len = q_offsets[first + 1:first + pairs + 1] - q_offsets[first:first + pairs]
    else:
        q_len = q_offsets[q_index + 1] - q_offsets[q_index]
    aligned = d_start >= 0
    span = cupy.where(aligned, d_end - d_start, 0)
    words = (q_len + 31) // 32
    # 4-byte units: match table, columns 0..span (two words a row of 32), operations (bytes).
    units = cupy.where(aligned, alphabet.size * words + 2 * (span + 1) * words
                       + (q_len + span + 3) // 4, 0)
    ends = cupy.cumsum(units)
    budget = max(1, batch_budget() // 8)  # scratch plus its share of the rest
    bounds = [0, pairs]
    if int(ends[-1]) > budget:  # batches of pairs whose scratch fits
        ends_host = ends.get()
        bounds = [0]
        while bounds[-1] < pairs:
            lo = bounds[-1]
            base = int(ends_host[lo - 1]) if lo else 0
            bounds.append(max(lo + 1, int(np.searchsorted(ends_host, base + budget, "right"))))
    trace = get_kernel(PATH_KERNEL_FILE, "trace_paths")
    write = get_kernel(PATH_KERNEL_FILE, "write_runs")
    batches = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        count = hi - lo
        offset = ends[lo:hi] - units[lo:hi]
        if lo:
            offset -= ends[lo - 1]
        scratch = cupy.empty(max(1, int(offset[-1] + units[hi - 1])), dtype=cupy.uint32)
        op_count = cupy.empty(count, dtype=cupy.int32)
        runs = cupy.empty(count, dtype=cupy.int32)
        if first >= 0:
            part = (q_index, t_index, np.int64(first + lo))
        else:
            part = (q_index[lo:hi], t_index[lo:hi], np.int64(-1))
        trace(*grid(trace, count),
              (*sequences, *part, np.int32(count), d_start[lo:hi], d_end[lo:hi],
               np.int32(alphabet.size), np.int32(alphabet.match_codes), offset, scratch,
               op_count, runs))
        run_at = _exclusive_sum(runs)
        total = int(run_at[-1])
        run_ops = cupy.empty(max(1, total), dtype=cupy.uint8)
        run_lengths = cupy.empty(max(1, total), dtype=cupy.int32)
        write(*grid(write, count),
              (q_offsets, part[0], part[2], np.int32(count), d_start[lo:hi], d_end[lo:hi],
               np.int32(alphabet.size), offset, scratch, op_count, run_at, run_ops,
               run_lengths))
        # Through page-locked memory, copied out of it (the result outlives the batch): the
        # runs as they are, no text.
        batches.append(PackedCigars(
            run_ops.get(out=pinned_empty(len(run_ops), np.uint8)[0])[:total].copy(),
            run_lengths.get(out=pinned_empty(len(run_lengths), np.int32)[0])[:total],
            run_at.get(), ~no_alignment[lo:hi]))
    return PackedCigars.concatenate(batches)


def _short_pairs(qset, tset, q_index, t_index, mode, k, task, progress, positional):
    """:func:`edit_pairs` of pairs that are not long: chunks of pairs binned over the kernels
    of myers.cu, CIGARs traced by path.cu."""
    count = len(q_index)
    want_start = task != "distance"
    positional = positional and q_index is t_index
    # Every entry is written by a chunk; starts and ends only when the task reports them. The
    # results land in page-locked memory, which copies from the GPU faster.
    distance, pinned = pinned_empty(count, np.int32)
    start = pinned_empty(count, np.int32)[0] if want_start else None
    end = pinned_empty(count, np.int32)[0] if want_start else None
    cigar: list[PackedCigars] | None = [] if task == "path" else None
    cells = qset.lengths[q_index].astype(np.int64) * tset.lengths[t_index]
    for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index, t_index,
                                                            config.EDIT_GPU_CHUNK_PAIRS):
        out = (distance[part], *(None if a is None else a[part] for a in (start, end)))
        trivial_local, cigars = _chunk_on_gpu(sequences, qset.alphabet, q_local, t_local,
                                              mode, k, out, positional, cigar is not None,
                                              pinned)
        if len(trivial_local):
            trivial = part.start + trivial_local
            q_len = qset.lengths[q_index[trivial]]
            found = trivial_results(q_len, tset.lengths[t_index[trivial]], mode, k)
            for host, values in zip(out, found, strict=True):
                if host is not None:
                    host[trivial_local] = values
            if cigars is not None:
                # Runs of I or D: the pairs have an empty side (or no alignment within k).
                cigars = cigars.replaced(trivial_local,
                                         trivial_cigars(q_len, found[1], found[2]))
        if cigars is not None:
            cigar.append(cigars)
        progress.pairs_done(cells[part])
    return distance, start, end, None if cigar is None else PackedCigars.concatenate(cigar)


def edit_pairs(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
               mode: int, k: int, task: str, progress: Progress | None = None,
               positional: bool = False,
               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None,
                          PackedCigars | None]:
    """Edit distance of index pairs on the current CUDA device (the contract of
    :func:`gpualign.edit._cpu.edit_pairs`).

    ``positional``: the pairs are ``queries[i]`` with ``targets[i]`` (``q_index`` is ``t_index``
    and counts from 0), so the GPU makes its index arrays itself. Long pairs (see
    :func:`long_mask`) run over the whole device (long.cu), the others in batches.
    ``progress`` moves as they are done.
    """
    progress = Progress.silent() if progress is None else progress
    q_len = qset.lengths[q_index]
    t_len = tset.lengths[t_index]
    long = long_mask(q_len, t_len, mode, k, task)
    if not long.any():
        return _short_pairs(qset, tset, q_index, t_index, mode, k, task, progress, positional)
    long_at = np.flatnonzero(long)
    short_at = np.flatnonzero(~long)
    check_long_memory(q_len[long_at], t_len[long_at], qset.alphabet.size, long_at)
    short = _short_pairs(qset, tset, q_index[short_at], t_index[short_at], mode, k, task,
                         progress, False)
    found = _long_pairs(qset, tset, q_index[long_at], t_index[long_at], mode, k, task, progress)
    merged: list = []
    for short_part, long_part in zip(short[:3], found[:3], strict=True):
        if short_part is None:
            merged.append(None)
            continue
        values = np.empty(len(q_index), dtype=np.int32)
        values[short_at] = short_part
        values[long_at] = long_part
        merged.append(values)
    cigar = None
    if task == "path":
        cigar = PackedCigars.nones(len(q_index)).replaced(
            np.concatenate((short_at, long_at)), PackedCigars.concatenate([short[3], found[3]]))
    return merged[0], merged[1], merged[2], cigar


def long_mask(q_len: np.ndarray, t_len: np.ndarray, mode: int, k: int, task: str) -> np.ndarray:
    """Which pairs are long: those with dynamic programming to do of at least
    ``config.LONG_EDIT_MIN_CELLS`` cells, and for ``task="path"`` those whose CIGAR needs linear
    space (:func:`._shared.needs_linear`, over the whole target: the range is not known yet)."""
    q_len = np.asarray(q_len, dtype=np.int64)
    t_len = np.asarray(t_len, dtype=np.int64)
    work = (q_len > 0) & (t_len > 0)
    if mode == EDIT_GLOBAL and k >= 0:
        work &= np.abs(q_len - t_len) <= k
    if task == "path":
        return work & needs_linear(q_len, t_len)
    return work & (q_len * t_len >= config.LONG_EDIT_MIN_CELLS)


def long_bytes(q_len: np.ndarray, t_len: np.ndarray, n_codes: int) -> np.ndarray:
    """GPU memory of a long pair, CIGAR included: its sequences and operation buffer, the
    match table of its bands, the carries between bands and two rows of a level's splits."""
    q_len = np.asarray(q_len, dtype=np.int64)
    t_len = np.asarray(t_len, dtype=np.int64)
    band_rows = config.LONG_EDIT_THREADS * config.LONG_EDIT_WORDS_PER_LANE * 32
    padded = -(-q_len // band_rows) * band_rows
    return 2 * (q_len + t_len) + n_codes * padded // 8 + 8 * t_len + 8 * (t_len + 1)


def check_long_memory(q_len: np.ndarray, t_len: np.ndarray, n_codes: int,
                      positions: np.ndarray) -> None:
    """Raise MemoryError, naming the pair (its position ``positions[i]`` in the call), before
    any work, when a long pair cannot fit in the GPU's memory budget even alone."""
    if not len(q_len):
        return
    need = long_bytes(q_len, t_len, n_codes)
    worst = int(need.argmax())
    # Groups hold one pair at least, so config.GPU_BATCH_BYTES (a batching knob) never refuses
    # a pair: only the device's memory does.
    if not fits_resident(int(need[worst])):
        budget = free_bytes() * config.GPU_MEMORY_FRACTION
        raise MemoryError(
            f"pair #{int(positions[worst])} needs {int(need[worst]) / 2**30:.1f} GiB of GPU "
            f"memory (query {int(q_len[worst])} x target {int(t_len[worst])}), over the "
            f"budget of {budget / 2**30:.1f} GiB (gpualign.config.GPU_MEMORY_FRACTION of the "
            "free memory)")


def _groups(sizes: np.ndarray, budget: int) -> list[slice]:
    """Consecutive slices of items whose ``sizes`` add up to at most ``budget`` (at least one
    item each)."""
    ends = np.cumsum(np.asarray(sizes, dtype=np.int64))
    groups, lo = [], 0
    while lo < len(ends):
        base = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, base + budget, "right")))
        groups.append(slice(lo, hi))
        lo = hi
    return groups


def _exclusive_sum(values):
    """``[0, v0, v0 + v1, ...]`` as int64, on the device of ``values``."""
    import cupy

    sums = cupy.zeros(len(values) + 1, dtype=cupy.int64)
    cupy.cumsum(values.astype(cupy.int64), out=sums[1:])
    return sums


def _long_kernel_name(lanes: int, words_per_lane: int, track: int, held: bool) -> str:
    return f"long_edit<{lanes}, {words_per_lane}, {track}, {'true' if held else 'false'}>"


def _long_settings() -> tuple[int, int]:
    """``(lanes per band, words per lane)`` of the long kernel, checked."""
    lanes, words = config.LONG_EDIT_THREADS, config.LONG_EDIT_WORDS_PER_LANE
    if lanes not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"LONG_EDIT_THREADS {lanes}: one of 1, 2, 4, 8, 16, 32")
    if words not in (1, 2, 4):
        raise ValueError(f"LONG_EDIT_WORDS_PER_LANE {words}: one of 1, 2, 4")
    return lanes, words


def run_long(q_codes, t_codes, problems, alphabet, track: int, top_delta: int, cutoff: int,
             outputs=None, rows=None) -> None:
    """One launch of the long kernel over ``problems`` = ``(q_from, q_len, t_from, t_len,
    reversed)`` (device int64, int32, int64, int32, uint8 arrays; queries of at least one
    symbol): each problem's query ``q_codes[q_from:][:q_len]`` against its target, both read
    backwards where ``reversed``. ``outputs`` = (distance, end) per problem (end from
    ``TRACK_FIRST_END`` and ``TRACK_LAST_END``); ``rows`` = (values, row_from) receives each
    problem's last row, ``t_len + 1`` values from ``row_from`` (``TRACK_ROW``).
    """
    import cupy

    lanes, words_per_lane = _long_settings()
    q_from, q_len, t_from, t_len, reversed_ = problems
    count = len(q_len)
    band_rows = lanes * words_per_lane * 32
    band_first = _exclusive_sum((q_len.astype(cupy.int64) + band_rows - 1) // band_rows)
    bands = int(band_first[-1])
    words = bands * band_rows // 32
    table = cupy.zeros(alphabet.size * words, dtype=cupy.uint32)
    builder = get_kernel(LONG_KERNEL_FILE, "long_match_table")
    builder(*grid(builder, words),
            (q_codes, q_from, q_len, reversed_, band_first, np.int32(count), np.int32(lanes),
             np.int32(words_per_lane), np.int32(alphabet.size), np.int32(alphabet.match_codes),
             table))
    carry_from = _exclusive_sum(2 * t_len)  # two slots of a word a column (long.cu)
    carries = cupy.zeros(max(1, int(carry_from[-1])), dtype=cupy.int32)  # no tag: not ready
    ticket = cupy.zeros(1, dtype=cupy.uint64)
    distance, end = outputs if outputs is not None else (_zeros(cupy.int32),) * 2
    values, row_from = rows if rows is not None else (_zeros(cupy.int32), _zeros(cupy.int64))
    kernel = get_kernel(LONG_KERNEL_FILE, _long_kernel_name(
        lanes, words_per_lane, track, alphabet.match_codes <= LONG_HELD_CODES))
    # A group of lanes a band; groups without a band left take no ticket and end.
    kernel(*grid(kernel, bands * lanes),
           (t_codes, t_from, t_len, q_len, reversed_, band_first, np.int32(count), table,
            np.int32(alphabet.size), carries, carry_from, np.int32(top_delta), np.int32(cutoff),
            ticket, distance, end, values, row_from))


def _long_pairs(qset, tset, q_index, t_index, mode, k, task, progress):
    """Distances, ranges and CIGARs (as :func:`edit_pairs` returns them) of long pairs, in
    groups whose memory (:func:`long_bytes`) fits the budget, each group one launch;
    ``progress`` moves as each group's passes end (the CIGARs' level by level)."""
    import cupy

    want_start = task != "distance"
    count = len(q_index)
    distance = np.empty(count, dtype=np.int32)
    start = np.empty(count, dtype=np.int32) if want_start else None
    end = np.empty(count, dtype=np.int32) if want_start else None
    cigars: list[PackedCigars] | None = [] if task == "path" else None
    sizes = long_bytes(qset.lengths[q_index], tset.lengths[t_index], qset.alphabet.size)
    first, second = pass_credits(qset.lengths[q_index], tset.lengths[t_index], task == "path")
    for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index, t_index,
                                                            config.EDIT_GPU_CHUNK_PAIRS):
        qi_all = cupy.asarray(q_local, dtype=cupy.int64)
        ti_all = cupy.asarray(t_local, dtype=cupy.int64)
        for group in _groups(sizes[part], max(1, batch_budget() // 2)):
            at = slice(part.start + group.start, part.start + group.stop)
            qi, ti = qi_all[group], ti_all[group]
            if cigars is not None and mode == EDIT_GLOBAL:
                # The CIGARs give the distances (their edits): no distance pass.
                span = tset.lengths[t_index[at]].astype(np.int32)
                traced, edits = gpu_linear_cigars(sequences, qset.alphabet, qi, ti,
                                                  np.zeros_like(span), span, progress,
                                                  int(first[at].sum() + second[at].sum()))
                over = (edits > k) if k >= 0 else np.zeros(len(span), dtype=bool)
                distance[at] = np.where(over, -1, edits)
                start[at] = np.where(over, -1, 0)
                end[at] = np.where(over, -1, span)
                over_at = np.flatnonzero(over)
                cigars.append(traced.replaced(over_at, PackedCigars.nones(len(over_at))))
                continue
            found = _long_distances(sequences, qset.alphabet, qi, ti, mode, k, want_start)
            distance[at] = found[0].get()
            progress.pairs_done(first[at])
            if not want_start:
                continue
            start[at] = found[1].get()
            end[at] = found[2].get()
            if cigars is not None:
                cigars.append(gpu_linear_cigars(sequences, qset.alphabet, qi, ti, start[at],
                                                end[at], progress, int(second[at].sum()))[0])
    return distance, start, end, None if cigars is None else PackedCigars.concatenate(cigars)


def _long_distances(sequences, alphabet, qi, ti, mode, k, want_start):
    """Device (distance, start, end) of long pairs (``qi``, ``ti``: device indices into the
    device sequences); start and end None unless ``want_start``. Infix starts come from a
    second launch over the reversed query and target prefix, as in :func:`_run_bin`."""
    import cupy

    q_codes, q_offsets, t_codes, t_offsets = sequences
    count = len(qi)
    q_from, t_from = q_offsets[qi], t_offsets[ti]
    q_len = (q_offsets[qi + 1] - q_from).astype(cupy.int32)
    t_len = (t_offsets[ti + 1] - t_from).astype(cupy.int32)
    forwards = cupy.zeros(count, dtype=cupy.uint8)
    distance = cupy.empty(count, dtype=cupy.int32)
    end = cupy.empty(count, dtype=cupy.int32)
    if mode == EDIT_GLOBAL:
        track = TRACK_FINAL
    else:
        track = TRACK_FIRST_END if want_start else TRACK_BEST
    run_long(q_codes, t_codes, (q_from, q_len, t_from, t_len, forwards), alphabet, track,
             0 if mode == EDIT_INFIX else 1, k, (distance, end))
    if not want_start:
        return distance, None, None
    aligned = distance >= 0
    start = cupy.where(aligned, 0, -1).astype(cupy.int32)
    if mode == EDIT_GLOBAL:
        end = cupy.where(aligned, t_len, -1).astype(cupy.int32)
    if mode == EDIT_INFIX:
        again = cupy.flatnonzero(aligned & (end > 0))
        if len(again):
            length = cupy.empty(len(again), dtype=cupy.int32)
            ignored = cupy.empty(len(again), dtype=cupy.int32)
            run_long(q_codes, t_codes, (q_from[again], q_len[again], t_from[again], end[again],
                                        cupy.ones(len(again), dtype=cupy.uint8)),
                     alphabet, TRACK_LAST_END, 1, -1, (ignored, length))
            start[again] = end[again] - length
    return distance, start, end


def gpu_linear_cigars(sequences, alphabet, qi, ti, start: np.ndarray, end: np.ndarray,
                      progress: Progress | None = None, share: int = 0,
                      ) -> tuple[PackedCigars, np.ndarray]:
    """CIGARs of the global alignments of queries ``qi`` with target ranges ``[start, end)`` of
    targets ``ti`` (device indices; host ranges, start -1: no alignment, None) in linear space,
    and their edits (the distances; -1 without alignment): :func:`._linear.hirschberg`, each
    level's splits one launch of the long kernel (two problems a split, whole rows: the
    distances that band the CPU's rows are not needed) and one of ``pick_splits``, its leaves
    traced by path.cu; ``progress`` moves by ``share`` cells over the levels."""
    import cupy

    q_codes, q_offsets, t_codes, t_offsets = sequences
    cigars = PackedCigars.nones(len(qi))
    edits = np.full(len(qi), -1, dtype=np.int64)
    aligned = np.flatnonzero(start >= 0)
    if not len(aligned):
        if progress is not None:
            progress.cells_done(share)
        return cigars, edits
    chosen = cupy.asarray(aligned)
    q_from = q_offsets[qi[chosen]].get()
    q_len = q_offsets[qi[chosen] + 1].get() - q_from
    t_from = t_offsets[ti[chosen]].get() + start[aligned]
    t_len = (end[aligned] - start[aligned]).astype(np.int64)
    base = np.zeros(len(aligned) + 1, dtype=np.int64)
    np.cumsum(q_len + t_len, out=base[1:])
    buffer = cupy.full(max(1, int(base[-1])), NO_OP, dtype=cupy.uint8)

    def split_columns(pair, qa, mid, qb, ta, tb, _distance):
        halves = len(pair) * 2
        problems = (np.stack((q_from[pair] + qa, q_from[pair] + mid), axis=1).ravel(),
                    np.stack((mid - qa, qb - mid), axis=1).ravel().astype(np.int32),
                    np.repeat(t_from[pair] + ta, 2),
                    np.repeat(tb - ta, 2).astype(np.int32),
                    np.tile(np.array([0, 1], dtype=np.uint8), len(pair)))
        device = tuple(cupy.asarray(a) for a in problems)
        row_from = _exclusive_sum(device[3] + 1)
        values = cupy.empty(int(row_from[-1]), dtype=cupy.int32)
        run_long(q_codes, t_codes, device, alphabet, TRACK_ROW, 1, -1, rows=(values, row_from))
        cut, top, bottom = (cupy.empty(halves // 2, dtype=cupy.int32) for _ in range(3))
        pick = get_kernel(LONG_KERNEL_FILE, "pick_splits")
        pick(*grid(pick, halves // 2 * 32),
             (values, row_from, device[3], np.int32(halves // 2), cut, top, bottom))
        return ta + cut.get(), top.get(), bottom.get()

    def trace_leaves(pair, qa, qb, ta, tb):
        rows, columns = qb - qa, tb - ta
        words = (rows + 31) // 32
        # 4-byte units of path.cu's scratch: match table, columns 0..n, operations (bytes).
        units = alphabet.size * words + 2 * (columns + 1) * words + (rows + columns + 3) // 4
        for group in _groups(units * 4, max(1, batch_budget() // 8)):
            _trace_leaf_group(sequences, alphabet, buffer, *(a[group] for a in (
                np.stack((q_from[pair] + qa, q_from[pair] + qb), axis=1),
                np.stack((t_from[pair] + ta, t_from[pair] + tb), axis=1),
                words, units, base[pair] + qa + ta)))

    leaf_cells = min(GPU_LEAF_CELLS, config.LONG_EDIT_MIN_CELLS)
    hirschberg(q_len, t_len, q_len + t_len,
               lambda rows, columns: (rows * columns <= leaf_cells) & ~needs_linear(rows, columns),
               split_columns, trace_leaves, progress.cells_done if progress is not None else None,
               share)
    host = buffer.get()[:base[-1]]
    edits[aligned] = edits_of_buffer(host, base)
    return cigars.replaced(aligned, packed_of_buffer(host, base)), edits


def _trace_leaf_group(sequences, alphabet, buffer, q_range, t_range, words, units, to):
    """Trace leaves in full with path.cu's ``trace_paths``, each a pair of its own: query
    ``q_codes[q_range[l, 0]:q_range[l, 1]]`` and target range ``t_range[l]`` (given to it as
    offsets of sequences 2l), then copy their operations to ``buffer + to[l]``."""
    import cupy

    q_codes, _, t_codes, _ = sequences
    count = len(to)
    offset = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(units, out=offset[1:])
    columns = t_range[:, 1] - t_range[:, 0]
    ops_at = 4 * (offset[:-1] + alphabet.size * words + 2 * (columns + 1) * words)
    index = cupy.arange(count, dtype=cupy.int64) * 2
    scratch = cupy.empty(max(1, int(offset[-1])), dtype=cupy.uint32)
    op_count = cupy.empty(count, dtype=cupy.int32)
    runs = cupy.empty(count, dtype=cupy.int32)  # not needed: the leaves' operations are copied
    trace = get_kernel(PATH_KERNEL_FILE, "trace_paths")
    trace(*grid(trace, count),
          (q_codes, cupy.asarray(q_range.ravel()), t_codes,
           cupy.asarray(np.ascontiguousarray(t_range).ravel()), index, index, np.int64(-1),
           np.int32(count), cupy.zeros(count, dtype=cupy.int32),
           cupy.asarray(columns.astype(np.int32)), np.int32(alphabet.size),
           np.int32(alphabet.match_codes), cupy.asarray(offset[:-1]), scratch, op_count,
           runs))
    gather = get_kernel(LONG_KERNEL_FILE, "gather_leaf_ops")
    gather(*grid(gather, count),
           (scratch, cupy.asarray(ops_at), op_count, cupy.asarray(to), np.int32(count), buffer))
