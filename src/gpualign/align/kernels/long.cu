// Long alignments over the whole GPU: a batch of DP problems (whole pairs, or the subproblems
// of a linear-space alignment, align/_linear.py), each cut into tiles, computed as a wavefront
// of tiles: launch d computes tile (I, J) with I + J = d of every problem of the batch, one
// block per tile, so a launch has work for every SM once the problems are long.
//
// A tile is THREADS * RPT query rows by `tile_columns` target columns. Thread t owns rows
// t * RPT + 1 .. (t + 1) * RPT of the tile and keeps their H and E in registers; the threads
// run as a wavefront inside the tile: at step s thread t computes column s - t, fed with the
// last row (H and F) that thread t - 1 computed one step earlier (a shuffle inside a warp, a
// slot of shared memory between warps, with a barrier per step).
//
// Tile borders live in global memory, O(m + n) per problem:
//   rows[row_base + j], j = 1..n         H and F of the bottom row of the last tile row that
//                                        passed column j (at the end: row m, the last row)
//   columns[column_base + i], i = 1..   H and E of the right column of the last tile that
//                                        passed row i (at the end: column n); rows padded to
//                                        whole tiles
//   corners[slot_base + I]              H of the top-right cell of the last tile of tile row
//                                        I: the diagonal of the next tile's first cell (its
//                                        neighbours overwrite the cells of rows and columns
//                                        that held it one launch earlier)
//   best[3 * (slot_base + I)]            TRACK_BEST: the best cell of tile row I so far
// A tile reads its top row into shared memory and its left column into registers before it
// writes anything; the tiles of one launch touch disjoint parts of these arrays.
//
// Boundaries (row 0 and column 0 are not computed): H(0, 0) = 0; row 0 is free (free_top) or
// a horizontal gap, -(gap_open + (j - 1) * gap_extend); column 0 is free (free_left) or a
// vertical gap that costs top_excess + i * gap_extend (top_excess = gap_open - gap_extend,
// or 0 when the gap continues one opened above: align/_linear.py). E and F are "minus
// infinity" on them. Scores are int32; the host sends only problems whose values provably
// fit, the rows past a problem's end in its last tile row included.
//
// Recurrences and ties are those of align/_cpu.py's _fill: E = max(E_left - extend,
// H_left - open) (a gap in the query, D), F = max(F_up - extend, H_up - open) (I), H =
// max(H_diagonal + s, E, F) and 0 when FLOOR_ZERO. TRACK_BEST keeps the best cell of any
// position with the CPU backend's order (the larger score, then the smaller column, then the
// smaller row); the other end cells (last row, last column, corner) are read from the borders
// by the host.
//
// Problems are a struct of int64 fields (enum Field, the order of PROBLEM_FIELDS in
// align/_cuda_long.py). Launch d gets the problems that still have tiles on anti-diagonal d
// (`order[0 .. active)`) and the cumulative count of their tiles on it (`first_block`, active
// + 1 entries): block b belongs to the problem k with first_block[k] <= b < first_block[k + 1].

#include "common.cuh"

enum Field {
    A_BASE,       // a's first code in a_codes (a[a_start])
    B_BASE,       // b's first code in b_codes
    M,            // rows: a_end - a_start (>= 1)
    N,            // columns: b_end - b_start (>= 1)
    REVERSE,      // 1: the DP runs on both sequences reversed
    TOP_EXCESS,   // excess of a vertical gap down column 0
    FREE_TOP,     // 1: row 0 scores 0
    FREE_LEFT,    // 1: column 0 scores 0
    ROW_BASE,     // index of column 0 in `rows`
    COLUMN_BASE,  // index of row 0 in `columns`
    SLOT_BASE,    // index of tile row 0 in `corners` and (times 3) in `best`
    FIELDS
};

constexpr int NEG = -(1 << 30);  // "minus infinity", with room to subtract gap costs

