"""The long-alignment engine of the CUDA backend (align/_cuda_long.py, align/kernels/long.cu):
a wavefront of DP tiles with borders in memory, and the leaves of linear-space paths.

Without a GPU, the host's part runs against references: the tile order covers every tile once
after its neighbours above and to the left, and an emulation of the kernels (each tile thread
by thread and step by step as sweep_tile runs it, through the border arrays and ready flags of
long.cu; each band of long_bands likewise, the bands side by side through their tagged
hand-over words; each leaf as leaf_paths computes it) gives the last rows of a full NumPy DP,
the best cells of every scope, the oracle's end cells for every mode, the CPU engine's leaves and,
driving align/_linear.py, optimal paths. With a GPU (marked ``cuda``), the kernels themselves
run with tiny tiles, so that tile borders at 1, 63/64/65 rows and columns and the last partial
tiles are hit, on every schedule, against the same references, the CPU backend and parasail.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from naive import ALIGN_MODES, align_naive, rescore_alignment
from test_align import PARASAIL, parasail_matrix

import gpualign
from gpualign import Scoring, SequenceSet, config
from gpualign.align import _cuda_long, _linear
from gpualign.align._cuda_long import NEG, BatchPlan, CudaEngine, tile_schedule
from gpualign.align._linear import PairCodes, Problems
from gpualign.cigar import PackedCigars
from gpualign.codes import OP_DELETION, OP_INSERTION, OP_MATCH, OP_MISMATCH, align_mode
from gpualign.sequences import get_alphabet

SCHEMES = {
    "dna-affine": (Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2), "dna"),
    "dna-linear": (Scoring(match=1, mismatch=-1, gap_open=2, gap_extend=2), "dna"),
    "dna-all-ties": (Scoring(match=1, mismatch=0, gap_open=0, gap_extend=0), "dna"),
    "blosum62": (Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1), "protein"),
}
#: ... and on the GPU, DNA scores too wide for the kernel's bytes (it falls back to the table).
GPU_SCHEMES = {**SCHEMES,
               "dna-wide": (Scoring(match=100, mismatch=-150, gap_open=200, gap_extend=30), "dna")}
#: (LONG_ALIGN_THREADS, LONG_ALIGN_ROWS_PER_THREAD, LONG_ALIGN_TILE_COLUMNS): tiles of 64 rows x
#: 64 columns (borders at 63/64/65), of 32 rows x 5 columns (many tiles, several per launch),
#: of 64 rows x 1 column.
SHAPES = [(32, 2, 64), (32, 1, 5), (64, 1, 1)]
#: LONG_ALIGN_BAND_ROWS_PER_THREAD with them: "auto" runs bands of 1 or 3 rows a thread where
#: they are few enough, others in the tiles' rows.
BAND_ROWS = (1, 3)
#: Steps of a block of long.cu's sweep_tile (its SWEEP_UNROLL): some blocks run masked.
SWEEP_UNROLL = 8
SIZES = [(1, 1), (1, 70), (70, 1), (63, 64), (64, 65), (65, 63), (130, 97)]


def _random_pair(rng, m, n, alphabet):
    symbols = "ACGTN" if alphabet == "dna" else "ARNDCQEGHILKMFPSTWYVBZX*"
    weights = np.ones(len(symbols))
    weights[-1] = 0.1 if alphabet == "dna" else 1.0
    weights /= weights.sum()
    a = "".join(rng.choice(list(symbols), size=m, p=weights))
    # Half of b copies a, so that the alignments are not all gaps.
    copied = list(a[:n]) + list(rng.choice(list(symbols), size=max(0, n - m), p=weights))
    noise = rng.random(n) < 0.3
    b = "".join(rng.choice(list(symbols)) if noisy else c
                for c, noisy in zip(copied, noise, strict=True))
    return a, b


def _codes(text, alphabet):
    lookup = get_alphabet(alphabet).lookup
    return np.array([lookup[ord(c)] for c in text], dtype=np.uint8)


def full_dp(a, b, table, gap_open, gap_extend, top_excess, free_top, free_left, floor_zero):
    """H, E, F of the whole DP with long.cu's boundaries (row 0: a gap or free; column 0: a gap
    costing ``top_excess + i * gap_extend`` or free; F on column 0 is its H)."""
    m, n = len(a), len(b)
    big = -(1 << 40)
    H = np.zeros((m + 1, n + 1), dtype=np.int64)
    E = np.full((m + 1, n + 1), big, dtype=np.int64)
    F = np.full((m + 1, n + 1), big, dtype=np.int64)
    for j in range(1, n + 1):
        H[0, j] = 0 if free_top else -(gap_open + (j - 1) * gap_extend)
    for i in range(1, m + 1):
        H[i, 0] = F[i, 0] = 0 if free_left else -(top_excess + i * gap_extend)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i, j] = max(E[i, j - 1] - gap_extend, H[i, j - 1] - gap_open)
            F[i, j] = max(F[i - 1, j] - gap_extend, H[i - 1, j] - gap_open)
            h = max(H[i - 1, j - 1] + table[a[i - 1], b[j - 1]], E[i, j], F[i, j])
            H[i, j] = max(h, 0) if floor_zero else h
    return H, E, F


class EmulatedEngine(CudaEngine):
    """The engine with long.cu's launches emulated on the host, tile by tile, through the same
    border arrays (rows, columns, corners, best cells of tile rows), the codes on the host and
    a tiny memory budget (a batch per few problems)."""

    budget = 3000
    #: Whether the threads outside their columns in a masked block compute, as the kernel's
    #: do (:class:`MaskedEmulation`), or are skipped: the same results while the kernel's
    #: argument holds that nothing they compute reaches a thread inside, and far fewer steps
    #: for tiles a few columns wide.
    masked_threads_compute = False

    def _budget(self):
        return self.budget

    def _multiprocessors(self):
        # A GPU of 2 SMs: "auto" runs batches of up to 8 tile rows in bands, others in tickets.
        return 2

    def adopt_codes(self, sequences, queries, targets):
        pass  # the codes stay on the host

    def device_codes(self, sequences):
        return sequences.q_codes, sequences.t_codes

    def _traced_launch(self, codes, leaves, rows):
        """The large leaves' bands and walk (long.cu's long_bands with TRACE, trace_walk) are
        bound to give optimal paths and their scores (split_columns' best joins); on the
        host, leaf_paths' emulation stands for the paths and their scores for the joins (the
        GPU tests check both)."""
        ops, counts, _ = self._leaf_launch(codes, leaves)
        starts = np.cumsum(counts) - counts
        scores = [leaf_path_score(codes[0][a_base:a_base + m], codes[1][b_base:b_base + n],
                                  ops[start:start + count], top, bottom, self.table,
                                  self.gap_open, self.gap_extend, self.match_codes)
                  for (a_base, b_base, m, n, top, bottom), start, count
                  in zip(leaves.tolist(), starts.tolist(), counts.tolist(), strict=True)]
        return ops, counts, np.array(scores, dtype=np.int64)

    def _leaf_launch(self, codes, leaves):
        """long.cu's leaf_paths, its warp's lanes step by step: bands of 32 rows, the row
        above a band loaded 32 columns ahead, the hand-offs between lanes as shuffles, the
        traceback bytes step-major."""
        a_codes, b_codes = codes
        go, ge = self.gap_open, self.gap_extend
        lanes = range(32)
        paths = []
        for a_base, b_base, m, n, top_excess, bottom_excess in leaves.tolist():
            a, b = a_codes[a_base:a_base + m], b_codes[b_base:b_base + n]
            trace = np.zeros(int(_cuda_long.leaf_trace_bytes(m, n)), dtype=np.int64)
            row = [(0, NEG)] + [(-(go + (j - 1) * ge), NEG) for j in range(1, n + 1)]

            def load(column, row=row, n=n):
                return row[column] if column <= n else (0, NEG)

            def trace_index(i, j, n=n):
                band, lane = divmod(i - 1, 32)
                return (band * (n + 31) + j - 1 + lane) * 32 + lane

            for band0 in range(0, m, 32):
                rows = [band0 + lane + 1 for lane in lanes]
                last = min(band0 + 32, m)
                left = [-(top_excess + i * ge) for i in rows]
                diagonal = [0 if i == 1 else -(top_excess + (i - 1) * ge) for i in rows]
                e = [NEG] * 32
                up = [(0, NEG)] * 32
                chunk = [load(lane + 1) for lane in lanes]
                ahead = [load(lane + 33) for lane in lanes]
                for s in range(n + 31):
                    if s % 32 == 0 and s > 0:
                        chunk, ahead = ahead, [load(s + 33 + lane) for lane in lanes]
                    out = [(0, NEG)] * 32
                    for lane in lanes:
                        i, j = rows[lane], s - lane + 1
                        if i > m or not 1 <= j <= n:
                            continue
                        if lane == 0:
                            up[0] = chunk[s % 32]
                        e_open, e_extend = left[lane] - go, e[lane] - ge
                        e[lane] = max(e_open, e_extend)
                        f_open, f_extend = up[lane][0] - go, up[lane][1] - ge
                        f = max(f_open, f_extend)
                        d = diagonal[lane] + self.table[a[i - 1], b[j - 1]]
                        score = max(d, e[lane], f)
                        trace[((band0 // 32) * (n + 31) + s) * 32 + lane] = \
                            (0 if score == d else 1 if score == e[lane] else 2) | \
                            (4 if e_open >= e_extend else 0) | (8 if f_open >= f_extend else 0)
                        diagonal[lane], left[lane] = up[lane][0], score
                        out[lane] = (score, f)
                        if i == last:
                            row[j] = out[lane]
                    up = up[:1] + out[:31]  # __shfl_up_sync: lane 0 keeps its own
            corner_h, corner_f = row[n]
            if corner_f + go - ge - bottom_excess > corner_h:
                trace[trace_index(m, n)] = (trace[trace_index(m, n)] & ~3) | 2
            ops, i, j, state = [], m, n, 0
            while i > 0 and j > 0:
                code = trace[trace_index(i, j)]
                if state == 0:
                    if code & 3 == 0:
                        same = a[i - 1] == b[j - 1] and a[i - 1] < self.match_codes
                        ops.append(OP_MATCH if same else OP_MISMATCH)
                        i, j = i - 1, j - 1
                    else:
                        state = code & 3
                elif state == 1:
                    ops.append(OP_DELETION)
                    state = 0 if code & 4 else 1
                    j -= 1
                else:
                    ops.append(OP_INSERTION)
                    state = 0 if code & 8 else 2
                    i -= 1
            ops += [OP_DELETION] * j + [OP_INSERTION] * i
            paths.append(ops[::-1])
        counts = np.array([len(p) for p in paths], dtype=np.int64)
        return np.array([op for p in paths for op in p], dtype=np.uint8), counts, None

    def _device_rows(self, a_codes, b_codes, fields, budget=None):
        """The last rows through the emulated wavefront, cell 0 garbage as on the device."""
        done = self.run(a_codes, b_codes, fields, False, False)
        rows = np.stack((done.h, done.f), axis=1)
        rows[done.row_base] = 12345
        return rows, done.row_base

    def _split_launch(self, rows, splits, excess):
        """long.cu's split_columns, a block's columns in order (the first best join wins)."""
        column, through_gap, score = [], [], []
        for top, bottom, n, top_left, bottom_left in splits.tolist():
            found = (None, 0, 0)
            for j in range(n + 1):
                u = (top_left, top_left) if j == 0 else tuple(rows[top + j])
                v = (bottom_left, bottom_left) if j == n else tuple(rows[bottom + n - j])
                cell = u[0] + v[0]
                value = max(cell, u[1] + v[1] + excess)
                if found[0] is None or value > found[0]:
                    found = (value, j, cell < value)
            column.append(found[1])
            through_gap.append(found[2])
            score.append(found[0])
        return (np.array(column, dtype=np.int64), np.array(through_gap, dtype=bool),
                np.array(score, dtype=np.int64))

    def _launches(self, a_codes, b_codes, plan: BatchPlan, floor_zero, track_best):
        rows, _, best = self._wavefront(a_codes, b_codes, plan, floor_zero, track_best)
        return rows, best if track_best else None

    def _segment_first_max(self, values, starts, stops):
        """long.cu's segment_first_max over the emulated borders."""
        return first_max(values[:, 0], starts, stops)

    def _wavefront(self, a_codes, b_codes, plan: BatchPlan, floor_zero, track_best):
        """long_tiles (either schedule) or long_bands over one batch, on the host: the
        borders ``rows``, ``columns`` and the best cells of the tile rows."""
        threads, rows_per_thread, width = plan.shape
        layout, schedule = plan.layout, plan.schedule()
        rows = np.full((layout.rows, 2), 12345, dtype=np.int64)  # garbage until written
        columns = np.full((layout.columns, 2), 12345, dtype=np.int64)
        corners = np.full(max(layout.slots, 1), 12345, dtype=np.int64)
        best = np.zeros((max(layout.slots, 1), 3), dtype=np.int64)
        best[:, 0] = NEG
        if plan.schedule_name == "bands":
            self._bands(a_codes, b_codes, plan, floor_zero, (rows, columns, best))
            return rows, columns, best[:layout.slots]
        # Tickets in order (launch by launch is the same order): each tile checks the flags
        # that long.cu's blocks wait for, then raises its own.
        done = np.zeros(max(layout.slots, 1), dtype=np.int64)
        first_ticket = np.concatenate(([0], np.cumsum(schedule.blocks)))
        for ticket in range(int(first_ticket[-1])):
            d = int(np.searchsorted(first_ticket, ticket, side="right")) - 1
            block = ticket - int(first_ticket[d])
            counts = schedule.first_block[schedule.offset[d]:][:schedule.active[d] + 1]
            k = int(np.searchsorted(counts, block, side="right")) - 1  # long.cu's search
            fields = plan.packed[schedule.order[k]]
            tiles_across = -(-int(fields[3]) // width)
            tile_row = max(0, d - (tiles_across - 1)) + block - int(counts[k])
            tile_column = d - tile_row
            slot = int(fields[10]) + tile_row
            assert done[slot] == tile_column
            assert tile_row == 0 or done[slot - 1] >= tile_column + 1
            self._tile(a_codes, b_codes, fields, tile_row, tile_column, plan.shape,
                       floor_zero, (rows, columns, corners, best))
            done[slot] = tile_column + 1
        return rows, columns, best[:layout.slots]

    def _tile(self, a_codes, b_codes, fields, tile_row, tile_column, shape, floor_zero,
              borders):
        """Block (tile_row, tile_column) of long_tiles, thread by thread and step by step as
        sweep_tile runs them (a shuffle hands each thread's last row to the next thread), with
        its shifted values (t = H - gap_open, substitution scores + gap_open)."""
        rows, columns, corners, best = borders
        threads, rows_per_thread, tile_width = shape
        height = threads * rows_per_thread
        a_base, b_base, m, n, reverse, top_excess, free_top, free_left, row_base, \
            column_base, slot_base = (int(x) for x in fields)
        go, ge = self.gap_open, self.gap_extend
        slot = slot_base + tile_row

        def top(j):
            return 0 if free_top else -(go + (j - 1) * ge)

        def left(i):
            return 0 if free_left else -(top_excess + i * ge)

        c0, r0 = tile_column * tile_width, tile_row * height
        width, bottom = min(tile_width, n - c0), min(r0 + height, m)
        # What a block reads before it writes: the top row, the left column, the diagonals.
        above = [(top(c0 + 1 + k), NEG) if tile_row == 0 else tuple(rows[row_base + c0 + 1 + k])
                 for k in range(width)]
        b = [b_codes[b_base + (n - j if reverse else j - 1)] for j in range(c0 + 1, c0 + width + 1)]
        h, e, q, diagonal = [], [], [], []
        for t in range(threads):
            row0 = r0 + t * rows_per_thread
            h.append([]), e.append([]), q.append([])
            for r in range(rows_per_thread):
                i = row0 + r + 1
                q[t].append(a_codes[a_base + (m - i if reverse else i - 1)] if i <= m else 0)
                hv, ev = (left(i), NEG) if tile_column == 0 else columns[column_base + i]
                h[t].append(hv - go)
                e[t].append(ev)
            if row0 == 0:
                diagonal.append((0 if c0 == 0 else top(c0)) - go)
            elif c0 == 0:
                diagonal.append(left(row0) - go)
            elif t == 0:
                diagonal.append(corners[slot] - go)
            else:
                diagonal.append(columns[column_base + row0][0] - go)
        corners[slot] = above[width - 1][0]
        found = [(NEG, 0, 0)] * threads
        state = (diagonal, [0] * threads, [NEG] * threads, [])
        window = (width + threads - 1, c0 + 1, c0 + width, c0 + 1, -1)
        def store(j, hv, fv):
            rows[row_base + j] = hv, fv

        self._sweep(q, b, above, h, e, state, (c0, r0, bottom), window, shape, floor_zero,
                    store, found)
        for t in range(threads):
            for r in range(rows_per_thread):
                columns[column_base + r0 + t * rows_per_thread + r + 1] = h[t][r] + go, e[t][r]
        block = min(found, key=lambda c: (-c[0], c[2], c[1]))
        kept = best[slot]
        if (-block[0], block[2], block[1]) < (-kept[0], kept[2], kept[1]):
            best[slot] = block

    def _sweep(self, q, codes, above, h, e, state, place, window, shape, floor_zero, store,
               found):
        """long.cu's sweep_tile at ``place`` = (c0, r0, bottom) over ``window`` = (steps,
        first_j, last_j, code_base, code_mask): its threads' query codes ``q``, the target
        code of column j at ``codes[(j - code_base) & code_mask]``, the top row ``above`` of
        the window's columns; ``h`` (shifted) and ``e`` of each thread's rows, ``state`` (each
        thread's diagonal, t and F of the row above, and the target code it read a step ahead,
        as long.cu's preload: ``[]`` before the first window) and its best cell ``found`` are
        updated, the bottom row handed to ``store(j, H, F)``.

        As the kernel, in blocks of :data:`SWEEP_UNROLL` steps, an unmasked block's preloads
        unchecked (asserted in range). In a masked block (some thread's column outside
        first_j .. last_j) the threads outside are skipped, or, with
        :attr:`masked_threads_compute`, compute as the kernel's do: on the code they hold and
        the row handed to them, handing their rows on but keeping their own state and storing
        nothing. A row computed outside that reached a thread inside would then show in the
        results."""
        c0, r0, bottom = place
        steps, first_j, last_j, code_base, code_mask = window
        diagonal, up_h, up_f, ahead = state
        threads, rows_per_thread, _ = shape

        def preload(step, checked):  # each thread's code for `step`, read the step before
            for t in range(threads):
                j = c0 + 1 + step - t
                if not checked or first_j <= j <= last_j:
                    assert first_j <= j <= last_j  # an unchecked preload stays in range
                    ahead[t] = codes[(j - code_base) & code_mask]

        if not ahead:
            ahead.extend([0] * threads)  # the kernel's first code before any preload
            preload(0, True)
        last = bottom < r0 + threads * rows_per_thread
        go, ge = self.gap_open, self.gap_extend
        owner, owner_r = divmod(bottom - 1 - r0, rows_per_thread)
        for s0 in range(0, steps, SWEEP_UNROLL):
            masked = not (s0 + SWEEP_UNROLL <= steps and c0 + 1 + s0 - (threads - 1) >= first_j
                          and c0 + s0 + SWEEP_UNROLL <= last_j)
            for step in range(s0, min(s0 + SWEEP_UNROLL, steps)):
                codes_now = list(ahead)
                cell_above = above[min(step, len(above) - 1)]
                preload(step + 1, masked or step == s0 + SWEEP_UNROLL - 1)
                out = [(0, NEG)] * threads
                for t in range(threads):
                    j = c0 + 1 + step - t
                    outside = masked and not first_j <= j <= last_j
                    if outside and not self.masked_threads_compute:
                        continue
                    if t == 0:
                        up_h[0], up_f[0] = cell_above[0] - go, cell_above[1]
                    vh, vf, d = up_h[t], up_f[t], diagonal[t]
                    bottom_hf = (0, NEG)
                    for r in range(rows_per_thread):
                        e_r = max(e[t][r] - ge, h[t][r])
                        x = max(d + self.table[q[t][r], codes_now[t]] + go, e_r)
                        if floor_zero:
                            x = max(x, 0)
                        x -= go
                        f = max(vf - ge, vh)
                        d, t_r = h[t][r], max(f - go, x)
                        row = r0 + t * rows_per_thread + r + 1
                        if (not outside and t_r + go > found[t][0]
                                and (not last or row <= bottom)):
                            found[t] = (t_r + go, row, j)
                        if last and r == owner_r:
                            bottom_hf = (t_r + go, f)
                        if not outside:
                            e[t][r], h[t][r] = e_r, t_r
                        vh, vf = t_r, f
                    if not last:
                        bottom_hf = (vh + go, vf)
                    if t == owner and not outside:
                        store(j, *bottom_hf)
                    if not outside:
                        diagonal[t] = up_h[t]
                    out[t] = (vh, vf)
                for t in range(1, threads):
                    up_h[t], up_f[t] = out[t - 1]

    def _bands(self, a_codes, b_codes, plan: BatchPlan, floor_zero, borders):
        """long_bands: every band of the batch side by side (a generator each, stopped before
        each group of hand-over columns at the words it waits for), started in ticket order;
        each round every band whose words carry the tag it awaits computes a group. ``tags``
        stands for the words' tag bits (0: the zeroed rows; -1: a last band's plain int2)."""
        tags = np.zeros(plan.layout.rows, dtype=np.int64)
        band_problem, band_row = _cuda_long.band_order(plan.tile_rows)
        running = [self._band(a_codes, b_codes, plan.packed[p], row, plan.shape, floor_zero,
                              tags, borders)
                   for p, row in zip(band_problem.tolist(), band_row.tolist(), strict=True)]
        waits = [next(band) for band in running]
        while any(wait is not None for wait in waits):
            ready = [k for k, wait in enumerate(waits)
                     if wait is not None and np.all(tags[wait[0]] == wait[1])]
            assert ready  # some band can always go on
            for k in ready:
                waits[k] = next(running[k], None)

    def _band(self, a_codes, b_codes, fields, tile_row, shape, floor_zero, tags, borders):
        """Block (band) ``tile_row`` of long_bands: before each group of LINK_GROUP steps it
        yields ``(indices, tag)``, the words of the group's columns (thread 0's) and the tag
        they must carry; its rows' H and E, the diagonals and the rows above stay from group to
        group as in the block's registers, the wavefront running on (the last groups drain
        it), the target codes in the ring. Its bottom row goes out as tagged words (F as the
        clamped D leaves it) or, the problem's last band, plain. Yields None when done."""
        rows, columns, best = borders
        threads, rows_per_thread, _ = shape
        height = threads * rows_per_thread
        a_base, b_base, m, n, reverse, top_excess, free_top, free_left, row_base, \
            column_base, slot_base = (int(x) for x in fields)
        go, ge = self.gap_open, self.gap_extend
        slot = slot_base + tile_row
        r0 = tile_row * height
        bottom = min(r0 + height, m)
        ring = [None] * _cuda_long.band_ring(threads)  # None: never loaded
        group = _cuda_long.LINK_GROUP
        awaited, tag = 0x8000 | (tile_row & 0x7FFF), 0x8000 | ((tile_row + 1) & 0x7FFF)
        final, clamp = r0 + height >= m, go - ge + 1

        def store(j, hv, fv):
            if final:
                rows[row_base + j], tags[row_base + j] = (hv, fv), -1
            else:
                rows[row_base + j], tags[row_base + j] = (hv, max(fv, hv - clamp)), tag

        def left(i):
            return 0 if free_left else -(top_excess + i * ge)

        q = [[a_codes[a_base + (m - i if reverse else i - 1)] if i <= m else 0
              for i in range(r0 + t * rows_per_thread + 1, r0 + (t + 1) * rows_per_thread + 1)]
             for t in range(threads)]
        h = [[left(i) - go for i in range(r0 + t * rows_per_thread + 1,
                                          r0 + (t + 1) * rows_per_thread + 1)]
             for t in range(threads)]
        e = [[NEG] * rows_per_thread for _ in range(threads)]
        state = ([(0 if row0 == 0 else left(row0)) - go
                  for row0 in range(r0, r0 + height, rows_per_thread)],
                 [0] * threads, [NEG] * threads, [])
        found = [(NEG, 0, 0)] * threads
        steps = n + threads - 1

        def load_codes(first_column):  # a group's target codes into the ring, as long.cu
            for j in range(first_column, min(first_column + group - 1, n) + 1):
                ring[j & (len(ring) - 1)] = b_codes[b_base + (n - j if reverse else j - 1)]

        load_codes(1)
        for s0 in range(0, steps, group):
            group_columns = range(s0 + 1, min(s0 + group, n) + 1)
            # Band 0 waits for nothing: row 0 lies above it.
            yield (row_base + np.array(group_columns if tile_row > 0 else [], dtype=np.int64),
                   awaited)
            above = [(0 if free_top else -(go + (j - 1) * ge), NEG) if tile_row == 0
                     else tuple(rows[row_base + j]) for j in group_columns]
            above += [(0, NEG)] * (group - len(above))  # past column n: never used
            load_codes(s0 + group + 1)  # the next group's, a group ahead
            window = (min(group, steps - s0), 1, n, 0, len(ring) - 1)
            self._sweep(q, ring, above, h, e, state, (s0, r0, bottom), window, shape,
                        floor_zero, store, found)
        for t in range(threads):
            for r in range(rows_per_thread):
                columns[column_base + r0 + t * rows_per_thread + r + 1] = h[t][r] + go, e[t][r]
        best[slot] = min(found, key=lambda c: (-c[0], c[2], c[1]))
        yield None


class MaskedEmulation(EmulatedEngine):
    """The emulation with the threads outside their columns computing, as in the kernel."""

    masked_threads_compute = True


def _engine(scheme, engine_class=EmulatedEngine):
    """An engine of ``scheme`` and the scheme's alphabet."""
    scoring, alphabet = GPU_SCHEMES[scheme]
    table, _ = scoring.table(alphabet)
    match_codes = get_alphabet(alphabet).match_codes
    return engine_class(table, scoring.gap_open, scoring.gap_extend, match_codes,
                        alphabet == "dna"), alphabet


@pytest.fixture(params=SHAPES, ids=lambda shape: "x".join(map(str, shape)))
def tiny_tiles(request, monkeypatch):
    """Tiny tiles of each shape in SHAPES, tiny leaves, and every pair on the long-alignment
    engine."""
    threads, rows, columns = request.param
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", threads)
    monkeypatch.setattr(config, "LONG_ALIGN_ROWS_PER_THREAD", rows)
    monkeypatch.setattr(config, "LONG_ALIGN_TILE_COLUMNS", columns)
    monkeypatch.setattr(config, "LONG_ALIGN_BAND_ROWS_PER_THREAD", BAND_ROWS)
    monkeypatch.setattr(config, "LONG_ALIGN_MIN_CELLS", 1)
    monkeypatch.setattr(config, "LONG_ALIGN_LEAF_CELLS", 256)  # paths of several levels,
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_CELLS", 2048)  # their larger leaves traced
    return request.param


@pytest.fixture(params=_cuda_long.SCHEDULES)
def schedule(request, monkeypatch):
    """Each way of scheduling the tiles on the GPU."""
    monkeypatch.setattr(config, "LONG_ALIGN_SCHEDULE", request.param)
    return request.param


@pytest.fixture(params=["tickets", "bands", "auto"])
def emulated_schedule(request, monkeypatch):
    """Each kernel that the emulation follows: long_tiles (its two schedules run the tiles in
    the same order), long_bands, and "auto" between them (on an emulated GPU of 2 SMs)."""
    monkeypatch.setattr(config, "LONG_ALIGN_SCHEDULE", request.param)
    return request.param


def test_docstring_examples_run():
    import doctest

    assert doctest.testmod(_cuda_long).failed == 0


@pytest.mark.parametrize("seed", range(5))
def test_schedule_runs_every_tile_once_after_its_neighbours(seed):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 9))
    tile_rows = rng.integers(1, 12, count)
    tile_columns = rng.integers(1, 12, count)
    s = tile_schedule(tile_rows, tile_columns)
    when = {}
    for d in range(len(s.blocks)):
        counts = s.first_block[s.offset[d]:][:s.active[d] + 1]
        assert counts[0] == 0 and counts[-1] == s.blocks[d]
        for block in range(int(s.blocks[d])):
            k = int(np.searchsorted(counts, block, side="right")) - 1
            p = int(s.order[k])
            row = max(0, d - int(tile_columns[p]) + 1) + block - int(counts[k])
            tile = (p, row, d - row)
            assert 0 <= row < tile_rows[p] and 0 <= d - row < tile_columns[p]
            assert tile not in when
            when[tile] = d
    assert len(when) == int((tile_rows * tile_columns).sum())
    for (p, row, column), d in when.items():
        assert row == 0 or when[(p, row - 1, column)] < d
        assert column == 0 or when[(p, row, column - 1)] < d


