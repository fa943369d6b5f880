// Long alignments over the whole GPU: a batch of DP problems (whole pairs, or the subproblems
// of a linear-space alignment, align/_linear.py), each cut into tiles, computed as a wavefront
// of tiles, one block per tile: anti-diagonal d of tiles (the tiles (I, J) with I + J = d of
// every problem of the batch) after anti-diagonal d - 1, so that each has work for every SM
// once the problems are long. Two schedules of tiles (TICKETS; long_bands, below, is a third:
// a block per whole tile row):
//   - one launch per anti-diagonal: block b of launch d computes tile b of anti-diagonal d;
//   - one launch for the batch: a block takes the next ticket (an atomic counter; tickets go
//     through the anti-diagonals in order) and waits until the tiles it depends on, (I - 1, J)
//     and (I, J - 1), are done (`done[slot_base + I]` counts the finished tiles of tile row I,
//     which finish in order). Deadlock-free whatever the number of resident blocks: the tiles
//     a block waits for have smaller tickets, so blocks that are already running hold them.
//     Borders are read through L2 (__ldcg: another SM wrote them during this launch), and a
//     tile's writes are fenced before its flag is raised.
//
// A tile is THREADS * RPT query rows by `tile_columns` target columns. Thread t owns rows
// t * RPT + 1 .. (t + 1) * RPT of the tile and keeps their H and E in registers; the threads
// run as a wavefront inside the tile: at step s thread t computes column s - t, fed with the
// last row (H and F) that thread t - 1 computed one step earlier (a shuffle inside a warp, a
// slot of shared memory between warps, with a barrier per step).
//
// Tile borders live in global memory, O(m + n) per problem:
//   rows[row_base + j], j = 1..n         H and F of the bottom row of the last tile row that
//                                        passed column j (at the end: row m, the last row;
//                                        during long_bands, tagged words: see Links)
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
// smaller row); the other end cells (last row, last column, corner) are searched in the
// borders where they lie (segment_first_max, at the end of this file).
//
// Problems are a struct of int64 fields (enum Field, the order of PROBLEM_FIELDS in
// align/_cuda_long.py). Anti-diagonal d has the problems that still have tiles on it
// (`order[0 .. active[d])`) and the cumulative count of their tiles on it (`first_block +
// offset[d]`, active[d] + 1 entries): its tile b belongs to the problem k with first_block[k]
// <= b < first_block[k + 1]; its tiles have the tickets first_ticket[d] .. first_ticket[d + 1].

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
// Steps of sweep_tile unrolled together: a block, masked where some thread's column lies
// outside the tile.
constexpr int SWEEP_UNROLL = 8;
// How long a block waiting for its neighbours sleeps between two polls.
constexpr unsigned WAIT_NANOSECONDS = 100;

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

// The problem whose fields (enum Field) start at `fields`.
__device__ __forceinline__ Problem load_problem(const i64* fields, const u8* a_codes,
                                                const u8* b_codes) {
    Problem p;
    p.a = a_codes + fields[A_BASE];
    p.b = b_codes + fields[B_BASE];
    p.m = (int)fields[M];
    p.n = (int)fields[N];
    p.top_excess = (int)fields[TOP_EXCESS];
    p.reverse = fields[REVERSE] != 0;
    p.free_top = fields[FREE_TOP] != 0;
    p.free_left = fields[FREE_LEFT] != 0;
    return p;
}

// DNA scores (match/mismatch, shifted by gap_open: see sweep_tile) fit a signed byte each (the
// host checks), so that a cell picks its score with one byte permute instead of a compare and
// a select: a query row holds a word whose byte c is its score against target code c (0..3),
// a target code is clamped to TARGET_OTHER, whose byte (of the second word, every byte the
// mismatch) scores a code that matches nothing.
constexpr int TARGET_OTHER = 4;

// What sweep_tile reads for query row i: DNA, the row's profile word (above); else the row's
// offset in the table. Padding rows past m take any code.
template <bool DNA>
__device__ __forceinline__ int query_code(const Problem& p, int i, int n_codes,
                                          int match_codes, int match, int mismatch) {
    const int code = i <= p.m ? p.a_code(i) : 0;
    if (!DNA) return code * n_codes;
    u32 word = 0;
    for (int c = 0; c < TARGET_OTHER; ++c)
        word |= (u32)((c == code && code < match_codes ? match : mismatch) & 0xff) << (8 * c);
    return (int)word;
}

// What sweep_tile reads for a target code: DNA, the code clamped to TARGET_OTHER.
template <bool DNA>
__device__ __forceinline__ u8 clamped_code(int code) {
    return (u8)(DNA ? min(code, TARGET_OTHER) : code);
}

// What sweep_tile reads for target column j.
template <bool DNA>
__device__ __forceinline__ u8 target_code(const Problem& p, int j) {
    return clamped_code<DNA>(p.b_code(j));
}

// The byte permute of DNA scores: byte `code` (0..7) of the words (low, high), sign-extended
// (the selector's nibbles 1..3 replicate its sign bit; PTX prmt's default mode).
__device__ __forceinline__ int byte_score(u32 low, u32 high, u32 selector) {
    u32 out;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(out) : "r"(low), "r"(high), "r"(selector));
    return (int)out;
}

