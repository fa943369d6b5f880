// Global and semi-global paths in bands of diagonals (align/_band.py): a thread a pair, the
// recurrences, end cell, ties and traceback of align/_cpu.py's band_batch (those of its _fill
// and _traceback, in the cells (i, j) with low <= j - i < low + width; the others are minus
// infinity).
//
// The pairs come in warps of similar bands (the host sorts them by width). A warp's lanes keep
// their rows and traceback bytes interleaved, lane after lane, so that a warp's lanes stepping
// through the same cell of their bands touch consecutive addresses:
//   cells[warp_cells[w] + (c * 32 + lane)]                H of the previous row's cell c, then
//                                                          this row's (c = 0 .. W, W the
//                                                          warp's widest band: c = width stays
//                                                          minus infinity)
//   cells[warp_cells[w] + ((W + 1 + c) * 32 + lane)]      F likewise
//   trace[warp_trace[w] + (((i - 1) * W + c) * 32 + lane)] traceback byte of cell (i, low + i
//                                                          + c), rows 1 .. m
// Then the thread walks back from the end cell, writing its operations, last first, from
// ops[room[p]] and counting their runs; band_runs writes those runs, first first, as a word
// each (the length above two bits of operation: PackedCigars.from_words) from words[first[p]].
// A pair whose traceback would leave its band reports columns -1 (no optimum lies in the band:
// the host aligns it in full).

#include "common.cuh"

constexpr int BAND_NEG = -(1 << 29);  // minus infinity, with room for gap costs below it
// Traceback byte: bits 0-1 where H came from, bit 2 E opened here, bit 3 F opened here.
constexpr int FROM_DIAGONAL = 0, FROM_E = 1, FROM_F = 2;
constexpr int E_OPENED = 4, F_OPENED = 8;
// Rows of `results` (the order of BAND_OUTPUTS in align/_cuda.py), `count` ints each.
enum BandResult { SCORE, Q_START, T_START, T_END, MATCHES, COLUMNS, RUNS, BAND_RESULTS };
// Substitution tables of at most this many codes a side are read from shared memory.
constexpr int SHARED_CODES = 32;