@pytest.mark.parametrize("seed", range(3))
def test_band_order_puts_every_band_after_the_one_above(seed):
    rng = np.random.default_rng(seed)
    tile_rows = rng.integers(1, 9, int(rng.integers(1, 7)))
    problem, row = _cuda_long.band_order(tile_rows)
    ticket = {band: k for k, band in enumerate(zip(problem.tolist(), row.tolist(), strict=True))}
    assert len(ticket) == len(problem) == int(tile_rows.sum())
    for (p, r), k in ticket.items():
        assert 0 <= r < tile_rows[p]
        assert r == 0 or ticket[(p, r - 1)] < k


@pytest.mark.parametrize(("configured", "m", "expected"), [
    ("auto", [100], ("bands", 1)),  # 2 tiles of 64 rows; 4 bands of 32
    ("auto", [300], ("bands", 3)),  # 5 tiles; 10 bands of 32, 4 of 96
    ("auto", [150, 150], ("bands", 3)),  # the batch counts: 6 tiles, 10 and 4 bands
    ("auto", [600], ("tickets", 2)),  # 10 tiles: more than 4 an SM of 2 SMs
    ("bands", [100], ("bands", 2)),  # only "auto" picks the bands' rows
    ("tickets", [100], ("tickets", 2)),
])
def test_auto_bands_take_the_fewest_rows_that_keep_them_few(monkeypatch, configured, m,
                                                             expected):
    monkeypatch.setattr(config, "LONG_ALIGN_SCHEDULE", configured)
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", 32)
    monkeypatch.setattr(config, "LONG_ALIGN_ROWS_PER_THREAD", 2)
    monkeypatch.setattr(config, "LONG_ALIGN_BAND_ROWS_PER_THREAD", BAND_ROWS)
    assert _cuda_long.batch_schedule(np.array(m), multiprocessors=2) == expected


