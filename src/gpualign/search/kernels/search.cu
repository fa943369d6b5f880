// Smith-Waterman scores (local alignment, affine gaps) of queries against a length-sorted
// database, for gpualign.search: 16-bit lanes with Hopper's DPX instructions.
//
// Work layout. Consecutive database subjects 2p and 2p + 1 (of similar length: the database
// is sorted) form pair p, which a group of GROUP threads aligns with one query: every 32-bit
// register holds a DP cell of each subject in its two signed 16-bit lanes (lo: subject 2p, hi:
// 2p + 1), so one DPX instruction advances both. The query runs down the rows. A pass covers
// GROUP * ROWS rows; lane g of the group owns rows g * ROWS + 1 .. (g + 1) * ROWS of the pass
// and keeps their H and E (see the frame below) in registers. The subject's columns stream
// through the group two at a time as a wavefront: at step s lane g computes columns
// 2(s - g) and 2(s - g) + 1, fed by what lane g - 1 computed for them one step earlier: its
// last row's H and F, and the columns' residue codes, by shuffle. Two columns a step halve the
// per-step work (residues, shuffles, bounds) and give the scheduler two dependency chains to
// interleave; a subject of odd length gets a padding column. A query longer than a pass takes
// several; lane GROUP - 1 hands the pass's last row (H and F of every column) to the next pass
// through global memory.
//
// The groups of a block align one query (blockIdx.y) with consecutive pairs, longest first
// (block 0 takes the longest pairs), so that the long tail of the database starts first.
//
// Values are kept in a frame where none is negative: a register holds t = H for the cells of
// H, and the gap states E + gap_open and F + gap_open, so that opening a gap from H and
// extending one are one DPX instruction each (E' = max(E' - extend, t) with E' = E + open),
// and the substitution scores are shifted by gap_open too: then
//     max(H_diagonal + s, E, F) + open = max(t_diagonal + s', E', F')
//     H = max(that - open, 0)
// Where every s' = s + gap_open is non-negative (BLOSUM62 with BLAST's gaps, blastn's
// defaults), t_diagonal + s' is a plain 32-bit addition of both lanes (no lane is negative,
// none reaches 2^15, so no carry crosses lanes), run as a multiply-add on the FMA pipe while
// the DPX instructions keep the integer pipe busy; otherwise (SIGNED) it is a DPX addition,
// floored at 0, which changes nothing since E' and F' are never negative.
//
// Substitution scores come from the query's profile in shared memory: for each residue code c
// one byte per query row, s(query[i], c) + gap_open (the host checks that it fits [-128, 127]),
// 0 for rows past the query's end. Code n_codes, which every column past a subject's end reads,
// is 0 everywhere. A padding cell scores at most its diagonal source's H - gap_open, and its
// E and F come from cells that score no more than real ones, so padding changes no score.
//
// Overflow: the 16-bit lanes would wrap. While every H so far is at most LIMIT, a new diagonal
// term is at most LIMIT + 127 <= 32767, so the first cell whose H exceeds LIMIT is still
// computed exactly and raises the pair's best above LIMIT: the kernel then reports OVERFLOW and
// the host rescores that pair with 32-bit lanes.

#include "common.cuh"

constexpr int SEARCH_BLOCK = 128;
constexpr int LIMIT = 32767 - 127;
constexpr int OVERFLOW = -2;

// Blocks an SM should hold: as many as registers for about 3 values a row allow (t, E', the
// profile bytes) plus the rest, so that the compiler does not take registers that would leave
// the integer pipe without warps to issue from.
__host__ __device__ constexpr int min_blocks(int rows) {
    return 65536 / (SEARCH_BLOCK * (3 * rows + 32)) < 8 ? 65536 / (SEARCH_BLOCK * (3 * rows + 32))
                                                         : 8;
}

// Two signed 16-bit lanes holding x.
__device__ __forceinline__ u32 splat(int x) { return ((u32)x & 0xffffu) * 0x10001u; }

// PTX prmt in its default mode: a selector nibble with bit 3 set replicates the sign of the
// byte it picks.
__device__ __forceinline__ u32 signed_bytes(u32 lo, u32 hi, u32 selector) {
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(selector));
    return r;
}

