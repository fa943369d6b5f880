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
back as one text to split. Pairs whose results need no dynamic programming
(an empty side, or a global length difference over ``k``) are filled in on the host
(:mod:`._shared`), exactly as the CPU backend computes them, without loading it (nor Numba).
"""

from __future__ import annotations

import codecs
import functools
from typing import TYPE_CHECKING

import numpy as np

from .. import config
from .._progress import progress_bar
from ..codes import EDIT_GLOBAL, EDIT_INFIX
from ..cuda.host import mapped, maps_host_memory, pinned_empty
from ..cuda.launch import grid
from ..cuda.loader import get_kernel
from ..cuda.memory import batch_budget, device_chunks, launch_split
from ._shared import check_traceback_size, trivial_cigars, trivial_results

if TYPE_CHECKING:
    from ..sequences import SequenceSet

KERNEL_FILE = "edit/kernels/myers.cu"
PATH_KERNEL_FILE = "edit/kernels/path.cu"


#: What a kernel tracks along the query's last row (TRACK_* in myers.cu): nothing until the last
#: column (global), the smallest value, or the smallest value and its leftmost/rightmost column.
TRACK_FINAL, TRACK_BEST, TRACK_FIRST_END, TRACK_LAST_END = range(4)


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
    check_traceback_size(q_len, span)
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
    write = get_kernel(PATH_KERNEL_FILE, "write_paths")
    cigars: list[str | None] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        count = hi - lo
        offset = ends[lo:hi] - units[lo:hi]
        if lo:
            offset -= ends[lo - 1]
        scratch = cupy.empty(max(1, int(offset[-1] + units[hi - 1])), dtype=cupy.uint32)
        op_count = cupy.empty(count, dtype=cupy.int32)
        text_chars = cupy.empty(count, dtype=cupy.int32)
        if first >= 0:
            part = (q_index, t_index, np.int64(first + lo))
        else:
            part = (q_index[lo:hi], t_index[lo:hi], np.int64(-1))
        trace(*grid(trace, count),
              (*sequences, *part, np.int32(count), d_start[lo:hi], d_end[lo:hi],
               np.int32(alphabet.size), np.int32(alphabet.match_codes), offset, scratch,
               op_count, text_chars))
        text_at = cupy.zeros(count + 1, dtype=cupy.int64)
        cupy.cumsum(text_chars + 1, out=text_at[1:])
        text = cupy.empty(int(text_at[-1]), dtype=cupy.uint8)
        write(*grid(write, count),
              (q_offsets, part[0], part[2], np.int32(count), d_start[lo:hi], d_end[lo:hi],
               np.int32(alphabet.size), offset, scratch, op_count, text_at, text))
        # Through page-locked memory, then one decode (from the array's buffer) and one split
        # for the batch (CIGARs hold no newline).
        host = text.get(out=pinned_empty(len(text), np.uint8)[0])
        batch: list[str | None] = codecs.latin_1_decode(host)[0].split("\n")[:-1]
        for p in np.flatnonzero(no_alignment[lo:hi]).tolist():
            batch[p] = None
        cigars.extend(batch)
    return cigars


def edit_pairs(qset: SequenceSet, tset: SequenceSet, q_index: np.ndarray, t_index: np.ndarray,
               mode: int, k: int, task: str, progress: bool = False, positional: bool = False,
               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None,
                          list[str | None] | None]:
    """Edit distance of index pairs on the current CUDA device (the contract of
    :func:`gpualign.edit._cpu.edit_pairs`).

    ``positional``: the pairs are ``queries[i]`` with ``targets[i]`` (``q_index`` is ``t_index``
    and counts from 0), so the GPU makes its index arrays itself.
    """
    count = len(q_index)
    want_start = task != "distance"
    positional = positional and q_index is t_index
    # Every entry is written by a chunk; starts and ends only when the task reports them. The
    # results land in page-locked memory, which copies from the GPU faster.
    distance, pinned = pinned_empty(count, np.int32)
    start = pinned_empty(count, np.int32)[0] if want_start else None
    end = pinned_empty(count, np.int32)[0] if want_start else None
    cigar: list[str | None] | None = [] if task == "path" else None
    with progress_bar(count, progress, "edit") as bar:
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
                    texts = trivial_cigars(q_len, found[1], found[2])
                    for p, text in zip(trivial_local.tolist(), texts, strict=True):
                        cigars[p] = text
            if cigars is not None:
                cigar.extend(cigars)
            bar.update(part.stop - part.start)
    return distance, start, end, cigar
