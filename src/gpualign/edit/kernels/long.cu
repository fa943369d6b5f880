// Edit distance of long pairs over the whole GPU, and the pieces of their CIGARs in linear space.
//
// A problem is a query (m >= 1 rows) against a target (n columns), either read forwards or both
// read backwards. Its query is cut into bands of LANES * WPL * 32 rows (WPL 32-row words a
// lane), the query at the bottom of the last band (the padding rows above it match nothing and
// reproduce the top boundary, as in myers.cu). A band is a group of LANES lanes of one warp
// that sweeps the whole target as a wavefront (lane l on column s - l at step s, the delta of
// the row above passed with a shuffle) and hands the horizontal delta of its last row, column
// by column, to the band below through global memory. The band below reads them 32 columns at
// a time once they are all there, so the bands of a query run one behind the other, a few
// blocks of 32 columns apart, on as many warps as there are bands.
//
// Bands are handed out by a ticket counter, in order of problem and band, rather than by block
// index: a group takes the next ticket when it has finished a band. A band waits only for the
// band above it, whose ticket is lower and was therefore taken by a group that is already
// running, so every wait ends whatever the order in which blocks are scheduled (no launch per
// anti-diagonal of tiles, and no assumption that all blocks are resident). Groups of one warp
// that wait on different bands diverge, which the independent thread scheduling of sm_70 and
// later allows.
//
// The carries of a problem live in two slots of n words (zeroed by the host), one for the even
// bands and one for the odd: band b writes slot b % 2 and band b + 1 reads it. A carry word
// holds the delta (-1, 0, 1) in its low two bits and b + 1 above them, so that a reader knows
// a column is ready from the word itself: no flag, and no memory fence on the writer's side (a
// fence every few hundred columns stalled every band). The tag is the whole band number, not
// a parity or a count that wraps: while the bands ramp up, a slot holds for long what band 0
// or 1 wrote there, far ahead of the bands between. Band b + 2 overwrites a column of that
// slot only after band b + 1 has written the column's carry in the other slot, that is after
// band b + 1 has read it, so two slots are enough whatever the number of bands.
//
// A band stages the target symbols and the carries it reads 32 columns at a time in shared
// memory, loading the next 32 into registers one block ahead so that the loads are in flight
// while it computes; a lane reads its next column's match words and carry from there a step
// ahead. When only codes below HELD_CODES match (DNA: A C G T; N matches nothing), each lane
// copies its match words of those codes to shared memory for the whole band and picks them by
// the column's symbol: a step then reads no global memory, whose latency a step ahead cannot
// hide when the bands of a query are too few to fill the GPU with warps.
//
// The steps run in blocks of 32, those where every lane has a column unrolled without bounds
// checks: a band's warps are few (a 1 Mbp query has about a thousand), so a step's own
// instructions, not the GPU's width, set the pace.
//
// What the last band tracks along the query's last row (TRACK_*, as in myers.cu, plus
// TRACK_ROW: the whole row D[m][0..n], for Hirschberg's splits) goes to the problem's outputs.

#include "common.cuh"

// Threads per block of the long kernel (its launch bounds, read back by the host).
constexpr int LONG_THREADS = 128;
// Codes whose match words the HELD instances of long_edit hold in shared memory for a band.
constexpr int HELD_CODES = 4;
// Threads per block of the one-thread-per-item kernels (their launch bounds).
constexpr int LONG_ITEM_THREADS = 256;

#define TRACK_FINAL 0
#define TRACK_BEST 1
#define TRACK_FIRST_END 2
#define TRACK_LAST_END 3
#define TRACK_ROW 4

// The problem that band number `band` (over all problems) belongs to: the last p with
// band_first[p] <= band (every problem has at least one band).
__device__ __forceinline__ int problem_of(const i64* band_first, int n_problems, i64 band) {
    int lo = 0, hi = n_problems - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (band_first[mid] <= band) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}