// The best cell of the block into thread 0's (score, i, j); `shared` holds 3 ints per warp.
template <int THREADS>
__device__ void block_best(int& score, int& i, int& j, int* shared) {
    warp_best_cell(score, i, j);
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
                if (better_cell(shared[3 * w], shared[3 * w + 1], shared[3 * w + 2], score, i, j)) {
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
    u32 mismatch_bytes;     // DNA: the shifted mismatch in every byte (see byte_score)
};

// Traceback codes of a cell (leaf_paths' bytes, long_bands' TRACE nibbles): where H came from
// (the diagonal before E before F, as align/_cpu.py's _fill prefers) and whether E and F
// opened there (opening preferred to extending).
enum { FROM_DIAGONAL = 0, FROM_E = 1, FROM_F = 2, E_OPENED = 4, F_OPENED = 8 };

// long_bands builds a cell's nibble of those codes (its source 3 reads as FROM_F: the walks test
// for FROM_DIAGONAL, then FROM_E) a bit at a time, each bit the sign of one difference pushed in
// by a funnel shift (two instructions a bit, no compare or select), from the values of the
// step: `diagonal` (H + s), `e` (the larger of extending E and opening from the cell on the
// left, `e_open`), `f` (of extending F and opening from the cell above, `f_open`), `x` (the
// larger of the diagonal and E, less the opening) and `t` (H less the opening). Pushed in the
// order F_OPENED, E_OPENED, F wins, E beats the diagonal:
// - F_OPENED: f == f_open, that is f - f_open - 1 < 0 (f >= f_open);
// - E_OPENED: e == e_open, that is e - e_open - 1 < 0 (e >= e_open);
// - F wins (FROM_F): F above the diagonal and E, t > x, that is x - t < 0 (t >= x);
// - E beats the diagonal (FROM_E unless F wins): diagonal - e < 0.
// (Every value lies within _VALUE_LIMIT of 0 or near NEG: no difference wraps.)
__device__ __forceinline__ u32 push_sign(u32 bits, int difference) {
    return __funnelshift_l((u32)difference, bits, 1);  // bits << 1 | the sign bit
}
__device__ __forceinline__ u32 push_code(u32 bits, int diagonal, int e, int f, int e_open,
                                         int f_open, int x, int t) {
    bits = push_sign(bits, f - f_open - 1);
    bits = push_sign(bits, e - e_open - 1);
    bits = push_sign(bits, x - t);
    return push_sign(bits, diagonal - e);
}

// long_bands' TRACE nibbles go out a block of SWEEP_UNROLL steps at a time: a thread's chunk
// is RPT words, filled from the top: the nibble of its row r at step k of the block is number
// c = k * RPT + r, in word c / 8 at bit 28 - 4 * (c % 8) (trace_walk reads them). One store of
// up to 16 bytes a block, rather than one a step: the stores of every step took as long as the
// band's computing.
template <int RPT>
__device__ __forceinline__ void store_chunk(u32* at, const u32 (&chunk)[RPT]) {
    if constexpr (RPT % 4 == 0) {
#pragma unroll
        for (int w = 0; w < RPT; w += 4)
            *reinterpret_cast<uint4*>(at + w) = make_uint4(chunk[w], chunk[w + 1], chunk[w + 2],
                                                           chunk[w + 3]);
    } else if constexpr (RPT == 2) {
        *reinterpret_cast<uint2*>(at) = make_uint2(chunk[0], chunk[1]);
    } else {
        *at = chunk[0];
    }
}

// How long_bands hands a band's bottom row to the band below, column by column, without flags
// or fences: the bottom row's cell (H, F) of column j is one 64-bit word at rows[j] (the
// problem's row, which every band of the problem reuses), written and read as a single relaxed
// access (single-copy atomic), so the word itself says whose it is. Bits 0-31 hold H, bits
// 32-47 D = H - F clamped to gap_open - gap_extend + 1, bits 48-63 a tag: band I writes
// TAG_BIT | ((I + 1) & TAG_MASK), and band I + 1 reads the column once it carries that tag
// (rows starts zeroed, so no tag matches before its band wrote). The clamp keeps what the band
// below computes from F: max(F - extend, H - open) is the same with D and with its clamp (a
// clamped F' = H - D' has F' - extend < H - open), and the host never reads these words: the
// problem's last band writes its row as plain (H, F) int2 for it.
//
// Band I's thread 0 takes the cell above column j at step j - 1. The lanes 0 .. GROUP - 1 of
// warp 0 hold a group of GROUP such cells and hand them to thread 0 by shuffles; at the start
// of each group they check the words they loaded one group earlier (polling again those whose
// band has not written them yet), load the next group's words, put the next group's target
// codes (loaded a group earlier) into the ring of target codes, and decode the cells. So a band
// runs about GROUP + THREADS + GROUP columns behind the band above, and waits only when that
// band is behind. GROUP is link_group(TRACE): larger groups cost fewer steps a hand-over but
// put each band further behind the one above; the score-only bands run fastest with 32, the
// traced ones with 16 (measured: benchmarks/results/tuning.md).
//
// Tags repeat every TAG_MASK + 1 bands, so a word of band I - TAG_MASK - 1 would pass band
// I + 1's check; it cannot be there when band I + 1 looks: band I + 1 reaches column j only
// after band I has taken the words of band I - 1 up to beyond j, which overwrote the older
// ones. The host runs no more bands a problem than that in this schedule anyway
// (_cuda_long.BAND_LIMIT).
__host__ __device__ constexpr int link_group(bool trace) { return trace ? 16 : 32; }
constexpr int LINK_GROUP_MAX =  // the larger of the two (band_ring)
    link_group(false) > link_group(true) ? link_group(false) : link_group(true);
constexpr u32 TAG_BIT = 0x8000u, TAG_MASK = 0x7fffu;

// Volatile 64-bit accesses: strong system-scope accesses in SASS (LDG/STG.E.64.STRONG.SYS),
// single-copy atomic when aligned, which the compiler may predicate (inline PTX cost a branch
// around every store).
__device__ __forceinline__ u64 load_link(const u64* address) {
    return *reinterpret_cast<const volatile u64*>(address);
}

__device__ __forceinline__ void store_link(u64* address, u64 word) {
    *reinterpret_cast<volatile u64*>(address) = word;
}

// A band's side of the hand-over (see above). Lane l < GROUP of warp 0 holds column
// group + 1 + l: its cell above (h, f) and, one group ahead, the word and target code of
// column group + GROUP + 1 + l.
template <bool DNA, int GROUP>
struct Links {
    static_assert(GROUP <= 32 && (GROUP & (GROUP - 1)) == 0, "a power of two, lanes of a warp");
    Problem p;
    u64* words;          // the problem's rows, column 0 at words[0]
    u8* ring;            // the band's ring of target codes (ring_mask + 1 bytes)
    int ring_mask, gap_open, gap_extend, clamp;  // clamp: D's, gap_open - gap_extend + 1
    u32 awaited, tag;    // the tag of the band above's words, the tag of this band's
    bool first, final;   // band 0 (row 0 above it); the problem's last band (plain int2)
    int h, f;
    u64 next_word;
    u8 next_code;        // unclamped, so that nothing waits for its load before it is stored

    // Before the sweep: the target codes of group 0 (columns 1 .. GROUP) into the ring,
    // group 1's codes and group 0's words loaded. Every thread calls it.
    __device__ __forceinline__ void start() {
        const int n = p.n;
        if (threadIdx.x < GROUP) {
            const int j = 1 + threadIdx.x;
            if (j <= n) ring[j & ring_mask] = target_code<DNA>(p, j);
            next_code = j + GROUP <= n ? p.b_code(j + GROUP) : 0;
            next_word = !first && j <= n ? load_link(words + j) : 0;
        }
    }

    // The group whose thread 0 steps start at `step` (columns step + 1 ..): its cells decoded
    // (waiting for the band above where needed), the next group's words loaded; the next
    // group's codes into the ring (the group's last step preloads the next group's first
    // code), those of the group after it loaded. Every thread of the block calls it.
    __device__ __forceinline__ void advance(int step) {
        const int n = p.n;
        if (threadIdx.x < GROUP) {
            const int j = step + 1 + threadIdx.x, next = j + GROUP;
            if (next <= n) ring[next & ring_mask] = clamped_code<DNA>(next_code);
            next_code = next + GROUP <= n ? p.b_code(next + GROUP) : 0;
            if (first) {
                h = j <= n ? p.top(j, gap_open, gap_extend) : 0;
                f = NEG;
            } else {
                u64 word = next_word;
                if (j <= n) {
                    while ((u32)(word >> 48) != awaited) {
                        __nanosleep(WAIT_NANOSECONDS);
                        word = load_link(words + j);
                    }
                }
                h = (int)(u32)word;
                f = h - (int)((word >> 32) & 0xffffu);
                next_word = next <= n ? load_link(words + next) : 0;
            }
        }
        __syncwarp();
    }

    // The cell above thread 0's column at `step` of the current group (all lanes of a warp
    // call it: shuffles).
    __device__ __forceinline__ int2 above(int step) const {
        const int lane = step & (GROUP - 1);
        return make_int2(__shfl_sync(FULL_WARP, h, lane), __shfl_sync(FULL_WARP, f, lane));
    }

    // The band's bottom row at column j: a tagged word, or plain (H, F) (as int2) from the
    // last band; one store either way, without a branch.
    __device__ __forceinline__ void store(int j, int bottom_h, int bottom_f) const {
        const u32 d = (u32)(bottom_h - max(bottom_f, bottom_h - clamp));
        const u32 high = final ? (u32)bottom_f : d | tag << 16;
        store_link(words + j, (u64)(u32)bottom_h | (u64)high << 32);
    }
};

// Which of a thread's registers holds a tile's bottom row (sweep_tile's BOTTOM_R): the last
// one (FULL_TILE: every row of the tile is real), or the one a tile of the problem's last tile
// row finds at run time (RUNTIME_BOTTOM), or, as 0 .. RPT - 1, that register itself (see
// sweep_last_tile).
constexpr int FULL_TILE = -1, RUNTIME_BOTTOM = -2;

// One tile, after its top row (above[k] = H, F of column c0 + 1 + k) and target codes are in
// shared memory. Unless BOTTOM_R is FULL_TILE the tile is in the problem's last tile row,
// whose rows past m are padding (computed, never reported). A thread keeps its rows as
// t = H - gap_open (what opening a gap from them scores) and E; substitution scores come
// shifted by gap_open (the shared table holds s + gap_open, match and mismatch likewise; DNA
// picks it with a byte permute), so that a cell costs four add-max instructions (Hopper's
// DPX) and a subtraction, of which only two wait for the row above (the chain that runs down
// a thread's rows at each column):
//   E = max(E - extend, t_left), x = max(t_diagonal + s + open, E) - open,
//   F = max(F_up - extend, t_up), t = H - open = max(F - open, x).
// `diagonal` (t of row row0 at column c0) and the values handed between threads (t and F of
// a thread's last row) are shifted too; borders in memory hold H itself.
//
// The same function sweeps a whole band (long_bands, LINKS): at step s (of `steps`) thread t
// computes column j = c0 + 1 + s - t, its work where first_j <= j <= last_j (a tile: its
// columns, steps = width + THREADS - 1; a band: 1..n, steps = n + THREADS - 1; see step's
// MASKED for the others), the target code of column j
// at b_codes[(j - code_base) & code_mask] (a tile: its codes from c0 + 1; a band: a ring of
// them, read a step ahead). Thread 0 of a tile uses above[s] (s < width; every thread reads
// it, as a broadcast); that of a band takes the cell above from `links`, and the band's
// bottom row goes out through them (see Links).
template <int THREADS, int RPT, bool DNA, bool FLOOR_ZERO, bool TRACK_BEST, int BOTTOM_R,
          bool LINKS, bool TRACE = false>
__device__ __forceinline__ void sweep_tile(const Tile& tile, const int steps, const int first_j,
                                           const int last_j, const int code_base,
                                           const int code_mask, int& diagonal, int& up_t,
                                           int& up_f, int (&t)[RPT], int (&e)[RPT],
                                           const int (&q)[RPT], const int2* above,
                                           const u8* b_codes, const short* table,
                                           int2* exchange, int2* __restrict__ rows, int& best,
                                           int& best_i, int& best_j,
                                           Links<DNA, link_group(TRACE)>* links,
                                           u32* __restrict__ trace = nullptr) {
    const int thread = threadIdx.x, lane = thread % 32, warp = thread / 32;
    const int row0 = tile.tile_row0 + thread * RPT;
    // The thread and register that hold the tile's last real row (the bottom row).
    constexpr bool LAST = BOTTOM_R != FULL_TILE;
    const int bottom_owner = (tile.bottom - 1 - tile.tile_row0) / RPT;
    const int bottom_r = BOTTOM_R >= 0 ? BOTTOM_R : (tile.bottom - 1 - tile.tile_row0) % RPT;
    const int go = tile.gap_open, neg_open = -tile.gap_open, neg_extend = -tile.gap_extend;
    // F of the row below, F' = max(F - extend, H - open) with H = max(X, F), is
    // max(F - min(extend, open), X - open): it waits for F alone, not for H.
    const int neg_f_step = -min(tile.gap_extend, tile.gap_open);
    // What step s reads from shared memory, loaded a step ahead so that the loads are not on
    // the path from step to step: the target code of this thread's column, and the row above
    // (every thread reads it, thread 0 uses it: a broadcast, not a branch).
    int next_bj = 0;
    int2 next_above = make_int2(0, NEG);
    auto preload = [&](const int s, const bool checked) {
        const int j = tile.c0 + 1 + s - thread;
        if (!checked || (j >= first_j && j <= last_j))
            next_bj = b_codes[(j - code_base) & code_mask];
        if (!LINKS) next_above = above[min(s, tile.width - 1)];
    };
    // Step s: thread t computes column j = c0 + 1 + s - t, then hands its last row to thread
    // t + 1; the preload for step s + 1 checks its column when `check_next`. MASKED: some
    // threads' columns may lie outside first_j .. last_j (before a thread's first column or
    // after its last): those threads compute too, on the code they hold (the last they read,
    // or 0 before their first), but keep their rows, diagonal and best cell and store nothing;
    // the row they hand on goes to a thread whose column lies outside too. So the warp never
    // splits: a branch around the steps of the threads outside made the THREADS - 1 steps at
    // each end of a sweep (whole blocks of them) take two and a half times as long.
    // With LINKS thread 0 takes the cell above from `link_above`.
    auto step = [&](const int s, const bool masked, const bool check_next,
                    const int2 link_above) -> u32 {
        const int j = tile.c0 + 1 + s - thread;
        const bool outside = masked && (j < first_j || j > last_j);
        const int2 above_s = LINKS ? link_above : next_above;
        const int bj = next_bj;
        // DNA: the byte permute's selector of this column's code (see byte_score).
        const u32 selector = DNA ? ((u32)bj * 0x1111u) | 0x8880u : 0u;
        if (thread == 0) {
            up_t = above_s.x - go;
            up_f = above_s.y;
        }
        if (s + 1 < steps) preload(s + 1, check_next);
        int vt = up_t, vf = up_f, d = diagonal;
        int bottom_h = 0, bottom_f = NEG;
        u32 codes = 0;  // TRACE: the step's traceback nibbles, row 0's the highest (push_code)
        int f = __viaddmax_s32(vf, neg_extend, vt);  // F of the thread's first row
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
            const int e_r = __viaddmax_s32(e[r], neg_extend, t[r]);
            const int sub = DNA ? byte_score((u32)q[r], tile.mismatch_bytes, selector)
                                : table[q[r] + bj];
            // What does not wait for the row above: the diagonal and E (and 0), shifted.
            const int x = (FLOOR_ZERO ? __viaddmax_s32_relu(d, sub, e_r)
                                      : __viaddmax_s32(d, sub, e_r)) - go;
            const int t_r = __viaddmax_s32(f, neg_open, x);
            if (TRACE) codes = push_code(codes, d + sub, e_r, f, t[r], vt, x, t_r);
            d = t[r];
            if (TRACK_BEST && !outside && t_r + go > best &&
                (!LAST || row0 + r < tile.bottom)) {
                best = t_r + go;
                best_i = row0 + r + 1;
                best_j = j;
            }
            if (LAST && r == bottom_r) {
                bottom_h = t_r + go;
                bottom_f = f;
            }
            e[r] = outside ? e[r] : e_r;
            t[r] = outside ? t[r] : t_r;
            vt = t_r;
            vf = f;
            // The chain down the rows: one instruction a row, t off it.
            f = __viaddmax_s32(f, neg_f_step, x);
        }
        if (!LAST) {
            bottom_h = vt + go;
            bottom_f = vf;
        }
        if (thread == bottom_owner && !outside) {
            if (LINKS) links->store(j, bottom_h, bottom_f);
            else rows[j] = make_int2(bottom_h, bottom_f);
        }
        diagonal = outside ? diagonal : up_t;  // row row0 at this column: the next diagonal
        const int out_t = vt, out_f = vf;
        // Hand this thread's last row to the next thread for its next step. Lane 0 gets its
        // own back, without a select on the path from step to step: thread 0 takes the row
        // above at its next step, lane 0 of a later warp the exchange's.
        up_t = __shfl_up_sync(FULL_WARP, out_t, 1);
        up_f = __shfl_up_sync(FULL_WARP, out_f, 1);
        if constexpr (THREADS > 32) {
            int2* slot = exchange + (s & 1) * (THREADS / 32);
            if (lane == 31) slot[warp] = make_int2(out_t, out_f);
            __syncthreads();
            if (lane == 0 && warp > 0) {
                const int2 v = slot[warp - 1];
                up_t = v.x;
                up_f = v.y;
            }
        }
        return codes;
    };
    // Blocks of SWEEP_UNROLL steps, unrolled; those where some thread's column lies outside
    // first_j .. last_j are masked. LINKS: a block starts with the hand-over
    // (a new group every link_group(TRACE) steps) and takes thread 0's cells above for all its
    // steps at once, so that nothing of it breaks the steps' straight line.
    constexpr int GROUP = link_group(TRACE);
    static_assert(GROUP % SWEEP_UNROLL == 0, "link groups of whole blocks");
    preload(0, true);
    for (int s0 = 0; s0 < steps; s0 += SWEEP_UNROLL) {
        int2 block_above[SWEEP_UNROLL];
        if constexpr (LINKS) {  // every warp shuffles (only warp 0's thread 0 uses them)
            if ((s0 & (GROUP - 1)) == 0) links->advance(s0);
#pragma unroll
            for (int k = 0; k < SWEEP_UNROLL; ++k) block_above[k] = links->above(s0 + k);
        }
        u32 chunk[RPT];  // TRACE: the block's nibbles (see store_chunk)
#pragma unroll
        for (int w = 0; w < RPT; ++w) chunk[w] = 0;
        // Step k's nibbles into the chunk, below the earlier steps' (k and RPT known at
        // compile time: no word straddled where RPT divides 8, which long_bands requires of
        // TRACE).
        auto keep = [&](const int k, const u32 codes) {
            if constexpr (TRACE) {
                u32& word = chunk[(4 * k * RPT) / 32];
                if constexpr (4 * RPT < 32) word = word << (4 * RPT) | codes;
                else word = codes;
            }
        };
        if (s0 + SWEEP_UNROLL <= steps && tile.c0 + 1 + s0 - (THREADS - 1) >= first_j &&
            tile.c0 + s0 + SWEEP_UNROLL <= last_j) {
#pragma unroll
            for (int k = 0; k < SWEEP_UNROLL; ++k)
                keep(k, step(s0 + k, false, k == SWEEP_UNROLL - 1, block_above[k]));
        } else {
#pragma unroll
            for (int k = 0; k < SWEEP_UNROLL; ++k) {  // (the steps past the last shift too)
                keep(k, s0 + k < steps ? step(s0 + k, true, true, block_above[k]) : 0u);
            }
        }
        if (TRACE) store_chunk<RPT>(trace + (i64)(s0 / SWEEP_UNROLL) * THREADS * RPT, chunk);
    }
}