template <bool GLOBAL>
__global__ void __launch_bounds__(128)
band_fill(const u8* __restrict__ q_codes, const i64* __restrict__ q_offsets,
          const u8* __restrict__ t_codes, const i64* __restrict__ t_offsets,
          const i64* __restrict__ q_index, const i64* __restrict__ t_index,
          const int* __restrict__ low, const int* __restrict__ width,
          const int* __restrict__ warp_width, const i64* __restrict__ warp_cells,
          const i64* __restrict__ warp_trace, const i64* __restrict__ room,
          const int* __restrict__ table, const int n_codes, const int match_codes,
          const int gap_open, const int gap_extend, const int count, int* __restrict__ cells,
          u8* __restrict__ trace, u8* __restrict__ ops, int* __restrict__ results) {
    __shared__ int s_table[SHARED_CODES * SHARED_CODES];
    const bool in_shared = n_codes <= SHARED_CODES;
    if (in_shared) {
        for (int k = threadIdx.x; k < n_codes * n_codes; k += blockDim.x) s_table[k] = table[k];
        __syncthreads();
    }
    const int* scores = in_shared ? s_table : table;
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= count) return;
    const int lane = p & 31, warp = p >> 5;
    const i64 q0 = q_offsets[q_index[p]], t0 = t_offsets[t_index[p]];
    const u8* a = q_codes + q0;
    const u8* b = t_codes + t0;
    const int m = (int)(q_offsets[q_index[p] + 1] - q0), n = (int)(t_offsets[t_index[p] + 1] - t0);
    const int lo = low[p], w = width[p], wide = warp_width[warp];
    int* h = cells + warp_cells[warp] + lane;
    int* f = h + (wide + 1) * 32;
    u8* codes = trace + warp_trace[warp] + lane;
    const int top_excess = gap_open - gap_extend;

    for (int c = 0; c <= w; ++c) {  // row 0
        const int j = lo + c;
        int value = BAND_NEG;
        if (c < w && j >= 0 && j <= n) value = GLOBAL && j > 0 ? -(gap_open + (j - 1) * gap_extend) : 0;
        h[c * 32] = value;
        f[c * 32] = BAND_NEG;
    }
    for (int i = 1; i <= m; ++i) {
        const int* row = scores + a[i - 1] * n_codes;
        u8* row_codes = codes + (i64)(i - 1) * wide * 32;
        int e = BAND_NEG, left = BAND_NEG;
        int diagonal = h[0];  // H of the previous row's cell c, read one cell ahead
        for (int c = 0; c < w; ++c) {
            const int j = i + lo + c;
            const int up = h[(c + 1) * 32], f_up = f[(c + 1) * 32];
            int value, fj, code = 0;
            if (j < 0 || j > n) {
                value = fj = e = BAND_NEG;
            } else if (j == 0) {
                value = -(top_excess + i * gap_extend);
                fj = e = BAND_NEG;
            } else {
                const int e_open = left - gap_open, e_extend = e - gap_extend;
                e = max(e_open, e_extend);
                const int f_open = up - gap_open, f_extend = f_up - gap_extend;
                fj = max(f_open, f_extend);
                const int d = diagonal + row[__ldg(b + j - 1)];
                value = max(d, max(e, fj));
                code = value == d ? FROM_DIAGONAL : value == e ? FROM_E : FROM_F;
                if (e_open >= e_extend) code |= E_OPENED;
                if (f_open >= f_extend) code |= F_OPENED;
            }
            row_codes[c * 32] = (u8)code;
            h[c * 32] = value;
            f[c * 32] = fj;
            left = value;
            diagonal = up;
        }
    }
    int end_j = n;
    if (!GLOBAL) {  // the best of the last row, the smallest column on ties
        int best = BAND_NEG - 1;
        for (int c = 0; c < w; ++c) {
            const int j = m + lo + c;
            const int value = h[c * 32];
            if (j >= 1 && j <= n && value > best) {
                best = value;
                end_j = j;
            }
        }
    }
    results[SCORE * count + p] = h[(end_j - m - lo) * 32];
    results[T_END * count + p] = end_j;

    u8* out = ops + room[p];
    int i = m, j = end_j, written = 0, runs = 0, matched = 0, state = 0;  // state 1: D, 2: I
    int last = -1;
    auto put = [&](int op) {
        out[written++] = (u8)op;
        runs += op != last;
        last = op;
    };
    bool inside = true;
    while (i > 0) {
        if (j == 0) {
            while (i > 0) {
                put(OP_INSERTION);
                --i;
            }
            break;
        }
        const int c = j - i - lo;
        if (c < 0 || c >= w) {
            inside = false;
            break;
        }
        const int code = codes[((i64)(i - 1) * wide + c) * 32];
        if (state == 0) {
            const int source = code & 3;
            if (source == FROM_DIAGONAL) {
                const bool equal = a[i - 1] == b[j - 1] && a[i - 1] < match_codes;
                put(equal ? OP_MATCH : OP_MISMATCH);
                matched += equal;
                --i;
                --j;
            } else {
                state = source == FROM_E ? 1 : 2;
            }
        } else if (state == 1) {
            put(OP_DELETION);
            if (code & E_OPENED) state = 0;
            --j;
        } else {
            put(OP_INSERTION);
            if (code & F_OPENED) state = 0;
            --i;
        }
    }
    if (GLOBAL) {  // the rest is one gap along row 0
        while (j > 0) {
            put(OP_DELETION);
            --j;
        }
    }
    results[Q_START * count + p] = i;
    results[T_START * count + p] = j;
    results[MATCHES * count + p] = matched;
    results[COLUMNS * count + p] = inside ? written : -1;
    results[RUNS * count + p] = inside ? runs : 0;
}

// Pair p's runs, first first, a word each from words[first[p]] (its operations lie last
// first from ops[room[p]]).
extern "C" __global__ void __launch_bounds__(128)
band_runs(const u8* __restrict__ ops, const i64* __restrict__ room,
          const int* __restrict__ results, const i64* __restrict__ first, const int count,
          u32* __restrict__ words) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= count) return;
    const int columns = results[COLUMNS * count + p];
    const u8* in = ops + room[p];
    u32* out = words + first[p];
    int k = columns - 1;
    while (k >= 0) {
        const u8 op = in[k];
        int length = 0;
        while (k >= 0 && in[k] == op) {
            ++length;
            --k;
        }
        *out++ = ((u32)length << 2) | op;
    }
}
