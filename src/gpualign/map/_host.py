"""The host stages of a mapping batch, compiled: every backend runs them (CUDA and CPU alike),
one read or window per iteration on every core, each read's seeds, hits and clusters in
scratch arrays of its thread instead of whole-batch temporaries.

Imported when a batch is mapped, not with the package: importing Numba is left to the runs
that need it (see README "Architecture").
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._kmer_hash import hash64

#: The hash of no k-mer (a real hash has at most 2 * MAX_K bits): as in :mod:`.index`.
_NONE = np.uint64(np.iinfo(np.uint64).max)
#: Reads a task of :func:`read_candidates` takes: enough that its scratch arrays are reused
#: many times, few enough that the tasks spread evenly over the cores.
_READS_PER_TASK = 256
#: Hits of a read sorted by insertion (most reads have fewer: a few dozen seeds, one hit each).
_FEW_HITS = 48


#: minimap2's ``hash64`` of one 2k-bit code: the index's own function, compiled.
_hash64 = njit(cache=True, nogil=True)(hash64)


@njit(cache=True, nogil=True)
def _kmer_hashes(codes, lo, length, k, hashes, reverse):
    """The hashes of the canonical k-mers starting at each position of ``codes[lo:lo +
    length]`` (:data:`_NONE` where a k-mer holds an N) into ``hashes`` and whether the
    canonical one is the reverse complement into ``reverse``; returns how many k-mers."""
    mask = np.uint64((1 << (2 * k)) - 1)
    top = np.uint64(2 * (k - 1))
    forward = np.uint64(0)
    backward = np.uint64(0)
    run = 0
    for p in range(length):
        code = codes[lo + p]
        run = 0 if code > 3 else run + 1
        base = np.uint64(code & 3)
        forward = ((forward << np.uint64(2)) | base) & mask
        backward = (backward >> np.uint64(2)) | ((np.uint64(3) - base) << top)
        start = p - k + 1
        if start < 0:
            continue
        if run < k:
            hashes[start], reverse[start] = _NONE, False
        elif backward < forward:
            hashes[start], reverse[start] = _hash64(backward, mask), True
        else:
            hashes[start], reverse[start] = _hash64(forward, mask), False
    return max(length - k + 1, 0)


@njit(cache=True, nogil=True)
def _choose(hashes, count, w, chosen, queue):
    """Mark the (w, k)-minimizers among ``hashes[:count]`` in ``chosen`` (the rule of
    :func:`gpualign.map.index.minimizers`: in every window of ``w`` consecutive k-mers of a
    stretch between N, or in a stretch of fewer, every k-mer of the smallest hash).
    ``queue`` (``count`` slots) holds the window's candidates for its minimum: positions of
    ascending hashes, the smallest first (ties all kept, so that each is marked)."""
    chosen[:count] = False
    i = 0
    while i < count:
        if hashes[i] == _NONE:
            i += 1
            continue
        first = i
        while i < count and hashes[i] != _NONE:
            i += 1
        head = tail = 0
        for j in range(first, i):
            while tail > head and hashes[queue[tail - 1]] > hashes[j]:
                tail -= 1
            queue[tail] = j
            tail += 1
            if queue[head] <= j - w:
                head += 1
            # A full window ends at j, or the stretch (shorter than w) ends: mark its minima.
            if j - first >= w - 1 or (j == i - 1 and i - first < w):
                smallest = hashes[queue[head]]
                q = head
                while q < tail and hashes[queue[q]] == smallest:
                    chosen[queue[q]] = True
                    q += 1


@njit(cache=True, nogil=True)
def _lookup(seeds, seed_hash, keys, key_starts, buckets, shift, seed_first, seed_count):
    """Where the entries of each of ``seed_hash[:seeds]`` start in the index and how many there
    are (0 when the index has none), into ``seed_first`` and ``seed_count``: each hash's bucket
    of ``keys`` (by its top bits, about one key) scanned. One pass per table over all seeds,
    so that the loads of different seeds (cache misses, mostly) overlap."""
    for seed in range(seeds):
        bucket = seed_hash[seed] >> np.uint64(shift)
        seed_first[seed], seed_count[seed] = buckets[bucket], buckets[bucket + 1]
    for seed in range(seeds):
        slot, end = seed_first[seed], seed_count[seed]
        while slot < end and keys[slot] < seed_hash[seed]:
            slot += 1
        seed_first[seed] = slot if slot < end and keys[slot] == seed_hash[seed] else -1
    for seed in range(seeds):
        slot = seed_first[seed]
        if slot < 0:
            seed_first[seed] = seed_count[seed] = 0
        else:
            seed_first[seed] = key_starts[slot]
            seed_count[seed] = key_starts[slot + 1] - key_starts[slot]


@njit(cache=True, nogil=True)
def _sort_hits(hit_key, hit_seed, hits, spare):
    """Sort ``hit_key[:hits]`` ascending, ``hit_seed`` along (``spare``: scratch of as many):
    by insertion for the few hits of most reads (no allocation), else by ``np.argsort``."""
    if hits <= _FEW_HITS:
        for i in range(1, hits):
            key, seed = hit_key[i], hit_seed[i]
            j = i - 1
            while j >= 0 and hit_key[j] > key:
                hit_key[j + 1], hit_seed[j + 1] = hit_key[j], hit_seed[j]
                j -= 1
            hit_key[j + 1], hit_seed[j + 1] = key, seed
        return
    order = np.argsort(hit_key[:hits])
    for rank in range(hits):
        spare[rank] = hit_seed[order[rank]]
    hit_seed[:hits] = spare[:hits]
    for rank in range(hits):
        spare[rank] = hit_key[order[rank]]
    hit_key[:hits] = spare[:hits]


@njit(parallel=True, cache=True)
def read_candidates(codes, offsets, margins, k, w, keys, key_starts, positions, entry_reverse,
                    buckets, shift, reference_offsets, max_occurrences, max_candidates):
    """The candidate windows of each read (:meth:`gpualign.map.index.MapIndex.candidates`):
    ``max_candidates`` slots a read, its best first; returns how many each read has and the
    slots' strand, contig, start, end and votes."""
    count = len(offsets) - 1
    slots = count * max_candidates
    found = np.zeros(count, dtype=np.int64)
    out_reverse = np.zeros(slots, dtype=np.bool_)
    out_contig = np.zeros(slots, dtype=np.int64)
    out_start = np.zeros(slots, dtype=np.int64)
    out_end = np.zeros(slots, dtype=np.int64)
    out_votes = np.zeros(slots, dtype=np.int32)
    tasks = (count + _READS_PER_TASK - 1) // _READS_PER_TASK
    for task in prange(tasks):
        # A function of its own: in a prange body, Numba may hoist the allocation of scratch
        # arrays out of the loop, and the threads would share (and regrow) them.
        _task_candidates(task * _READS_PER_TASK, min(count, (task + 1) * _READS_PER_TASK),
                         codes, offsets, margins, k, w, keys, key_starts, positions,
                         entry_reverse, buckets, shift, reference_offsets, max_occurrences,
                         max_candidates, found, out_reverse, out_contig, out_start, out_end,
                         out_votes)
    return found, out_reverse, out_contig, out_start, out_end, out_votes