@pytest.mark.parametrize("choices", [(), (0, 3)])
def test_band_rows_must_be_positive(monkeypatch, choices):
    monkeypatch.setattr(config, "LONG_ALIGN_SCHEDULE", "auto")
    monkeypatch.setattr(config, "LONG_ALIGN_BAND_ROWS_PER_THREAD", choices)
    with pytest.raises(ValueError, match="LONG_ALIGN_BAND_ROWS_PER_THREAD"):
        _cuda_long.batch_schedule(np.array([100]), multiprocessors=2)


def test_calls_of_few_bands_trace_their_leaves_whole(monkeypatch):
    """The leaves of a call's linear-space paths: up to LONG_ALIGN_TRACE_CELLS while its pairs
    have at most LONG_ALIGN_TRACE_BANDS_PER_SM traced bands an SM (the emulated GPU has 2),
    else LONG_ALIGN_LEAF_CELLS; never smaller than that."""
    engine, _ = _engine("dna-affine")
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", 32)
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_ROWS_PER_THREAD", (4,))  # bands of 128 rows
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_BANDS_PER_SM", 8)
    monkeypatch.setattr(config, "LONG_ALIGN_LEAF_CELLS", 100)
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_CELLS", 5000)
    assert engine.leaf_cells(np.array([16 * 128])) == 5000
    assert engine.leaf_cells(np.array([16 * 128 + 1])) == 100
    assert engine.leaf_cells(np.array([8 * 128, 7 * 128 + 1])) == 5000
    assert engine.leaf_cells(np.array([8 * 128, 8 * 128, 1])) == 100
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_CELLS", 0)
    assert engine.leaf_cells(np.array([1])) == 100


