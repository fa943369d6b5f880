// Warps for a pair: alignment paths (task="path": the DP up to the end cell with one traceback
// nibble per cell, then a walk back that writes the CIGAR) and the scores of long pairs (a
// thread of align.cu would compute such a pair alone, long after the others are done).
//
// warp_fill: LANES threads a band, a warp (LANES = 32: paths give each band of a pair its own
// warp, below; scores take the bands in turn) or a whole block (LANES = 128, 256 or 512, the
// bands in turn: a pair whose rows would keep one warp long after the others are done; a step
// takes longer the more rows a lane keeps, so more lanes of fewer rows can shorten its fill). The
// query rows are cut into bands of LANES * ROWS; in a band, lane L owns rows L * ROWS + 1 ..
// (L + 1) * ROWS and keeps their H and E in registers. The lanes run as a wavefront: at step
// s lane L computes column s - L + 1, fed by the last row that lane L - 1 computed one step
// earlier (a shuffle, or across warps of a block through shared memory and a barrier a step),
// so a band takes n + LANES - 1 steps. The last lane hands the band's last row (t and F) to
// the next band through memory (two alternating rows per pair). Paths in warps (LANES = 32)
// pipeline their bands instead: a warp a band, all of a pair's bands at once, each a few
// columns behind the band above, whose last row it reads as that band's last lane writes it
// (a row a band, so a tall pair's fill takes about its columns, not its bands times its
// columns). Values are int32; the host
// sends only pairs whose DP values provably fit. H is kept as t = H - gap_open (what opening
// a gap from it scores) and the substitution table holds s + gap_open, which saves an
// instruction per cell.
//
// Rows past the pair's last row (the last band's padding) read a substitution row of -16384:
// their values never exceed those they come from, so they neither win a local maximum nor
// change a real row.
//
// TRACE: the nibbles of a lane's ROWS cells of one step are nibbles
// ((band * steps + step) * LANES + lane) * ROWS + 0 .. ROWS - 1 of the pair's codes (ROWS / 8
// words, or a byte or half a word for lanes of 2 or 4 rows): a warp's stores of one step are
// contiguous.
//
// Traceback nibble, the CPU backend's traceback byte: bits 0-1 where H came from (diagonal, E,
// F, or a local alignment's stop), bit 2 E opened here, bit 3 F opened here, with the same
// preferences (diagonal before E before F, opening before extending).
//
// trace_back: one warp per pair walks the nibbles back from the end cell with the CPU
// backend's stop rules, labels diagonal steps = or X, and writes the CIGAR as text, or (RUNS)
// as a word a run for packed CIGARs. A walk is a chain of dependent steps, so the warp loads
// the nibbles of 32 columns x 16 diagonals around the walk at once (one memory round trip
// instead of one a step; a run of diagonal steps crosses 32 columns of it) and reads its cells
// with shuffles: a gap step a cell, a run of diagonal steps at once (a lane a cell of the
// diagonal, and a vote). Runs are counted as the walk goes, so no operation is stored and read
// again.
//
// Both take pairs first .. count - 1 of their per-pair arrays (the rows of `index`, `sizes` and
// `results`, below): the launches of one batch (a lane shape each) share the batch's arrays.
// The walk also counts the columns and runs of each operation (what a search reports of a hit
// without reading its CIGAR again).
//
// FIND_END: the fill runs over every cell and finds the end itself, so no mode but overlap
// needs a separate pass for its ends. Global and semi-global (whose alignments end in the last
// row): the lane that owns row m also writes that row (t) to `last_row`, and trace_back takes
// the end cell and the score from it (semi-global: the best cell, smallest column). Local: the
// fill tracks the best cell as it does without TRACE (below) and writes its score and end, from
// which trace_back starts.
//
// Without TRACE the fill only scores: global and semi-global take the score and target end
// from row m (the lane that owns it tracks them), local the largest H of any cell and its end
// cell with the CPU backend's tie rule (smallest target end, then smallest query end; (0, 0)
// when nothing scores above 0). A lane visits a band's cells column by column, so a strict
// comparison keeps the band's first best; bands and then lanes are merged by the full rule.
// The host sends no overlap pairs here.

#include "common.cuh"

// The per-pair arrays of a batch: rows of `stride` entries of three arrays, each copied in one
// piece (the host's _PATH_INDEX_ROWS, _PATH_SIZE_ROWS and _TRACE_OUTPUTS, in this order).
enum IndexRow {       // int64
    Q_INDEX,          // the query, and the target, of the pair in the sets
    T_INDEX,
    TRACE_BASE,       // its traceback codes in `trace` (words)
    BORDER_BASE,      // its border rows in `border` (two; a warp's pipelined bands: one a band)
    BAND_BASE,        // its first band among the batch's (pipelined bands: their warps)
    LAST_BASE,        // its last row in `last_row`
    WRITTEN_BASE,     // its CIGAR's space in `text`
    ORDER,            // (the host's) the pair gathered k-th
};
enum SizeRow {        // int32
    ROWS_END,         // the rows and columns of its DP (up to the end cell)
    COLUMNS_END,
    KNOWN,            // a local path's known score (INT_MAX: unknown)
    PAIR_ROWS,        // the rows a lane keeps, and the lanes, of its fill
    PAIR_LANES,
};
enum ResultRow {      // int32
    SCORE,
    Q_END,
    T_END,
    Q_START,
    T_START,
    WRITTEN,          // bytes of CIGAR text, or runs
    MATCHES,          // columns of =, X, I, and all of them (D: the rest)
    MISMATCHES,
    INSERTED,
    COLUMNS,
    MATCH_RUNS,       // runs of =, X, I and D
    MISMATCH_RUNS,
    INSERT_RUNS,
    DELETE_RUNS,
};