@njit(cache=True, nogil=True)
def _hit_scratch(capacity):
    """A task's scratch arrays for a read's hits and their clusters (``capacity`` each): the
    hits' keys and seeds; the clusters' first and last diagonals, contig-and-strand group,
    votes (seeds) and whether chosen already."""
    return (np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64),
            np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64),
            np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int32),
            np.empty(capacity, dtype=np.bool_))


@njit(cache=True, nogil=True)
def _task_candidates(first_read, end_read, codes, offsets, margins, k, w, keys, key_starts,
                     positions, entry_reverse, buckets, shift, reference_offsets,
                     max_occurrences, max_candidates, found, out_reverse, out_contig,
                     out_start, out_end, out_votes):
    """:func:`read_candidates` of the reads ``first_read .. end_read - 1``, written to their
    slots, with scratch arrays of their own."""
    contigs = len(reference_offsets) - 1
    longest_read = 1
    for i in range(first_read, end_read):
        longest_read = max(longest_read, offsets[i + 1] - offsets[i])
    longest_contig = 0
    for c in range(contigs):
        longest_contig = max(longest_contig, reference_offsets[c + 1] - reference_offsets[c])
    # A hit's sort key: its strand and contig, then its diagonal from the contig's start (plus
    # the read's length: at least 0), within a stride that no such diagonal reaches.
    stride = longest_contig + longest_read + 1
    hashes = np.empty(longest_read, dtype=np.uint64)
    reverse = np.empty(longest_read, dtype=np.bool_)
    chosen = np.empty(longest_read, dtype=np.bool_)
    queue = np.empty(longest_read, dtype=np.int64)
    seed_at = np.empty(longest_read, dtype=np.int64)
    seed_hash = np.empty(longest_read, dtype=np.uint64)
    seed_first = np.empty(longest_read, dtype=np.int64)
    seed_count = np.empty(longest_read, dtype=np.int64)
    last_cluster = np.empty(longest_read, dtype=np.int64)
    capacity = 64
    hit_key, hit_seed, opened, closed, group, votes, taken = _hit_scratch(capacity)
    for read in range(first_read, end_read):
        lo, length, margin = offsets[read], offsets[read + 1] - offsets[read], margins[read]
        kmers = _kmer_hashes(codes, lo, length, k, hashes, reverse)
        _choose(hashes, kmers, w, chosen, queue)
        seeds = 0
        for at in range(kmers):
            if chosen[at]:
                seed_at[seeds], seed_hash[seeds] = at, hashes[at]
                seeds += 1
        _lookup(seeds, seed_hash, keys, key_starts, buckets, shift, seed_first, seed_count)
        hits = 0
        for seed in range(seeds):
            if seed_count[seed] > max_occurrences:
                seed_count[seed] = 0
            hits += seed_count[seed]
        if hits > capacity:
            capacity = max(hits, 2 * capacity)
            hit_key, hit_seed, opened, closed, group, votes, taken = _hit_scratch(capacity)
        hit = 0
        for seed in range(seeds):
            at = seed_at[seed]
            for entry in range(seed_first[seed], seed_first[seed] + seed_count[seed]):
                flipped = 1 if reverse[at] != entry_reverse[entry] else 0
                along = length - at - k if flipped else at
                target = positions[entry]
                contig = np.searchsorted(reference_offsets, target, side="right") - 1
                diagonal = target - along - reference_offsets[contig] + length
                hit_key[hit] = (flipped * contigs + contig) * stride + diagonal
                hit_seed[hit] = seed
                hit += 1
        # Clusters of the hits sorted by strand, contig and diagonal: each spans at most the
        # margin from its first diagonal (the order among equal keys changes nothing).
        _sort_hits(hit_key, hit_seed, hits, opened)
        clusters = 0
        last_cluster[:seeds] = -1
        for rank in range(hits):
            key = hit_key[rank]
            place, diagonal = key // stride, key % stride
            if clusters == 0 or place != group[clusters - 1] \
                    or diagonal - opened[clusters - 1] > margin:
                group[clusters], opened[clusters], votes[clusters] = place, diagonal, 0
                clusters += 1
            closed[clusters - 1] = diagonal
            seed = hit_seed[rank]
            if last_cluster[seed] != clusters - 1:  # a seed votes once in a cluster
                last_cluster[seed] = clusters - 1
                votes[clusters - 1] += 1
        # The best: most votes, then contig, start and strand, then the earlier cluster.
        taken[:clusters] = False
        kept = min(clusters, max_candidates)
        for slot in range(read * max_candidates, read * max_candidates + kept):
            best = -1
            best_contig = best_start = best_flipped = 0
            for c in range(clusters):
                if taken[c]:
                    continue
                contig = group[c] % contigs
                flipped = group[c] // contigs
                size = reference_offsets[contig + 1] - reference_offsets[contig]
                start = min(max(opened[c] - length - margin, 0), size)
                if best < 0 or votes[c] > votes[best] or (votes[c] == votes[best] and (
                        contig < best_contig or (contig == best_contig and (
                            start < best_start or (start == best_start
                                                   and flipped < best_flipped))))):
                    best, best_contig, best_start, best_flipped = c, contig, start, flipped
            taken[best] = True
            size = reference_offsets[best_contig + 1] - reference_offsets[best_contig]
            out_reverse[slot] = best_flipped == 1
            out_contig[slot] = best_contig
            out_start[slot] = best_start
            out_end[slot] = min(max(closed[best] + margin, 0), size)
            out_votes[slot] = votes[best]
        found[read] = kept