def test_calls_take_the_fewest_traced_rows_that_keep_their_bands_few(monkeypatch):
    """Each call's traced bands take the first of LONG_ALIGN_TRACE_ROWS_PER_THREAD at which
    its pairs have at most LONG_ALIGN_TRACE_BANDS_PER_SM bands an SM (the emulated GPU has
    2): bands of 64 rows, else 128, else none (split instead)."""
    engine, _ = _engine("dna-affine")
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", 32)
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_ROWS_PER_THREAD", (2, 4))
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_BANDS_PER_SM", 8)
    assert engine.trace_rows(np.array([16 * 64])) == 2
    assert engine.trace_rows(np.array([8 * 64, 8 * 64 + 1])) == 4
    assert engine.trace_rows(np.array([16 * 128])) == 4
    assert engine.trace_rows(np.array([16 * 128 + 1])) is None


@pytest.mark.parametrize(("threads", "rows"),
                         [(32, ()), (32, (0,)), (32, (2, 3)), (32, (16,)), (1024, (2, 8))])
def test_traced_bands_fill_whole_chunks_and_the_walks_window(monkeypatch, threads, rows):
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", threads)
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_ROWS_PER_THREAD", rows)
    with pytest.raises(ValueError, match="LONG_ALIGN_TRACE_ROWS_PER_THREAD"):
        _cuda_long.trace_rows_choices()


