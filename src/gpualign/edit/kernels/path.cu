// CIGARs of task "path" on the GPU: the global alignment of each query with the target range
// [start, end) that the distance kernels found, one thread per pair.
//
// trace_paths stores the vertical deltas of every column of the range (Myers' block step on
// 32-row words, words read from and written to the pair's scratch memory, so any query length
// runs), then walks back from the last cell exactly as the CPU backend does: a diagonal step
// when the cell's value allows it, else an insertion (query only), else a deletion (target
// only), with D[i][j] counted from the stored deltas. The operations, last first, stay in the
// scratch memory; write_runs then writes their runs (operation code and length, first run
// first) at offsets summed from the run counts trace_paths counted, so the whole batch comes
// back to the host as two arrays of runs, with no text to write or split.

#include "common.cuh"

// Threads per block of both kernels: their launch bounds, which the host reads back to size its
// launches.
constexpr int PATH_THREADS = 128;

// D[i][j] of a global alignment from the vertical deltas of column j (top row D[0][j] = j).
__device__ __forceinline__ int column_value(const u32* pv, const u32* mv, int j, int i) {
    int value = j;
    const int full = i >> 5;
    for (int w = 0; w < full; ++w) value += __popc(pv[w]) - __popc(mv[w]);
    const int rest = i & 31;
    if (rest) {
        const u32 mask = (1u << rest) - 1u;
        value += __popc(pv[full] & mask) - __popc(mv[full] & mask);
    }
    return value;
}

// D[i][j] - D[i-1][j] in a column (i >= 1).
__device__ __forceinline__ int vertical_delta(const u32* pv, const u32* mv, int i) {
    const int w = (i - 1) >> 5;
    const u32 bit = 1u << ((i - 1) & 31);
    return (pv[w] & bit) ? 1 : (mv[w] & bit) ? -1 : 0;
}

// Runs of equal operations in ops[0] .. ops[count-1].
__device__ int run_count(const u8* ops, int count) {
    int runs = 0;
    for (int p = 0; p < count; ++p) runs += (p == 0 || ops[p] != ops[p - 1]) ? 1 : 0;
    return runs;
}

// Scratch memory of a pair, from `scratch + offset[pair]` (4-byte units): its match table
// (n_codes x words), its columns 0..n (pv words, then mv words), then its operations (bytes).
__device__ __forceinline__ u32* columns_of(u32* scratch, const i64 offset, int n_codes,
                                          int words) {
    return scratch + offset + (i64)n_codes * words;
}
__device__ __forceinline__ u8* ops_of(u32* scratch, const i64 offset, int n_codes, int words,
                                      int n) {
    return reinterpret_cast<u8*>(columns_of(scratch, offset, n_codes, words)
                                 + 2 * (i64)(n + 1) * words);
}