// sweep_tile of a problem's last tile row with its bottom row in register `bottom_r` (the
// same for every thread) known at compile time: one copy of the sweep per register. Picking
// the bottom row's cells out of a register known only at run time costs two selects a row,
// which made a problem's last band a fifth slower than the others; being last in its wavefront,
// it ends the launch.
template <int THREADS, int RPT, bool DNA, bool FLOOR_ZERO, bool TRACK_BEST, bool LINKS,
          bool TRACE, int R = 0, typename... Args>
__device__ __forceinline__ void sweep_last_tile(const int bottom_r, Args&&... args) {
    if constexpr (R < RPT) {
        if (bottom_r == R)
            sweep_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, R, LINKS, TRACE>(args...);
        else
            sweep_last_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, LINKS, TRACE, R + 1>(
                bottom_r, args...);
    }
}

// One tile per block (see the top of the file): without TICKETS, tile `block` of
// anti-diagonal `diagonal`. `table` (not DNA) is the n_codes x n_codes substitution table;
// DNA scores are match for equal codes below match_codes, else mismatch. Dynamic shared
// memory: tile_columns int2 (the top row), 2 * THREADS / 32 int2 (the exchange between warps),
// n_codes^2 shorts unless DNA, and tile_columns bytes (the target codes).
template <int THREADS, int RPT, bool DNA, bool FLOOR_ZERO, bool TRACK_BEST, bool TICKETS>
__global__ void __launch_bounds__(THREADS)
long_tiles(const u8* __restrict__ a_codes, const u8* __restrict__ b_codes,
           const i64* __restrict__ problems, const int* __restrict__ order,
           const i64* __restrict__ first_block, const i64* __restrict__ offset,
           const int* __restrict__ active, const i64* __restrict__ first_ticket,
           const int diagonals, const int diagonal, int* __restrict__ tickets,
           int* __restrict__ done, const short* __restrict__ table, const int n_codes,
           const int match, const int mismatch, const int match_codes, const int gap_open,
           const int gap_extend, const int tile_columns, int2* __restrict__ rows,
           int2* __restrict__ columns, int* __restrict__ corners, int* __restrict__ best_cells) {
    static_assert(THREADS % 32 == 0, "whole warps");
    constexpr int TILE_ROWS = THREADS * RPT;
    extern __shared__ int2 shared[];
    int2* above = shared;
    int2* exchange = above + tile_columns;
    short* s_table = reinterpret_cast<short*>(exchange + 2 * (THREADS / 32));
    u8* s_b = reinterpret_cast<u8*>(s_table + (DNA ? 0 : n_codes * n_codes));
    __shared__ int reduce[3 * (THREADS / 32)];
    __shared__ int s_ticket;

    // This block's tile: anti-diagonal d, its tile `block`.
    int d = diagonal;
    i64 block = blockIdx.x;
    if (TICKETS) {
        if (threadIdx.x == 0) s_ticket = atomicAdd(tickets, 1);
        __syncthreads();
        const i64 ticket = s_ticket;
        int lo = 0, hi = diagonals - 1;  // the last d with first_ticket[d] <= ticket
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (first_ticket[mid] <= ticket) lo = mid;
            else hi = mid - 1;
        }
        d = lo;
        block = ticket - first_ticket[d];
    }
    // Its problem: the last k with counts[k] <= block.
    const i64* counts = first_block + offset[d];
    int lo = 0, hi = active[d] - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (counts[mid] <= block) lo = mid;
        else hi = mid - 1;
    }
    const i64* fields = problems + (i64)order[lo] * FIELDS;
    const Problem p = load_problem(fields, a_codes, b_codes);
    const int tiles_across = (p.n + tile_columns - 1) / tile_columns;
    const int I = max(0, d - (tiles_across - 1)) + (int)(block - counts[lo]);
    const int J = d - I;
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
    tile.match = match + gap_open;  // shifted as the table (see sweep_tile)
    tile.mismatch = mismatch + gap_open;
    tile.mismatch_bytes = (u32)(tile.mismatch & 0xff) * 0x01010101u;

    if (TICKETS) {  // wait for tiles (I, J - 1) and (I - 1, J)
        if (threadIdx.x == 0) {
            // A waiting block sleeps between polls: on a GPU full of tiles its polls would take
            // issue slots from the tiles that compute.
            const volatile int* finished = done;
            while (finished[slot] < J) __nanosleep(WAIT_NANOSECONDS);
            while (I > 0 && finished[slot - 1] < J + 1) __nanosleep(WAIT_NANOSECONDS);
            __threadfence();
        }
        __syncthreads();
    }
    for (int k = threadIdx.x; k < tile.width; k += THREADS) {
        const int j = tile.c0 + 1 + k;
        s_b[k] = target_code<DNA>(p, j);
        above[k] = I == 0 ? make_int2(p.top(j, gap_open, gap_extend), NEG) : __ldcg(p_rows + j);
    }
    if (!DNA) {
        for (int k = threadIdx.x; k < n_codes * n_codes; k += THREADS)
            s_table[k] = (short)(table[k] + gap_open);
    }

    const int t = threadIdx.x;
    const int row0 = tile.tile_row0 + t * RPT;
    int t_h[RPT], e[RPT], q[RPT];  // t = H - gap_open of the left column, then of the last
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        const int i = row0 + r + 1;
        q[r] = query_code<DNA>(p, i, n_codes, match_codes, tile.match, tile.mismatch);
        if (J == 0) {
            t_h[r] = p.left(i, gap_extend) - gap_open;
            e[r] = NEG;
        } else {
            const int2 v = __ldcg(p_columns + i);
            t_h[r] = v.x - gap_open;
            e[r] = v.y;
        }
    }
    // H(row0, c0): the diagonal of this thread's first cell (then shifted).
    int diagonal_h;
    if (row0 == 0) {
        diagonal_h = tile.c0 == 0 ? 0 : p.top(tile.c0, gap_open, gap_extend);
    } else if (tile.c0 == 0) {
        diagonal_h = p.left(row0, gap_extend);
    } else if (t == 0) {
        diagonal_h = __ldcg(corners + slot);
    } else {
        diagonal_h = __ldcg(p_columns + row0).x;
    }
    __syncthreads();  // every read of the borders above is done before anything is written
    if (t == 0) corners[slot] = above[tile.width - 1].x;  // for tile (I, J + 1)

    int best = NEG, best_i = 0, best_j = 0;
    int corner = diagonal_h - gap_open, up_t = 0, up_f = NEG;
    const int steps = tile.width + THREADS - 1, first_j = tile.c0 + 1;
    const int last_j = tile.c0 + tile.width;
    if (tile.bottom < tile.tile_row0 + TILE_ROWS) {
        sweep_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, RUNTIME_BOTTOM, false>(
            tile, steps, first_j, last_j, first_j, -1, corner, up_t, up_f, t_h, e, q, above,
            s_b, s_table, exchange, p_rows, best, best_i, best_j, nullptr);
    } else {
        sweep_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, FULL_TILE, false>(
            tile, steps, first_j, last_j, first_j, -1, corner, up_t, up_f, t_h, e, q, above,
            s_b, s_table, exchange, p_rows, best, best_i, best_j, nullptr);
    }