def test_leaves_traced_only_within_the_trace_bytes(monkeypatch):
    """A leaf of a few rows pads them to a whole band: one of 2 x 300,000 cells would take
    about 22 MB traced, so it goes to a warp under a bound of 16 MB."""
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", 32)
    monkeypatch.setattr(config, "LONG_ALIGN_LEAF_CELLS", 1000)
    m, n = np.array([2, 600]), np.array([300_000, 1000])
    assert (_cuda_long.traced_leaf_sizes(m, n, 4) > 0).tolist() == [True, True]
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_BYTES", 16 << 20)
    assert int(_cuda_long.traced_leaf_bytes(m[:1], n[:1], 4)[0]) > 16 << 20
    assert (_cuda_long.traced_leaf_sizes(m, n, 4) > 0).tolist() == [False, True]


def test_problems_of_more_bands_than_the_tags_tell_apart_run_in_tiles(monkeypatch):
    """"bands" takes tickets for a batch with a problem of more than BAND_LIMIT bands (the
    hand-over's tags would repeat), and the results stay the oracle's."""
    monkeypatch.setattr(config, "LONG_ALIGN_SCHEDULE", "bands")
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", 32)
    monkeypatch.setattr(config, "LONG_ALIGN_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(_cuda_long, "BAND_LIMIT", 2)
    engine, alphabet = _engine("dna-affine")
    engine.budget = 1 << 40  # one batch
    for rows, schedule in ((64, "bands"), (65, "tickets")):  # 2 and 3 bands of 32 rows
        codes, problems = _problems("dna-affine", np.random.default_rng(rows), [(rows, 40)])
        fields = _cuda_long.problem_fields(codes, problems, False, False)
        assert [plan.schedule_name for _, plan in engine._batches(fields)] == [schedule]
        texts = [_random_pair(np.random.default_rng(rows), rows, 40, alphabet)]
        pairs = PairCodes.from_lists([_codes(a, alphabet) for a, _ in texts],
                                     [_codes(b, alphabet) for _, b in texts])
        score = _linear.mode_ends(pairs, engine.gap_open, engine.gap_extend,
                                  align_mode("semi-global"), engine)[0]
        scoring, _ = SCHEMES["dna-affine"]
        want = align_naive(_codes(texts[0][0], alphabet), _codes(texts[0][1], alphabet),
                           engine.table, scoring.gap_open, scoring.gap_extend, "semi-global",
                           get_alphabet(alphabet).match_codes)
        assert score[0] == want.score


def first_max(values, starts, stops):
    """Per segment ``values[starts[k]:stops[k]]``: its maximum and the position (relative to
    ``starts[k]``) of its first occurrence; ``(NEG, -1)`` for an empty segment."""
    best, where = [], []
    for lo, hi in zip(np.asarray(starts).tolist(), np.asarray(stops).tolist(), strict=True):
        segment = np.asarray(values[lo:hi], dtype=np.int64)
        best.append(int(segment.max()) if len(segment) else NEG)
        where.append(int(segment.argmax()) if len(segment) else -1)
    return np.array(best, dtype=np.int64), np.array(where, dtype=np.int64)


def test_first_max_takes_the_first_of_equal_values():
    best, where = first_max(np.array([5, 5, -1, 9, 9]), np.array([0, 2, 5]),
                            np.array([2, 5, 5]))
    assert best.tolist() == [5, 9, NEG] and where.tolist() == [0, 1, -1]


def test_dna_scores_use_the_kernels_bytes_only_where_they_fit():
    # long.cu picks DNA scores (plus gap_open) from bytes; wider ones go through the table.
    for scheme, fits in (("dna-affine", True), ("dna-wide", False)):
        scoring, _ = GPU_SCHEMES[scheme]
        table, _ = scoring.table("dna")
        engine = _cuda_long.TileEngine(table, scoring.gap_open, scoring.gap_extend, 4, True)
        assert engine.dna is fits


def test_values_that_might_not_fit_int32_stay_off_the_gpu():
    engine, _ = _engine("dna-affine")
    fits = engine.fits(np.array([0, 5, 1 << 28, 100]), np.array([5, 0, 1 << 28, 100]),
                       np.array([3, 3, 3, 3]))
    assert fits.tolist() == [False, False, False, True]


def test_pairs_address_the_records_they_index():
    # _records_used: the set the long engine gets and the pairs' index into it address the
    # same sequences as the caller's index. Pairs that use at least half of the residues keep
    # the set itself (no copy; its device copy is kept with it), the others a copy of just
    # their records.
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 40, 30)
    sequences = SequenceSet.from_sequences(
        ["".join(rng.choice(list("ACGT"), n)) for n in lengths.tolist()])
    in_order = np.arange(30)
    shuffled = rng.permutation(np.repeat(np.arange(30), 2))
    longest = np.argsort(lengths)[-20:]
    few = np.array([3, 3, 7])
    for index, whole in ((in_order, True), (shuffled, True), (longest, True), (few, False)):
        records, local = _cuda_long._records_used(sequences, index)
        assert (records is sequences) == whole
        assert len(records) == (30 if whole else len(np.unique(index)))
        assert all(records[a] == sequences[b]
                   for a, b in zip(local.tolist(), index.tolist(), strict=True))


def _problems(scheme, rng, sizes):
    """Random subproblems of ``sizes``: the codes of their pairs and the subproblems, some
    inside longer sequences, every third reversed, every second with top excess 0."""
    scoring, alphabet = GPU_SCHEMES[scheme]
    queries, targets, rows = [], [], []
    for k, (m, n) in enumerate(sizes):
        a, b = (_codes(text, alphabet) for text in _random_pair(rng, m + 3, n + 2, alphabet))
        queries.append(a)
        targets.append(b)
        shift = k % 2  # a subproblem away from the start of its sequences
        excess = (scoring.gap_open - scoring.gap_extend) * (k % 2 == 0)
        rows.append((k, shift, shift + m, 2 * shift, 2 * shift + n, k % 3 == 1, excess))
    pair, a_start, a_end, b_start, b_end, reverse, top_excess = zip(*rows, strict=True)
    problems = Problems.of(pair=pair, a_start=a_start, a_end=a_end, b_start=b_start,
                           b_end=b_end, reverse=reverse, top_excess=top_excess,
                           bottom_excess=top_excess)
    return PairCodes.from_lists(queries, targets), problems


def _oriented(codes, problems, k):
    """The codes of subproblem ``k``'s a and b, in the order its DP reads them."""
    p = problems.pair[k]
    a = codes.q_codes[codes.q_offsets[p]:codes.q_offsets[p + 1]][
        problems.a_start[k]:problems.a_end[k]]
    b = codes.t_codes[codes.t_offsets[p]:codes.t_offsets[p + 1]][
        problems.b_start[k]:problems.b_end[k]]
    return (a[::-1], b[::-1]) if problems.reverse[k] else (a, b)


def _check_last_rows(engine, codes, problems, h, f):
    offsets = problems.row_offsets()
    for k in range(len(problems)):
        a, b = _oriented(codes, problems, k)
        H, _, F = full_dp(a, b, engine.table, engine.gap_open, engine.gap_extend,
                          problems.top_excess[k], False, False, False)
        got_h, got_f = h[offsets[k]:offsets[k + 1]], f[offsets[k]:offsets[k + 1]]
        assert got_h.tolist() == H[-1].tolist()
        assert got_f.tolist() == F[-1].tolist()  # every F of row m >= 1 is a real value


def reference_best(H, scope, free_top, gap_open, gap_extend):
    """The best cell of ``scope`` in the matrix ``H`` with the ties of _linear's SCOPE_*."""
    m, n = H.shape[0] - 1, H.shape[1] - 1
    if scope == _linear.SCOPE_CORNER:
        return H[m, n], m, n
    if scope == _linear.SCOPE_ANY:
        cells = [(0, 0, 0)] + [(H[i, j], i, j) for i in range(1, m + 1)
                               for j in range(1, n + 1)]
        return min(cells, key=lambda c: (-c[0], c[2], c[1]))
    first = 0 if scope in (_linear.SCOPE_START_ROW, _linear.SCOPE_START_EDGE) else 1
    if scope in (_linear.SCOPE_LAST_ROW, _linear.SCOPE_START_ROW):
        j = first + int(np.argmax(H[m, first:]))
        return H[m, j], m, j
    column = H[first:, n].copy()
    if first == 0:
        column[0] = 0 if free_top else -(gap_open + (n - 1) * gap_extend)
    i = first + int(np.argmax(column))
    if n > first:
        j = first + int(np.argmax(H[m, first:n]))
        if H[m, j] >= column[i - first]:
            return H[m, j], m, j
    return column[i - first], i, n


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_emulated_tiles_give_the_last_rows(tiny_tiles, emulated_schedule, scheme):
    engine, _ = _engine(scheme)
    codes, problems = _problems(scheme, np.random.default_rng(7), SIZES)
    h, f = engine.last_rows(codes, problems)
    _check_last_rows(engine, codes, problems, h, f)