@njit(parallel=True, cache=True)
def reverse_complements(codes, offsets, complement):
    """The codes of the reverse complements of the sequences ``codes[offsets[i]:offsets[i +
    1]]`` (``complement``: each code's), at the same offsets, one sequence an iteration."""
    out = np.empty(offsets[-1], dtype=codes.dtype)
    for i in prange(len(offsets) - 1):
        lo, hi = offsets[i], offsets[i + 1]
        for p in range(lo, hi):
            out[p] = complement[codes[lo + hi - 1 - p]]
    return out


@njit(parallel=True, cache=True)
def gather(codes, first, offsets):
    """``codes[first[i]:first[i] + offsets[i + 1] - offsets[i]]`` for every ``i``, one after
    the other (at ``offsets``), one range an iteration."""
    out = np.empty(offsets[-1], dtype=codes.dtype)
    for i in prange(len(first)):
        lo = offsets[i]
        for p in range(offsets[i + 1] - lo):
            out[lo + p] = codes[first[i] + p]
    return out


#: The SAM operation code (BAM's: M 0, I 1, D 2) of each extended one ("=XID").
_SAM_OF_EXTENDED = np.array([0, 0, 1, 2], dtype=np.uint8)


@njit(cache=True, nogil=True)
def _sam_runs_of(ops, lengths, lo, hi, clip_left, clip_right, clip_op, out_ops, out_lengths,
                 at):
    """The SAM runs of one CIGAR's runs ``lo .. hi - 1`` (``=`` and ``X`` runs that meet merged
    into one ``M``, clips of ``clip_op`` around them) written from ``at`` when ``out_ops`` has
    room (else only counted); returns where they end."""
    write = len(out_ops) > 0
    if clip_left > 0:
        if write:
            out_ops[at], out_lengths[at] = clip_op, clip_left
        at += 1
    merged = 0
    for r in range(lo, hi):
        code = _SAM_OF_EXTENDED[ops[r]]
        if code == 0:
            merged += lengths[r]
            continue
        if merged > 0:
            if write:
                out_ops[at], out_lengths[at] = 0, merged
            at += 1
            merged = 0
        if write:
            out_ops[at], out_lengths[at] = code, lengths[r]
        at += 1
    if merged > 0:
        if write:
            out_ops[at], out_lengths[at] = 0, merged
        at += 1
    if clip_right > 0:
        if write:
            out_ops[at], out_lengths[at] = clip_op, clip_right
        at += 1
    return at


