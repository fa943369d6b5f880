// Needleman-Wunsch / Smith-Waterman / semi-global / overlap scores (Gotoh, affine or linear
// gaps) for batches of (query, target) pairs, one pair per thread.
//
// Layout of the work. The DP has a row per query symbol and a column per target symbol. A
// thread sweeps its pair in strips of 2*HALF query rows; a strip keeps its cells in HALF
// registers of two lanes each: lane "lo" of register r is row r of the strip's upper half,
// lane "hi" is row HALF + r of its lower half. The halves run as a wavefront: at step c the
// upper half computes column c and the lower half column c - 1, fed by what the upper half's
// last row produced one step earlier, so both lanes of a register advance with one instruction
// and never wait for each other. Narrow lanes are two signed 16-bit halves of a 32-bit word
// (Hopper's DPX instructions viaddmax/vimax3 on s16x2); wide lanes are two 32-bit ints, for
// pairs whose scores might not fit 16 bits (the host decides from a bound, before the run).
//
// A strip hands its last row (H and F of every column) to the next strip through memory:
// each warp owns a segment of (its longest target + 2) x 32 cells, column-major over its lanes,
// so that a warp's accesses coalesce and memory follows the warps' own target lengths.
//
// Scores are kept shifted: t = H - gap_open, and substitution scores are stored as
// s + gap_open, so that one cell costs five DPX/logic instructions for affine gaps
// (E, F, max(E, F), H, t) plus the substitution lookup, and three for linear gaps.
//
// Rows past the query's end (the last strip's padding) copy the row above them: their
// substitution score is -128 - gap_open and a vertical step into them is free. Then the
// strip's last row equals the query's last row, so every mode reads its result from fixed
// registers, and padding never adds a better cell (a copy of row m at the same column comes
// after row m in the order of the tie rules).
//
// The end cell and its tie rules are those of the CPU backend: global: (m, n); semi-global:
// the best cell of the last row, smallest target end; overlap: the last row (before the last
// column) or the last column, smallest end; local: any cell, smallest target end, then
// smallest query end, or the empty alignment at (0, 0) when nothing scores above 0.

#include "common.cuh"

// Substitution schemes (_SUB_* in align/_cuda.py).
enum { SUB_DNA = 0, SUB_TABLE = 1, SUB_PROFILE = 2 };

// PTX prmt in its default mode: a selector nibble with bit 3 set replicates the sign of the
// byte it picks (CUDA's __byte_perm ignores that bit).
__device__ __forceinline__ u32 permute_signed(u32 a, u32 b, u32 selector) {
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(selector));
    return r;
}

// Two signed 16-bit lanes in one 32-bit word.
struct Narrow {
    typedef u32 V;
    typedef u32 Border;  // t in the low half, F in the high half
    static constexpr int NEG = -32768 + 1024;  // "minus infinity": room to subtract from
    // Blocks per multiprocessor the kernels ask the compiler for (registers <= 168): faster
    // than the compiler's own choice, though a few registers spill.
    static constexpr int MIN_BLOCKS = 3;
    __device__ static V make(int lo, int hi) { return (u32)(lo & 0xffff) | ((u32)hi << 16); }
    __device__ static V splat(int x) { return make(x, x); }
    __device__ static int lo(V v) { return (int)(short)(v & 0xffffu); }
    __device__ static int hi(V v) { return ((int)v) >> 16; }
    __device__ static V add_max(V a, V b, V c) { return __viaddmax_s16x2(a, b, c); }
    __device__ static V add_max_relu(V a, V b, V c) { return __viaddmax_s16x2_relu(a, b, c); }
    __device__ static V max2(V a, V b) { return __vimax3_s16x2(a, b, b); }
    __device__ static V max3(V a, V b, V c) { return __vimax3_s16x2(a, b, c); }
    // Lanes of `mask` are all ones or all zeros: take `a` where set.
    __device__ static V select(V mask, V a, V b) { return (a & mask) | (b & ~mask); }
    __device__ static V lane_mask(bool lo, bool hi) {
        return (lo ? 0x0000ffffu : 0u) | (hi ? 0xffff0000u : 0u);
    }
    __device__ static V with_hi(V v, int hi) { return (v & 0xffffu) | ((u32)hi << 16); }
    // Lanes whose value in `last` is below r (small values). One subtraction serves both lanes:
    // a borrow out of the low lane only happens when it is negative, and then the high lane,
    // which holds a smaller value, is negative too.
    __device__ static V beyond(V last, int r) {
        return permute_signed(last - (u32)r * 0x10001u, 0u, 0xbb99u);
    }
    __device__ static Border border(int t, int f) { return make(t, f); }
    __device__ static int border_t(Border b) { return lo(b); }
    __device__ static int border_f(Border b) { return hi(b); }
};

