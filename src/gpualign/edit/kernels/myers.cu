// Myers/Hyyro bit-vector edit distance for batches of (query, target) pairs.
//
// A query is cut into 64-row words. Each word keeps its vertical delta vectors (pv/mv) in
// registers and hands the horizontal delta of its bottom row (-1, 0, +1) to the word below.
//
// LANES == 1 is the task-parallel kernel: one thread owns a pair and all of its WPL words.
// LANES > 1 is the thread-cooperative kernel: a group of LANES lanes of one warp shares a pair,
// lane l owning words [l*WPL, (l+1)*WPL). The lanes form a wavefront: at step s lane l works on
// target column s - l, using the carry that lane l-1 produced for that column one step earlier
// (passed with __shfl_up_sync), so no lane ever waits inside a step.
//
// DNA (codes 0..3 match, 4 = N matches nothing) keeps its match table (Peq) in registers; other
// alphabets read it from a table in global memory built by build_match_table.
//
// Queries longer than one kernel's LANES * WPL words run as several passes over row slices
// (cooperative kernels only): a pass over rows [row_begin, row_begin + LANES*WPL*64) reads the
// horizontal deltas entering its top row from h_in and writes those leaving its bottom row to
// h_out, one signed byte per target column. Only the pass holding the query's last row writes the
// distance and end.

typedef unsigned long long u64;
typedef long long i64;

#define HIGH_BIT 0x8000000000000000ull

// Advances one word by one target column. The horizontal delta entering the word's top row is
// carried as two 0/1 words (hp: +1, hn: -1) and replaced by the delta leaving row `out_row` of
// the word (63 for a full word, the query's last row for the last word).
__device__ __forceinline__ void advance_word(u64& pv, u64& mv, u64 eq, u64& hp, u64& hn,
                                             unsigned out_row) {
    const u64 xv = eq | mv;
    eq |= hn;  // a negative carry acts like a match just above the word
    const u64 xh = (((eq & pv) + pv) ^ pv) | eq;
    u64 ph = mv | ~(xh | pv);
    u64 mh = pv & xh;
    const u64 out_p = (ph >> out_row) & 1ull;
    const u64 out_n = (mh >> out_row) & 1ull;
    ph = (ph << 1) | hp;
    mh = (mh << 1) | hn;
    pv = mh | ~(xv | ph);
    mv = ph & xv;
    hp = out_p;
    hn = out_n;
}

// Query symbol i, read forwards or backwards.
__device__ __forceinline__ int symbol_at(const unsigned char* s, int length, int i, int reverse) {
    return reverse ? s[length - 1 - i] : s[i];
}

// One thread per (pair, word): sets the bits of that word in table[pair][code][word_stride], for
// the query rows from row_begin.
// The table must be zeroed first.
extern "C" __global__ void build_match_table(
    const unsigned char* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const i64* __restrict__ q_index, const int n_pairs, const int word_stride, const int n_codes,
    const int match_codes, const int reverse, const int row_begin, u64* __restrict__ table) {
    const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= (i64)n_pairs * word_stride) return;
    const i64 pair = gid / word_stride;
    const int word = (int)(gid % word_stride);
    const i64 qi = q_index[pair];
    const unsigned char* q = q_codes + q_offsets[qi];
    const int m = (int)(q_offsets[qi + 1] - q_offsets[qi]);
    u64* row = table + pair * n_codes * word_stride + word;
    for (int b = 0; b < 64; ++b) {
        const int i = row_begin + word * 64 + b;  // the query row of this bit (slices: see below)
        if (i >= m) break;
        const int c = symbol_at(q, m, i, reverse);
        if (c < match_codes) row[(i64)c * word_stride] |= 1ull << b;
    }
}