struct Problem {
    const u8* a;
    const u8* b;
    int m, n, top_excess;
    bool reverse, free_top, free_left;

    __device__ int a_code(int i) const { return reverse ? a[m - i] : a[i - 1]; }  // row i
    __device__ int b_code(int j) const { return reverse ? b[n - j] : b[j - 1]; }  // column j
    __device__ int top(int j, int gap_open, int gap_extend) const {  // H(0, j), j >= 1
        return free_top ? 0 : -(gap_open + (j - 1) * gap_extend);
    }
    __device__ int left(int i, int gap_extend) const {  // H(i, 0), i >= 1
        return free_left ? 0 : -(top_excess + i * gap_extend);
    }
};

// The better of two cells in the CPU backend's order: larger score, smaller column, smaller row.
__device__ __forceinline__ bool better(int score, int i, int j, int other_score, int other_i,
                                       int other_j) {
    return score > other_score ||
           (score == other_score && (j < other_j || (j == other_j && i < other_i)));
}

// The best cell of the block into thread 0's (score, i, j); `shared` holds 3 ints per warp.
template <int THREADS>
__device__ void block_best(int& score, int& i, int& j, int* shared) {
    for (int d = 16; d > 0; d /= 2) {
        const int s2 = __shfl_down_sync(FULL_WARP, score, d);
        const int i2 = __shfl_down_sync(FULL_WARP, i, d);
        const int j2 = __shfl_down_sync(FULL_WARP, j, d);
        if (better(s2, i2, j2, score, i, j)) {
            score = s2;
            i = i2;
            j = j2;
        }
    }
    if constexpr (THREADS > 32) {
        const int warp = threadIdx.x / 32;
        if (threadIdx.x % 32 == 0) {
            shared[3 * warp] = score;
            shared[3 * warp + 1] = i;
            shared[3 * warp + 2] = j;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < THREADS / 32; ++w) {
                if (better(shared[3 * w], shared[3 * w + 1], shared[3 * w + 2], score, i, j)) {
                    score = shared[3 * w];
                    i = shared[3 * w + 1];
                    j = shared[3 * w + 2];
                }
            }
        }
    }
}

// What a tile needs besides its problem: the scoring and its place in the matrix.
struct Tile {
    int c0, width;          // columns c0 + 1 .. c0 + width
    int tile_row0, bottom;  // rows tile_row0 + 1 .. bottom are real (bottom <= m)
    int gap_open, gap_extend, match, mismatch;
};