@njit(parallel=True, cache=True)
def sam_runs(ops, lengths, offsets, present, clip_left, clip_right, clip_op):
    """SAM runs (BAM's operation codes) of extended CIGARs' runs (codes of ``"=XID"``, pair
    ``i``'s ``offsets[i] .. offsets[i + 1] - 1``; none where not ``present``): ``=`` and ``X``
    runs that meet merged into ``M``, ``clip_left[i]`` and ``clip_right[i]`` read bases
    clipped as ``clip_op`` (S 4, H 5) around them. Two passes, a pair an iteration: the runs
    counted, then written. Returns the runs' codes, lengths and offsets."""
    count = len(offsets) - 1
    nothing_ops = np.empty(0, dtype=np.uint8)
    nothing_lengths = np.empty(0, dtype=np.int64)
    counts = np.zeros(count, dtype=np.int64)
    for i in prange(count):
        if present[i]:
            counts[i] = _sam_runs_of(ops, lengths, offsets[i], offsets[i + 1], clip_left[i],
                                     clip_right[i], clip_op, nothing_ops, nothing_lengths, 0)
    out_offsets = np.zeros(count + 1, dtype=np.int64)
    out_offsets[1:] = np.cumsum(counts)
    out_ops = np.empty(out_offsets[-1], dtype=np.uint8)
    out_lengths = np.empty(out_offsets[-1], dtype=np.int64)
    for i in prange(count):
        if counts[i]:
            _sam_runs_of(ops, lengths, offsets[i], offsets[i + 1], clip_left[i], clip_right[i],
                         clip_op, out_ops, out_lengths, out_offsets[i])
    return out_ops, out_lengths, out_offsets