def _check_splits(scheme, engine_class, budget=None):
    """The engine's split search over the halves of a level of splits finds what the driver
    finds in the CPU engine's last rows (``budget``: the emulation's memory budget)."""
    from gpualign.align._cpu import CpuEngine

    engine, _ = _engine(scheme, engine_class)
    if budget is not None:
        engine.budget = budget
    sizes = [size for size in SIZES if size[0] > 1] + [(2, 2), (9, 7)]
    codes, split = _problems(scheme, np.random.default_rng(5), sizes)
    _, both = _linear._halves(split)
    excess = engine.gap_open - engine.gap_extend
    cpu = CpuEngine(engine.table, engine.gap_open, engine.gap_extend, engine.match_codes)
    h, f = cpu.last_rows(codes, both)
    want = _linear._split_columns(h, f, both.row_offsets(), len(split), excess)
    found = engine.split_columns(codes, both, excess)
    for got, expected in zip(found, want, strict=True):  # column, through gap, score
        assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("budget", [EmulatedEngine.budget, 1 << 40])  # a split a group, one group
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_emulated_split_search_is_the_drivers(tiny_tiles, emulated_schedule, scheme, budget):
    _check_splits(scheme, EmulatedEngine, budget)


#: (start_free_top, start_free_left, floor_zero, end_scope) of the modes' forward passes and
#: of the anchored reverse passes (_linear's _FORWARD and _REVERSE).
PASSES = [(False, False, False, _linear.SCOPE_CORNER),
          (True, False, False, _linear.SCOPE_LAST_ROW),
          (True, True, False, _linear.SCOPE_LAST_ROW_OR_COLUMN),
          (True, True, True, _linear.SCOPE_ANY),
          (False, False, False, _linear.SCOPE_START_ROW),
          (False, False, False, _linear.SCOPE_START_EDGE),
          (False, False, False, _linear.SCOPE_ANY)]


@pytest.mark.parametrize("scheme", ["dna-affine", "blosum62"])
def test_threads_outside_their_columns_change_nothing(tiny_tiles, emulated_schedule, scheme):
    """Last rows and best cells with the masked blocks' threads outside their columns
    computing, as long.cu's do: nothing they compute reaches a thread inside or the borders.
    The tiles' first and last THREADS - 1 steps are of such blocks, and tiles 1 or 5 columns
    wide have little else."""
    engine, _ = _engine(scheme, MaskedEmulation)
    codes, problems = _problems(scheme, np.random.default_rng(13),
                                [(1, 1), (1, 70), (70, 1), (65, 63), (130, 33)])
    h, f = engine.last_rows(codes, problems)
    _check_last_rows(engine, codes, problems, h, f)
    got = engine.best_cells(codes, problems, True, True, True, _linear.SCOPE_ANY)
    for k in range(len(problems)):
        a, b = _oriented(codes, problems, k)
        H, _, _ = full_dp(a, b, engine.table, engine.gap_open, engine.gap_extend,
                          problems.top_excess[k], True, True, True)
        want = reference_best(H, _linear.SCOPE_ANY, True, engine.gap_open, engine.gap_extend)
        assert tuple(int(x[k]) for x in got) == tuple(int(x) for x in want), k


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_emulated_tiles_give_the_best_cells_of_every_scope(tiny_tiles, emulated_schedule, scheme):
    engine, _ = _engine(scheme)
    codes, problems = _problems(scheme, np.random.default_rng(9), SIZES)
    for free_top, free_left, floor_zero, scope in PASSES:
        got = engine.best_cells(codes, problems, free_top, free_left, floor_zero, scope)
        for k in range(len(problems)):
            a, b = _oriented(codes, problems, k)
            H, _, _ = full_dp(a, b, engine.table, engine.gap_open, engine.gap_extend,
                              problems.top_excess[k], free_top, free_left, floor_zero)
            want = reference_best(H, scope, free_top, engine.gap_open, engine.gap_extend)
            assert tuple(int(x[k]) for x in got) == tuple(int(x) for x in want), (scope, k)


def _texts(alphabet, seed):
    rng = np.random.default_rng(seed)
    return [_random_pair(rng, m, n, alphabet) for m, n in SIZES]


@pytest.mark.parametrize("mode", ALIGN_MODES)
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_emulated_tiles_give_the_oracles_end_cells(tiny_tiles, emulated_schedule, scheme, mode):
    engine, alphabet = _engine(scheme)
    texts = _texts(alphabet, 11)
    codes = PairCodes.from_lists([_codes(a, alphabet) for a, _ in texts],
                                 [_codes(b, alphabet) for _, b in texts])
    score, q_end, t_end = _linear.mode_ends(codes, engine.gap_open, engine.gap_extend,
                                            align_mode(mode), engine)
    scoring, _ = SCHEMES[scheme]
    match_codes = get_alphabet(alphabet).match_codes
    for k, (a, b) in enumerate(texts):
        want = align_naive(_codes(a, alphabet), _codes(b, alphabet), engine.table,
                           scoring.gap_open, scoring.gap_extend, mode, match_codes)
        assert (score[k], q_end[k], t_end[k]) == (want.score, want.query_end, want.target_end)


def _check_leaves(scheme, engine_class):
    from gpualign.align._cpu import CpuEngine

    engine, _ = _engine(scheme, engine_class)
    codes, problems = _problems(scheme, np.random.default_rng(3), SIZES[:6] + [(9, 7), (2, 2)])
    problems.reverse[:] = 0
    problems.bottom_excess[:] = problems.top_excess[::-1]  # every mix of 0 and the excess
    ops, offsets = engine.leaf_paths(codes, problems)
    cpu = CpuEngine(engine.table, engine.gap_open, engine.gap_extend, engine.match_codes)
    want_ops, want_offsets = cpu.leaf_paths(codes, problems)
    assert offsets.tolist() == want_offsets.tolist()
    assert ops.tolist() == want_ops.tolist()


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_emulated_leaves_are_the_cpu_engines(scheme):
    _check_leaves(scheme, EmulatedEngine)


@pytest.mark.parametrize("mode", ALIGN_MODES)
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_emulated_tiles_drive_linear_space_paths(tiny_tiles, emulated_schedule, scheme, mode):
    scoring, alphabet = SCHEMES[scheme]
    engine, _ = _engine(scheme)
    texts = _texts(alphabet, 5)
    codes = PairCodes.from_lists([_codes(a, alphabet) for a, _ in texts],
                                 [_codes(b, alphabet) for _, b in texts])
    found = _linear.mode_paths(codes, engine.gap_open, engine.gap_extend, align_mode(mode),
                               engine, leaf_cells=16)
    match_codes = get_alphabet(alphabet).match_codes
    for k, (a, b) in enumerate(texts):
        want = align_naive(_codes(a, alphabet), _codes(b, alphabet), engine.table,
                           scoring.gap_open, scoring.gap_extend, mode, match_codes)
        assert (found.score[k], found.query_end[k], found.target_end[k]) == \
            (want.score, want.query_end, want.target_end)
        cigar = _linear.path_cigars(_linear.JoinedPaths.of([found.ops[k]]))[0]
        rescored = rescore_alignment(_codes(a, alphabet), _codes(b, alphabet),
                                     found.query_start[k], found.target_start[k], cigar,
                                     engine.table, scoring.gap_open, scoring.gap_extend,
                                     match_codes)
        assert rescored == (want.score, want.query_end, want.target_end)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("mode", ALIGN_MODES)