#pragma unroll
    for (int r = 0; r < RPT; ++r) p_columns[row0 + r + 1] = make_int2(t_h[r] + gap_open, e[r]);
    if (TRACK_BEST) {
        block_best<THREADS>(best, best_i, best_j, reduce);
        if (t == 0) {
            int* kept = best_cells + 3 * slot;
            if (better_cell(best, best_i, best_j, __ldcg(kept), __ldcg(kept + 1),
                            __ldcg(kept + 2))) {
                kept[0] = best;
                kept[1] = best_i;
                kept[2] = best_j;
            }
        }
    }
    if (TICKETS) {  // this tile's borders are written: tile row I has J + 1 tiles done
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) atomicExch(done + slot, J + 1);
    }
}

// The "bands" schedule: one launch per batch, a block per band (tile row I of a problem,
// THREADS * RPT query rows) that sweeps all the problem's columns in one wavefront (sweep_tile
// with first_j = 1, last_j = n, n + THREADS - 1 steps): it fills and drains once per band, and
// a thread keeps its rows' H and E, its diagonal and the row above in registers throughout.
// Block b takes the next ticket k (an atomic counter) and runs tile row band_row[k] of problem
// band_problem[k]; the host orders the bands by tile row, so a band waits only for the band
// above it, which took a smaller ticket and so already runs: no deadlock whatever the number of
// resident blocks. The band above's bottom row comes column by column through `rows` (Links:
// tagged words, `rows` zeroed by the host), the target codes through a ring of band_ring
// bytes. At the end the band writes its right column to `columns` (column n, for the
// last-column end cells) and, TRACK_BEST, its best cell to best_cells[3 * slot]: a thread
// meets its cells by column, then row, as in a tile, so the ties are those of long_tiles.
// TRACE (global problems, the traced leaves): the band also keeps its cells' traceback nibbles
// in `trace`, its problem's from trace_base[problem] (the layout: trace_walk); else both are
// null. Dynamic shared memory: the exchange between warps (2 * THREADS / 32 int2), n_codes^2
// shorts unless DNA, the ring (band_ring in _cuda_long.py).
template <int THREADS>
__host__ __device__ constexpr int band_ring() {
    int size = 1;
    while (size < THREADS + 2 * LINK_GROUP_MAX) size *= 2;  // see Links::advance
    return size;
}