// Two 32-bit lanes.
struct Wide {
    struct V {
        int lo, hi;
    };
    typedef int2 Border;
    static constexpr int NEG = -(1 << 30);
    static constexpr int MIN_BLOCKS = 1;  // two registers a lane: spilling costs more
    __device__ static V make(int lo, int hi) { return V{lo, hi}; }
    __device__ static V splat(int x) { return V{x, x}; }
    __device__ static int lo(V v) { return v.lo; }
    __device__ static int hi(V v) { return v.hi; }
    __device__ static V add_max(V a, V b, V c) {
        return V{__viaddmax_s32(a.lo, b.lo, c.lo), __viaddmax_s32(a.hi, b.hi, c.hi)};
    }
    __device__ static V add_max_relu(V a, V b, V c) {
        return V{__viaddmax_s32_relu(a.lo, b.lo, c.lo), __viaddmax_s32_relu(a.hi, b.hi, c.hi)};
    }
    __device__ static V max2(V a, V b) { return V{max(a.lo, b.lo), max(a.hi, b.hi)}; }
    __device__ static V max3(V a, V b, V c) {
        return V{__vimax3_s32(a.lo, b.lo, c.lo), __vimax3_s32(a.hi, b.hi, c.hi)};
    }
    __device__ static V select(V mask, V a, V b) {
        return V{(a.lo & mask.lo) | (b.lo & ~mask.lo), (a.hi & mask.hi) | (b.hi & ~mask.hi)};
    }
    __device__ static V lane_mask(bool lo, bool hi) { return V{lo ? -1 : 0, hi ? -1 : 0}; }
    __device__ static V with_hi(V v, int hi) { return V{v.lo, hi}; }
    __device__ static V beyond(V last, int r) {  // lanes whose value is below r
        return V{last.lo < r ? -1 : 0, last.hi < r ? -1 : 0};
    }
    __device__ static Border border(int t, int f) { return make_int2(t, f); }
    __device__ static int border_t(Border b) { return b.x; }
    __device__ static int border_f(Border b) { return b.y; }
};

// DNA with match/mismatch scores: codes 0-3 (ACGT) match themselves, N (query 5, target 4)
// matches nothing. A row holds nibbles q | (q|8)<<4 for each lane; XOR with the column's
// t | t<<4 gives a prmt selector that picks byte 0 (match) for equal codes and a mismatch
// byte otherwise, sign-extended to 16 bits.
__device__ __forceinline__ u32 dna_row_code(int code) {
    const u32 q = code >= 4 ? 5u : (u32)code;
    return q | ((q | 8u) << 4);
}
__device__ __forceinline__ u32 dna_column_code(int code) {
    const u32 t = code >= 4 ? 4u : (u32)code;
    return t | (t << 4);
}

// A substitution scheme computes, per column, what its rows need (`column`), then each row's
// pair of scores (`operator()`, row r of both halves) already shifted by gap_open.
template <class L, int SUB, int HALF>
struct Substitution;

// What the kernels receive to compute substitution scores.
struct SubstitutionArgs {
    int match, mismatch, n_codes;
    const short* shared_table;   // SUB_TABLE
    const signed char* profile;  // SUB_PROFILE: this pair's query profile
    int profile_rows;            // SUB_PROFILE: its padded query length
};