enum { FROM_DIAGONAL = 0, FROM_E = 1, FROM_F = 2, STOP = 3, E_OPENED = 4, F_OPENED = 8 };
constexpr int NEG = -(1 << 30);  // "minus infinity", with room to subtract gap costs
// Pipelined bands: a border cell's t before the band above has written it (the host fills the
// rows with bytes 0x80); a cell past the last column that band wrote (it stopped at a known
// score); and, in cell 0 of its row (no column), that band's end, the last column it wrote in
// y. No real t comes near any of them (they stay above NEG minus a few gap costs).
constexpr int UNWRITTEN = (int)0x80808080, PAST_THE_END = UNWRITTEN + 1,
              BAND_ENDED = UNWRITTEN + 2;

// Pipelined bands: a border cell (t, F) goes through memory as one naturally aligned 64-bit
// word (t low), stored and loaded in one access each (in L2: another warp reads it), so the
// band below sees it whole or not at all (an int2 access is two 32-bit ones).
__device__ __forceinline__ void put_cell(int2* slot, int t, int f) {
    __stcg(reinterpret_cast<unsigned long long*>(slot), ((u64)(u32)f << 32) | (u32)t);
}

__device__ __forceinline__ int2 read_cell(const int2* slot) {
    const u64 word = __ldcv(reinterpret_cast<const unsigned long long*>(slot));
    return make_int2((int)(u32)word, (int)(u32)(word >> 32));
}

// Pipelined bands read the row of the band above in chunks of 32 columns, lane k column
// first + k, each chunk loaded a chunk ahead of its use: a load from another warp's recent
// writes takes longer than a step, so lane 0 reading its next cell a step ahead would wait
// every step. A band's warp thus keeps 32 to 64 columns behind the one above. Cells past the
// row (column n) read as past its end.
__device__ __forceinline__ int2 row_cell(const int2* row, int column, int n) {
    return column <= n ? read_cell(row + column) : make_int2(PAST_THE_END, NEG);
}

// The warp's chunk (`cell`: lane k's of column `column`, as loaded a chunk ago) once written
// (each cell is seen whole or not at all, and only its own word tells: no fence is needed;
// the band above writes cell 0 after its others, but they are read again until written, as
// the order in which another warp sees two stores is not guaranteed). While some
// are not, one lane waits for the last of them (the band above writes its row in order) or
// for the end of that band (cell 0), loading two cells a wait, with growing pauses that
// leave the memory and the issue slots to the warps that compute; then the others are
// loaded again. Cells past the end of the band above read as past the end.
__device__ __forceinline__ int2 settled_chunk(int2 cell, const int2* row, int column, int n) {
    const int k = threadIdx.x & 31;
    int pause = 64;
    while (true) {
        const u32 missing = __ballot_sync(FULL_WARP, cell.x == UNWRITTEN);
        if (!missing) return cell;
        const int last = 31 - __clz(missing);
        int ended_at = 0x7fffffff;  // the last column of the band above, once it has ended
        if (k == last) {
            while (true) {
                cell = row_cell(row, column, n);
                if (cell.x != UNWRITTEN) break;
                const int2 ended = read_cell(row);
                if (ended.x == BAND_ENDED) {
                    ended_at = ended.y;
                    break;
                }
                __nanosleep(pause);
                pause = min(2 * pause, 1024);
            }
        }
        ended_at = __shfl_sync(FULL_WARP, ended_at, last);
        if (column > ended_at) {
            cell = make_int2(PAST_THE_END, NEG);
        } else if (cell.x == UNWRITTEN) {
            cell = row_cell(row, column, n);
        }
    }
}

// H of border cell k (k >= 1) of row 0 (`pays`: global) or of column 0 (`pays`: global or
// semi-global): a gap along the border, or free.
__device__ __forceinline__ int border_h(bool pays, int k, int gap_open, int gap_extend) {
    return (pays && k > 0) ? -(gap_open + (k - 1) * gap_extend) : 0;
}

// Where row `row` (0-based, < the pair's rows) of a pair's nibbles filled by `lanes` lanes of
// `rows` rows lies: its band, its lane, its row in the lane, and the nibble of its column 0
// (column c's is lanes * rows nibbles further per column).
struct TraceRow {
    int band, lane, r;
    i64 nibble;
};

__device__ __forceinline__ TraceRow trace_row(int rows, int lanes, int steps, int row) {
    TraceRow at;
    const int band_rows = lanes * rows;
    at.band = row / band_rows;
    const int within = row - at.band * band_rows;
    at.lane = within / rows;
    at.r = within - at.lane * rows;
    at.nibble = (((i64)at.band * steps + at.lane) * lanes + at.lane) * rows + at.r;
    return at;
}

// The row above `at` (which is not row 0): a nibble back within a lane, lanes * rows + 1 back
// across lanes, located anew across bands. The walk back moves up a row at a time, so it
// divides only when it enters a band.
__device__ __forceinline__ void row_up(TraceRow& at, int rows, int lanes, int steps) {
    if (at.r > 0) {
        --at.r;
        --at.nibble;
    } else if (at.lane > 0) {
        --at.lane;
        at.r = rows - 1;
        at.nibble -= (i64)lanes * rows + 1;
    } else {
        at = trace_row(rows, lanes, steps, at.band * lanes * rows - 1);
    }
}