template <int THREADS, int RPT, bool DNA, bool FLOOR_ZERO, bool TRACK_BEST, bool TRACE = false>
__global__ void __launch_bounds__(THREADS)
long_bands(const u8* __restrict__ a_codes, const u8* __restrict__ b_codes,
           const i64* __restrict__ problems, const int* __restrict__ band_problem,
           const int* __restrict__ band_row, int* __restrict__ tickets,
           const short* __restrict__ table, const int n_codes, const int match,
           const int mismatch, const int match_codes, const int gap_open, const int gap_extend,
           int2* __restrict__ rows, int2* __restrict__ columns, int* __restrict__ best_cells,
           u32* __restrict__ trace, const i64* __restrict__ trace_base) {
    static_assert(THREADS % 32 == 0, "whole warps");
    static_assert(!TRACE || (RPT == 1 || RPT == 2 || RPT == 4 || RPT == 8),
                  "a step's nibbles of a thread within one word of its chunk");
    constexpr int TILE_ROWS = THREADS * RPT;
    constexpr int RING = band_ring<THREADS>();
    extern __shared__ int2 shared[];
    int2* exchange = shared;
    short* s_table = reinterpret_cast<short*>(exchange + 2 * (THREADS / 32));
    u8* ring = reinterpret_cast<u8*>(s_table + (DNA ? 0 : n_codes * n_codes));
    __shared__ int reduce[3 * (THREADS / 32)];
    __shared__ int s_ticket;

    if (threadIdx.x == 0) s_ticket = atomicAdd(tickets, 1);
    __syncthreads();
    const int band = s_ticket;
    const i64* fields = problems + (i64)band_problem[band] * FIELDS;
    const Problem p = load_problem(fields, a_codes, b_codes);
    const int I = band_row[band];
    int2* p_rows = rows + fields[ROW_BASE];
    const i64 slot = fields[SLOT_BASE] + I;

    Tile tile;
    tile.c0 = 0;
    tile.width = p.n;
    tile.tile_row0 = I * TILE_ROWS;
    tile.bottom = min(tile.tile_row0 + TILE_ROWS, p.m);
    tile.gap_open = gap_open;
    tile.gap_extend = gap_extend;
    tile.match = match + gap_open;  // shifted as the table (see sweep_tile)
    tile.mismatch = mismatch + gap_open;
    tile.mismatch_bytes = (u32)(tile.mismatch & 0xff) * 0x01010101u;

    Links<DNA, link_group(TRACE)> links;
    links.p = p;
    links.words = reinterpret_cast<u64*>(p_rows);
    links.ring = ring;
    links.ring_mask = RING - 1;
    links.gap_open = gap_open;
    links.gap_extend = gap_extend;
    links.clamp = gap_open - gap_extend + 1;
    links.awaited = TAG_BIT | ((u32)I & TAG_MASK);
    links.tag = TAG_BIT | ((u32)(I + 1) & TAG_MASK);
    links.first = I == 0;
    links.final = tile.tile_row0 + TILE_ROWS >= p.m;
    links.h = 0;
    links.f = NEG;
    links.start();

    if (!DNA) {
        for (int k = threadIdx.x; k < n_codes * n_codes; k += THREADS)
            s_table[k] = (short)(table[k] + gap_open);
    }
    const int t = threadIdx.x;
    const int row0 = tile.tile_row0 + t * RPT;
    int t_h[RPT], e[RPT], q[RPT];  // column 0 (t = H - gap_open), then the last column done
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        const int i = row0 + r + 1;
        q[r] = query_code<DNA>(p, i, n_codes, match_codes, tile.match, tile.mismatch);
        t_h[r] = p.left(i, gap_extend) - gap_open;
        e[r] = NEG;
    }
    __syncthreads();  // the table
    // H(row0, 0), shifted: the diagonal of this thread's first cell; t and F of row row0 come
    // from above (thread 0) or the thread before.
    int diagonal = (row0 == 0 ? 0 : p.left(row0, gap_extend)) - gap_open;
    int up_t = 0, up_f = NEG;
    int best = NEG, best_i = 0, best_j = 0;
    const int steps = p.n + THREADS - 1;
    // TRACE: this thread's chunk of the band's first block of steps (see trace_walk).
    const int blocks = (steps + SWEEP_UNROLL - 1) / SWEEP_UNROLL;
    u32* band_trace =
        TRACE ? trace + trace_base[band_problem[band]] + ((i64)I * blocks * THREADS + t) * RPT
              : nullptr;
    if (tile.bottom < tile.tile_row0 + TILE_ROWS) {
        sweep_last_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, true, TRACE>(
            (tile.bottom - 1 - tile.tile_row0) % RPT, tile, steps, 1, p.n, 0, RING - 1, diagonal,
            up_t, up_f, t_h, e, q, nullptr, ring, s_table, exchange, p_rows, best, best_i, best_j,
            &links, band_trace);
    } else {
        sweep_tile<THREADS, RPT, DNA, FLOOR_ZERO, TRACK_BEST, FULL_TILE, true, TRACE>(
            tile, steps, 1, p.n, 0, RING - 1, diagonal, up_t, up_f, t_h, e, q, nullptr, ring,
            s_table, exchange, p_rows, best, best_i, best_j, &links, band_trace);
    }
    int2* p_columns = columns + fields[COLUMN_BASE];
#pragma unroll
    for (int r = 0; r < RPT; ++r) p_columns[row0 + r + 1] = make_int2(t_h[r] + gap_open, e[r]);
    if (TRACK_BEST) {
        block_best<THREADS>(best, best_i, best_j, reduce);
        if (t == 0) {
            int* kept = best_cells + 3 * slot;
            kept[0] = best;
            kept[1] = best_i;
            kept[2] = best_j;
        }
    }
}

// The leaves of a linear-space alignment (align/_linear.py): small global problems, one warp
// each, with a full DP and a traceback byte per cell as align/_cpu.py's _fill and _traceback
// (global mode, the same codes and preferences), so that a leaf's path is the one the CPU
// engine finds. Column 0 is a vertical gap costing top_excess + i * gap_extend; a vertical gap
// that ends in the bottom-right corner costs bottom_excess instead of gap_open - gap_extend
// beyond its symbols. leaves[LEAF_FIELDS * k ...]: where a and b start in the code arrays, m, n
// (both >= 1), top_excess, bottom_excess; the leaf's scratch row (H and F, n + 1 each) at
// row_base[k], its traceback bytes (leaf_trace_bytes) at trace_base[k], its path (first
// operation first, at most m + n) ending at ops_base[k] + m + n (the walk writes it backwards,
// so nothing is reversed; pack_leaf_paths packs them) and its length in op_count.
//
// The warp runs the leaf in bands of 32 rows, lane r owning row band0 + r + 1, as a wavefront:
// at step s lane r computes column s - r + 1, fed with the cell above that lane r - 1 computed
// one step earlier (a shuffle); lane 0 gets the row above the band from the scratch row (loaded
// by the whole warp ahead of use), which the band's last real row rewrites for the next band
// (and leaves as row m at the end). The
// traceback bytes are stored step-major (trace_index), so that the 32 cells of a step are 32
// consecutive bytes; lane 0 walks the path back alone.
enum LeafField { LEAF_A_BASE, LEAF_B_BASE, LEAF_M, LEAF_N, LEAF_TOP, LEAF_BOTTOM, LEAF_FIELDS };

// Where the traceback byte of cell (i, j), i, j >= 1, of a leaf with n columns lies: band
// (i - 1) / 32 holds (n + 31) steps of 32 lanes, cell (i, j) is step j - 1 + lane.
__device__ __forceinline__ i64 trace_index(int i, int j, int n) {
    const int band = (i - 1) / 32, lane = (i - 1) % 32;
    return ((i64)band * (n + 31) + (j - 1 + lane)) * 32 + lane;
}