@njit(parallel=True, cache=True)
def clip_runs(ops, lengths, offsets, column, run, end_bonus):
    """The cuts of :func:`gpualign.map.segments.clip_ends` of the extended CIGARs whose runs
    (codes of ``"=XID"``) are ``ops`` and ``lengths`` ``offsets[i] .. offsets[i + 1] - 1`` (a
    run scores its length times ``column[op]`` plus ``run[op]``), three passes over each
    CIGAR's runs, a CIGAR an iteration: its score and right cut, its left cut, then what the
    cuts leave. Returns the read bases and the reference bases clipped on the left and on the
    right, the edits kept and the first and the end (one past the last) of the kept runs."""
    count = len(offsets) - 1
    read_left = np.zeros(count, dtype=np.int64)
    read_right = np.zeros(count, dtype=np.int64)
    reference_left = np.zeros(count, dtype=np.int64)
    reference_right = np.zeros(count, dtype=np.int64)
    edits = np.zeros(count, dtype=np.int64)
    kept_from = np.zeros(count, dtype=np.int64)
    kept_to = np.zeros(count, dtype=np.int64)
    for i in prange(count):
        lo, hi = offsets[i], offsets[i + 1]
        # The right cut: after the run of matches with the highest score so far (the latest).
        total, best, best_score = 0, -1, 0
        for r in range(lo, hi):
            total += lengths[r] * column[ops[r]] + run[ops[r]]
            if ops[r] == 0 and (best < 0 or total >= best_score):
                best, best_score = r, total
        keep_last = best if best >= 0 and best_score - total >= end_bonus else hi - 1
        # The left cut: before the run of matches (up to the right cut) with the lowest score
        # before it (the earliest).
        before, best, best_before = 0, -1, 0
        for r in range(lo, keep_last + 1):
            if ops[r] == 0 and (best < 0 or before < best_before):
                best, best_before = r, before
            before += lengths[r] * column[ops[r]] + run[ops[r]]
        keep_first = best if best >= 0 and -best_before >= end_bonus else lo
        for r in range(lo, hi):
            op, length = ops[r], lengths[r]
            read_bases = 0 if op == 3 else length
            reference_bases = 0 if op == 2 else length
            if r < keep_first:
                read_left[i] += read_bases
                reference_left[i] += reference_bases
            elif r > keep_last:
                read_right[i] += read_bases
                reference_right[i] += reference_bases
            elif op != 0:
                edits[i] += length
        kept_from[i], kept_to[i] = keep_first, keep_last + 1
    return read_left, read_right, reference_left, reference_right, edits, kept_from, kept_to