template <int ROWS, int MODE, bool TRACE, bool FIND_END, int LANES>
__global__ void __launch_bounds__(LANES > 128 ? LANES : 128)
warp_fill(const u8* __restrict__ q_codes, const i64* __restrict__ q_offsets,
           const u8* __restrict__ t_codes, const i64* __restrict__ t_offsets,
           const i64* __restrict__ index, const int* __restrict__ sizes,
           int* __restrict__ results, int stride, int first, int count,
           const short* __restrict__ table, int n_codes, int gap_open, int gap_extend,
           u32* __restrict__ trace, int2* __restrict__ border, int* __restrict__ last_row,
           const int* __restrict__ warp_pair, int* __restrict__ tickets,
           int* __restrict__ finished, int* __restrict__ stops,
           int4* __restrict__ band_bests) {
    static_assert(ROWS == 2 || ROWS == 4 || ROWS % 8 == 0,
                  "a lane's nibbles fill a byte, half a word or whole words");
    static_assert(LANES == 32 || LANES == 128 || LANES == 256 || LANES == 512,
                  "a warp or the whole block (launch bounds)");
    constexpr int WORDS = ROWS >= 8 ? ROWS / 8 : 1;
    constexpr int LANE_BYTES = ROWS / 2;  // a lane's codes of one step
    constexpr int BAND = LANES * ROWS;
    constexpr int WARPS = LANES / 32;
    extern __shared__ short s_table[];
    // LANES >= 128: the last row of each warp's last lane, for the next warp's first lane (two
    // steps' worth: a warp may write step s + 1's while the next still reads step s's), and
    // each warp's best cell for the merge.
    __shared__ int2 s_handoff[2][WARPS];
    __shared__ int3 s_best[WARPS];
    for (int k = threadIdx.x; k < (n_codes + 1) * n_codes; k += blockDim.x) {
        s_table[k] = k < n_codes * n_codes ? table[k] : (short)-16384;  // the padding row
    }
    __syncthreads();
    const int lane = threadIdx.x % LANES;
    const int warp = lane >> 5;
    // Pipelined bands (paths in warps): each warp fills one band of a pair, the bands of a pair
    // side by side on as many warps, each a few columns behind the one above (it reads that
    // band's last row as it is written). A warp takes the next ticket of the launch as it
    // starts, and the tickets go to the launch's bands in order (`warp_pair`: the pair of each
    // of the batch's bands), so every band starts after the one above it: a warp never waits
    // for one that has not started. The others: LANES threads a pair, one pass over its bands.
    constexpr bool PIPELINED = TRACE && LANES == 32;
    int p, band_first, band_end;  // the pair, and its bands that these threads fill
    i64 band_at = 0;  // PIPELINED: the band among the batch's
    if (PIPELINED) {
        int ticket = 0;
        if ((threadIdx.x & 31) == 0) ticket = atomicAdd(tickets, 1);
        ticket = __shfl_sync(FULL_WARP, ticket, 0);
        const int last_pair = count - 1;
        const i64 launch_base = index[BAND_BASE * stride + first];
        const int last_rows = sizes[ROWS_END * stride + last_pair];
        const i64 launch_bands = index[BAND_BASE * stride + last_pair] - launch_base +
                                 max(1, (last_rows + BAND - 1) / BAND);
        if (ticket >= launch_bands) return;
        band_at = launch_base + ticket;
        p = warp_pair[band_at];
        band_first = (int)(band_at - index[BAND_BASE * stride + p]);
        band_end = band_first + 1;
    } else {
        // The same for the pair's LANES threads (LANES >= 128: the whole block, so that every
        // thread that returns here or below returns with its block and no barrier waits).
        p = first + (blockIdx.x * blockDim.x + threadIdx.x) / LANES;
        if (p >= count) return;
        band_first = 0;
        band_end = -1;  // all of them (below)
    }
    const int m = sizes[ROWS_END * stride + p], n = sizes[COLUMNS_END * stride + p];
    if (m == 0 || n == 0) return;
    const u8* a = q_codes + q_offsets[index[Q_INDEX * stride + p]];
    const u8* b = t_codes + t_offsets[index[T_INDEX * stride + p]];
    const bool row0_pays = MODE == ALIGN_GLOBAL;
    const bool column0_pays = MODE == ALIGN_GLOBAL || MODE == ALIGN_SEMI_GLOBAL;
    const int steps = n + LANES - 1;
    u32* out = TRACE ? trace + index[TRACE_BASE * stride + p] : nullptr;
    int2* borders = border + index[BORDER_BASE * stride + p];
    const int bands = (m + BAND - 1) / BAND;
    if (!PIPELINED) band_end = bands;
    int* last = TRACE && FIND_END && MODE != ALIGN_LOCAL
                    ? last_row + index[LAST_BASE * stride + p] : nullptr;
    // Local alignments whose end this fill finds: the best cell and its score.
    constexpr bool TRACKS_BEST = MODE == ALIGN_LOCAL && (!TRACE || FIND_END);
    // Local paths whose exact score the caller knows (a search's hits; INT_MAX: unknown): the
    // first cell of that score ends the alignment, so once a lane reaches it in column j a
    // band needs only the steps that bring every lane to column j, and the bands below only
    // columns up to j (a later band's cell wins a tie only in an earlier column). Pipelined
    // bands: the pair's other bands too, which see it within 32 steps and compute at most 31
    // columns past it, the band below a stop from an empty row (which can only lower its
    // cells, and never reach the score before column j; a known score below the pair's could
    // end the path in such a cell: the score must be exact).
    constexpr bool STOPS = TRACKS_BEST && TRACE;
    const int known = STOPS ? sizes[KNOWN * stride + p] : 0;
    int column_limit = n;
    int row_best = NEG, row_best_j = 0;  // without TRACE: row m (lane_last), best t and column
    int cell_best = 0, best_i = 0, best_j = 0;  // TRACKS_BEST: the lane's best cell
    const int r_last = (m - 1) % ROWS;  // row m is register r_last of lane lane_last
    const int lane_last = ((m - 1) % BAND) / ROWS;
    for (int band = band_first; band < band_end; ++band) {
        const int row0 = band * BAND + lane * ROWS;  // the lane's rows: row0 + 1 .. row0 + ROWS
        const bool owns_last = MODE != ALIGN_LOCAL && (FIND_END || !TRACE) &&
                               band == bands - 1 && lane == lane_last;
        int t[ROWS], e[ROWS], sub_row[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int i = row0 + r + 1;
            t[r] = border_h(column0_pays, i, gap_open, gap_extend) - gap_open;
            e[r] = NEG;
            sub_row[r] = (i <= m ? (int)a[i - 1] : n_codes) * n_codes;
        }
        // Pipelined: band k writes row k (and reads row k - 1); else two rows in turn.
        const int2* above = borders + (PIPELINED ? (i64)(band - 1) : (i64)(band & 1)) * (n + 1);
        int2* below = borders + (PIPELINED ? (i64)band : (i64)((band + 1) & 1)) * (n + 1);
        int up_t = 0, up_f = NEG;  // t and F of the row above the lane's rows, this column
        int band_best = 0, band_r = 0, band_j = 0;  // TRACKS_BEST: the band's first best
        int diagonal_top = border_h(column0_pays, row0, gap_open, gap_extend) - gap_open;
        // The step's target code, and lane 0's cell of the band above, are loaded a step
        // ahead, so that no step starts by waiting for memory (at step 0 only lane 0 has a
        // column: 1).
        int next_b = lane == 0 ? b[0] : 0;
        int2 next_above = make_int2(0, NEG);
        // PIPELINED: the chunks of the row above (columns chunk_base + lane, and the next
        // chunk's), and whether lane 0 has met the end of that row's columns (the band above
        // stopped at a known score): this band stops there too, as the bands below a stop do.
        int chunk_base = 1;
        int2 chunk = make_int2(0, NEG), next_chunk = make_int2(0, NEG);
        bool above_ended = false;
        if (PIPELINED && band > 0) {
            chunk = settled_chunk(row_cell(above, 1 + lane, n), above, 1 + lane, n);
            next_chunk = __shfl_sync(FULL_WARP, chunk.x, 31) == PAST_THE_END
                             ? make_int2(PAST_THE_END, NEG)
                             : row_cell(above, 33 + lane, n);
            next_above = make_int2(__shfl_sync(FULL_WARP, chunk.x, 0),
                                   __shfl_sync(FULL_WARP, chunk.y, 0));
        } else if (lane == 0 && band > 0) {
            next_above = above[1];
        }
        // The band's columns: all, or (STOPS) those up to the column limit the bands above
        // left, past which they wrote no last row for this band to read.
        const int band_n = column_limit;
        int band_steps = min(steps, band_n + LANES - 1);
        bool stopping = false;
        // Pointers that move a column a step, rather than addresses computed anew each step:
        // the lane's codes of the step (TRACE), the target code of column j + 1 (loaded a step
        // ahead), lane 0's cell of the band above in column j + 1, the last lane's of the band
        // below in column j (each used only where that column exists).
        u8* step_out = TRACE ? reinterpret_cast<u8*>(out) +
                                   ((i64)band * steps * LANES + lane) * LANE_BYTES
                             : nullptr;
        const u8* b_at = b + 1 - lane;
        const int2* above_at = above + 2 - lane;
        int2* below_at = below + 1 - lane;
        for (int step = 0; step < band_steps; ++step, ++b_at, ++above_at, ++below_at,
                 step_out += TRACE ? LANES * LANE_BYTES : 0) {
            const int j = step - lane + 1;
            const int bj = next_b;
            const int2 from_above = next_above;
            int2 above_cell = make_int2(0, NEG);  // PIPELINED: lane 0's cell of the next column
            if (PIPELINED && band > 0) {
                const int column = step + 2;
                if (column >= chunk_base + 32) {  // the next chunk (and the one after it)
                    chunk_base += 32;
                    chunk = settled_chunk(next_chunk, above, chunk_base + (lane & 31), n);
                    next_chunk = __shfl_sync(FULL_WARP, chunk.x, 31) == PAST_THE_END
                                     ? make_int2(PAST_THE_END, NEG)
                                     : row_cell(above, chunk_base + 32 + (lane & 31), n);
                }
                above_cell = make_int2(__shfl_sync(FULL_WARP, chunk.x, column - chunk_base),
                                       __shfl_sync(FULL_WARP, chunk.y, column - chunk_base));
            }
            if (j >= 0 && j < band_n) {
                next_b = *b_at;
                if (lane == 0 && band > 0) {
                    if (PIPELINED) {
                        // Past the end of the band above's columns (it ended at a known
                        // score), lane 0 computes from an empty row (H 0, where local cells
                        // start: its cells can only be lower than they are), and the band
                        // ends at column j, as if it had found the score there.
                        next_above = above_cell;
                        if (above_ended || next_above.x == PAST_THE_END) {
                            above_ended = true;
                            next_above = make_int2(-gap_open, NEG);
                        }
                    } else {
                        next_above = *above_at;
                    }
                }
            }
            int last_t = 0, last_f = NEG;
            if (j >= 1 && j <= band_n) {
                if (lane == 0) {
                    if (band == 0) {
                        up_t = border_h(row0_pays, j, gap_open, gap_extend) - gap_open;
                        up_f = NEG;
                    } else {
                        up_t = from_above.x;
                        up_f = from_above.y;
                    }
                }
                int vt = up_t, vf = up_f, diagonal = diagonal_top;
                int step_best = 0;  // TRACKS_BEST: the best of the lane's cells this step
                u32 words[WORDS];
#pragma unroll
                for (int w = 0; w < WORDS; ++w) words[w] = 0;
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const int e_extend = e[r] - gap_extend;
                    const bool e_opened = t[r] >= e_extend;
                    e[r] = e_opened ? t[r] : e_extend;
                    const int f_extend = vf - gap_extend;
                    const bool f_opened = vt >= f_extend;
                    const int f = f_opened ? vt : f_extend;
                    const int d = diagonal + s_table[sub_row[r] + bj];  // H + s
                    // The maxima with the comparisons that pick the source (diagonal before
                    // E before F), and a local alignment's stop where nothing scores above 0.
                    bool d_wins, de_wins;
                    const int de = __vibmax_s32(d, e[r], &d_wins);
                    int score = __vibmax_s32(de, f, &de_wins);
                    const bool stops = MODE == ALIGN_LOCAL && score <= 0;
                    if (MODE == ALIGN_LOCAL) score = max(score, 0);
                    if (TRACE) {
                        u32 code = stops ? STOP : !de_wins ? FROM_F
                                                : d_wins   ? FROM_DIAGONAL
                                                           : FROM_E;
                        code |= (e_opened ? E_OPENED : 0) | (f_opened ? F_OPENED : 0);
                        words[r / 8] |= code << (4 * (r & 7));
                    }
                    if (TRACKS_BEST) step_best = max(step_best, score);
                    diagonal = t[r];
                    t[r] = score - gap_open;
                    vt = t[r];
                    vf = f;
                }
                if (TRACKS_BEST && step_best > band_best) {
                    // Rare (the band's best grows): find the first row of this column that
                    // reached it, rather than keeping a row and column for every cell.
                    band_best = step_best;
                    band_j = j;
                    band_r = ROWS - 1;
#pragma unroll
                    for (int r = ROWS - 2; r >= 0; --r) {
                        band_r = t[r] == step_best - gap_open ? r : band_r;
                    }
                }
                if (TRACE) {
                    if (ROWS == 2) {
                        *step_out = (u8)words[0];
                    } else if (ROWS == 4) {
                        *reinterpret_cast<unsigned short*>(step_out) = (unsigned short)words[0];
                    } else {
#pragma unroll
                        for (int w = 0; w < WORDS; ++w) {
                            reinterpret_cast<u32*>(step_out)[w] = words[w];
                        }
                    }
                }
                if (lane == LANES - 1) {
                    if (PIPELINED) {
                        put_cell(below_at, vt, vf);
                    } else {
                        *below_at = make_int2(vt, vf);
                    }
                }
                if (owns_last) {
                    int v = t[0];
#pragma unroll
                    for (int r = 1; r < ROWS; ++r) v = r == r_last ? t[r] : v;
                    if (TRACE) {
                        last[j] = v;
                    } else if (MODE == ALIGN_GLOBAL || v > row_best) {  // semi-global: first best
                        row_best = v;
                        row_best_j = j;
                    }
                }
                diagonal_top = up_t;
                last_t = vt;
                last_f = vf;
            }
            const int from_t = __shfl_up_sync(FULL_WARP, last_t, 1);
            const int from_f = __shfl_up_sync(FULL_WARP, last_f, 1);
            bool found = false;  // STOPS: whether a lane of the pair has reached the score
            if (WARPS > 1) {
                if ((lane & 31) == 31) s_handoff[step & 1][warp] = make_int2(last_t, last_f);
                if (STOPS) {
                    found = __syncthreads_or(band_best >= known);
                } else {
                    __syncthreads();
                }
                if ((lane & 31) == 0 && warp > 0) {
                    const int2 v = s_handoff[step & 1][warp - 1];
                    up_t = v.x;
                    up_f = v.y;
                } else if (lane > 0) {
                    up_t = from_t;
                    up_f = from_f;
                }
            } else {
                if (STOPS) found = __any_sync(FULL_WARP, band_best >= known || above_ended);
                if (lane > 0) {
                    up_t = from_t;
                    up_f = from_f;
                }
            }
            if (STOPS && found && !stopping) {
                // Every lane's column is at most step + 1 (the one that found it too), and
                // every lane reaches that column within LANES - 1 more steps.
                stopping = true;
                band_steps = min(band_steps, step + LANES);
                column_limit = min(column_limit, step + 1);
                // Pipelined: the pair's other bands need no column past it either (the end
                // cell lies at or before it, and so does every cell it depends on), those
                // above too, which see it within 32 steps.
                if (PIPELINED && lane == 0) atomicMax(stops + p, 0x7fffffff - (step + 1));
            }
            if (PIPELINED && STOPS && (step & 31) == 31) {
                int stop = 0;
                if (lane == 0) stop = __ldcv(stops + p);
                stop = __shfl_sync(FULL_WARP, stop, 0);
                if (stop > 0) band_steps = min(band_steps, 0x7fffffff - stop + LANES - 1);
            }
        }
        if (PIPELINED && lane == LANES - 1) {
            // The band's end, and its last lane's last column (before n where it stopped at a
            // known score: the band below, which would wait for the next one forever, stops
            // there too).
            put_cell(below, BAND_ENDED, band_steps - LANES + 1);
        }
        if (TRACKS_BEST &&
            (band_best > cell_best || (band_best == cell_best && band_j < best_j))) {
            cell_best = band_best;  // a later band's cell wins a tie only in an earlier column
            best_i = row0 + band_r + 1;
            best_j = band_j;
        }
        if (WARPS > 1) {
            __syncthreads();  // the next band reads `below`
        } else {
            __syncwarp();
        }
    }
    if (TRACKS_BEST) {
        warp_best_cell(cell_best, best_i, best_j);
        if (WARPS > 1) {  // then across the warps of the block
            if ((lane & 31) == 0) s_best[warp] = make_int3(cell_best, best_i, best_j);
            __syncthreads();
            for (int w = 1; lane == 0 && w < WARPS; ++w) {
                const int3 other = s_best[w];
                if (better_cell(other.x, other.y, other.z, cell_best, best_i, best_j)) {
                    cell_best = other.x;
                    best_i = other.y;
                    best_j = other.z;
                }
            }
        }
        if (PIPELINED && bands > 1) {
            // One band of several: the last of the pair's warps to finish merges their bests.
            bool merges = false;
            if (lane == 0) {
                __stcg(band_bests + band_at, make_int4(cell_best, best_i, best_j, 0));
                __threadfence();  // the best before the count
                merges = atomicAdd(finished + p, 1) == bands - 1;
            }
            if (!__shfl_sync(FULL_WARP, merges, 0)) return;
            __threadfence();
            const i64 first_band = band_at - band_first;
            cell_best = best_i = best_j = 0;
            for (int k = lane; k < bands; k += 32) {
                const int4 other = __ldcg(band_bests + first_band + k);
                if (better_cell(other.x, other.y, other.z, cell_best, best_i, best_j)) {
                    cell_best = other.x;
                    best_i = other.y;
                    best_j = other.z;
                }
            }
            warp_best_cell(cell_best, best_i, best_j);
        }
        if (lane == 0) {
            results[SCORE * stride + p] = cell_best;
            results[T_END * stride + p] = best_j;
            results[Q_END * stride + p] = best_i;
        }
    } else if (!TRACE && lane == lane_last) {
        results[SCORE * stride + p] = row_best + gap_open;
        results[T_END * stride + p] = row_best_j;
    }
}