// One thread per 32-row word of every band of every problem: the match words of that word,
// table[n_codes * words_before + c * words_of_problem + word] for each code c (zeroed first).
// Word `w * lanes + lane` of a band holds the rows of that lane's word w (of words_per_lane).
extern "C" __global__ void __launch_bounds__(LONG_ITEM_THREADS) long_match_table(
    const u8* __restrict__ q_codes, const i64* __restrict__ q_from, const int* __restrict__ q_len,
    const u8* __restrict__ reversed, const i64* __restrict__ band_first, const int n_problems,
    const int lanes, const int words_per_lane, const int n_codes, const int match_codes,
    u32* __restrict__ table) {
    const int band_words = lanes * words_per_lane;
    const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= band_first[n_problems] * band_words) return;
    const int p = problem_of(band_first, n_problems, gid / band_words);
    const i64 bands = band_first[p + 1] - band_first[p];
    const i64 word = gid - band_first[p] * band_words;  // within the problem
    const i64 band = word / band_words;
    const int w = (int)(word % band_words) / lanes;
    const int lane = (int)(word % band_words) % lanes;
    const int m = q_len[p];
    const i64 rows = (i64)band_words * 32;
    const i64 first_row = band * rows + (lane * words_per_lane + w) * 32 - (bands * rows - m);
    const u8* q = q_codes + q_from[p];
    u32* out = table + (i64)n_codes * band_first[p] * band_words + word;
    const i64 stride = bands * band_words;
    for (int b = 0; b < 32; ++b) {
        const i64 i = first_row + b;
        if (i < 0 || i >= m) continue;
        const int c = reversed[p] ? q[m - 1 - i] : q[i];
        if (c < match_codes) out[c * stride] |= 1u << b;
    }
}