def test_long_and_short_paths_of_a_batch_land_in_their_places(tiny_tiles, monkeypatch, mode,
                                                               packed):
    """_cuda._paths: the long pairs through the (emulated) engine in linear space, the short
    ones through the traceback kernels (here the CPU backend), each result at its pair; the
    CIGARs as text or packed runs."""
    from gpualign.align import _cpu, _cuda

    scoring, alphabet = SCHEMES["dna-affine"]
    engine, _ = _engine("dna-affine")
    monkeypatch.setattr(config, "LONG_ALIGN_MIN_CELLS", 1000)
    monkeypatch.setattr(_cuda, "_long_engine", lambda *args: engine)
    monkeypatch.setattr(_cuda, "_traced_paths",
                        lambda *args: _cpu.align_pairs(*args[:8], "path", packed=args[8]))
    texts = _texts(alphabet, 23)
    queries = gpualign.SequenceSet.from_sequences([a for a, _ in texts], alphabet=alphabet)
    targets = gpualign.SequenceSet.from_sequences([b for _, b in texts], alphabet=alphabet)
    index = np.arange(len(texts))[::-1].copy()
    table, _ = scoring.table(alphabet)
    got = _cuda._paths(queries, targets, index, index, table, scoring.gap_open,
                       scoring.gap_extend, align_mode(mode), packed=packed)
    assert isinstance(got[5], PackedCigars) == packed
    got = (*got[:5], list(got[5]), got[6])
    want = _cpu.align_pairs(queries, targets, index, index, table, scoring.gap_open,
                            scoring.gap_extend, align_mode(mode), "path")
    assert got[0].tolist() == want[0].tolist()
    assert got[2].tolist() == want[2].tolist() and got[4].tolist() == want[4].tolist()
    for k, p in enumerate(index.tolist()):
        a, b = texts[p]
        rescored = rescore_alignment(_codes(a, alphabet), _codes(b, alphabet), got[1][k],
                                     got[3][k], got[5][k], table, scoring.gap_open,
                                     scoring.gap_extend)
        assert rescored == (got[0][k], got[2][k], got[4][k])
        runs = [(int(count), op) for count, op in re.findall(r"(\d+)([=XID])", got[5][k])]
        columns = sum(count for count, _ in runs)
        matches = sum(count for count, op in runs if op == "=")
        assert got[6][k] == pytest.approx(matches / columns if columns else 0.0)


# --- On the GPU ------------------------------------------------------------------------------

cuda = pytest.mark.cuda
needs_gpu = pytest.mark.skipif(not gpualign.backend.cuda_status()[0],
                               reason="needs a CUDA device")


@cuda
@needs_gpu
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_gpu_tiles_give_the_last_rows_and_best_cells(tiny_tiles, schedule, scheme):
    engine, _ = _engine(scheme, CudaEngine)
    codes, problems = _problems(scheme, np.random.default_rng(7), SIZES)
    h, f = engine.last_rows(codes, problems)
    _check_last_rows(engine, codes, problems, h, f)
    emulated, _ = _engine(scheme)
    emulated.budget = 1 << 40
    for flags in PASSES:
        got = engine.best_cells(codes, problems, *flags)
        want = emulated.best_cells(codes, problems, *flags)
        assert [x.tolist() for x in got] == [x.tolist() for x in want], flags


@cuda
@needs_gpu
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_gpu_split_search_is_the_drivers(tiny_tiles, schedule, scheme):
    _check_splits(scheme, CudaEngine)


@cuda
@needs_gpu
def test_gpu_tile_schedule_is_the_hosts():
    import cupy

    rng = np.random.default_rng(7)
    tile_rows, tile_columns = rng.integers(1, 40, 300), rng.integers(1, 40, 300)
    host = tile_schedule(tile_rows, tile_columns)
    device = tile_schedule(tile_rows, tile_columns, cupy)
    assert isinstance(device.first_block, cupy.ndarray)
    for name in ("order", "offset", "active", "blocks"):
        assert np.array_equal(getattr(device, name), getattr(host, name)), name
    assert np.array_equal(device.first_block.get(), host.first_block)


class SmallGpu(CudaEngine):
    """The CUDA engine as if on a GPU of 2 SMs ("auto": bands for batches of at most 8) with
    a tiny memory budget (batches of a problem or two)."""

    budget = 3000

    def _budget(self):
        return self.budget

    def _multiprocessors(self):
        return 2


#: Halves of these splits: batches of bands of 1 row a thread, of 3, and tickets.
SMALL_GPU_SPLITS = [(300, 10), (520, 12), (40, 9), (200, 30), (1100, 10)]


@pytest.mark.parametrize("engine_class", [
    EmulatedEngine, pytest.param(SmallGpu, marks=[cuda, needs_gpu])])
@pytest.mark.parametrize("scheme", ["dna-affine", "blosum62"])
def test_auto_bands_of_every_height_give_the_last_rows_and_splits(monkeypatch, engine_class,
                                                                  scheme):
    monkeypatch.setattr(config, "LONG_ALIGN_SCHEDULE", "auto")
    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", 32)
    monkeypatch.setattr(config, "LONG_ALIGN_ROWS_PER_THREAD", 2)
    monkeypatch.setattr(config, "LONG_ALIGN_TILE_COLUMNS", 64)
    monkeypatch.setattr(config, "LONG_ALIGN_BAND_ROWS_PER_THREAD", BAND_ROWS)
    engine, _ = _engine(scheme, engine_class)
    codes, split = _problems(scheme, np.random.default_rng(3), SMALL_GPU_SPLITS)
    _, both = _linear._halves(split)
    fields = _cuda_long.problem_fields(codes, both, False, False)
    shapes = {(plan.schedule_name, plan.shape[1]) for _, plan in engine._batches(fields)}
    assert shapes == {("bands", 1), ("bands", 3), ("tickets", 2)}
    h, f = engine.last_rows(codes, both)
    _check_last_rows(engine, codes, both, h, f)
    if engine_class is SmallGpu:  # the rows of several batches in one device array
        rows, row_base = engine._device_rows(*engine.device_codes(codes), fields)
        rows = rows.get()
        offsets = both.row_offsets()
        assert row_base.tolist() == offsets[:-1].tolist()
        for k in range(len(both)):
            got = rows[offsets[k] + 1:offsets[k + 1]]
            assert got[:, 0].tolist() == h[offsets[k] + 1:offsets[k + 1]].tolist()
            assert got[:, 1].tolist() == f[offsets[k] + 1:offsets[k + 1]].tolist()
    excess = engine.gap_open - engine.gap_extend
    want = _linear._split_columns(h, f, both.row_offsets(), len(split), excess)
    found = engine.split_columns(codes, both, excess)
    for got, expected in zip(found, want, strict=True):  # column, through gap, score
        assert got.tolist() == expected.tolist()


@cuda
@needs_gpu
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_gpu_leaves_are_the_cpu_engines(scheme):
    _check_leaves(scheme, CudaEngine)


#: Traced leaves: band borders at 127/128/129 rows (bands of 128) and 511/512/513 (of 512), the
#: walk's window (256 steps of bands of 32 threads of 4 rows, 64 of 64 threads of 8 rows)
#: crossed and reloaded, a single column and a few rows traced, leaves on both routes (below
#: 1,000 cells: a warp).
TRACED_SIZES = [(2, 2), (9, 7), (40, 20), (127, 300), (128, 129), (129, 700), (300, 1),
                (1200, 1), (3, 400), (511, 90), (513, 600), (260, 1000)]


def leaf_path_score(a, b, ops, top_excess, bottom_excess, table, gap_open, gap_extend,
                    match_codes):
    """The score of a leaf's path ``ops`` (``OP_*`` codes, first operation first) with
    leaf_paths' boundaries: a vertical gap down column 0 costs ``top_excess + L * gap_extend``,
    one that ends in the bottom-right corner ``bottom_excess + L * gap_extend``, any other gap
    ``gap_open + (L - 1) * gap_extend``. Asserts that the path runs from corner to corner and
    that its = and X are the codes'."""
    excess = gap_open - gap_extend
    i = j = score = k = 0
    ops = [int(op) for op in ops]
    while k < len(ops):
        op, run = ops[k], 1
        while k + run < len(ops) and ops[k + run] == op:
            run += 1
        if op in (OP_MATCH, OP_MISMATCH):
            for x, y in zip(a[i:i + run], b[j:j + run], strict=True):
                assert (op == OP_MATCH) == (x == y and x < match_codes)
                score += int(table[x, y])
            i, j = i + run, j + run
        elif op == OP_INSERTION:
            corner = k + run == len(ops) and j == len(b)
            score -= (top_excess if j == 0 else bottom_excess if corner else excess)
            score -= run * gap_extend
            i += run
        else:
            assert op == OP_DELETION
            score -= excess + run * gap_extend
            j += run
        k += run
    assert (i, j) == (len(a), len(b))
    return score