extern "C" __global__ void __launch_bounds__(128)
leaf_paths(const u8* __restrict__ a_codes, const u8* __restrict__ b_codes,
           const i64* __restrict__ leaves, const int count, const short* __restrict__ table,
           const int n_codes, const int match_codes, const int gap_open, const int gap_extend,
           int2* __restrict__ row_space, const i64* __restrict__ row_base,
           u8* __restrict__ trace_space, const i64* __restrict__ trace_base,
           u8* __restrict__ ops_space, const i64* __restrict__ ops_base,
           int* __restrict__ op_count) {
    const int k = (int)(((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32);  // whole warps
    const int lane = threadIdx.x % 32;
    if (k >= count) return;
    const i64* fields = leaves + (i64)k * LEAF_FIELDS;
    const u8* a = a_codes + fields[LEAF_A_BASE];
    const u8* b = b_codes + fields[LEAF_B_BASE];
    const int m = (int)fields[LEAF_M], n = (int)fields[LEAF_N];
    const int top_excess = (int)fields[LEAF_TOP], bottom_excess = (int)fields[LEAF_BOTTOM];
    int2* row = row_space + row_base[k];  // H and F of the row above the band, then of row m
    u8* trace = trace_space + trace_base[k];
    for (int j = lane; j <= n; j += 32)
        row[j] = make_int2(j == 0 ? 0 : -(gap_open + (j - 1) * gap_extend), NEG);
    __syncwarp();
    for (int band0 = 0; band0 < m; band0 += 32) {
        const int i = band0 + lane + 1;
        const bool live = i <= m;
        const bool writes_row = i == min(band0 + 32, m);  // the band's last real row
        const short* scores = table + (live ? a[i - 1] : 0) * n_codes;
        // H(i, 0) and H(i - 1, 0): column 0 is one vertical gap from H(0, 0) = 0.
        int left = -(top_excess + i * gap_extend);
        int diagonal = i == 1 ? 0 : -(top_excess + (i - 1) * gap_extend);
        int e = NEG;
        int2 up = make_int2(0, NEG);  // H and F of (i - 1, j)
        u8* band_trace = trace + (i64)(band0 / 32) * (n + 31) * 32 + lane;
        // The row above the band, 32 columns a lane-wide load, one load ahead: at step s lane
        // 0 takes column s + 1 from lane s % 32 of `chunk`. The band rewrites a column only
        // once lane 0 has used it, so the loads ahead still see the previous band's row.
        int2 chunk = lane + 1 <= n ? row[lane + 1] : make_int2(0, NEG);
        int2 ahead = lane + 33 <= n ? row[lane + 33] : make_int2(0, NEG);
        for (int s = 0; s < n + 31; ++s) {
            if (s % 32 == 0 && s > 0) {
                chunk = ahead;
                ahead = s + 33 + lane <= n ? row[s + 33 + lane] : make_int2(0, NEG);
            }
            const int above_h = __shfl_sync(FULL_WARP, chunk.x, s % 32);
            const int above_f = __shfl_sync(FULL_WARP, chunk.y, s % 32);
            const int j = s - lane + 1;
            int2 out = make_int2(0, NEG);
            if (live && j >= 1 && j <= n) {
                if (lane == 0) up = make_int2(above_h, above_f);
                const int e_open = left - gap_open, e_extend = e - gap_extend;
                e = e_open >= e_extend ? e_open : e_extend;
                const int f_open = up.x - gap_open, f_extend = up.y - gap_extend;
                const int f = f_open >= f_extend ? f_open : f_extend;
                const int d = diagonal + scores[b[j - 1]];
                int score = d;
                if (e > score) score = e;
                if (f > score) score = f;
                const int code = (score == d ? FROM_DIAGONAL : score == e ? FROM_E : FROM_F) |
                                 (e_open >= e_extend ? E_OPENED : 0) |
                                 (f_open >= f_extend ? F_OPENED : 0);
                band_trace[(i64)s * 32] = (u8)code;
                diagonal = up.x;
                left = score;
                out = make_int2(score, f);
                // Row j's column was read before this step's shuffles (they order the lanes).
                if (writes_row) row[j] = out;
            }
            // Lane 0 gets its own cell back and never reads it: it takes the row above
            // first at its next live step. No select on the path from step to step.
            up.x = __shfl_up_sync(FULL_WARP, out.x, 1);
            up.y = __shfl_up_sync(FULL_WARP, out.y, 1);
        }
        __syncwarp();  // the band's last row is in `row` for the next band's lane 0
    }
    if (lane != 0) return;
    // A vertical gap ending in the corner, charged bottom_excess instead of its opening.
    const int2 corner = row[n];
    if (corner.y + gap_open - gap_extend - bottom_excess > corner.x) {
        u8* code = trace + trace_index(m, n, n);
        *code = (u8)((*code & ~3) | FROM_F);
    }
    // Walk back from (m, n); the operations come out last first, written from the end of
    // the leaf's room backwards.
    u8* const end = ops_space + ops_base[k] + m + n;
    u8* ops = end;
    int i = m, j = n, state = 0;  // state 0: H, 1: E (a run of D), 2: F (I)
    while (i > 0 && j > 0) {
        const int code = trace[trace_index(i, j, n)];
        if (state == 0) {
            const int source = code & 3;
            if (source == FROM_DIAGONAL) {
                const int x = a[i - 1];
                *--ops = (x == b[j - 1] && x < match_codes) ? OP_MATCH : OP_MISMATCH;
                --i;
                --j;
            } else {
                state = source == FROM_E ? 1 : 2;
            }
        } else if (state == 1) {
            *--ops = OP_DELETION;
            if (code & E_OPENED) state = 0;
            --j;
        } else {
            *--ops = OP_INSERTION;
            if (code & F_OPENED) state = 0;
            --i;
        }
    }
    for (; j > 0; --j) *--ops = OP_DELETION;  // the rest is one gap along the border
    for (; i > 0; --i) *--ops = OP_INSERTION;
    op_count[k] = (int)(end - ops);
}

// The paths of leaf_paths packed one after the other, a warp a leaf: leaf k's op_count[k]
// operations, which end at ops_base[k] + m + n (leaves as leaf_paths takes them), copied to
// out[out_base[k] ..].
extern "C" __global__ void __launch_bounds__(128)
pack_leaf_paths(const u8* __restrict__ ops_space, const i64* __restrict__ ops_base,
                const i64* __restrict__ leaves, const int* __restrict__ op_count,
                const i64* __restrict__ out_base, const int count, u8* __restrict__ out) {
    const int k = (int)(((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32);  // whole warps
    const int lane = threadIdx.x % 32;
    if (k >= count) return;
    const i64* fields = leaves + (i64)k * LEAF_FIELDS;
    const int length = op_count[k];
    const u8* from = ops_space + ops_base[k] + fields[LEAF_M] + fields[LEAF_N] - length;
    u8* to = out + out_base[k];
    for (int x = lane; x < length; x += 32) to[x] = from[x];
}

// Where the optimal paths of split subproblems cross their middle row (align/_linear.py's
// _split_columns, on the rows that long_tiles left on the device): a block per split, whose
// top half's last row starts at rows[splits[SPLIT_TOP]] and its reversed bottom half's at
// rows[splits[SPLIT_BOTTOM]], n + 1 cells each (cell 0 unset there: column 0's gap down to the
// last row, SPLIT_TOP_LEFT and SPLIT_BOTTOM_LEFT, is its H and F). Column j joins the top's
// cell j with the bottom's cell n - j through a cell (H + H) or through one vertical gap
// (F + F + excess, its opening charged once); the first column with the best join wins. Split
// b (of count, the grid's blocks) writes its column to found[b], whether that join is strictly
// better through the gap to found[count + b], and the join (the best score of a path through
// the middle row: the subproblem's optimum) to found[2 * count + b]. Sums in 64 bits: two NEG
// sentinels would overflow int32.
enum SplitField { SPLIT_TOP, SPLIT_BOTTOM, SPLIT_N, SPLIT_TOP_LEFT, SPLIT_BOTTOM_LEFT,
                  SPLIT_FIELDS };
// One block searches the single split of a pair's first level (100,000 columns, after the
// wavefront, which waits for it): as many threads as a block holds, each loading this many
// columns of both rows before it compares them (256 threads, one column at a time: 94 us; now
// 40 us). segment_first_max takes blocks of the same size.
constexpr int SPLIT_THREADS = 1024;
constexpr int SPLIT_UNROLL = 8;

extern "C" __global__ void __launch_bounds__(SPLIT_THREADS)
split_columns(const int2* __restrict__ rows, const i64* __restrict__ splits, const int excess,
              i64* __restrict__ found) {
    const i64* fields = splits + (i64)blockIdx.x * SPLIT_FIELDS;
    const int2* top = rows + fields[SPLIT_TOP];
    const int2* bottom = rows + fields[SPLIT_BOTTOM];
    const int n = (int)fields[SPLIT_N];
    const int top_left = (int)fields[SPLIT_TOP_LEFT];
    const int bottom_left = (int)fields[SPLIT_BOTTOM_LEFT];
    i64 best = -(1LL << 62);
    int best_j = n + 1, gap = 0;
    // A thread's columns ascend: first + k * SPLIT_THREADS, the first best kept.
    for (int first = threadIdx.x; first <= n; first += SPLIT_THREADS * SPLIT_UNROLL) {
        int2 u[SPLIT_UNROLL], v[SPLIT_UNROLL];
#pragma unroll
        for (int k = 0; k < SPLIT_UNROLL; ++k) {
            const int j = first + k * SPLIT_THREADS;
            u[k] = j == 0 ? make_int2(top_left, top_left) : j <= n ? top[j] : make_int2(0, 0);
            v[k] = j == n ? make_int2(bottom_left, bottom_left) : j < n ? bottom[n - j]
                                                                         : make_int2(0, 0);
        }
#pragma unroll
        for (int k = 0; k < SPLIT_UNROLL; ++k) {
            const int j = first + k * SPLIT_THREADS;
            const i64 cell = (i64)u[k].x + v[k].x;
            const i64 value = max(cell, (i64)u[k].y + v[k].y + excess);
            if (j <= n && value > best) {
                best = value;
                best_j = j;
                gap = cell < value;
            }
        }
    }
    // The larger join, then the smaller column: the warp's, then the block's.
    for (int d = 16; d > 0; d /= 2) {
        const i64 other = __shfl_down_sync(FULL_WARP, best, d);
        const int other_j = __shfl_down_sync(FULL_WARP, best_j, d);
        const int other_gap = __shfl_down_sync(FULL_WARP, gap, d);
        if (other > best || (other == best && other_j < best_j)) {
            best = other;
            best_j = other_j;
            gap = other_gap;
        }
    }
    __shared__ i64 warp_best[SPLIT_THREADS / 32];
    __shared__ int warp_j[SPLIT_THREADS / 32], warp_gap[SPLIT_THREADS / 32];
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
        warp_best[warp] = best;
        warp_j[warp] = best_j;
        warp_gap[warp] = gap;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < SPLIT_THREADS / 32; ++w) {
            if (warp_best[w] > best || (warp_best[w] == best && warp_j[w] < best_j)) {
                best = warp_best[w];
                best_j = warp_j[w];
                gap = warp_gap[w];
            }
        }
        found[blockIdx.x] = best_j;
        found[gridDim.x + blockIdx.x] = gap;
        found[2 * gridDim.x + blockIdx.x] = best;
    }
}

// The maximum of each segment of `values` (their H, .x) and where it first occurs: block b
// takes values[segments[2b] .. segments[2b + 1]) and writes its maximum to best[b] and the
// position of its first occurrence, from the segment's start, to at[b] (NEG and -1 when the
// segment is empty). The end cells of a score pass (the last row, the last column) are found
// where the wavefront left them, so that two numbers a problem come back to the host.
__device__ __forceinline__ bool first_better(int value, i64 at, int best, i64 best_at) {
    return at >= 0 && (best_at < 0 || value > best || (value == best && at < best_at));
}

extern "C" __global__ void __launch_bounds__(SPLIT_THREADS)
segment_first_max(const int2* __restrict__ values, const i64* __restrict__ segments,
                  int* __restrict__ best, i64* __restrict__ at) {
    const i64 start = segments[2 * (i64)blockIdx.x], stop = segments[2 * (i64)blockIdx.x + 1];
    int value = NEG;
    i64 where = -1;
    for (i64 k = start + threadIdx.x; k < stop; k += SPLIT_THREADS) {  // ascending positions
        const int v = values[k].x;
        if (where < 0 || v > value) {
            value = v;
            where = k - start;
        }
    }
    for (int d = 16; d > 0; d /= 2) {
        const int other = __shfl_down_sync(FULL_WARP, value, d);
        const i64 other_at = __shfl_down_sync(FULL_WARP, where, d);
        if (first_better(other, other_at, value, where)) {
            value = other;
            where = other_at;
        }
    }
    __shared__ int warp_value[SPLIT_THREADS / 32];
    __shared__ i64 warp_at[SPLIT_THREADS / 32];
    if (threadIdx.x % 32 == 0) {
        warp_value[threadIdx.x / 32] = value;
        warp_at[threadIdx.x / 32] = where;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < SPLIT_THREADS / 32; ++w) {
            if (first_better(warp_value[w], warp_at[w], value, where)) {
                value = warp_value[w];
                where = warp_at[w];
            }
        }
        best[blockIdx.x] = value;
        at[blockIdx.x] = where;
    }
}

// Copies from global into shared memory that the warp goes on past (cp.async, sm_80 and
// later; plain copies before), waited for all at once.
template <int BYTES>  // 16 (nibbles, read once: past L1) or 4 (codes)
__device__ __forceinline__ void copy_async(void* to, const void* from) {
#if __CUDA_ARCH__ >= 800
    const u32 shared = (u32)__cvta_generic_to_shared(to);
    if constexpr (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(shared), "l"(from));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(shared), "l"(from));
#else
    if constexpr (BYTES == 16) *static_cast<int4*>(to) = *static_cast<const int4*>(from);
    else *static_cast<u32*>(to) = *static_cast<const u32*>(from);
#endif
}
__device__ __forceinline__ void copies_issued() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void copies_done() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
    __syncwarp();
}