template <int LANES, int WPL, int TRACK, bool HELD>
__global__ void __launch_bounds__(LONG_THREADS) long_edit(
    const u8* __restrict__ t_codes, const i64* __restrict__ t_from, const int* __restrict__ t_len,
    const int* __restrict__ q_len, const u8* __restrict__ reversed,
    const i64* __restrict__ band_first, const int n_problems, const u32* __restrict__ table,
    const int n_codes, int* carries, const i64* __restrict__ carry_from,
    const int top_delta,
    const int cutoff, unsigned long long* ticket, int* __restrict__ out_distance,
    int* __restrict__ out_end, int* __restrict__ rows, const i64* __restrict__ row_from) {
    constexpr int GROUPS = LONG_THREADS / LANES;
    constexpr int BAND_WORDS = LANES * WPL;
    constexpr int ROWS = BAND_WORDS * 32;
    constexpr int PER_LANE = 32 / LANES;  // columns of a staged block that each lane loads
    const int group = threadIdx.x / LANES;
    const int lane = threadIdx.x % LANES;
    const int warp_lane = threadIdx.x % 32;
    const u32 mask = LANES == 32 ? FULL_WARP
                                 : (u32)((1ull << LANES) - 1ull) << (warp_lane - lane);
    // Two blocks of 32 columns: the one being computed and the one before it, which the lanes
    // behind lane 0 still read. HELD: the symbols are staged as min(code, HELD_CODES), and
    // held[group][c][w][lane] is the match word w of the lane for code c (0 for HELD_CODES).
    __shared__ u8 staged_symbols[GROUPS][64];
    __shared__ signed char staged_carries[GROUPS][64];
    __shared__ u32 held[HELD ? GROUPS : 1][HELD_CODES + 1][WPL][LANES];
    const i64 total_bands = band_first[n_problems];

    while (true) {
        i64 number = 0;
        if (lane == 0) number = (i64)atomicAdd(ticket, 1ull);
        number = __shfl_sync(mask, number, 0, LANES);
        if (number >= total_bands) return;
        const int p = problem_of(band_first, n_problems, number);
        const i64 band = number - band_first[p];
        const i64 bands = band_first[p + 1] - band_first[p];
        const bool last_band = band == bands - 1;
        const int m = q_len[p];
        const int n = t_len[p];
        const bool backwards = reversed[p] != 0;
        const u8* t = t_codes + t_from[p];
        const volatile int* in_carries = carries + carry_from[p] + ((band + 1) & 1) * (i64)n;
        int* out_carries = carries + carry_from[p] + (band & 1) * (i64)n;
        // Carry words: the delta in the low two bits, the writer's band + 1 above them.
        const int in_tag = (int)band << 2, out_tag = (int)(band + 1) << 2;
        const u32* eq_words = table + (i64)n_codes * band_first[p] * BAND_WORDS
                              + band * BAND_WORDS + lane;
        const i64 eq_stride = bands * BAND_WORDS;  // between codes
        if constexpr (HELD) {
#pragma unroll
            for (int c = 0; c <= HELD_CODES; ++c) {
#pragma unroll
                for (int w = 0; w < WPL; ++w)
                    held[group][c][w][lane] =
                        c < min(n_codes, HELD_CODES) ? eq_words[c * eq_stride + w * LANES] : 0u;
            }
        }

        u32 pv[WPL], mv[WPL];
#pragma unroll
        for (int w = 0; w < WPL; ++w) {
            // Padding rows start at delta +1 under a free top row, else at 0 (see myers.cu).
            const i64 first_row = band * ROWS + (lane * WPL + w) * 32 - (bands * ROWS - m);
            const u32 query_rows = first_row >= 0 ? ~0u
                                   : first_row <= -32 ? 0u
                                                      : ~0u << (int)(-first_row);
            pv[w] = top_delta ? query_rows : ~0u;
            mv[w] = 0u;
        }

        // The next block of 32 columns, loaded into registers a block ahead of its use; the
        // carries again until every one of the block bears the band above's tag.
        u32 next_symbols[PER_LANE];
        int next_carries[PER_LANE];
        auto fetch = [&](int block_start) {
#pragma unroll
            for (int k = 0; k < PER_LANE; ++k) {
                const int j = block_start + lane + k * LANES;
                next_symbols[k] = 0;
                if (j < n) {
                    const int code = backwards ? t[n - 1 - j] : t[j];
                    next_symbols[k] = HELD ? min(code, HELD_CODES) : code;
                }
            }
            while (true) {
                bool ready = true;
#pragma unroll
                for (int k = 0; k < PER_LANE; ++k) {
                    const int j = block_start + lane + k * LANES;
                    next_carries[k] = top_delta;
                    if (band > 0 && j < n) {
                        const int word = in_carries[j];
                        ready = ready && (word & ~3) == in_tag;
                        next_carries[k] = (int)((u32)word << 30) >> 30;  // the low two bits
                    }
                }
                if (__all_sync(mask, ready)) break;
            }
        };
        // Stores the fetched block that starts at column `block_start` in shared memory. The
        // first barrier keeps the stores after every lane's last read of the block they
        // replace (64 columns back), the second the reads of the new block after the stores.
        auto stage = [&](int block_start) {
            const int slot = block_start & 63;
            __syncwarp(mask);
#pragma unroll
            for (int k = 0; k < PER_LANE; ++k) {
                staged_symbols[group][slot + lane + k * LANES] = (u8)next_symbols[k];
                staged_carries[group][slot + lane + k * LANES] = (signed char)next_carries[k];
            }
            __syncwarp(mask);
        };
        // The match words and the carry from above of column j (0 <= j < n), read a step
        // before the step that uses them, so that their latency is not on the path from step
        // to step.
        u32 eq_next[WPL];
        int hin_next = 0;
        auto preload = [&](int j) {
            const int slot = j & 63;
            const int code = staged_symbols[group][slot];
#pragma unroll
            for (int w = 0; w < WPL; ++w) {
                if constexpr (HELD) eq_next[w] = held[group][code][w][lane];
                else eq_next[w] = __ldg(eq_words + (i64)code * eq_stride + w * LANES);
            }
            hin_next = staged_carries[group][slot];
        };
        if (n > 0) {
            fetch(0);
            stage(0);
            if (32 < n) fetch(32);
            __syncwarp(mask);  // held is written
            if (lane == 0) preload(0);
        }

        int score = m, best = m, best_end = 0;  // D[m][0] = m
        if (TRACK == TRACK_ROW && last_band && lane == LANES - 1) rows[row_from[p]] = m;
        const bool writes_carries = lane == LANES - 1 && !last_band;
        int carry = 0;
        // Step s: lane l computes column s - l (CHECKED: only when 0 <= s - l < n), and its last
        // row's carry goes to the band below, tagged (or to the last band's tracking).
        auto step = [&](const int s, const bool checked) {
            const int from_above = LANES > 1 ? __shfl_up_sync(mask, carry, 1, LANES) : 0;
            const int j = s - lane;
            if (checked && (j < 0 || j >= n)) return;
            int hin = lane == 0 ? hin_next : from_above;
#pragma unroll
            for (int w = 0; w < WPL; ++w) {
                u32 match = eq_next[w];
                const u32 xv = match | mv[w];
                if (hin < 0) match |= 1u;  // a negative delta acts like a match above
                const u32 xh = (((match & pv[w]) + pv[w]) ^ pv[w]) | match;
                u32 ph = mv[w] | ~(xh | pv[w]);
                u32 mh = pv[w] & xh;
                const int hout = (int)(ph >> 31) - (int)(mh >> 31);
                ph = (ph << 1) | (u32)(hin > 0);
                mh = (mh << 1) | (u32)(hin < 0);
                pv[w] = mh | ~(xv | ph);
                mv[w] = ph & xv;
                hin = hout;
            }
            carry = hin;
            if (writes_carries) out_carries[j] = (carry & 3) | out_tag;
            if (!checked || lane == LANES - 1) {  // only the last lane's tracking is read
                score += carry;
                if constexpr (TRACK == TRACK_ROW) {
                    if (last_band && lane == LANES - 1) rows[row_from[p] + j + 1] = score;
                } else if constexpr (TRACK == TRACK_BEST) {
                    best = min(best, score);
                } else if constexpr (TRACK == TRACK_FIRST_END || TRACK == TRACK_LAST_END) {
                    const bool better = TRACK == TRACK_LAST_END ? score <= best : score < best;
                    best = better ? score : best;
                    best_end = better ? j + 1 : best_end;
                }
            }
        };
        // Blocks of 32 steps; in the inner ones every lane's column is in 0..n - 1, and the
        // steps are unrolled without checks.
        const int steps = n > 0 ? n + LANES - 1 : 0;
        for (int s0 = 0; s0 < steps; s0 += 32) {
            if (s0 >= LANES - 1 && s0 + 32 <= n) {
#pragma unroll
                for (int k = 0; k < 32; ++k) {
                    step(s0 + k, false);
                    if (k < 31) preload(s0 + k + 1 - lane);
                }
            } else {
                for (int s = s0; s < min(s0 + 32, steps); ++s) {
                    step(s, true);
                    const int j = s + 1 - lane;
                    if (s + 1 < s0 + 32 && j >= 0 && j < n) preload(j);
                }
            }
            // The next block of columns, now that lane 0 is about to enter it, then the next
            // step's words.
            if (s0 + 32 < n) {
                stage(s0 + 32);
                if (s0 + 64 < n) fetch(s0 + 64);
            }
            const int j = s0 + 32 - lane;
            if (j >= 0 && j < n) preload(j);
        }
        if constexpr (TRACK != TRACK_ROW) {
            if (last_band && lane == LANES - 1) {
                int distance = TRACK == TRACK_FINAL ? score : best;
                int end = best_end;
                if (cutoff >= 0 && distance > cutoff) {
                    distance = -1;
                    end = -1;
                }
                out_distance[p] = distance;
                if constexpr (TRACK == TRACK_FIRST_END || TRACK == TRACK_LAST_END) out_end[p] = end;
            }
        }
        // The staged blocks and held words are rewritten by the group's next band.
        __syncwarp(mask);
    }
}