@njit(parallel=True, cache=True)
def ungapped_extensions(read_codes, reference_codes, read_first, reference_first, direction,
                        size, clip, match_codes, mismatch_score, end_bonus, room, ops):
    """The extensions of :func:`gpualign.map.api._extend_clips`, an alignment an iteration:
    alignment ``i`` may take up to ``size[i]`` columns of its ``clip[i]`` clipped bases, the
    read's codes from ``read_first[i]`` and the reference's from ``reference_first[i]``, both
    stepping by ``direction`` (+1 to the right, -1 to the left). A column scores 1 where the
    bases match (equal codes below ``match_codes``), else ``mismatch_score``; it takes the
    columns up to the highest running score above 0 (the most of equal ones), or all ``size``
    of them when they reach the read's end and score less than that best by under
    ``end_bonus``. Returns the columns taken and their mismatches; the taken columns'
    operations (``=`` 0, ``X`` 1) go to ``ops`` from ``room[i]`` in the order of the CIGAR
    reversed (the last first, as :func:`gpualign._cigar_text.path_runs` reads them)."""
    count = len(size)
    take = np.zeros(count, dtype=np.int64)
    mismatches = np.zeros(count, dtype=np.int64)
    for i in prange(count):
        running = best = best_score = 0
        for step in range(size[i]):
            base = read_codes[read_first[i] + direction * step]
            matched = base == reference_codes[reference_first[i] + direction * step] \
                and base < match_codes
            running += 1 if matched else mismatch_score
            if running > 0 and running >= best_score:
                best, best_score = step + 1, running
        reach = size[i] > 0 and size[i] == clip[i] and best_score - running < end_bonus
        take[i] = size[i] if reach else best
        for step in range(take[i]):
            base = read_codes[read_first[i] + direction * step]
            differ = not (base == reference_codes[reference_first[i] + direction * step]
                          and base < match_codes)
            mismatches[i] += differ
            # A right extension's CIGAR runs outwards, a left one's inwards.
            at = take[i] - 1 - step if direction > 0 else step
            ops[room[i] + at] = 1 if differ else 0
    return take, mismatches


@njit(cache=True, nogil=True)
def _forward_span(reverse, clip_left, clip_right, length):
    """The read bases an alignment aligns, counted on the read as given."""
    if reverse:
        return clip_right, length - clip_left
    return clip_left, length - clip_right


@njit(cache=True, nogil=True)
def _segment_xs(i, lo, hi, length, contig, pos, end, reverse, clip_left, clip_right, score,
                no_score):
    """XS of local alignment ``i`` among its read's ``lo .. hi - 1``: the best score of
    another place (not overlapping it on one strand of a contig) that aligns at least half of
    the read bases ``i`` aligns; ``no_score`` where there is none."""
    start, stop = _forward_span(reverse[i], clip_left[i], clip_right[i], length)
    xs = no_score
    for j in range(lo, hi):
        other_start, other_stop = _forward_span(reverse[j], clip_left[j], clip_right[j], length)
        overlap = min(stop, other_stop) - max(start, other_start)
        same_place = (contig[i] == contig[j] and reverse[i] == reverse[j] and pos[i] < end[j]
                      and pos[j] < end[i])
        if j != i and 2 * overlap >= stop - start and not same_place:
            xs = max(xs, score[j])
    return xs