// Codes [lo, hi) of `codes` into `to` by whole aligned words; returns the index of the code at
// `to`'s first byte. The words around them lie in the codes' allocation: a set's device copy
// ends in zero padding (SequenceSet.to_device), other copies come from CuPy's pool, which
// hands out whole 512-byte pieces.
__device__ __forceinline__ int copy_codes(u32* to, const u8* codes, int lo, int hi, int lane) {
    const int skew = (int)((size_t)(codes + lo) & 3);
    const u32* from = reinterpret_cast<const u32*>(codes + lo - skew);
    for (int k = lane; k < (hi - lo + skew + 3) / 4; k += 32) copy_async<4>(to + k, from + k);
    return lo - skew;
}

// The paths of large leaves from their halves' traceback nibbles, which long_bands<..., TRACE>
// wrote (the leaves of leaf_paths, their fields as it takes them: align/_cuda_long.py's traced
// leaves). Leaf k of count splits at its middle row, m / 2: its top half ran forward as problem
// k, its bottom half reversed as problem count + k, each in bands of THREADS * RPT rows, and
// split_columns found where the leaf's path crosses the middle row: column found[k], through a
// vertical gap where found[count + k]. Band I of a half runs steps s = 0 .. n + THREADS - 2 in
// blocks of SWEEP_UNROLL; thread t computes rows I * THREADS * RPT + t * RPT + 1 + r at step
// s, column s - t + 1, and keeps their nibbles of block b in its chunk of RPT words at
// trace_base[p] + ((I * blocks + b) * THREADS + t) * RPT (blocks a band: steps rounded up to
// whole blocks), as store_chunk lays them out.
//
// A warp a half walks from the crossing back to its half's start: the top half's walk to the
// leaf's top-left corner, the bottom half's (in its reversed coordinates) to the leaf's
// bottom-right corner. The walk is a chain of dependent steps, so the warp reads the nibbles
// from a window in shared memory: the blocks of the band around it (WALK_WINDOW_BYTES: the
// blocks up to the walk's, whose steps only decrease within a band), with the band's query
// codes and the window's target codes (for = and X). Two windows: while the walk runs through
// one band, the next band up is already being copied into the other (cp.async), at the columns
// up to where the walk stands, which the walk leaves the band at or before; the walk waits for
// a copy only where that guess misses (a gap longer than the window). It takes a run at a time:
// a lane a cell of the run (of diagonal steps, of a horizontal gap along the row, or of a
// vertical gap up the column), and a vote for where it ends. Both halves write the leaf's path
// in its room, ops_space from ops_base[k] (m + n bytes), around the crossing at ops_base[k] +
// m / 2 + found[k]: the top half's operations backwards before it, the bottom half's (which the
// reversed walk meets in the leaf's order) forwards from it, so that the path lies in one
// piece, from spans[k] to spans[count + k].
constexpr int WALK_WINDOW_BYTES = 16384;