// One warp per split: the column j in [0, n] that minimizes above[j] + below[n - j] (the
// leftmost on ties), where above = rows[row_from[2s]:], the last row of the top half against
// every target prefix, and below = rows[row_from[2s + 1]:], that of the reversed bottom half
// against every reversed target suffix (problems 2s and 2s + 1 of a TRACK_ROW launch); and the
// two halves' distances there, above[j] and below[n - j].
extern "C" __global__ void __launch_bounds__(LONG_ITEM_THREADS) pick_splits(
    const int* __restrict__ rows, const i64* __restrict__ row_from,
    const int* __restrict__ t_len, const int n_splits, int* __restrict__ cut,
    int* __restrict__ top_distance, int* __restrict__ bottom_distance) {
    const i64 s = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (s >= n_splits) return;  // whole warps: s is the same for the 32 lanes
    const int n = t_len[2 * s];
    const int* above = rows + row_from[2 * s];
    const int* below = rows + row_from[2 * s + 1];
    int best = 0x7fffffff, at = 0;
    for (int j = lane; j <= n; j += 32) {
        const int value = above[j] + below[n - j];
        if (value < best) {
            best = value;
            at = j;
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const int other = __shfl_down_sync(FULL_WARP, best, offset);
        const int other_at = __shfl_down_sync(FULL_WARP, at, offset);
        if (other < best || (other == best && other_at < at)) {
            best = other;
            at = other_at;
        }
    }
    if (lane == 0) {
        cut[s] = at;
        top_distance[s] = above[at];
        bottom_distance[s] = below[n - at];
    }
}

// One thread per leaf: copies the operations that trace_paths (path.cu) left in its scratch
// memory, ops_at[leaf] bytes into it and last first, to buffer + to[leaf], first first.
extern "C" __global__ void __launch_bounds__(LONG_ITEM_THREADS) gather_leaf_ops(
    const u8* __restrict__ scratch, const i64* __restrict__ ops_at,
    const int* __restrict__ op_count, const i64* __restrict__ to, const int n_leaves,
    u8* __restrict__ buffer) {
    const i64 leaf = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (leaf >= n_leaves) return;
    const u8* ops = scratch + ops_at[leaf];
    const int count = op_count[leaf];
    for (int o = 0; o < count; ++o) buffer[to[leaf] + o] = ops[count - 1 - o];
}