// The walk's window: lane k holds column wj - k, and of it the cells of 16 diagonals around
// the one through the window's anchor (wi, wj): nibble d (of a 64-bit word) is row
// wi - k + WALK_HALF - d, so the anchor's diagonal is nibble WALK_HALF of every lane. A run
// of diagonal steps keeps its nibble and crosses up to 32 columns before the warp loads a new
// window; a gap step moves one nibble (up: a row; left: a column and a nibble back). Each
// lane also holds that column's target code and the query codes of rows wi + WALK_HALF - k
// (`query`) and 32 rows above (`query_far`), every row a run of the window may meet.
constexpr int WALK_DIAGONALS = 16, WALK_HALF = 8;

struct WalkWindow {
    int wi = 0, wj = -64;  // the anchor: none yet
    u64 codes = 0;
    int target = 0, query = 0, query_far = 0;

    // The nibble of cell (i, j) in its lane (wj - j), inside the window or not.
    __device__ __forceinline__ int diagonal(int i, int j) const {
        return wi - wj + WALK_HALF + j - i;
    }

    __device__ __forceinline__ bool holds(int i, int j) const {
        const int d = diagonal(i, j);
        return j <= wj && j > wj - 32 && d >= 0 && d < WALK_DIAGONALS;
    }

    // Load the window anchored at (i, j) (1-based, i, j >= 1; rows past m are no cells):
    // every lane issues its loads before it uses any, so a window costs one memory round trip.
    __device__ __forceinline__ void load(int i, int j, int m, const u32* nibbles, const u8* a,
                                         const u8* b, int rows, int lanes, int steps) {
        const int k = threadIdx.x & 31;
        const int column = j - k;
        wi = i;
        wj = j;
        const i64 column_nibbles = (i64)lanes * rows;
        const i64 column_base = (i64)max(column - 1, 0) * column_nibbles;
        // Nibble d is row bottom - d; rows past m hold nothing, so the walk up the column
        // starts at the lowest real one.
        const int bottom = i - k + WALK_HALF, start = min(bottom, m);
        i64 at_nibble[WALK_DIAGONALS];
        TraceRow at = trace_row(rows, lanes, steps, max(start, 1) - 1);
#pragma unroll
        for (int d = 0; d < WALK_DIAGONALS; ++d) {
            const int row = bottom - d;
            at_nibble[d] = at.nibble + column_base;
            if (row <= start && row > 1) row_up(at, rows, lanes, steps);
        }
        u32 words[WALK_DIAGONALS];
#pragma unroll
        for (int d = 0; d < WALK_DIAGONALS; ++d) {
            const int row = bottom - d;
            words[d] = column >= 1 && row >= 1 && row <= m ? nibbles[at_nibble[d] >> 3] : 0u;
        }
        codes = 0;
#pragma unroll
        for (int d = 0; d < WALK_DIAGONALS; ++d) {
            codes |= (u64)((words[d] >> (4 * (int)(at_nibble[d] & 7))) & 15u) << (4 * d);
        }
        target = column >= 1 ? b[column - 1] : 0;
        const int near = i + WALK_HALF - k, far = near - 32;
        query = near >= 1 && near <= m ? a[near - 1] : 0;
        query_far = far >= 1 && far <= m ? a[far - 1] : 0;
    }