template <int LANES, int WPL, bool DNA>
__global__ void __launch_bounds__(128) myers_edit(
    const unsigned char* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const unsigned char* __restrict__ t_codes, const i64* __restrict__ t_offsets,
    const i64* __restrict__ q_index, const i64* __restrict__ t_index,
    const int* __restrict__ t_length,  // symbols of each target to use (all, or the end found)
    const u64* __restrict__ table, const int n_codes, const int word_stride,
    const int n_pairs, const int top_delta, const int reverse, const int tie_last,
    const int global_mode, const int cutoff, const int row_begin,
    const signed char* __restrict__ h_in, signed char* __restrict__ h_out, const i64 h_stride,
    int* __restrict__ out_distance, int* __restrict__ out_end) {
    constexpr int SLICE_ROWS = LANES * WPL * 64;
    const int group_lane = LANES == 1 ? 0 : (int)(threadIdx.x % LANES);
    const i64 pair = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const bool active = pair < n_pairs;

    const unsigned char* q = q_codes;
    const unsigned char* t = t_codes;
    int query_length = 1, n = 0;
    if (active) {
        const i64 qi = q_index[pair];
        const i64 ti = t_index[pair];
        q = q_codes + q_offsets[qi];
        query_length = (int)(q_offsets[qi + 1] - q_offsets[qi]);
        t = t_codes + t_offsets[ti];
        n = t_length[pair];
    }
    // This pass covers rows [row_begin, row_begin + m) of the query; it is the last pass of a
    // pair when the query ends inside it. Pairs whose query ended in an earlier pass sit out.
    const int m = min(query_length - row_begin, SLICE_ROWS);
    const bool last_pass = query_length - row_begin <= SLICE_ROWS;
    if (m <= 0) {
        if (LANES == 1) return;
        n = 0;  // keep the lanes in step for the shuffles
    }
    const int words = (max(m, 1) + 63) >> 6;
    const int first_word = group_lane * WPL;
    const int last_word = words - 1;
    const int local_last = last_word - first_word;  // in [0, WPL) for the lane that owns it
    const bool owns_last = 0 <= local_last && local_last < WPL;

    u64 pv[WPL], mv[WPL];
    u64 peq_a[DNA ? WPL : 1], peq_c[DNA ? WPL : 1], peq_g[DNA ? WPL : 1], peq_t[DNA ? WPL : 1];
#pragma unroll
    for (int w = 0; w < WPL; ++w) {
        pv[w] = ~0ull;
        mv[w] = 0ull;
        if constexpr (DNA) {
            u64 a = 0, c = 0, g = 0, tt = 0;
            const int base = (first_word + w) * 64;
            for (int b = 0; b < 64 && base + b < m; ++b) {
                const int s = symbol_at(q, query_length, row_begin + base + b, reverse);
                const u64 bit = 1ull << b;
                a |= s == 0 ? bit : 0ull;
                c |= s == 1 ? bit : 0ull;
                g |= s == 2 ? bit : 0ull;
                tt |= s == 3 ? bit : 0ull;
            }
            peq_a[w] = a;
            peq_c[w] = c;
            peq_g[w] = g;
            peq_t[w] = tt;
        }
    }
    const u64* pair_table = DNA ? table : table + pair * n_codes * word_stride;

    unsigned out_row[WPL];
#pragma unroll
    for (int w = 0; w < WPL; ++w) out_row[w] = w == local_last ? (unsigned)((m - 1) & 63) : 63u;

    int score = row_begin + m, best = row_begin + m, best_end = 0;  // D[row][0] = row
    int carry = 0;
    // Advances all of this lane's words by target column j (symbol c). Words past the query's
    // end compute junk that only flows upwards, into nothing that is read: the last-row delta is
    // taken from the last word itself.
    auto advance_column = [&](int c, int j, int hin) {
        u64 hp = (u64)(hin > 0), hn = (u64)(hin < 0);
        u64 last_p = 0, last_n = 0;
#pragma unroll
        for (int w = 0; w < WPL; ++w) {
            u64 eq;
            if constexpr (DNA) {
                eq = c == 0 ? peq_a[w] : c == 1 ? peq_c[w] : c == 2 ? peq_g[w]
                                         : c == 3 ? peq_t[w] : 0ull;
            } else {
                eq = __ldg(pair_table + (i64)c * word_stride + first_word + w);
            }
            advance_word(pv[w], mv[w], eq, hp, hn, out_row[w]);
            if (w == local_last) {
                last_p = hp;
                last_n = hn;
            }
        }
        carry = (int)hp - (int)hn;
        const int row_delta = (int)last_p - (int)last_n;
        if (LANES > 1 && !last_pass && owns_last) h_out[pair * h_stride + j] = (signed char)row_delta;
        score += row_delta;
        const bool better = tie_last ? score <= best : score < best;
        best = better ? score : best;
        best_end = better ? j + 1 : best_end;
    };

    if constexpr (LANES == 1) {
        if (!active) return;
        int j = 0;
        if (reverse) {
            for (; j < n; ++j) advance_column(t[n - 1 - j], j, top_delta);
        } else {
            // Each thread reads a different target, so a warp's byte loads would touch 32 cache
            // lines per column; 16-byte aligned loads touch them once per 16 columns. The
            // device arrays are padded so that the last aligned load stays inside them.
            for (; j < n && ((unsigned long long)(t + j) & 15); ++j)
                advance_column(t[j], j, top_delta);
            for (; j + 16 <= n; j += 16) {
                const uint4 v = __ldg(reinterpret_cast<const uint4*>(t + j));
#pragma unroll
                for (int u = 0; u < 16; ++u) {
                    const unsigned bytes = u < 4 ? v.x : u < 8 ? v.y : u < 12 ? v.z : v.w;
                    advance_column((bytes >> ((u & 3) * 8)) & 0xffu, j + u, top_delta);
                }
            }
            for (; j < n; ++j) advance_column(t[j], j, top_delta);
        }
    } else {
        // Wavefront: lane l handles column s - l, taking the carry lane l-1 made for it one
        // step earlier. Every lane of the warp runs the same number of steps for the shuffle.
        const int steps = __reduce_max_sync(0xffffffffu, active ? n + LANES - 1 : 0);
        for (int s = 0; s < steps; ++s) {
            const int from_above = __shfl_up_sync(0xffffffffu, carry, 1, LANES);
            const int j = s - group_lane;
            if (active && j >= 0 && j < n && first_word < words) {  // lanes past the query idle
                int hin = from_above;
                if (group_lane == 0) hin = row_begin > 0 ? (int)h_in[pair * h_stride + j] : top_delta;
                advance_column(reverse ? t[n - 1 - j] : t[j], j, hin);
            }
        }
    }
    if (active && owns_last && m > 0 && last_pass) {
        int distance = global_mode ? score : best;
        int end = global_mode ? n : best_end;
        if (cutoff >= 0 && distance > cutoff) {
            distance = -1;
            end = -1;
        }
        out_distance[pair] = distance;
        out_end[pair] = end;
    }
}
