"""CUDA backend of edit distance.

Pairs are binned by query length (``config.EDIT_KERNEL_BINS``) and each bin goes to the kernel
specialization made for it: one pair per thread for short queries, a query's words spread over
lanes of a warp for long ones; queries longer than the last bin run in passes over slices of
their rows. The per-pair bookkeeping (lengths, bins, ordering, scattering
results back) runs on the GPU, so that a million pairs cost little more than their kernels.

Pairs are processed in chunks (``config.EDIT_GPU_CHUNK_PAIRS``). Sequence sets move to the GPU
once when they fit in free memory; otherwise each chunk gathers the sequences it needs. A launch
that runs out of memory is split. For ``task="path"`` the CIGARs of a chunk are traced on CPU
threads while the GPU works on the next chunk. Pairs whose results need no dynamic programming
(an empty side, or a global length difference over ``k``) are computed by the CPU backend, so
that every backend returns the same results.
"""

from __future__ import annotations

import functools
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from .. import config
from .._progress import progress_bar
from ..cuda.loader import get_kernel
from ..cuda.memory import device_chunks, launch_split
from . import _cpu

KERNEL_FILE = "edit/kernels/myers.cu"


#: What a kernel tracks along the query's last row (TRACK_* in myers.cu): nothing until the last
#: column (global), the smallest value, or the smallest value and its leftmost/rightmost column.
TRACK_FINAL, TRACK_BEST, TRACK_FIRST_END, TRACK_LAST_END = range(4)


def _kernel_name(lanes: int, words_per_lane: int, dna: bool, track: int) -> str:
    return f"myers_edit<{lanes}, {words_per_lane}, {'true' if dna else 'false'}, {track}>"