    // Every lane's: the query code of row `row` (within the window's rows).
    __device__ __forceinline__ int query_of(int row) const {
        const int at = wi + WALK_HALF - row;  // 0 .. 63
        const int near_code = __shfl_sync(FULL_WARP, query, at & 31);
        const int far_code = __shfl_sync(FULL_WARP, query_far, at & 31);
        return at < 32 ? near_code : far_code;
    }
};

// The CIGAR of a walk, written backwards from the end of the pair's space as the walk finds
// its operations (last first) and moved to the front at the end: runs are counted as they
// come, and lane 0 writes each one when it ends (text: its letter, then its digits; RUNS: a
// word, its length above two bits of operation). The whole warp keeps the same counts.
template <bool RUNS>
struct WalkCigar {
    u8* out;
    int back;  // words (RUNS) or bytes written go below this
    int op = -1, run = 0;
    int columns[4] = {0, 0, 0, 0}, runs[4] = {0, 0, 0, 0};  // by operation

    __device__ __forceinline__ void add(int next, int count) {
        if (next == op) {
            run += count;
            return;
        }
        flush();
        op = next;
        run = count;
    }

    __device__ __forceinline__ void flush() {
        if (run == 0) return;
        // Counted with constant indices (a register each, where op would index memory).
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            columns[k] += k == op ? run : 0;
            runs[k] += k == op;
        }
        const bool writes = (threadIdx.x & 31) == 0;
        if (RUNS) {
            --back;
            if (writes) reinterpret_cast<u32*>(out)[back] = ((u32)run << 2) | (u32)op;
            return;
        }
        const char letters[4] = {'=', 'X', 'I', 'D'};
        --back;
        if (writes) out[back] = (u8)letters[op];
        for (int left = run; left > 0; left /= 10) {
            --back;
            if (writes) out[back] = (u8)('0' + left % 10);
        }
    }

    // Flush the last run, move the CIGAR to the front (a block of 32 at a time: each block is
    // read whole before any of it is overwritten) and return its length.
    __device__ __forceinline__ int finish(int capacity) {
        flush();
        const int written = capacity - back;
        const int k = threadIdx.x & 31;
        __syncwarp();
        for (int base = 0; base < written; base += 32) {
            const bool moves = base + k < written;
            u32 value = 0;
            if (moves) {
                value = RUNS ? reinterpret_cast<u32*>(out)[back + base + k]
                             : out[back + base + k];
            }
            __syncwarp();
            if (moves) {
                if (RUNS) {
                    reinterpret_cast<u32*>(out)[base + k] = value;
                } else {
                    out[base + k] = (u8)value;
                }
            }
            __syncwarp();
        }
        return written;
    }
};