template <int THREADS, int RPT>
__global__ void __launch_bounds__(32)
trace_walk(const u8* __restrict__ a_codes, const u8* __restrict__ b_codes,
           const i64* __restrict__ leaves, const u32* __restrict__ trace,
           const i64* __restrict__ trace_base, const i64* __restrict__ found,
           const int match_codes, u8* __restrict__ ops_space, const i64* __restrict__ ops_base,
           i64* __restrict__ spans) {
    constexpr int BAND = THREADS * RPT;
    constexpr int BLOCK_WORDS = THREADS * RPT;  // a block of steps of a band
    constexpr int WINDOW = WALK_WINDOW_BYTES / (4 * BLOCK_WORDS);  // blocks
    static_assert(WINDOW >= 1 && BLOCK_WORDS % 4 == 0, "whole 16-byte blocks");
    constexpr int A_WORDS = BAND / 4 + 2;  // a band's query codes, by aligned words
    constexpr int B_WORDS = (WINDOW * SWEEP_UNROLL + THREADS) / 4 + 2;  // a window's targets'
    __shared__ int4 windows[2][WALK_WINDOW_BYTES / 16];
    __shared__ u32 a_windows[2][A_WORDS], b_windows[2][B_WORDS];
    const int lane = threadIdx.x;
    const int count = gridDim.x / 2, leaf = blockIdx.x % count;
    const bool reverse = blockIdx.x >= count;  // the bottom half
    const i64* fields = leaves + (i64)leaf * LEAF_FIELDS;
    const int middle = (int)fields[LEAF_M] / 2, n = (int)fields[LEAF_N];
    const int m = reverse ? (int)fields[LEAF_M] - middle : middle;
    const u8* a = a_codes + fields[LEAF_A_BASE] + (reverse ? middle : 0);
    const u8* b = b_codes + fields[LEAF_B_BASE];
    const int blocks = (n + THREADS - 1 + SWEEP_UNROLL - 1) / SWEEP_UNROLL;
    const u32* codes = trace + trace_base[blockIdx.x];
    const int crossing = (int)found[leaf];
    u8* const pivot = ops_space + ops_base[leaf] + middle + crossing;
    int written = 0;  // operations so far: before the pivot (forward) or after it (reversed)
    auto put = [&](const int k, const u8 op) {
        if (reverse) pivot[written + k] = op;
        else pivot[-1 - written - k] = op;
    };
    // Row i's query code is a[i - 1] (a[m - i] reversed), column j's target code b[j - 1]
    // (b[n - j]); codes [lo, hi) of the DP's order are those of these indices.
    auto a_index = [&](const int i) { return reverse ? m - i : i - 1; };
    auto b_index = [&](const int j) { return reverse ? n - j : j - 1; };
    int i = m, j = reverse ? n - crossing : crossing;
    int state = found[count + leaf] ? 2 : 0;  // 0: H, 1: E (a run of D), 2: F (I)
    // Window `current`: blocks low .. high of a band, and the first query and target codes
    // it holds; the other: the copy of the next band's, or none (band -1).
    int current = 0;
    int window_band = -1, window_low = 0, window_high = -1, a_first = 0, b_first = 0;
    int next_band = -1, next_low = 0, next_high = -1, next_a = 0, next_b = 0;
    const u32* window = reinterpret_cast<const u32*>(windows[0]);
    const u8* a_window = reinterpret_cast<const u8*>(a_windows[0]);
    const u8* b_window = reinterpret_cast<const u8*>(b_windows[0]);
    // Copy blocks low .. high of a band, with their codes, into the window that is not current.
    auto fetch = [&](const int band, const int low, const int high) {
        const int slot = 1 - current;
        const int4* from = reinterpret_cast<const int4*>(
            codes + ((i64)band * blocks + low) * BLOCK_WORDS);
        const int pieces = (high - low + 1) * BLOCK_WORDS / 4;
#pragma unroll 8
        for (int k = lane; k < pieces; k += 32) copy_async<16>(&windows[slot][k], from + k);
        // The band's rows, and the columns of the blocks' steps (step s of thread t is column
        // s + 1 - t), as code indices.
        const int rows_lo = band * BAND, rows_hi = min(m, band * BAND + BAND);
        const int columns_lo = max(0, low * SWEEP_UNROLL - (THREADS - 1));
        const int columns_hi = min(n, (high + 1) * SWEEP_UNROLL);
        next_a = reverse ? copy_codes(a_windows[slot], a, m - rows_hi, m - rows_lo, lane)
                         : copy_codes(a_windows[slot], a, rows_lo, rows_hi, lane);
        next_b = reverse ? copy_codes(b_windows[slot], b, n - columns_hi, n - columns_lo, lane)
                         : copy_codes(b_windows[slot], b, columns_lo, columns_hi, lane);
        copies_issued();
        next_band = band;
        next_low = low;
        next_high = high;
    };
    // The nibble of cell (ci, cj), and whether it lies in the window.
    auto code_at = [&](const int ci, const int cj, bool& inside) -> int {
        const int band = (ci - 1) / BAND, within = ci - 1 - band * BAND;
        const int t = within / RPT, s = cj - 1 + t, block = s / SWEEP_UNROLL;
        inside = band == window_band && block >= window_low && block <= window_high;
        const int c = (s - block * SWEEP_UNROLL) * RPT + within - t * RPT;  // see store_chunk
        return inside ? (window[((block - window_low) * THREADS + t) * RPT + c / 8] >>
                         (28 - 4 * (c % 8))) & 15
                      : 0;
    };
    while (i > 0 && j > 0) {
        bool inside;
        int code = code_at(i, j, inside);
        if (!inside) {  // the blocks of (i, j)'s band up to its step's, as many as fit
            const int band = (i - 1) / BAND;
            const int high = (j - 1 + (i - 1 - band * BAND) / RPT) / SWEEP_UNROLL;
            __syncwarp();  // every lane is done reading the current window
            if (band != next_band || high < next_low || high > next_high) {
                copies_done();  // (a copy into the other window, not the one needed)
                fetch(band, max(0, high - WINDOW + 1), high);
            }
            copies_done();
            current = 1 - current;
            window = reinterpret_cast<const u32*>(windows[current]);
            a_window = reinterpret_cast<const u8*>(a_windows[current]);
            b_window = reinterpret_cast<const u8*>(b_windows[current]);
            window_band = next_band;
            window_low = next_low;
            window_high = next_high;
            a_first = next_a;
            b_first = next_b;
            next_band = -1;
            // The band above, where the walk leaves this band: its last row's thread (THREADS
            // - 1) at a column no greater than j.
            if (band > 0) {
                const int above = min(blocks - 1, (j + THREADS - 2) / SWEEP_UNROLL);
                fetch(band - 1, max(0, above - WINDOW + 1), above);
            }
            code = code_at(i, j, inside);
        }
        if (state == 0) {
            const int source = code & 3;
            if (source != FROM_DIAGONAL) {
                state = source == FROM_E ? 1 : 2;
                continue;
            }
            // A run of diagonal steps: lane k takes (i - k, j - k), on while its source is
            // the diagonal (lane 0's is).
            const int k = lane;
            bool on = true;
            if (k > 0) {
                on = i - k >= 1 && j - k >= 1;
                if (on) on = (code_at(i - k, j - k, inside) & 3) == FROM_DIAGONAL && inside;
            }
            const u32 off = __ballot_sync(FULL_WARP, !on);
            const int run = off ? __ffs(off) - 1 : 32;
            if (k < run) {  // (the run's cells lie in the window: so do their codes)
                const int x = a_window[a_index(i - k) - a_first];
                put(k, (x == b_window[b_index(j - k) - b_first] && x < match_codes)
                           ? OP_MATCH : OP_MISMATCH);
            }
            i -= run;
            j -= run;
            written += run;
        } else {
            // A gap's run: lane k takes (i, j - k) (D) or (i - k, j) (I); the gap opens at
            // the first whose flag says so, after which the walk is back in H.
            const bool along_row = state == 1;
            const int k = lane;
            const int ci = along_row ? i : i - k, cj = along_row ? j - k : j;
            bool on = ci >= 1 && cj >= 1, opened = false;
            if (on) {
                const int c = code_at(ci, cj, inside);
                on = inside;
                opened = inside && (c & (along_row ? E_OPENED : F_OPENED));
            }
            const u32 stops = __ballot_sync(FULL_WARP, !on || opened);
            const int first = stops ? __ffs(stops) - 1 : 32;
            const bool closes = first < 32 && (__ballot_sync(FULL_WARP, opened) >> first & 1);
            const int run = closes ? first + 1 : first;
            if (k < run) put(k, along_row ? OP_DELETION : OP_INSERTION);
            written += run;
            if (along_row) j -= run;
            else i -= run;
            if (closes) state = 0;
        }
    }
    copies_done();  // (a copy of a band above that the walk no longer needs)
    // The rest is one gap along the border.
    for (int k = lane; k < j; k += 32) put(k, OP_DELETION);
    written += j;
    for (int k = lane; k < i; k += 32) put(k, OP_INSERTION);
    written += i;
    if (lane == 0) spans[blockIdx.x] = pivot - ops_space + (reverse ? written : -written);
}