// Byte k of `lo` and byte k of `hi`, sign-extended into the low and high 16-bit lanes.
template <int K>
__device__ __forceinline__ u32 byte_pair(u32 lo, u32 hi) {
    return signed_bytes(lo, hi, K | ((K | 8) << 4) | ((4 + K) << 8) | ((12 + K) << 12));
}

// WORDS consecutive words of shared memory, in the widest loads their alignment allows (the
// host aligns a lane's profile bytes to 4 words where WORDS is a multiple of 4).
template <int WORDS>
__device__ __forceinline__ void load_words(const u32* from, u32 (&words)[WORDS]) {
    if constexpr (WORDS % 4 == 0) {
#pragma unroll
        for (int w = 0; w < WORDS; w += 4) {
            const uint4 v = reinterpret_cast<const uint4*>(from)[w / 4];
            words[w] = v.x;
            words[w + 1] = v.y;
            words[w + 2] = v.z;
            words[w + 3] = v.w;
        }
    } else if constexpr (WORDS % 2 == 0) {
#pragma unroll
        for (int w = 0; w < WORDS; w += 2) {
            const uint2 v = reinterpret_cast<const uint2*>(from)[w / 2];
            words[w] = v.x;
            words[w + 1] = v.y;
        }
    } else {
#pragma unroll
        for (int w = 0; w < WORDS; ++w) words[w] = from[w];
    }
}

// The residue codes of column j of the pair, lo | hi << 16; code n_codes past a subject's end.
__device__ __forceinline__ u32 column_codes(const u8* lo_codes, int lo_length,
                                            const u8* hi_codes, int hi_length, int j,
                                            int n_codes) {
    const int lo = j < lo_length ? lo_codes[j] : n_codes;
    const int hi = j < hi_length ? hi_codes[j] : n_codes;
    return (u32)lo | ((u32)hi << 16);
}

// Layout of a pass's profile in shared memory: for each residue code, GROUP lanes of
// LANE_WORDS words, lane g's first ROWS bytes holding its rows' scores (ROWS is even; a lane
// of 4k + 2 rows has 2 bytes unused, so that every lane starts on a word).
template <int GROUP, int ROWS>
struct ProfileLayout {
    static constexpr int LANE_WORDS = (ROWS + 3) / 4;
    static constexpr int LANE_BYTES = 4 * LANE_WORDS;
    static constexpr int CODE_BYTES = GROUP * LANE_BYTES;
};

// One column of a lane's ROWS rows: `column` the codes of its residues, (vt, vf) the H and F'
// of the row above, `diagonal` the H above-left; on return (vt, vf) are the lane's last row's.
template <int GROUP, int ROWS, bool SIGNED>
__device__ __forceinline__ void column_step(const u8* s_bytes, u32 column, int lane,
                                            u32 (&t)[ROWS], u32 (&e)[ROWS], u32& vt, u32& vf,
                                            u32 diagonal, u32& best, u32 open, u32 extend,
                                            u32 one) {
    typedef ProfileLayout<GROUP, ROWS> Layout;
    constexpr int WORDS = Layout::LANE_WORDS;
    const u8* lane_bytes = s_bytes + lane * Layout::LANE_BYTES;
    u32 lo_words[WORDS], hi_words[WORDS];
    load_words<WORDS>(reinterpret_cast<const u32*>(
                          lane_bytes + (column & 0xffffu) * Layout::CODE_BYTES), lo_words);
    load_words<WORDS>(reinterpret_cast<const u32*>(lane_bytes + (column >> 16) *
                                                                    Layout::CODE_BYTES),
                      hi_words);
    u32 t_even = 0;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        u32 sub;
        switch (r % 4) {
            case 0: sub = byte_pair<0>(lo_words[r / 4], hi_words[r / 4]); break;
            case 1: sub = byte_pair<1>(lo_words[r / 4], hi_words[r / 4]); break;
            case 2: sub = byte_pair<2>(lo_words[r / 4], hi_words[r / 4]); break;
            default: sub = byte_pair<3>(lo_words[r / 4], hi_words[r / 4]); break;
        }
        e[r] = __viaddmax_s16x2(e[r], extend, t[r]);  // E': from the left
        vf = __viaddmax_s16x2(vf, extend, vt);        // F': from above
        const u32 d = SIGNED ? __viaddmax_s16x2(diagonal, sub, 0u) : sub * one + diagonal;
        diagonal = t[r];
        t[r] = __viaddmax_s16x2_relu(__vimax3_s16x2(d, e[r], vf), open, 0u);
        vt = t[r];
        if (r % 2 == 0) {
            t_even = vt;
        } else {
            best = __vimax3_s16x2(best, t_even, vt);
        }
    }
}

