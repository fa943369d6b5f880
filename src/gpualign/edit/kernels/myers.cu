// Myers/Hyyro bit-vector edit distance for batches of (query, target) pairs.
//
// Words are 32 query rows. The GPU's integer units are 32 bits wide: a 64-bit word costs two
// instructions per operation anyway, and 32-row words waste fewer rows on short queries.
// A lane's WPL words form one block of WPL*32 rows, advanced by a target column as a single
// big integer: the carry of the addition runs through the words (add.cc/addc), and the shifts
// of the horizontal deltas are funnel shifts, so no word needs a delta from its neighbour.
//
// LANES == 1 is the task-parallel kernel: one thread owns a pair and all of its words.
// LANES > 1 is the thread-cooperative kernel: a group of LANES lanes of one warp shares a pair,
// lane l owning rows [l*WPL*32, (l+1)*WPL*32). The lanes form a wavefront: at step s lane l works
// on target column s - l, taking the delta that lane l-1 produced for that column one step
// earlier (passed with __shfl_up_sync), so no lane ever waits inside a step.
//
// A query sits at the bottom of its kernel's rows, so that its last row is always bit 31 of the
// last lane's last word: the delta of the last row is read from the same place for every pair,
// with no per-pair shifts or selects. The padding rows above the query match nothing and
// reproduce the top boundary. With a free start in the target (top delta 0) they begin with
// vertical deltas +1: D[i][j] = i on every padding row, a constant that leaves every horizontal
// delta below unchanged. With D[0][j] = j (top delta +1) they begin with deltas 0: D[i][j] = j
// on every padding row, which is the boundary the query's first row needs.
//
// DNA (codes 0..3 match, 4 = N matches nothing) keeps each thread's match words in shared
// memory, five rows of WPL words (N's row is zero), laid out [word][code][thread] so that the
// 32 threads of a warp read 32 different banks whatever symbols they meet: a column costs one
// load per word, on the memory pipe, instead of integer work on the pipe the column keeps busy.
// Other alphabets read their match words from a table in global memory built by
// build_match_table.
//
// A launch works on a slice of `order`, the pairs of one kernel bin (plan_pairs and order_pairs
// sort them by bin on the GPU): slot p handles pair order[p], whose query and target are
// q_index[pair] and t_index[pair] (or first + pair for both, when queries[i] meet targets[i]),
// and whose results go to out_distance[pair] and, from the kernels that track ends,
// out_end[pair], so nothing is gathered or scattered around a launch.
//
// Queries longer than one kernel's rows run as several passes over row slices (cooperative
// kernels only). The passes of all pairs of a launch end together: launch number p of P covers,
// for a pair of S slices, its slice S - P + p (pairs with fewer slices sit out the first
// launches). A pass reads the horizontal deltas entering its top row from h_in and writes those
// leaving its bottom row to h_out, one signed byte per target column. Only the last pass writes
// the distance and end.

#include "common.cuh"

// Threads per block of the edit-distance kernels: their launch bounds, which the host reads back
// to size its launches, and the stride of the DNA match tables.
constexpr int BLOCK_THREADS = 128;
// Threads per block of the one-thread-per-item kernels that bin the pairs and build match
// tables (their launch bounds, read back by the host likewise).
constexpr int ITEM_THREADS = 256;