// Both DNA schemes: a row holds the nibbles of the two lanes' query codes, a column those of
// the two target codes.
struct DnaCodes {
    typedef u32 Column;
    __device__ u32 row(int lo_code, int hi_code) const {
        return dna_row_code(lo_code) | (dna_row_code(hi_code) << 8);
    }
    __device__ Column column(int lo_code, int hi_code, int) const {
        return dna_column_code(lo_code) | (dna_column_code(hi_code) << 8);
    }
};

template <int HALF>
struct Substitution<Narrow, SUB_DNA, HALF> : DnaCodes {
    u32 match_word, mismatch_word;
    __device__ explicit Substitution(const SubstitutionArgs& a) {
        const u32 x = (u32)a.mismatch & 0xffu;
        match_word = ((u32)a.match & 0xffu) | (x << 8) | (x << 16) | (x << 24);
        mismatch_word = x * 0x01010101u;
    }
    __device__ u32 operator()(u32 row, const Column& column, int) const {
        return permute_signed(match_word, mismatch_word, row ^ column);
    }
};

template <int HALF>
struct Substitution<Wide, SUB_DNA, HALF> : DnaCodes {
    int match, mismatch;
    __device__ explicit Substitution(const SubstitutionArgs& a)
        : match(a.match), mismatch(a.mismatch) {}
    __device__ Wide::V operator()(u32 row, const Column& column, int) const {
        const u32 x = row ^ column;
        return Wide::V{(x & 0x7u) ? mismatch : match, (x & 0x700u) ? mismatch : match};
    }
};

// A substitution table in shared memory, transposed: scores[target * n_codes + query]. A row
// holds the query codes of both lanes, a column the offsets of the target codes' rows; one add
// gives both lanes' indices.
template <class L, int HALF>
struct Substitution<L, SUB_TABLE, HALF> {
    typedef u32 Column;
    const short* scores;
    int n_codes;
    __device__ explicit Substitution(const SubstitutionArgs& a)
        : scores(a.shared_table), n_codes(a.n_codes) {}
    __device__ u32 row(int lo_code, int hi_code) const {
        return (u32)lo_code | ((u32)hi_code << 16);
    }
    __device__ Column column(int lo_code, int hi_code, int) const {
        return (u32)(lo_code * n_codes) | ((u32)(hi_code * n_codes) << 16);
    }
    __device__ typename L::V operator()(u32 row, const Column& column, int) const {
        const u32 index = row + column;
        return L::make(scores[index & 0xffffu], scores[index >> 16]);
    }
};