// One tile, after its top row (above[k] = H, F of column c0 + 1 + k) and target codes
// (b_codes[k]) are in shared memory. LAST: the problem's last tile row, whose rows past m
// are padding (computed, never reported).
template <int THREADS, int RPT, bool DNA, bool FLOOR_ZERO, bool TRACK_BEST, bool LAST>
__device__ __forceinline__ void sweep_tile(const Problem& p, const Tile& tile, int diagonal,
                                           int (&h)[RPT], int (&e)[RPT], const int (&q)[RPT],
                                           const int2* above, const u8* b_codes,
                                           const short* table, int2* exchange,
                                           int2* __restrict__ rows, int& best, int& best_i,
                                           int& best_j) {
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int row0 = tile.tile_row0 + t * RPT;
    // The thread and register that hold the tile's last real row (the bottom row).
    const int bottom_owner = (tile.bottom - 1 - tile.tile_row0) / RPT;
    const int bottom_r = (tile.bottom - 1 - tile.tile_row0) % RPT;
    const int go = tile.gap_open, ge = tile.gap_extend;
    int up_h = 0, up_f = NEG;  // H and F of row row0 at this thread's column
    const int steps = tile.width + THREADS - 1;
    for (int s = 0; s < steps; ++s) {
        const int k = s - t;  // this step's column: c0 + 1 + k
        int out_h = 0, out_f = NEG;
        if (k >= 0 && k < tile.width) {
            if (t == 0) {
                const int2 v = above[k];
                up_h = v.x;
                up_f = v.y;
            }
            const int bj = b_codes[k];
            int vh = up_h, vf = up_f, d = diagonal;
            int bottom_h = 0, bottom_f = NEG;
#pragma unroll
            for (int r = 0; r < RPT; ++r) {
                e[r] = max(e[r] - ge, h[r] - go);
                const int f = max(vf - ge, vh - go);
                const int sub = DNA ? (q[r] == bj ? tile.match : tile.mismatch) : table[q[r] + bj];
                int score = max(d + sub, max(e[r], f));
                if (FLOOR_ZERO) score = max(score, 0);
                if (TRACK_BEST && score > best && (!LAST || row0 + r < tile.bottom)) {
                    best = score;
                    best_i = row0 + r + 1;
                    best_j = tile.c0 + 1 + k;
                }
                if (LAST && r == bottom_r) {
                    bottom_h = score;
                    bottom_f = f;
                }
                d = h[r];
                h[r] = score;
                vh = score;
                vf = f;
            }
            if (!LAST) {
                bottom_h = vh;
                bottom_f = vf;
            }
            if (t == bottom_owner) rows[tile.c0 + 1 + k] = make_int2(bottom_h, bottom_f);
            diagonal = up_h;  // H(row0, this column): the next column's diagonal
            out_h = vh;
            out_f = vf;
        }
        // Hand this thread's last row to the next thread for its next step.
        const int from_h = __shfl_up_sync(FULL_WARP, out_h, 1);
        const int from_f = __shfl_up_sync(FULL_WARP, out_f, 1);
        if (lane > 0) {
            up_h = from_h;
            up_f = from_f;
        }
        if constexpr (THREADS > 32) {
            int2* slot = exchange + (s & 1) * (THREADS / 32);
            if (lane == 31) slot[warp] = make_int2(out_h, out_f);
            __syncthreads();
            if (lane == 0 && warp > 0) {
                const int2 v = slot[warp - 1];
                up_h = v.x;
                up_f = v.y;
            }
        }
    }
}