@cuda
@needs_gpu
@pytest.mark.parametrize(("threads", "rows"), [(32, 4), (32, 1), (32, 2), (64, 8)])
@pytest.mark.parametrize("scheme", list(GPU_SCHEMES))
@pytest.mark.parametrize("grouped", [False, True])
def test_gpu_traced_leaves_are_optimal(monkeypatch, scheme, threads, rows, grouped):
    """Large leaves traced in halves over the GPU, each half walked by a warp from where the
    path crosses the middle row: optimal paths (the score of the CPU engine's), leaf by leaf,
    in one group or a group a leaf; the small leaves beside them, on a warp each, are the CPU
    engine's paths (its DP, traceback and ties)."""
    from gpualign.align._cpu import CpuEngine

    monkeypatch.setattr(config, "LONG_ALIGN_THREADS", threads)
    monkeypatch.setattr(config, "LONG_ALIGN_TRACE_ROWS_PER_THREAD", (rows,))
    monkeypatch.setattr(config, "LONG_ALIGN_LEAF_CELLS", 1000)
    engine, _ = _engine(scheme, CudaEngine)
    if grouped:
        monkeypatch.setattr(engine, "_budget", lambda: 1)
    codes, problems = _problems(scheme, np.random.default_rng(11), TRACED_SIZES)
    problems.reverse[:] = 0
    problems.bottom_excess[:] = problems.top_excess[::-1]  # every mix of 0 and the excess
    traced = _cuda_long.traced_leaf_sizes(problems.a_length(), problems.b_length(), rows) > 0
    assert traced.any() and not traced.all()
    unset = np.iinfo(np.int64).min
    found = np.full(len(problems), unset, dtype=np.int64)
    ops, offsets = engine.leaf_paths(codes, problems, found)
    cpu = CpuEngine(engine.table, engine.gap_open, engine.gap_extend, engine.match_codes)
    want_ops, want_offsets = cpu.leaf_paths(codes, problems)
    for k in range(len(problems)):
        got, want = (o[at[k]:at[k + 1]] for o, at in ((ops, offsets), (want_ops, want_offsets)))
        if not traced[k]:
            assert got.tolist() == want.tolist()
            assert found[k] == unset  # a warp's leaf: scored by the driver
            continue
        a, b = _oriented(codes, problems, k)
        scores = [leaf_path_score(a, b, path, problems.top_excess[k], problems.bottom_excess[k],
                                  engine.table, engine.gap_open, engine.gap_extend,
                                  engine.match_codes) for path in (got, want)]
        assert scores[0] == scores[1] == found[k], (k, scores, found[k])


@cuda
@needs_gpu
@pytest.mark.parametrize("mode", ALIGN_MODES)
@pytest.mark.parametrize("scheme", list(GPU_SCHEMES))
def test_gpu_long_pairs_equal_the_cpu_backend_and_parasail(tiny_tiles, schedule, scheme,
                                                           mode):
    scoring, alphabet = GPU_SCHEMES[scheme]
    rng = np.random.default_rng(13)
    texts = [_random_pair(rng, m, n, alphabet) for m, n in SIZES]
    # Pairs under 1000 cells in the same batch stay on the batch kernels.
    texts += [_random_pair(rng, 9, 12, alphabet), _random_pair(rng, 40, 30, alphabet)]
    queries, targets = [a for a, _ in texts], [b for _, b in texts]
    with config.override(LONG_ALIGN_MIN_CELLS=1000):
        for task in ("score", "end"):
            got = gpualign.align(queries, targets, mode=mode, scoring=scoring, task=task,
                                 alphabet=alphabet, backend="cuda")
            want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task=task,
                                  alphabet=alphabet, backend="cpu")
            assert got.score.tolist() == want.score.tolist()
            assert got.query_end.tolist() == want.query_end.tolist()
            assert got.target_end.tolist() == want.target_end.tolist()
    matrix = parasail_matrix(scoring, alphabet)
    for k, (a, b) in enumerate(texts):
        if a and b:
            expected = PARASAIL[mode](a, b, scoring.gap_open, scoring.gap_extend, matrix).score
            assert got.score[k] == expected


@cuda
@needs_gpu
@pytest.mark.parametrize("task", ["score", "path"])
def test_gpu_long_pairs_keep_their_sets_on_the_device(task):
    # The long engine takes the sets' own device copies (SequenceSet.to_device), made by the
    # first call and found by the next, as the batch kernels do; pairs that use less than half
    # of a set's residues copy their records for the call. Same answers either way.
    scoring, alphabet = SCHEMES["dna-affine"]
    rng = np.random.default_rng(23)
    texts = [_random_pair(rng, m, n, alphabet) for m, n in ((150, 140), (130, 160))]
    queries = SequenceSet.from_sequences([a for a, _ in texts], alphabet=alphabet)
    targets = SequenceSet.from_sequences([b for _, b in texts], alphabet=alphabet)
    with config.override(LONG_ALIGN_MIN_CELLS=1000):
        first = gpualign.align(queries, targets, mode="global", scoring=scoring, task=task,
                               backend="cuda")
        assert queries.on_device() and targets.on_device()
        where = queries.to_device()[0].data.ptr
        second = gpualign.align(queries, targets, mode="global", scoring=scoring, task=task,
                                backend="cuda")
        assert queries.to_device()[0].data.ptr == where
        some = gpualign.align(queries.take(np.array([1])), targets.take(np.array([1])),
                              mode="global", scoring=scoring, task=task, backend="cuda")
    want = gpualign.align(queries, targets, mode="global", scoring=scoring, task=task,
                          backend="cpu")
    assert first.score.tolist() == second.score.tolist() == want.score.tolist()
    assert some.score.tolist() == want.score.tolist()[1:]


@cuda
@needs_gpu
def test_gpu_pairs_long_for_a_warp_join_the_tiles(monkeypatch):
    # Beside a tiled pair, pairs of ALIGN_WARP_MIN_CELLS cells or more go to the tiles too
    # (they would be the thread kernels' tail); smaller ones stay on the thread kernels.
    scoring, alphabet = SCHEMES["dna-affine"]
    rng = np.random.default_rng(19)
    texts = [_random_pair(rng, m, n, alphabet) for m, n in ((120, 130), (40, 30), (9, 12))]
    queries, targets = [a for a, _ in texts], [b for _, b in texts]
    tiled = []
    pair_ends = _cuda_long.pair_ends

    def spy(engine, qset, tset, q_index, t_index, *args, **kwargs):
        tiled.append(len(q_index))
        return pair_ends(engine, qset, tset, q_index, t_index, *args, **kwargs)

    monkeypatch.setattr(_cuda_long, "pair_ends", spy)
    with config.override(LONG_ALIGN_MIN_CELLS=10_000, ALIGN_WARP_MIN_CELLS=1000):
        got = gpualign.align(queries, targets, mode="semi-global", scoring=scoring,
                             alphabet=alphabet, backend="cuda")
    want = gpualign.align(queries, targets, mode="semi-global", scoring=scoring,
                          alphabet=alphabet, backend="cpu")
    assert tiled == [2]
    assert got.score.tolist() == want.score.tolist()


@cuda
@needs_gpu
@pytest.mark.parametrize("mode", ALIGN_MODES)
@pytest.mark.parametrize("scheme", list(GPU_SCHEMES))
def test_gpu_long_pair_paths_rescore(tiny_tiles, schedule, scheme, mode):
    scoring, alphabet = GPU_SCHEMES[scheme]
    rng = np.random.default_rng(17)
    texts = [_random_pair(rng, m, n, alphabet) for m, n in SIZES]
    queries, targets = [a for a, _ in texts], [b for _, b in texts]
    got = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="path",
                         alphabet=alphabet, backend="cuda")
    want = gpualign.align(queries, targets, mode=mode, scoring=scoring, task="end",
                          alphabet=alphabet, backend="cpu")
    assert got.score.tolist() == want.score.tolist()
    assert got.query_end.tolist() == want.query_end.tolist()
    assert got.target_end.tolist() == want.target_end.tolist()
    table, _ = scoring.table(alphabet)
    for k, (a, b) in enumerate(texts):
        rescored = rescore_alignment(_codes(a, alphabet), _codes(b, alphabet),
                                     got.query_start[k], got.target_start[k], got.cigar[k],
                                     table, scoring.gap_open, scoring.gap_extend,
                                     get_alphabet(alphabet).match_codes)
        assert rescored == (got.score[k], got.query_end[k], got.target_end[k])