// A query profile: profile[t * profile_rows + i] = score(query[i], t) + gap_open as int8, -128
// past the query's end. A column loads the strip's scores for its target symbol: the upper
// half's HALF bytes at column c, the lower half's at column c - 1 (16-byte loads when HALF is a
// multiple of 16: the host aligns every profile row).
template <class L, int HALF>
struct Substitution<L, SUB_PROFILE, HALF> {
    static constexpr int WORDS = (HALF + 3) / 4;
    struct Column {
        u32 up[WORDS], low[WORDS];
    };
    const signed char* profile;
    int rows;
    __device__ explicit Substitution(const SubstitutionArgs& a)
        : profile(a.profile), rows(a.profile_rows) {}
    __device__ u32 row(int, int) const { return 0; }
    __device__ static void load(const signed char* from, u32* words) {
        if constexpr (HALF % 16 == 0) {
#pragma unroll
            for (int w = 0; w < WORDS; w += 4) {
                const uint4 v = __ldg(reinterpret_cast<const uint4*>(from) + w / 4);
                words[w] = v.x;
                words[w + 1] = v.y;
                words[w + 2] = v.z;
                words[w + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int w = 0; w < WORDS; ++w) {
                u32 word = 0;
#pragma unroll
                for (int b = 0; b < 4; ++b)
                    if (4 * w + b < HALF) word |= (u32)(u8)from[4 * w + b] << (8 * b);
                words[w] = word;
            }
        }
    }
    __device__ Column column(int lo_code, int hi_code, int i0) const {
        Column c;
        load(profile + (i64)lo_code * rows + i0, c.up);
        load(profile + (i64)hi_code * rows + i0 + HALF, c.low);
        return c;
    }
    __device__ typename L::V operator()(u32, const Column& c, int r) const {
        const u32 up = c.up[r / 4], low = c.low[r / 4];
        const int k = r % 4;
        if constexpr (sizeof(typename L::V) == 4) {
            // Byte k of each word, sign-extended into the two 16-bit lanes.
            return permute_signed(up, low, (u32)k | ((u32)(k | 8) << 4) | ((u32)(4 + k) << 8) |
                                               ((u32)(12 + k) << 12));
        } else {
            return L::make((signed char)(up >> (8 * k)), (signed char)(low >> (8 * k)));
        }
    }
};

// One block per query record: its profile (see SUB_PROFILE) at profile + profile_base[k],
// padded_rows[k] rows per target symbol, `padding` past the query's end (SUB_PROFILE: -128).
// `table` is shifted by gap_open and fits int8.
extern "C" __global__ void __launch_bounds__(256) build_profiles(
    const u8* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const i64* __restrict__ profile_base, const int* __restrict__ padded_rows,
    const short* __restrict__ table, const int n_codes, const int padding,
    signed char* __restrict__ profile) {
    const i64 k = blockIdx.x;
    const u8* q = q_codes + q_offsets[k];
    const int m = (int)(q_offsets[k + 1] - q_offsets[k]);
    const int rows = padded_rows[k];
    signed char* out = profile + profile_base[k];
    for (int x = threadIdx.x; x < rows * n_codes; x += blockDim.x) {
        const int t = x / rows, i = x % rows;
        out[x] = (signed char)(i < m ? table[q[i] * n_codes + t] : padding);
    }
}

// Boundary scores of the mode (before the shift by gap_open).
template <int MODE>
__device__ __forceinline__ int first_row_score(int j, int gap_open, int gap_extend) {
    return (MODE == ALIGN_GLOBAL && j > 0) ? -(gap_open + (j - 1) * gap_extend) : 0;
}
template <int MODE>
__device__ __forceinline__ int first_column_score(int i, int gap_open, int gap_extend) {
    return ((MODE == ALIGN_GLOBAL || MODE == ALIGN_SEMI_GLOBAL) && i > 0)
               ? -(gap_open + (i - 1) * gap_extend) : 0;
}

// The first register r whose lane (hi or lo) holds `value` (the caller knows one does).
template <class L, int HALF, bool HI>
__device__ __forceinline__ int first_row_holding(const typename L::V (&t)[HALF], int value) {
    int row = 0;
    bool found = false;
#pragma unroll
    for (int r = 0; r < HALF; ++r) {
        if (!found && (HI ? L::hi(t[r]) : L::lo(t[r])) == value) {
            row = r;
            found = true;
        }
    }
    return row;
}

// What a thread tracks while it sweeps its pair, in shifted units (t = H - gap_open).
struct Best {
    int score, i, j;        // local, semi-global, overlap's last row
    int column_score, column_i;  // overlap's last column
};

// The columns a strip's sweep computes: c = 1 (the lower half computes a column 0 that is then
// replaced by the true one), the inner columns 2 <= c <= n, and c = n + 1 (only the lower
// half's column n counts). Peeling the two ends keeps the inner loop free of branches, so that
// the compiler can interleave two columns' wavefronts.
enum { FIRST_COLUMN, INNER_COLUMN, PAST_COLUMN };

template <class L, int MODE, bool AFFINE, int SUB, bool FIND_END, int HALF, bool LAST>
__device__ __forceinline__ void sweep_strip(
    const u8* __restrict__ q, const int m, const u8* __restrict__ tg, const int n,
    const int strip, const Substitution<L, SUB, HALF>& substitution, const int gap_open,
    const int gap_extend, typename L::Border* __restrict__ border,
    const i64 border_stride, Best& best, typename L::V& local_best, int& global_t) {
    typedef typename L::V V;
    typedef typename L::Border Border;
    const int i0 = strip * 2 * HALF;  // the strip holds DP rows i0 + 1 ... i0 + 2 * HALF
    const int NEG = L::NEG;
    const V open2 = L::splat(gap_open), neg_open2 = L::splat(-gap_open);
    const V neg_extend2 = L::splat(-gap_extend), neg2 = L::splat(NEG);
    const V pad_substitution = L::splat(-128);
    const V last_real = L::make(m - i0 - 1, m - i0 - HALF - 1);  // LAST: later registers pad

    V t[HALF], e[HALF];
    u32 rows[HALF];
#pragma unroll
    for (int r = 0; r < HALF; ++r) {
        const int up = i0 + r, low = i0 + HALF + r;  // 0-based query positions of the lanes
        rows[r] = substitution.row(up < m ? q[up] : 0, low < m ? q[low] : 0);
        t[r] = L::make(first_column_score<MODE>(up + 1, gap_open, gap_extend) - gap_open,
                       first_column_score<MODE>(low + 1, gap_open, gap_extend) - gap_open);
        e[r] = neg2;
    }
    // H and F entering the upper half from above (row i0) and the lower half from the upper
    // half's last row (row i0 + HALF), with the diagonals one column back.
    int top_diagonal = first_column_score<MODE>(i0, gap_open, gap_extend) - gap_open;
    int mid_t = first_column_score<MODE>(i0 + HALF, gap_open, gap_extend) - gap_open;
    int mid_f = NEG, mid_diagonal = NEG;
    int previous_code = 0;

    // Row i0 at column c <= n + 1: the first row of the mode, or the previous strip's last.
    auto row_above = [&](const int c) -> Border {
        if (strip == 0)
            return L::border(first_row_score<MODE>(c, gap_open, gap_extend) - gap_open, NEG);
        return border[(i64)c * border_stride];
    };

    // One step: the upper half computes column c, the lower half column c - 1.
    auto step = [&](const int WHERE, const int c, const int code, const Border above) {
        const int top_t = WHERE == PAST_COLUMN ? NEG : L::border_t(above);
        const int top_f = WHERE == PAST_COLUMN ? NEG : L::border_f(above);
        const typename Substitution<L, SUB, HALF>::Column column =
            substitution.column(code, previous_code, i0);
        V up_t = L::make(top_t, mid_t), up_f = L::make(top_f, mid_f);
        V diagonal = L::make(top_diagonal, mid_diagonal);
        // Local scores: the best of the column, carried over from the last one when both
        // lanes' columns are real.
        V column_max =
            (MODE == ALIGN_LOCAL && !FIND_END && WHERE == INNER_COLUMN) ? local_best : neg2;
#pragma unroll
        for (int r = 0; r < HALF; ++r) {
            V s = substitution(rows[r], column, r);
            V other;
            const V pad = LAST ? L::beyond(last_real, r) : neg2;
            if (LAST) s = L::select(pad, pad_substitution, s);
            if (AFFINE) {
                e[r] = L::add_max(e[r], neg_extend2, t[r]);  // E = max(E - extend, H_left - open)
                V f = L::add_max(up_f, neg_extend2, up_t);   // F = max(F_up - extend, H_up - open)
                if (LAST) f = L::select(pad, L::add_max(up_t, open2, neg2), f);
                other = L::max2(e[r], f);
                up_f = f;
            } else {
                V up = up_t;
                if (LAST) up = L::select(pad, L::add_max(up_t, open2, neg2), up);
                other = L::max2(t[r], up);
            }
            // H = max(diagonal + s, E, F); local alignments also max with 0.
            const V h = MODE == ALIGN_LOCAL ? L::add_max_relu(diagonal, s, other)
                                      : L::add_max(diagonal, s, other);
            const V next = L::add_max(h, neg_open2, neg2);
            diagonal = t[r];
            t[r] = next;
            up_t = next;
            if (MODE == ALIGN_LOCAL && r % 2 == 1)
                column_max = L::max3(column_max, t[r - 1], next);
            if (MODE == ALIGN_LOCAL && r % 2 == 0 && r == HALF - 1)
                column_max = L::max2(column_max, next);
        }
        if (WHERE == FIRST_COLUMN) {  // the lower half computed "column 0": put the true one back
#pragma unroll
            for (int r = 0; r < HALF; ++r) {
                const int low = i0 + HALF + r;
                t[r] = L::with_hi(t[r], first_column_score<MODE>(low + 1, gap_open, gap_extend) -
                                            gap_open);
                e[r] = L::with_hi(e[r], NEG);
            }
        } else if (!LAST) {  // the strip's last row at column c - 1, for the next strip
            border[(i64)(c - 1) * border_stride] = L::border(L::hi(up_t), L::hi(up_f));
        }
        const int bottom = L::hi(up_t);  // row i0 + 2 * HALF (the query's last row when LAST)
        if (MODE == ALIGN_LOCAL) {
            if (FIND_END) {
                // Lane hi is column c - 1, lane lo column c: the earlier column first.
                const int v_hi = L::hi(column_max), v_lo = L::lo(column_max);
                if (WHERE != FIRST_COLUMN &&
                    (v_hi > best.score || (v_hi == best.score && c - 1 < best.j))) {
                    const int row = first_row_holding<L, HALF, true>(t, v_hi);
                    best.score = v_hi;
                    best.i = i0 + HALF + row + 1;
                    best.j = c - 1;
                }
                if (WHERE != PAST_COLUMN &&
                    (v_lo > best.score || (v_lo == best.score && c < best.j))) {
                    const int row = first_row_holding<L, HALF, false>(t, v_lo);
                    best.score = v_lo;
                    best.i = i0 + row + 1;
                    best.j = c;
                }
            } else if (WHERE == INNER_COLUMN) {
                local_best = column_max;
            } else {
                local_best = L::max2(local_best, L::select(L::lane_mask(WHERE == FIRST_COLUMN,
                                                                        WHERE == PAST_COLUMN),
                                                           column_max, neg2));
            }
        }
        if ((MODE == ALIGN_SEMI_GLOBAL || MODE == ALIGN_OVERLAP) && LAST &&
            WHERE != FIRST_COLUMN && (MODE == ALIGN_SEMI_GLOBAL || WHERE != PAST_COLUMN) &&
            bottom > best.score) {
            best.score = bottom;  // the last row, at column c - 1
            best.j = c - 1;
        }
        // The last column: upper rows at c = n, lower at n + 1.
        if (MODE == ALIGN_OVERLAP && c >= n) {
#pragma unroll
            for (int r = 0; r < HALF; ++r) {
                const int v = c == n ? L::lo(t[r]) : L::hi(t[r]);
                const int row = c == n ? i0 + r + 1 : i0 + HALF + r + 1;
                if (row <= m && v > best.column_score) {
                    best.column_score = v;
                    best.column_i = row;
                }
            }
        }
        if (MODE == ALIGN_GLOBAL && LAST && WHERE == PAST_COLUMN) global_t = bottom;
        top_diagonal = top_t;
        mid_diagonal = mid_t;
        mid_t = L::lo(up_t);
        mid_f = L::lo(up_f);
        previous_code = code;
    };

    step(FIRST_COLUMN, 1, tg[0], row_above(1));
    // The next column's symbol and row above are loaded one step ahead (past the end they
    // repeat the last symbol or read the unused column n + 1).
    int code = tg[min(1, n - 1)];
    Border above = row_above(2);
#pragma unroll 2
    for (int c = 2; c <= n; ++c) {
        const int this_code = code;
        const Border this_above = above;
        code = tg[min(c, n - 1)];
        above = row_above(c + 1);
        step(INNER_COLUMN, c, this_code, this_above);
    }
    step(PAST_COLUMN, n + 1, 0, above);
}

// One thread per pair p: scores (and end cells with FIND_END, for local alignments; the other
// modes always report theirs) of q_codes[q_index[p]] against t_codes[t_index[p]]. Both must be
// non-empty. `table` is the n_codes x n_codes substitution table already shifted by gap_open
// (SUB_TABLE; it goes to shared memory), match/mismatch likewise (SUB_DNA); SUB_PROFILE reads
// the query profiles made by build_profiles (query record k's at profile_base[k]). Warp w (pairs
// 32w ... 32w + 31) keeps its strip borders at border[warp_border[w] + column * 32 + lane].
template <class L, int MODE, bool AFFINE, int SUB, bool FIND_END, int HALF>
__global__ void __launch_bounds__(128, L::MIN_BLOCKS) align_pairs(
    const u8* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const u8* __restrict__ t_codes, const i64* __restrict__ t_offsets,
    const i64* __restrict__ q_index, const i64* __restrict__ t_index, const int n_pairs,
    const short* __restrict__ table, const int n_codes, const int match, const int mismatch,
    const signed char* __restrict__ profiles, const i64* __restrict__ profile_base,
    const int* __restrict__ padded_rows,
    const int gap_open, const int gap_extend, typename L::Border* __restrict__ border,
    const i64* __restrict__ warp_border, int* __restrict__ score_out,
    int* __restrict__ q_end_out, int* __restrict__ t_end_out) {
    extern __shared__ short shared_table[];
    if (SUB == SUB_TABLE) {
        for (int k = threadIdx.x; k < n_codes * n_codes; k += blockDim.x)
            shared_table[(k % n_codes) * n_codes + k / n_codes] = table[k];
        __syncthreads();
    }
    const i64 pair = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (pair >= n_pairs) return;
    const i64 qi = q_index[pair], ti = t_index[pair];
    const u8* q = q_codes + q_offsets[qi];
    const u8* tg = t_codes + t_offsets[ti];
    const int m = (int)(q_offsets[qi + 1] - q_offsets[qi]);
    const int n = (int)(t_offsets[ti + 1] - t_offsets[ti]);
    SubstitutionArgs args{match, mismatch, n_codes, shared_table, nullptr, 0};
    if (SUB == SUB_PROFILE) {
        args.profile = profiles + profile_base[qi];
        args.profile_rows = padded_rows[qi];
    }
    const Substitution<L, SUB, HALF> substitution(args);
    typename L::Border* my_border = border + warp_border[pair >> 5] + (pair & 31);
    const i64 border_stride = 32;

    Best best;
    best.score = MODE == ALIGN_LOCAL ? -gap_open : L::NEG;  // local: the empty alignment, H = 0
    best.i = MODE == ALIGN_LOCAL ? 0 : m;
    best.j = 0;
    best.column_score = L::NEG;
    best.column_i = m;
    typename L::V local_best = L::splat(-gap_open);
    int global_t = 0;
    const int strips = (m + 2 * HALF - 1) / (2 * HALF);
    for (int strip = 0; strip + 1 < strips; ++strip)
        sweep_strip<L, MODE, AFFINE, SUB, FIND_END, HALF, false>(
            q, m, tg, n, strip, substitution, gap_open, gap_extend, my_border,
            border_stride, best, local_best, global_t);
    sweep_strip<L, MODE, AFFINE, SUB, FIND_END, HALF, true>(
        q, m, tg, n, strips - 1, substitution, gap_open, gap_extend, my_border,
        border_stride, best, local_best, global_t);

    int score, q_end, t_end;
    if (MODE == ALIGN_GLOBAL) {
        score = global_t;
        q_end = m;
        t_end = n;
    } else if (MODE == ALIGN_LOCAL && !FIND_END) {
        score = max(L::lo(local_best), L::hi(local_best));
        q_end = t_end = -1;
    } else if (MODE == ALIGN_OVERLAP && best.column_score > best.score) {
        score = best.column_score;  // the last row wins ties (the CPU backend's rule)
        q_end = best.column_i;
        t_end = n;
    } else {
        score = best.score;
        q_end = best.i;
        t_end = best.j;
    }
    score_out[pair] = score + gap_open;
    q_end_out[pair] = q_end;
    t_end_out[pair] = t_end;
}