@njit(parallel=True, cache=True)
def choose_segments(bounds, read, contig, pos, end, reverse, nm, clip_left, clip_right, score,
                    lengths, minimum, no_score, placed_contig, placed_pos, placed_end,
                    placed_reverse, placed_nm, placed_clip_left, placed_clip_right):
    """The choices of :func:`gpualign.map.api._split`, a read an iteration: the local
    alignments ``bounds[g] .. bounds[g + 1] - 1`` of read ``read[bounds[g]]`` (best first;
    ``lengths`` the reads') give an unmapped read its first as its primary (written into the
    ``placed_*`` fields of the read), then the read's supplementary one: the first that
    aligns at least ``minimum`` read bases its primary leaves and lies elsewhere. Returns,
    per read, the primary taken and the supplementary one (-1: none) with their XS
    (:func:`_segment_xs`)."""
    groups = len(bounds) - 1
    primary = np.full(groups, -1, dtype=np.int64)
    primary_xs = np.full(groups, no_score, dtype=np.int64)
    chosen = np.full(groups, -1, dtype=np.int64)
    chosen_xs = np.full(groups, no_score, dtype=np.int64)
    for g in prange(groups):
        lo, hi = bounds[g], bounds[g + 1]
        r = read[lo]
        length = lengths[r]
        if placed_contig[r] < 0:
            placed_contig[r], placed_pos[r], placed_end[r] = contig[lo], pos[lo], end[lo]
            placed_reverse[r], placed_nm[r] = reverse[lo], nm[lo]
            placed_clip_left[r], placed_clip_right[r] = clip_left[lo], clip_right[lo]
            primary[g] = lo
            primary_xs[g] = _segment_xs(lo, lo, hi, length, contig, pos, end, reverse,
                                        clip_left, clip_right, score, no_score)
        covered_start, covered_stop = _forward_span(placed_reverse[r], placed_clip_left[r],
                                                     placed_clip_right[r], length)
        for j in range(lo, hi):
            start, stop = _forward_span(reverse[j], clip_left[j], clip_right[j], length)
            new = (stop - start) - max(0, min(stop, covered_stop) - max(start, covered_start))
            same_place = (contig[j] == placed_contig[r] and reverse[j] == placed_reverse[r]
                          and pos[j] < placed_end[r] and placed_pos[r] < end[j])
            if new >= minimum and not same_place:
                chosen[g] = j
                chosen_xs[g] = _segment_xs(j, lo, hi, length, contig, pos, end, reverse,
                                           clip_left, clip_right, score, no_score)
                break
    return primary, primary_xs, chosen, chosen_xs


@njit(parallel=True, cache=True)
def ranked_hits(bounds, reverse, contig, pos, dist, votes):
    """The placements ``bounds[i]:bounds[i + 1]`` of each read ranked as
    :func:`gpualign.map.api._ranked` ranks them, one read an iteration: returns, at each read's
    first slot on, the indices of its placements without repeats, best first (-1 after)."""
    order = np.full(bounds[-1], -1, dtype=np.int64)
    for read in prange(len(bounds) - 1):
        _rank_read(bounds[read], bounds[read + 1], reverse, contig, pos, dist, votes, order)
    return order


@njit(cache=True, nogil=True)
def _rank_read(lo, hi, reverse, contig, pos, dist, votes, order):
    """:func:`ranked_hits` of one read: sorted (stable, by insertion: a read has at most its
    candidates) by strand, contig, start and edits, the repeats of a place after its first
    dropped, then sorted by edits, votes (most first), contig and start."""
    place = np.arange(lo, hi)
    for i in range(1, hi - lo):
        hit, j = place[i], i - 1
        while j >= 0 and (reverse[place[j]], contig[place[j]], pos[place[j]],
                          dist[place[j]]) > (reverse[hit], contig[hit], pos[hit], dist[hit]):
            place[j + 1] = place[j]
            j -= 1
        place[j + 1] = hit
    kept = 0
    for i in range(hi - lo):
        hit = place[i]
        if i and reverse[hit] == reverse[place[i - 1]] and contig[hit] == contig[place[i - 1]] \
                and pos[hit] == pos[place[i - 1]]:
            continue
        j = kept - 1
        while j >= 0 and (dist[order[lo + j]], -votes[order[lo + j]], contig[order[lo + j]],
                          pos[order[lo + j]]) > (dist[hit], -votes[hit], contig[hit], pos[hit]):
            order[lo + j + 1] = order[lo + j]
            j -= 1
        order[lo + j + 1] = hit
        kept += 1