// Big-integer addition through the words of a block: the carry flag links the asm statements
// (kept in order by volatile), as in multi-precision libraries.
__device__ __forceinline__ u32 add_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ u32 addc_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ u32 addc(u32 a, u32 b) {
    u32 r;
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

// Word w of the sum of two WPL-word integers (words in order, lowest first).
template <int WPL>
__device__ __forceinline__ u32 chain_add(int w, u32 a, u32 b) {
    if (WPL == 1) return a + b;
    if (w == 0) return add_cc(a, b);
    if (w == WPL - 1) return addc(a, b);
    return addc_cc(a, b);
}

// a * b + c on the multiply-add unit (IMAD). The integer/logic unit is the one a column keeps
// busy, so work that multiply-adds can do moves there; written as PTX so that the compiler does
// not turn a product by a 0/1 value into a select, which would run on the integer/logic unit
// again.
__device__ __forceinline__ u32 mad_lo(u32 a, u32 b, u32 c) {
    u32 r;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

// ~(a | b | c) and a | ~(b | c), each one 3-input logic operation (LOP3) on words already at
// hand: left to itself, the compiler kept a NOT apart or rebuilt xv's OR inside another LOP3.
__device__ __forceinline__ u32 nor3(u32 a, u32 b, u32 c) {
    u32 r;
    asm("lop3.b32 %0, %1, %2, %3, 0x01;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
__device__ __forceinline__ u32 or_nor(u32 a, u32 b, u32 c) {
    u32 r;
    asm("lop3.b32 %0, %1, %2, %3, 0xf1;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

// The shared-memory word at a 32-bit shared address. Written out so that a column's address is
// one multiply-add from its symbol: left to itself, the compiler adds the shared window's base
// to every address with an extra integer instruction. Volatile keeps these loads after the
// barrier that ends the writes of the table (see the kernel).
__device__ __forceinline__ u32 load_shared(u32 address) {
    u32 r;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(address));
    return r;
}

// Byte U of x, zero-extended (PRMT).
template <int U>
__device__ __forceinline__ u32 byte_of(u32 x) {
    u32 r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(x), "n"(0x4440 | U));
    return r;
}

// Query symbol i, read forwards or backwards.
__device__ __forceinline__ int symbol_at(const unsigned char* s, int length, int i, int reverse) {
    return reverse ? s[length - 1 - i] : s[i];
}

// Query row held by bit 0 of word `word` of a pass: slices of `rows` rows, the query at the
// bottom of its last slice (rows above the query are negative). `pass_from_end` counts the
// pass back from the last one; returns -2^30 (below every row) when the pair has no such pass.
__device__ __forceinline__ int first_row_of_word(int m, int rows, int pass_from_end, int word) {
    const int slices = (m + rows - 1) / rows;
    const int slice = slices - 1 - pass_from_end;
    if (slice < 0) return -(1 << 30);
    return slice * rows - (slices * rows - m) + word * 32;
}

// Query and target of a pair: from the index arrays, or both first + pair (first >= 0).
__device__ __forceinline__ void pair_sequences(const i64* q_index, const i64* t_index,
                                               const i64 first, const i64 pair, i64& qi,
                                               i64& ti) {
    qi = first >= 0 ? first + pair : q_index[pair];
    ti = first >= 0 ? first + pair : t_index[pair];
}

// Bins for the kernels: one thread per pair writes the symbols of its target (t_length) and its
// key, the first bin whose `limits` (query words) holds the query, n_limits for queries run in
// slices and n_limits + 1 for pairs left to the host (an empty side, or in global mode a length
// difference over `global_cutoff` >= 0), and counts the keys (keys < 32).
extern "C" __global__ void __launch_bounds__(ITEM_THREADS) plan_pairs(
    const i64* __restrict__ q_offsets, const i64* __restrict__ t_offsets,
    const i64* __restrict__ q_index, const i64* __restrict__ t_index, const i64 first,
    const int n_pairs, const i64* __restrict__ limits, const int n_limits,
    const int global_cutoff, int* __restrict__ key, int* __restrict__ t_length,
    int* __restrict__ counts) {
    __shared__ int block_counts[32];
    if (threadIdx.x < 32) block_counts[threadIdx.x] = 0;
    __syncthreads();
    const i64 pair = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (pair < n_pairs) {
        i64 qi, ti;
        pair_sequences(q_index, t_index, first, pair, qi, ti);
        const i64 m = q_offsets[qi + 1] - q_offsets[qi];
        const i64 n = t_offsets[ti + 1] - t_offsets[ti];
        const i64 words = (m + 31) / 32;
        int k = 0;
        while (k < n_limits && limits[k] < words) ++k;
        const i64 difference = m > n ? m - n : n - m;
        if (m == 0 || n == 0 || (global_cutoff >= 0 && difference > global_cutoff)) k = n_limits + 1;
        key[pair] = k;
        t_length[pair] = (int)n;
        atomicAdd(&block_counts[k], 1);
    }
    __syncthreads();
    if (threadIdx.x < 32 && block_counts[threadIdx.x])
        atomicAdd(&counts[threadIdx.x], block_counts[threadIdx.x]);
}

// Counting sort of the pairs by key: `cursor` starts at each key's first position in `order`
// and is advanced a block at a time. Pairs of one key keep no particular order.
extern "C" __global__ void __launch_bounds__(ITEM_THREADS) order_pairs(
    const int* __restrict__ key, const int n_pairs, int* __restrict__ cursor,
    i64* __restrict__ order) {
    __shared__ int block_counts[32], base[32];
    if (threadIdx.x < 32) block_counts[threadIdx.x] = 0;
    __syncthreads();
    const i64 pair = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    int k = 0, rank = 0;
    if (pair < n_pairs) {
        k = key[pair];
        rank = atomicAdd(&block_counts[k], 1);
    }
    __syncthreads();
    if (threadIdx.x < 32 && block_counts[threadIdx.x])
        base[threadIdx.x] = atomicAdd(&cursor[threadIdx.x], block_counts[threadIdx.x]);
    __syncthreads();
    if (pair < n_pairs) order[base[k] + rank] = pair;
}

// One thread per (slot, word): sets the bits of that word in table[slot][code][word_stride] for
// the pass `pass_from_end` of kernels with `word_stride` words (rows outside the query: none).
// The table must be zeroed first.
extern "C" __global__ void __launch_bounds__(ITEM_THREADS) build_match_table(
    const unsigned char* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const i64* __restrict__ q_index, const i64* __restrict__ order, const i64 first,
    const int n_slots, const int word_stride, const int n_codes, const int match_codes,
    const int reverse, const int pass_from_end, u32* __restrict__ table) {
    const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= (i64)n_slots * word_stride) return;
    const i64 slot = gid / word_stride;
    const int word = (int)(gid % word_stride);
    i64 qi, ti;
    pair_sequences(q_index, q_index, first, order[slot], qi, ti);
    const unsigned char* q = q_codes + q_offsets[qi];
    const int m = (int)(q_offsets[qi + 1] - q_offsets[qi]);
    const int first_row = first_row_of_word(m, word_stride * 32, pass_from_end, word);
    u32* row = table + slot * n_codes * word_stride + word;
    for (int b = 0; b < 32; ++b) {
        const int i = first_row + b;
        if (i < 0 || i >= m) continue;
        const int c = symbol_at(q, m, i, reverse);
        if (c < match_codes) row[(i64)c * word_stride] |= 1u << b;
    }
}

// Advances a lane's block of WPL words (vertical deltas pv/mv) by one target column: `match(w)`
// gives the match word of word w, (hp, hn) the horizontal delta entering the top row as two 0/1
// flags. Returns the bottom row's horizontal delta words (bit 31: the delta leaving the block).
struct Bottom {
    u32 p, n;
    __device__ __forceinline__ int delta() const { return (int)(p >> 31) - (int)(n >> 31); }
};
template <int LANES, int WPL, typename Match>
__device__ __forceinline__ Bottom advance_block(u32 (&pv)[WPL], u32 (&mv)[WPL], const Match& match,
                                             u32 hp, u32 hn, u32 one) {
    u32 ph_above = hp << 31, mh_above = hn << 31;  // bit 31: the row above the block
#pragma unroll
    for (int w = 0; w < WPL; ++w) {
        u32 eq = match(w);
        const u32 xv = eq | mv[w];
        if (LANES > 1 && w == 0) eq |= hn;  // a negative delta acts like a match above
        const u32 sum = chain_add<WPL>(w, eq & pv[w], pv[w]);
        // Xh = (sum ^ pv) | eq;  mh = pv & Xh;  ph = mv | ~(Xh | pv) = mv | ~(sum | eq | mv | pv),
        // an OR of disjoint words, so an addition on the multiply-add unit (eq here with the
        // negative carry, xv without it).
        const u32 mh = pv[w] & (~sum | eq);
        const u32 ph = mad_lo(nor3(sum, LANES > 1 && w == 0 ? xv | hn : xv, pv[w]), one, mv[w]);
        const u32 ph_shifted = __funnelshift_l(ph_above, ph, 1);
        const u32 mh_shifted = __funnelshift_l(mh_above, mh, 1);
        pv[w] = or_nor(mh_shifted, xv, ph_shifted);
        mv[w] = ph_shifted & xv;
        ph_above = ph;
        mh_above = mh;
    }
    return {ph_above, mh_above};
}

// What a kernel tracks along the query's last row.
//   TRACK_FINAL: only the last column (global mode); the distance comes from the final column's
//                vertical deltas, with nothing done per column.
//   TRACK_BEST: the smallest value (free end, distance only).
//   TRACK_FIRST_END / TRACK_LAST_END: the smallest value and its leftmost / rightmost column.
#define TRACK_FINAL 0
#define TRACK_BEST 1
#define TRACK_FIRST_END 2
#define TRACK_LAST_END 3

template <int LANES, int WPL, bool DNA, int TRACK>
__global__ void __launch_bounds__(BLOCK_THREADS) myers_edit(
    const unsigned char* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const unsigned char* __restrict__ t_codes, const i64* __restrict__ t_offsets,
    const i64* __restrict__ q_index, const i64* __restrict__ t_index,
    const i64* __restrict__ order, const i64 first,
    const int* __restrict__ t_length,  // symbols of each target to use (all, or the end found)
    const u32* __restrict__ table, const int n_codes, const int n_slots, const int top_delta,
    const int reverse, const int cutoff, const int pass_from_end,
    const signed char* __restrict__ h_in, signed char* __restrict__ h_out, const i64 h_stride,
    int* __restrict__ out_distance, int* __restrict__ out_end) {
    constexpr int ROWS = LANES * WPL * 32;
    constexpr int WORDS = LANES * WPL;
    // 1 (every alphabet has symbols), in a form the compiler cannot see through: a product by
    // 1 would otherwise become an addition on the integer/logic unit.
    const u32 one = (u32)(n_codes > 0);
    const int lane = LANES == 1 ? 0 : (int)(threadIdx.x % LANES);
    const i64 slot = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    bool active = slot < n_slots;
    const i64 pair = active ? order[slot] : 0;

    const unsigned char* q = q_codes;
    const unsigned char* t = t_codes;
    int m = 1, n = 0;
    if (active) {
        i64 qi, ti;
        pair_sequences(q_index, t_index, first, pair, qi, ti);
        q = q_codes + q_offsets[qi];
        m = (int)(q_offsets[qi + 1] - q_offsets[qi]);
        t = t_codes + t_offsets[ti];
        n = t_length[pair];
    }
    const int slices = (m + ROWS - 1) / ROWS;
    const int slice = slices - 1 - pass_from_end;  // this pass's slice of the pair's rows
    if (slice < 0) active = false;                 // the pair has fewer slices: it sits out
    if (!active) {
        if (LANES == 1) return;
        n = 0;  // keep the lanes in step for the shuffles
    }
    const bool last_pass = pass_from_end == 0;

    // The DNA match words of this thread: word w of code c at
    // dna_table[(w * DNA_CODES + c) * BLOCK_THREADS + threadIdx.x].
    constexpr int block = BLOCK_THREADS;
    __shared__ u32 dna_table[DNA ? DNA_CODES * WPL * block : 1];
    u32* const own_rows = dna_table + threadIdx.x;
    u32 pv[WPL], mv[WPL];
#pragma unroll
    for (int w = 0; w < WPL; ++w) {
        const int first_row = first_row_of_word(m, ROWS, pass_from_end, lane * WPL + w);
        u32 match_a = 0, match_c = 0, match_g = 0, match_t = 0, query_rows = 0;
#pragma unroll 1
        for (int b = 0; b < 32 && active; ++b) {
            const int i = first_row + b;
            if (i < 0) continue;
            const u32 bit = 1u << b;
            query_rows |= bit;
            const int s = symbol_at(q, m, i, reverse);
            match_a |= s == 0 ? bit : 0u;
            match_c |= s == 1 ? bit : 0u;
            match_g |= s == 2 ? bit : 0u;
            match_t |= s == 3 ? bit : 0u;
        }
        // Padding rows start at delta +1 under a free top row, else at 0 (see the top).
        pv[w] = top_delta ? query_rows : ~0u;
        mv[w] = 0u;
        if constexpr (DNA) {
            u32* const rows = own_rows + w * DNA_CODES * block;
            rows[0] = match_a;
            rows[block] = match_c;
            rows[2 * block] = match_g;
            rows[3 * block] = match_t;
            rows[4 * block] = 0u;
        }
    }
    // The table's writes stay before its loads (which the compiler sees as volatile asm only).
    asm volatile("" ::: "memory");
    const u32 own_address = (u32)__cvta_generic_to_shared(own_rows);
    const u32* pair_table = DNA ? table : table + slot * n_codes * WORDS + lane * WPL;

    int score = m, best = m, best_end = 0;  // D[m][0] = m
    auto track = [&](Bottom bottom, int j) {
        if constexpr (TRACK != TRACK_FINAL) {
            score += bottom.delta();
            if constexpr (TRACK == TRACK_BEST) {
                best = min(best, score);
            } else {
                const bool better = TRACK == TRACK_LAST_END ? score <= best : score < best;
                best = better ? score : best;
                best_end = better ? j + 1 : best_end;
            }
        }
    };
    // A column from its symbol code.
    auto column = [&](u32 c, u32 hp, u32 hn) -> Bottom {
        if constexpr (DNA) {
            const u32 rows = mad_lo(c, block * 4, own_address);
            return advance_block<LANES, WPL>(
                pv, mv, [&](int w) { return load_shared(rows + w * DNA_CODES * block * 4); }, hp,
                hn, one);
        } else {
            const u32* row = pair_table + (i64)c * WORDS;
            return advance_block<LANES, WPL>(pv, mv, [&](int w) { return __ldg(row + w); }, hp, hn, one);
        }
    };

    int along_top = 0;  // D[top row][n] - D[top row][0] of a later slice (cooperative kernels)
    if constexpr (LANES == 1) {
        const u32 hp = (u32)top_delta;
        int j = 0;
        // Each thread reads a different target, so a warp's byte loads would touch 32 cache
        // lines per column; 16-byte aligned loads touch them once per 16 columns. The device
        // arrays are padded so that the last aligned load stays inside them. Backwards, the
        // 16 bytes ending at the next symbol are loaded and their order reversed.
        auto aligned = [&](int j) {
            const unsigned long long at = (unsigned long long)(reverse ? t + n - j : t + j);
            return (at & 15) == 0;
        };
        for (; j < n && !aligned(j); ++j) track(column(reverse ? t[n - 1 - j] : t[j], hp, 0), j);
        for (; j + 16 <= n; j += 16) {
            uint4 v = __ldg(reinterpret_cast<const uint4*>(reverse ? t + n - j - 16 : t + j));
            if (reverse) {
                v = make_uint4(__byte_perm(v.w, 0, 0x0123), __byte_perm(v.z, 0, 0x0123),
                               __byte_perm(v.y, 0, 0x0123), __byte_perm(v.x, 0, 0x0123));
            }
#pragma unroll 1
            for (int k = 0; k < 4; ++k) {
                track(column(byte_of<0>(v.x), hp, 0), j + 4 * k);
                track(column(byte_of<1>(v.x), hp, 0), j + 4 * k + 1);
                track(column(byte_of<2>(v.x), hp, 0), j + 4 * k + 2);
                track(column(byte_of<3>(v.x), hp, 0), j + 4 * k + 3);
                v = make_uint4(v.y, v.z, v.w, v.x);
            }
        }
        for (; j < n; ++j) track(column(reverse ? t[n - 1 - j] : t[j], hp, 0), j);
    } else {
        // Wavefront: lane l handles column s - l, taking the delta lane l-1 made for it one step
        // earlier. Every lane of the warp runs the same number of steps for the shuffles.
        const int steps = __reduce_max_sync(0xffffffffu, active ? n + LANES - 1 : 0);
        int carry = 0;
        for (int s = 0; s < steps; ++s) {
            const int from_above = __shfl_up_sync(0xffffffffu, carry, 1, LANES);
            const int j = s - lane;
            if (active && j >= 0 && j < n) {
                int hin = from_above;
                if (lane == 0) hin = slice > 0 ? (int)h_in[slot * h_stride + j] : top_delta;
                along_top += hin;
                const Bottom bottom = column(reverse ? t[n - 1 - j] : t[j], (u32)(hin > 0),
                                             (u32)(hin < 0));
                carry = bottom.delta();
                if (!last_pass && lane == LANES - 1) h_out[slot * h_stride + j] = (signed char)carry;
                track(bottom, j);
            }
        }
        // Lane 0's sum is the one along the slice's top row; the others get it.
        along_top = __shfl_sync(0xffffffffu, along_top, 0, LANES);
    }
    if constexpr (TRACK == TRACK_FINAL) {
        // D[last row][n] = D[top row][n] + the vertical deltas of the last column.
        int deltas = 0;
#pragma unroll
        for (int w = 0; w < WPL; ++w) deltas += __popc(pv[w]) - __popc(mv[w]);
#pragma unroll
        for (int offset = LANES / 2; offset > 0; offset /= 2)
            deltas += __shfl_xor_sync(0xffffffffu, deltas, offset, LANES);
        // The top of the first slice is the padded top row, D = n * top_delta; a later slice
        // starts at query row slice*ROWS - padding, with the deltas summed along its top.
        const int top =
            slice == 0 ? n * top_delta : slice * ROWS - (slices * ROWS - m) + along_top;
        best = top + deltas;
    }
    if (active && last_pass && lane == LANES - 1) {
        int distance = best;
        int end = best_end;
        if (cutoff >= 0 && distance > cutoff) {
            distance = -1;
            end = -1;
        }
        out_distance[pair] = distance;
        if constexpr (TRACK == TRACK_FIRST_END || TRACK == TRACK_LAST_END) out_end[pair] = end;
    }
}