template <int MODE, bool FIND_END, bool RUNS>
__global__ void __launch_bounds__(128)
trace_back(const u8* __restrict__ q_codes, const i64* __restrict__ q_offsets,
           const u8* __restrict__ t_codes, const i64* __restrict__ t_offsets,
           const i64* __restrict__ index, const int* __restrict__ sizes,
           int* __restrict__ results, int stride, int first, int count, int match_codes,
           int gap_open, const int* __restrict__ last_row, const u32* __restrict__ trace,
           u8* __restrict__ text) {
    // A warp a pair: every lane runs the same walk (the same branches), lane 0 writes.
    const int p = first + (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (p >= count) return;
    const int lane = threadIdx.x & 31;
    // The layout its fill wrote.
    const int rows = sizes[PAIR_ROWS * stride + p], lanes = sizes[PAIR_LANES * stride + p];
    const u8* a = q_codes + q_offsets[index[Q_INDEX * stride + p]];
    const u8* b = t_codes + t_offsets[index[T_INDEX * stride + p]];
    const u32* nibbles = trace + index[TRACE_BASE * stride + p];
    const int m = sizes[ROWS_END * stride + p];
    int i = m, j = sizes[COLUMNS_END * stride + p];
    const int steps = j + lanes - 1;
    int* result = results + p;  // its row k at result[k * stride]
    // Space for the CIGAR: a word (RUNS) or two bytes (text) per column of the longest path.
    const int capacity = (RUNS ? 1 : 2) * (i + j);
    if (FIND_END && MODE == ALIGN_LOCAL) {  // the fill wrote the end (and the score)
        i = result[Q_END * stride];
        j = result[T_END * stride];
    } else if (FIND_END) {
        const int* last = last_row + index[LAST_BASE * stride + p];
        if (MODE == ALIGN_SEMI_GLOBAL) {  // the best of row m, the smallest column on ties
            int best = NEG, best_j = j;
            for (int k = 1 + lane; k <= j; k += 32) {
                const int v = last[k];
                if (v > best) {
                    best = v;
                    best_j = k;
                }
            }
            for (int d = 16; d > 0; d /= 2) {
                const int other = __shfl_xor_sync(FULL_WARP, best, d);
                const int other_j = __shfl_xor_sync(FULL_WARP, best_j, d);
                if (other > best || (other == best && other_j < best_j)) {
                    best = other;
                    best_j = other_j;
                }
            }
            j = best_j;
        }
        if (lane == 0) result[SCORE * stride] = last[j] + gap_open;
    }
    if (lane == 0) {
        result[Q_END * stride] = i;
        result[T_END * stride] = j;
    }
    WalkWindow window;
    WalkCigar<RUNS> cigar{text + index[WRITTEN_BASE * stride + p], capacity};
    int n_ops = 0, matched = 0;
    int state = 0;  // 0: in H, 1: in E (a run of D), 2: in F (a run of I)
    while (true) {
        if (MODE == ALIGN_GLOBAL) {
            if (i == 0 || j == 0) {  // the rest is one gap along the border
                if (j > 0) cigar.add(OP_DELETION, j);
                if (i > 0) cigar.add(OP_INSERTION, i);
                n_ops += i + j;
                i = j = 0;
                break;
            }
        } else if (MODE == ALIGN_SEMI_GLOBAL) {
            if (i == 0) break;
            if (j == 0) {
                cigar.add(OP_INSERTION, i);
                n_ops += i;
                i = 0;
                break;
            }
        } else if (i == 0 || j == 0) {  // overlap: free ends; local: the border scores 0
            break;
        }
        if (!window.holds(i, j)) window.load(i, j, m, nibbles, a, b, rows, lanes, steps);
        const int right = window.wj - j, d = window.diagonal(i, j);  // (i, j) in the window
        if (state == 0) {
            // Lane k reads cell (i - k, j - k) of the diagonal (nibble d of lane right + k):
            // the run of diagonal steps from (i, j) to the window's edge (or row and column 1)
            // is taken at once, its = and X from two votes.
            const int k = lane;
            const bool inside = k < 32 - right && k < i && k < j;
            const u64 column = __shfl_sync(FULL_WARP, window.codes, min(right + k, 31));
            const u32 code = (u32)(column >> (4 * d)) & 15u;
            const int x = window.query_of(inside ? i - k : i);
            const int y = __shfl_sync(FULL_WARP, window.target, min(right + k, 31));
            const u32 diagonal = __ballot_sync(FULL_WARP, inside && (code & 3u) == FROM_DIAGONAL);
            // Diagonal steps from (i, j) on: all 32 lanes' cells, or up to the first that is not.
            const int run = diagonal == FULL_WARP ? 32 : __ffs(~diagonal) - 1;
            if (run == 0) {
                const u32 source = __shfl_sync(FULL_WARP, code, 0) & 3u;
                if (source == STOP) break;
                state = source == FROM_E ? 1 : 2;
                continue;
            }
            const u32 equal = __ballot_sync(FULL_WARP, x == y && x < match_codes) &
                              (run == 32 ? ~0u : (1u << run) - 1u);
            for (int done = 0; done < run;) {  // the run's stretches of = and of X
                const bool matching = (equal >> done) & 1u;
                const u32 rest = (matching ? ~equal : equal) >> done;
                const int stretch = min(rest ? __ffs(rest) - 1 : 32, run - done);
                cigar.add(matching ? OP_MATCH : OP_MISMATCH, stretch);
                done += stretch;
            }
            matched += __popc(equal);
            n_ops += run;
            i -= run;
            j -= run;
            continue;
        }
        const u64 column = __shfl_sync(FULL_WARP, window.codes, right);
        const u32 code = (u32)(column >> (4 * d)) & 15u;
        if (state == 1) {
            cigar.add(OP_DELETION, 1);
            ++n_ops;
            if (code & E_OPENED) state = 0;
            --j;
        } else {
            cigar.add(OP_INSERTION, 1);
            ++n_ops;
            if (code & F_OPENED) state = 0;
            --i;
        }
    }
    const int written = cigar.finish(capacity);
    if (lane == 0) {
        result[Q_START * stride] = i;
        result[T_START * stride] = j;
        result[WRITTEN * stride] = written;  // bytes of text, or runs
        result[MATCHES * stride] = matched;
        result[MISMATCHES * stride] = cigar.columns[OP_MISMATCH];
        result[INSERTED * stride] = cigar.columns[OP_INSERTION];
        result[COLUMNS * stride] = n_ops;
#pragma unroll
        for (int op = 0; op < 4; ++op) result[(MATCH_RUNS + op) * stride] = cigar.runs[op];
    }
}

// Copy each pair's CIGAR (at its WRITTEN_BASE in `text`: WRITTEN bytes of text, or with RUNS
// WRITTEN words) into `packed`, pair after pair in the order of ORDER: warp k copies pair
// ORDER[k] to packed_base[k] (offsets summed from the lengths in that order, plus a newline
// after each text), so that only what was written goes to the host (`packed` may be host
// memory the GPU writes directly), which decodes the texts of a batch with one split.
template <bool RUNS>
__global__ void __launch_bounds__(128)
gather_paths(const u8* __restrict__ text, const i64* __restrict__ index,
             const int* __restrict__ results, int stride, const i64* __restrict__ packed_base,
             int count, u8* __restrict__ packed) {
    const int k = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (k >= count) return;
    const int p = (int)index[ORDER * stride + k];
    const int written = results[WRITTEN * stride + p];
    const u8* from = text + index[WRITTEN_BASE * stride + p];
    if (RUNS) {
        const u32* words = reinterpret_cast<const u32*>(from);
        u32* to = reinterpret_cast<u32*>(packed) + packed_base[k];
        for (int c = threadIdx.x & 31; c < written; c += 32) to[c] = words[c];
        return;
    }
    u8* to = packed + packed_base[k];
    for (int c = threadIdx.x & 31; c < written; c += 32) to[c] = from[c];
    if ((threadIdx.x & 31) == 0) to[written] = '\n';
}