// Query k of the launch: its profile at profiles + profile_base[k], profile_rows[k] bytes per
// residue code (whole passes, padded with 0); its scores go to row score_rows[k] of `scores`
// (row_stride entries a row, in database order; the first `subjects` are this launch's).
// Subjects are codes[offsets[s] .. offsets[s + 1]). `border` (queries of more than one pass) holds border_stride entries per
// query of the launch: pair p's at border_base[p] (even), one per column rounded up to even.
// `one` is 1 (a value the
// compiler cannot see, so that t + s' stays a multiply-add).
template <int GROUP, int ROWS, bool SIGNED>
__global__ void __launch_bounds__(SEARCH_BLOCK, min_blocks(ROWS))
search_scores(const u8* __restrict__ codes, const i64* __restrict__ offsets, int subjects,
              i64 row_stride,
              const signed char* __restrict__ profiles, const i64* __restrict__ profile_base,
              const int* __restrict__ profile_rows, const i64* __restrict__ score_rows,
              int n_codes, int gap_open, int gap_extend, u32 one,
              uint2* __restrict__ border, const i64* __restrict__ border_base,
              i64 border_stride, int* __restrict__ scores) {
    static_assert(ROWS % 2 == 0 && 32 % GROUP == 0, "rows in pairs, groups within a warp");
    constexpr int PASS_ROWS = GROUP * ROWS;
    extern __shared__ __align__(16) u32 s_profile[];  // (n_codes + 1) codes: ProfileLayout
    const int k = blockIdx.y;
    const int rows = profile_rows[k];
    const int passes = rows / PASS_ROWS;
    const signed char* profile = profiles + profile_base[k];
    const int lane = threadIdx.x % GROUP;
    const int pairs = (subjects + 1) / 2;
    const int pair = pairs - 1 - (int)(((i64)blockIdx.x * SEARCH_BLOCK + threadIdx.x) / GROUP);
    const u8* lo_codes = codes;
    const u8* hi_codes = codes;
    int lo_length = 0, hi_length = 0;
    if (pair >= 0) {
        lo_codes = codes + offsets[2 * pair];
        lo_length = (int)(offsets[2 * pair + 1] - offsets[2 * pair]);
        if (2 * pair + 1 < subjects) {
            hi_codes = codes + offsets[2 * pair + 1];
            hi_length = (int)(offsets[2 * pair + 2] - offsets[2 * pair + 1]);
        }
    }
    const int columns = max(lo_length, hi_length);
    // Every lane of a warp runs the same steps, so that the shuffles see the whole warp.
    const int steps = (int)(__reduce_max_sync(FULL_WARP, (u32)columns) + 1) / 2 + GROUP - 1;
    uint4* pass_border = passes > 1 && pair >= 0
        ? reinterpret_cast<uint4*>(border + k * border_stride + border_base[pair]) : nullptr;
    const u32 open = splat(-gap_open), extend = splat(-gap_extend);
    const u8* s_bytes = reinterpret_cast<const u8*>(s_profile);
    u32 best = 0;
    for (int pass = 0; pass < passes; ++pass) {
        __syncthreads();  // every group is done with the previous pass's profile
        typedef ProfileLayout<GROUP, ROWS> Layout;
        const signed char* from = profile + pass * PASS_ROWS;
        constexpr int LANES_WORDS = GROUP * Layout::LANE_WORDS;  // words a code
        for (int x = threadIdx.x; x < (n_codes + 1) * LANES_WORDS; x += SEARCH_BLOCK) {
            const int c = x / LANES_WORDS;
            const int g = (x % LANES_WORDS) / Layout::LANE_WORDS;
            const int w = x % Layout::LANE_WORDS;
            const signed char* rows_from = from + (i64)c * rows + g * ROWS + 4 * w;
            u32 word = 0;
            if (c == n_codes) {
                word = 0;
            } else if constexpr (ROWS % 4 == 0) {
                word = *reinterpret_cast<const u32*>(rows_from);
            } else {
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    if (4 * w + b < ROWS) word |= (u32)(u8)rows_from[b] << (8 * b);
                }
            }
            s_profile[x] = word;
        }
        __syncthreads();
        const bool first = pass == 0, last = pass == passes - 1;
        // Column 0 and row 0 of the pass: H = 0 (local), and E', F' = 0 (at most H there).
        u32 t[ROWS], e[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            t[r] = 0;
            e[r] = 0;
        }
        // H and F' of the row above the lane's rows in the step's two columns, and H of the
        // row above in the column before them.
        u32 up_t0 = 0, up_f0 = 0, up_t1 = 0, up_f1 = 0, diagonal_top = 0;
        u32 column0 = 0, column1 = 0;
        // Lane 0 reads the next step's residues one step ahead.
        u32 next0 = 0, next1 = 0;
        if (lane == 0 && columns > 0) {
            next0 = column_codes(lo_codes, lo_length, hi_codes, hi_length, 0, n_codes);
            next1 = column_codes(lo_codes, lo_length, hi_codes, hi_length, 1, n_codes);
        }
        for (int step = 0; step < steps; ++step) {
            const int j = 2 * (step - lane);
            u32 last_t0 = 0, last_f0 = 0, last_t1 = 0, last_f1 = 0;
            if (j >= 0 && j < columns) {
                if (lane == 0) {
                    column0 = next0;
                    column1 = next1;
                    if (j + 2 < columns) {
                        next0 = column_codes(lo_codes, lo_length, hi_codes, hi_length,
                                                        j + 2, n_codes);
                        next1 = column_codes(lo_codes, lo_length, hi_codes, hi_length,
                                                        j + 3, n_codes);
                    }
                    if (!first) {
                        const uint4 v = pass_border[j / 2];
                        up_t0 = v.x;
                        up_f0 = v.y;
                        up_t1 = v.z;
                        up_f1 = v.w;
                    }
                }
                u32 vt = up_t0, vf = up_f0;
                column_step<GROUP, ROWS, SIGNED>(s_bytes, column0, lane, t, e, vt, vf, diagonal_top,
                                          best, open, extend, one);
                last_t0 = vt;
                last_f0 = vf;
                vt = up_t1;
                vf = up_f1;
                column_step<GROUP, ROWS, SIGNED>(s_bytes, column1, lane, t, e, vt, vf, up_t0, best,
                                          open, extend, one);
                last_t1 = vt;
                last_f1 = vf;
                if (!last && lane == GROUP - 1) {
                    pass_border[j / 2] = make_uint4(last_t0, last_f0, last_t1, last_f1);
                }
                diagonal_top = up_t1;
            }
            const u32 from_t0 = __shfl_up_sync(FULL_WARP, last_t0, 1, GROUP);
            const u32 from_f0 = __shfl_up_sync(FULL_WARP, last_f0, 1, GROUP);
            const u32 from_t1 = __shfl_up_sync(FULL_WARP, last_t1, 1, GROUP);
            const u32 from_f1 = __shfl_up_sync(FULL_WARP, last_f1, 1, GROUP);
            const u32 from_column0 = __shfl_up_sync(FULL_WARP, column0, 1, GROUP);
            const u32 from_column1 = __shfl_up_sync(FULL_WARP, column1, 1, GROUP);
            if (lane > 0) {
                up_t0 = from_t0;
                up_f0 = from_f0;
                up_t1 = from_t1;
                up_f1 = from_f1;
                column0 = from_column0;
                column1 = from_column1;
            }
        }
        __syncwarp();  // the next pass's lane 0 reads what lane GROUP - 1 wrote
    }
#pragma unroll
    for (int d = GROUP / 2; d > 0; d /= 2) {
        best = __vimax3_s16x2(best, __shfl_xor_sync(FULL_WARP, best, d, GROUP), best);
    }
    if (pair < 0 || lane != 0) return;
    int* out = scores + score_rows[k] * row_stride;
    const int lo_best = (int)(short)(best & 0xffffu), hi_best = ((int)best) >> 16;
    out[2 * pair] = lo_best > LIMIT ? OVERFLOW : lo_best;
    if (2 * pair + 1 < subjects) out[2 * pair + 1] = hi_best > LIMIT ? OVERFLOW : hi_best;
}