// Launch `diagonal` of the wavefront: one block per tile (see the top of the file). `table`
// (not DNA) is the n_codes x n_codes substitution table; DNA scores are match for equal codes
// below match_codes, else mismatch. Dynamic shared memory: tile_columns int2 (the top row),
// 2 * THREADS / 32 int2 (the exchange between warps), n_codes^2 shorts unless DNA, and
// tile_columns bytes (the target codes).
template <int THREADS, int RPT, bool DNA, bool FLOOR_ZERO, bool TRACK_BEST>
__global__ void __launch_bounds__(THREADS)
long_tiles(const u8* __restrict__ a_codes, const u8* __restrict__ b_codes,
           const i64* __restrict__ problems, const int* __restrict__ order,
           const i64* __restrict__ first_block, const int active, const int diagonal,
           const short* __restrict__ table, const int n_codes, const int match,
           const int mismatch, const int match_codes, const int gap_open, const int gap_extend,
           const int tile_columns, int2* __restrict__ rows, int2* __restrict__ columns,
           int* __restrict__ corners, int* __restrict__ best_cells) {
    static_assert(THREADS % 32 == 0, "whole warps");
    constexpr int TILE_ROWS = THREADS * RPT;
    extern __shared__ int2 shared[];
    int2* above = shared;
    int2* exchange = above + tile_columns;
    short* s_table = reinterpret_cast<short*>(exchange + 2 * (THREADS / 32));
    u8* s_b = reinterpret_cast<u8*>(s_table + (DNA ? 0 : n_codes * n_codes));
    __shared__ int reduce[3 * (THREADS / 32)];

    // This block's problem: the last k with first_block[k] <= blockIdx.x.
    const i64 block = blockIdx.x;
    int lo = 0, hi = active - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (first_block[mid] <= block) lo = mid;
        else hi = mid - 1;
    }
    const i64* fields = problems + (i64)order[lo] * FIELDS;
    Problem p;
    p.a = a_codes + fields[A_BASE];
    p.b = b_codes + fields[B_BASE];
    p.m = (int)fields[M];
    p.n = (int)fields[N];
    p.top_excess = (int)fields[TOP_EXCESS];
    p.reverse = fields[REVERSE] != 0;
    p.free_top = fields[FREE_TOP] != 0;
    p.free_left = fields[FREE_LEFT] != 0;
    const int tiles_across = (p.n + tile_columns - 1) / tile_columns;
    const int I = max(0, diagonal - (tiles_across - 1)) + (int)(block - first_block[lo]);
    const int J = diagonal - I;
    int2* p_rows = rows + fields[ROW_BASE];
    int2* p_columns = columns + fields[COLUMN_BASE];
    const i64 slot = fields[SLOT_BASE] + I;

    Tile tile;
    tile.c0 = J * tile_columns;
    tile.width = min(tile_columns, p.n - tile.c0);
    tile.tile_row0 = I * TILE_ROWS;
    tile.bottom = min(tile.tile_row0 + TILE_ROWS, p.m);
    tile.gap_open = gap_open;
    tile.gap_extend = gap_extend;
    tile.match = match;
    tile.mismatch = mismatch;

    for (int k = threadIdx.x; k < tile.width; k += THREADS) {
        const int j = tile.c0 + 1 + k;
        s_b[k] = (u8)p.b_code(j);
        above[k] = I == 0 ? make_int2(p.top(j, gap_open, gap_extend), NEG) : p_rows[j];
    }
    if (!DNA) {
        for (int k = threadIdx.x; k < n_codes * n_codes; k += THREADS) s_table[k] = table[k];
    }

    const int t = threadIdx.x;
    const int row0 = tile.tile_row0 + t * RPT;
    int h[RPT], e[RPT], q[RPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        const int i = row0 + r + 1;
        const int code = i <= p.m ? p.a_code(i) : 0;  // padding rows: any code
        // DNA: codes from match_codes up match nothing, -1 equals no target code.
        q[r] = DNA ? (code < match_codes ? code : -1) : code * n_codes;
        if (J == 0) {
            h[r] = p.left(i, gap_extend);
            e[r] = NEG;
        } else {
            const int2 v = p_columns[i];
            h[r] = v.x;
            e[r] = v.y;
        }
    }
    // H(row0, c0): the diagonal of this thread's first cell.
    int diagonal_h;
    if (row0 == 0) {
        diagonal_h = tile.c0 == 0 ? 0 : p.top(tile.c0, gap_open, gap_extend);
    } else if (tile.c0 == 0) {
        diagonal_h = p.left(row0, gap_extend);
    } else if (t == 0) {
        diagonal_h = corners[slot];
    } else {
        diagonal_h = p_columns[row0].x;
    }
    __syncthreads();  // every read of the borders above is done before anything is written
    if (t == 0) corners[slot] = above[tile.width - 1].x;  // for tile (I, J + 1)

    int best = NEG, best_i = 0, best_j = 0;
    if (tile.bottom < tile.tile_row0 + TILE_ROWS) {
        sweep_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, true>(
            p, tile, diagonal_h, h, e, q, above, s_b, s_table, exchange, p_rows, best, best_i,
            best_j);
    } else {
        sweep_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, false>(
            p, tile, diagonal_h, h, e, q, above, s_b, s_table, exchange, p_rows, best, best_i,
            best_j);
    }
#pragma unroll
    for (int r = 0; r < RPT; ++r) p_columns[row0 + r + 1] = make_int2(h[r], e[r]);
    if (TRACK_BEST) {
        block_best<THREADS>(best, best_i, best_j, reduce);
        if (t == 0) {
            int* kept = best_cells + 3 * slot;
            if (better(best, best_i, best_j, kept[0], kept[1], kept[2])) {
                kept[0] = best;
                kept[1] = best_i;
                kept[2] = best_j;
            }
        }
    }
}