def run_kernel(sequences, q_index, t_index, t_length, alphabet, lanes: int,
               words_per_lane: int, top_delta: int, reverse: int, track: int, cutoff: int,
               pass_from_end: int = 0, borders=None, outputs=None):
    """Launch one pass over device index arrays; returns device (distance, end).

    ``sequences`` is ``(q_codes, q_offsets, t_codes, t_offsets)`` on the device, ``t_length``
    the target symbols to use, ``top_delta`` the horizontal delta of the top row (0: free start
    in the target, 1: D[0][j] = j), ``track`` one of the ``TRACK_*`` values. Queries longer than
    the kernel's rows run in passes over row slices, numbered back from the last one
    (``pass_from_end``); ``borders`` is then ``(h_in, h_out)``: int8 ``(pairs, columns)`` arrays
    of the horizontal deltas entering and leaving the slice, and ``outputs`` the (distance, end)
    arrays that the last pass fills.
    """
    import cupy

    q_codes, q_offsets, t_codes, t_offsets = sequences
    size = len(q_index)
    if borders is None:
        borders = (cupy.zeros((1, 1), dtype=cupy.int8),) * 2
    dna = alphabet.name == "dna"
    words = lanes * words_per_lane
    if dna:
        table = cupy.zeros(1, dtype=cupy.uint32)
    else:
        table = cupy.zeros(size * alphabet.size * words, dtype=cupy.uint32)
        builder = get_kernel(KERNEL_FILE, "build_match_table")
        work = size * words
        builder(((work + 255) // 256,), (256,),
                (q_codes, q_offsets, q_index, np.int32(size), np.int32(words),
                 np.int32(alphabet.size), np.int32(alphabet.match_codes), np.int32(reverse),
                 np.int32(pass_from_end), table))
    if outputs is None:
        outputs = (cupy.empty(size, dtype=cupy.int32), cupy.empty(size, dtype=cupy.int32))
    distance, end = outputs
    threads = config.EDIT_THREADS_PER_BLOCK
    blocks = (size * lanes + threads - 1) // threads
    kernel = get_kernel(KERNEL_FILE, _kernel_name(lanes, words_per_lane, dna, track))
    kernel((blocks,), (threads,),
           (q_codes, q_offsets, t_codes, t_offsets, q_index, t_index, t_length, table,
            np.int32(alphabet.size), np.int32(size), np.int32(top_delta), np.int32(reverse),
            np.int32(cutoff), np.int32(pass_from_end), borders[0], borders[1],
            np.int64(borders[1].shape[1]), distance, end))
    return distance, end


def _run_sliced(sequences, q_index, t_index, t_length, q_length, alphabet, top_delta: int,
                reverse: int, track: int, cutoff: int):
    """All passes of queries longer than the last bin; returns device (distance, end)."""
    import cupy

    lanes, per_lane = config.EDIT_SLICE_KERNEL
    rows = lanes * per_lane * 32
    size = len(q_index)
    columns = max(1, int(t_length.max()))
    borders = [cupy.zeros((size, columns), dtype=cupy.int8) for _ in range(2)]
    outputs = (cupy.full(size, -1, dtype=cupy.int32), cupy.full(size, -1, dtype=cupy.int32))
    passes = -(-int(q_length.max()) // rows)
    for number in range(passes):
        run_kernel(sequences, q_index, t_index, t_length, alphabet, lanes, per_lane, top_delta,
                   reverse, track, cutoff, passes - 1 - number,
                   (borders[number % 2], borders[1 - number % 2]), outputs)
    return outputs


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
    return np.array([b[0] for b in config.EDIT_KERNEL_BINS], dtype=np.int64)


@functools.cache
def _bin_streams(device: int) -> tuple:
    """Streams on which the kernel bins of a chunk run side by side (per device)."""
    import cupy

    with cupy.cuda.Device(device):
        return tuple(cupy.cuda.Stream(non_blocking=True) for _ in range(config.EDIT_GPU_STREAMS))


def gpu_results(sequences, alphabet, qi, ti, mode, k, want_start):
    """The GPU work of one chunk of pairs, from device index arrays ``qi``/``ti``.

    Returns device ``(distance, start, end)`` (start and end None unless ``want_start``) and the
    device positions of the pairs left to the CPU backend (an empty side, or a global length
    difference over ``k``), whose entries are -1. Each kernel bin runs on its own stream: a
    launch ends in a partly filled wave of blocks, and the bins fill each other's.
    """
    import cupy

    q_codes, q_offsets, t_codes, t_offsets = sequences
    q_len = q_offsets[qi + 1] - q_offsets[qi]
    t_len = (t_offsets[ti + 1] - t_offsets[ti]).astype(cupy.int32)
    limits = bin_limits()
    # key: a kernel bin, then len(limits) for queries run in slices, then one more for the CPU.
    key = cupy.searchsorted(cupy.asarray(limits), (q_len + 31) // 32)
    on_cpu = (q_len == 0) | (t_len == 0)
    if mode == _cpu.GLOBAL and k >= 0:
        on_cpu |= cupy.abs(q_len - t_len) > k
    key = cupy.where(on_cpu, len(limits) + 1, key)
    counts = cupy.bincount(key, minlength=len(limits) + 2).get()
    order = cupy.argsort(key) if np.count_nonzero(counts) > 1 else cupy.arange(len(key))
    bounds = np.concatenate(([0], np.cumsum(counts)))

    distance = cupy.full(len(key), -1, dtype=cupy.int32)
    end = cupy.full(len(key), -1, dtype=cupy.int32) if want_start else None
    start = cupy.full(len(key), -1, dtype=cupy.int32) if want_start else None
    top_delta = 0 if mode == _cpu.INFIX else 1
    if mode == _cpu.GLOBAL:
        forward_track = TRACK_FINAL
    else:
        forward_track = TRACK_FIRST_END if want_start else TRACK_BEST
    main = cupy.cuda.get_current_stream()
    ready = main.record()
    streams = _bin_streams(cupy.cuda.Device().id)
    for number, bin_id in enumerate(np.flatnonzero(counts[:-1])):
        stream = streams[number % len(streams)]
        stream.wait_event(ready)
        with stream:
            _run_bin(sequences, alphabet, qi, ti, q_len, t_len, order[bounds[bin_id]:
                     bounds[bin_id + 1]], bin_id, mode, k, top_delta, forward_track,
                     (distance, start, end))
    for stream in streams:
        main.wait_event(stream.record())
    return (distance, start, end), order[bounds[-2]:]


def _run_bin(sequences, alphabet, qi, ti, q_len, t_len, members, bin_id, mode, k, top_delta,
             forward_track, outputs):
    """Forward pass (and the backward pass for infix starts) of one kernel bin's pairs."""
    import cupy

    distance, start, end = outputs
    want_start = start is not None
    limits = bin_limits()
    sliced = bin_id == len(limits)
    if sliced:
        lanes, per_lane = config.EDIT_SLICE_KERNEL
    else:
        _, lanes, per_lane = config.EDIT_KERNEL_BINS[bin_id]
    table_bytes = 0 if alphabet.name == "dna" else alphabet.size * lanes * per_lane * 4
    # Sliced passes keep two int8 borders per target column of every pair of a launch.
    per_pair = 64 + table_bytes + (2 * int(t_len[members].max()) if sliced else 0)

    def run(part, length, top_delta, reverse, track, cutoff):
        if sliced:
            return _run_sliced(sequences, qi[part], ti[part], length, q_len[part], alphabet,
                               top_delta, reverse, track, cutoff)
        return run_kernel(sequences, qi[part], ti[part], length, alphabet, lanes, per_lane,
                          top_delta, reverse, track, cutoff)

    def forward(part):
        d, e = run(part, t_len[part], top_delta, 0, forward_track, k)
        distance[part] = d
        if want_start:
            end[part] = e

    launch_split(forward, members, per_pair)
    if not want_start:
        return
    start[members] = cupy.where(distance[members] >= 0, 0, -1)
    if mode != _cpu.INFIX:
        return
    # Leftmost start of an optimal alignment ending at ``end``: the longest reversed target
    # prefix (of target[:end]) that the reversed query matches at the same cost.
    again = members[(distance[members] >= 0) & (end[members] > 0)]

    def backward(part):
        _, length = run(part, end[part], 1, 1, TRACK_LAST_END, -1)
        start[part] = end[part] - length

    if len(again):
        launch_split(backward, again, per_pair)


def _chunk_on_gpu(sequences, alphabet, q_index, t_index, mode, k, out, positional):
    """Distances, starts and ends of one chunk of pairs on the GPU, copied into the host
    arrays ``out`` = (distance, start, end); start and end are None for ``task="distance"``,
    and are then neither computed nor copied. With ``positional``, ``q_index`` is ``t_index``
    and holds consecutive numbers, made on the GPU instead of copied there.

    Returns the chunk-local indices of the pairs left to the CPU backend (their entries are to
    be filled in by the caller).
    """
    import cupy

    if positional and len(q_index):
        first = int(q_index[0])
        qi = cupy.arange(first, first + len(q_index), dtype=cupy.int64)
    else:
        qi = cupy.asarray(q_index, dtype=cupy.int64)
    ti = qi if t_index is q_index else cupy.asarray(t_index, dtype=cupy.int64)
    results, cpu_pairs = gpu_results(sequences, alphabet, qi, ti, mode, k, out[1] is not None)
    for device, host in zip(results, out, strict=True):
        if host is not None:
            device.get(out=host)
    return cpu_pairs.get()


def edit_pairs(qset, tset, q_index, t_index, mode, k, task, progress=False, positional=False):
    """Edit distance of index pairs on the current CUDA device (same contract as the CPU's).

    ``positional``: the pairs are ``queries[i]`` with ``targets[i]`` (``q_index`` is ``t_index``
    and counts from 0), so the GPU makes its index arrays itself.
    """
    import cupyx

    count = len(q_index)
    want_start = task != "distance"
    positional = positional and q_index is t_index
    # Every entry is written by a chunk; starts and ends only when the task reports them. The
    # results land in page-locked memory, which copies from the GPU about twice as fast.
    distance = cupyx.empty_pinned(count, dtype=np.int32)
    start = cupyx.empty_pinned(count, dtype=np.int32) if want_start else None
    end = cupyx.empty_pinned(count, dtype=np.int32) if want_start else None
    tracer = ThreadPoolExecutor(max_workers=1) if task == "path" else None
    traced: list[tuple[slice, Future]] = []
    bar = progress_bar(count, progress, "edit")
    try:
        step = config.EDIT_GPU_CHUNK_PAIRS
        if task == "path":
            step = min(step, config.EDIT_GPU_PATH_CHUNK_PAIRS)
        for part, sequences, q_local, t_local in device_chunks(qset, tset, q_index, t_index,
                                                                step):
            out = (distance[part], *(None if a is None else a[part] for a in (start, end)))
            cpu_local = _chunk_on_gpu(sequences, qset.alphabet, q_local, t_local, mode, k, out,
                                      positional)
            if len(cpu_local):
                cpu_pairs = part.start + cpu_local
                found = _cpu.distance_batch(qset, tset, q_index[cpu_pairs], t_index[cpu_pairs],
                                            mode, k, want_start)
                for host, values in zip(out, found, strict=True):
                    if host is not None:
                        host[cpu_local] = values
            if tracer is not None:
                traced.append((part, tracer.submit(
                    _cpu.cigar_batch, qset, tset, q_index[part], t_index[part], out[1], out[2])))
            bar.update(part.stop - part.start)
        cigar = None
        if tracer is not None:
            cigar = []
            for _, future in traced:
                cigar.extend(future.result())
    finally:
        bar.close()
        if tracer is not None:
            tracer.shutdown(wait=True)
    return distance, start, end, cigar