extern "C" __global__ void __launch_bounds__(PATH_THREADS) trace_paths(
    const u8* __restrict__ q_codes, const i64* __restrict__ q_offsets,
    const u8* __restrict__ t_codes, const i64* __restrict__ t_offsets,
    const i64* __restrict__ q_index, const i64* __restrict__ t_index, const i64 first,
    const int n_pairs, const int* __restrict__ start, const int* __restrict__ end,
    const int n_codes, const int match_codes, const i64* __restrict__ offset,
    u32* __restrict__ scratch, int* __restrict__ op_count, int* __restrict__ runs) {
    const i64 pair = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (pair >= n_pairs) return;
    if (start[pair] < 0) {  // no alignment (over k, or left to the host)
        op_count[pair] = 0;
        runs[pair] = 0;
        return;
    }
    const i64 qi = first >= 0 ? first + pair : q_index[pair];
    const i64 ti = first >= 0 ? first + pair : t_index[pair];
    const u8* q = q_codes + q_offsets[qi];
    const int m = (int)(q_offsets[qi + 1] - q_offsets[qi]);
    const u8* t = t_codes + t_offsets[ti] + start[pair];
    const int n = end[pair] - start[pair];
    const int words = (m + 31) >> 5;
    u32* table = scratch + offset[pair];
    u32* columns = columns_of(scratch, offset[pair], n_codes, words);
    u8* ops = ops_of(scratch, offset[pair], n_codes, words, n);
    int count = 0;
    if (m == 0 || n == 0) {
        for (int j = 0; j < n; ++j) ops[count++] = OP_DELETION;
        for (int i = 0; i < m; ++i) ops[count++] = OP_INSERTION;
    } else {
        for (int k = 0; k < n_codes * words; ++k) table[k] = 0u;
        for (int i = 0; i < m; ++i) {
            const int c = q[i];
            if (c < match_codes) table[c * words + (i >> 5)] |= 1u << (i & 31);
        }
        for (int w = 0; w < words; ++w) {
            columns[w] = ~0u;         // pv of column 0: D[i][0] = i
            columns[words + w] = 0u;  // mv
        }
        for (int j = 0; j < n; ++j) {
            const u32* row = table + t[j] * words;
            const u32* before = columns + 2 * (i64)j * words;
            u32* after = columns + 2 * (i64)(j + 1) * words;
            int hin = 1;  // D[0][j] = j
            for (int w = 0; w < words; ++w) {
                u32 pv = before[w], mv = before[words + w], eq = row[w];
                const u32 xv = eq | mv;
                if (hin < 0) eq |= 1u;
                const u32 xh = (((eq & pv) + pv) ^ pv) | eq;
                u32 ph = mv | ~(xh | pv);
                u32 mh = pv & xh;
                const int hout = (int)(ph >> 31) - (int)(mh >> 31);
                ph = (ph << 1) | (u32)(hin > 0);
                mh = (mh << 1) | (u32)(hin < 0);
                after[w] = mh | ~(xv | ph);
                after[words + w] = ph & xv;
                hin = hout;
            }
        }
        auto pv_of = [&](int j) { return columns + 2 * (i64)j * words; };
        auto mv_of = [&](int j) { return columns + 2 * (i64)j * words + words; };
        int i = m, j = n;
        int current = column_value(pv_of(j), mv_of(j), j, i);
        int left = column_value(pv_of(j - 1), mv_of(j - 1), j - 1, i);  // D[i][j-1]
        while (i > 0 || j > 0) {
            if (i > 0 && j > 0) {
                const int diagonal = left - vertical_delta(pv_of(j - 1), mv_of(j - 1), i);
                const bool same = q[i - 1] == t[j - 1] && q[i - 1] < match_codes;
                if (current == diagonal + (same ? 0 : 1)) {
                    ops[count++] = same ? OP_MATCH : OP_MISMATCH;
                    --i;
                    --j;
                    current = diagonal;
                    left = j > 0 ? column_value(pv_of(j - 1), mv_of(j - 1), j - 1, i) : 0;
                    continue;
                }
            }
            if (i > 0) {
                const int up = current - vertical_delta(pv_of(j), mv_of(j), i);
                if (current == up + 1) {
                    ops[count++] = OP_INSERTION;
                    --i;
                    current = up;
                    left = j > 0 ? left - vertical_delta(pv_of(j - 1), mv_of(j - 1), i + 1) : 0;
                    continue;
                }
            }
            ops[count++] = OP_DELETION;  // in a consistent matrix current == left + 1 here
            --j;
            current = left;
            left = j > 0 ? column_value(pv_of(j - 1), mv_of(j - 1), j - 1, i) : 0;
        }
    }
    op_count[pair] = count;
    runs[pair] = run_count(ops, count);
}

// Writes pair p's runs, first run first, at run_ops + run_at[p] and run_lengths + run_at[p]
// (run_at: an exclusive sum of the run counts of trace_paths): the operation code of each and
// its length.
extern "C" __global__ void __launch_bounds__(PATH_THREADS) write_runs(
    const i64* __restrict__ q_offsets, const i64* __restrict__ q_index, const i64 first,
    const int n_pairs, const int* __restrict__ start, const int* __restrict__ end,
    const int n_codes, const i64* __restrict__ offset, u32* __restrict__ scratch,
    const int* __restrict__ op_count, const i64* __restrict__ run_at, u8* __restrict__ run_ops,
    int* __restrict__ run_lengths) {
    const i64 pair = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (pair >= n_pairs || start[pair] < 0) return;
    const i64 qi = first >= 0 ? first + pair : q_index[pair];
    const int m = (int)(q_offsets[qi + 1] - q_offsets[qi]);
    const int n = end[pair] - start[pair];
    const int words = (m + 31) >> 5;
    const u8* ops = ops_of(scratch, offset[pair], n_codes, words, n);
    i64 at = run_at[pair];
    for (int p = op_count[pair] - 1; p >= 0;) {  // the operations are stored last first
        const u8 op = ops[p];
        int run = 0;
        while (p >= 0 && ops[p] == op) {
            ++run;
            --p;
        }
        run_ops[at] = op;
        run_lengths[at] = run;
        ++at;
    }
}
