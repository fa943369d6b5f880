// One query against many subjects: LCS lengths by bit-vectors (Hyyro 2004, after Allison-Dix and
// Crochemore et al.).
//
// The query is the bit-vector side: V starts with every query row set and, for each subject
// symbol c with the query's match mask M[c],
//     V = (V + (V & M[c])) | (V & ~M[c])
// with the addition carried from low rows to high rows. The zero bits of V among the query rows
// count the LCS once the whole subject has been read.
//
// One thread owns one subject. A query of any length is cut into tiles of TILE 32-bit words
// (32 * TILE rows) that the thread keeps in registers; it runs over the whole subject once per
// tile, lowest rows first. The carry leaving the top of a tile at column j enters the next tile at
// the same column: it is stored as one bit per column (32 columns per word) in `carries`, which
// the next tile reads and overwrites in place (only the thread that owns a subject touches its
// words, always reading a word before writing it). The 32-bit additions are chained through the
// carry flag (add.cc / addc.cc), so each word costs one AND, one add and one three-input logic
// operation.
//
// The match masks of the query live in shared memory. Subject symbols are mapped to rows of the
// table by `remap` (symbols absent from the query, and symbols that match nothing, map to row 0,
// which is all zeros), so the table has one row per distinct query symbol whatever the alphabet.

#include "common.cuh"

// Table rows in shared memory are read either 16 bytes at a time (WIDE) or one word at a time.
// Rows are padded so that the rows of different symbols read by one warp fall in different
// banks: with word loads an odd row stride puts any 32 rows in 32 distinct banks, so the cost is
// the same for 4 or 26 symbols; 16-byte loads can only spread rows over 8 bank quads.
template <bool WIDE>
__device__ __forceinline__ int row_padding() { return WIDE ? 4 : 1; }

// One column of one tile: v = (v + (v & m)) | (v & ~m), the carry entering the lowest word and the
// carry leaving the highest word returned.
template <int TILE, bool WIDE>
__device__ __forceinline__ u32 advance_tile(u32 (&v)[TILE], const u32* __restrict__ row,
                                            u32 carry_in) {
    u32 m[TILE];
    if constexpr (WIDE && TILE % 4 == 0) {
#pragma unroll
        for (int w = 0; w < TILE; w += 4) {
            const uint4 q = *reinterpret_cast<const uint4*>(row + w);
            m[w] = q.x;
            m[w + 1] = q.y;
            m[w + 2] = q.z;
            m[w + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int w = 0; w < TILE; ++w) m[w] = row[w];
    }
    u32 scratch;
    // carry_in + 0xffffffff sets the carry flag exactly when carry_in is 1.
    asm volatile("add.cc.u32 %0, %1, 0xffffffff;" : "=r"(scratch) : "r"(carry_in));
#pragma unroll
    for (int w = 0; w < TILE; ++w) {
        u32 sum;
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(sum) : "r"(v[w]), "r"(v[w] & m[w]));
        v[w] = sum | (v[w] & ~m[w]);
    }
    u32 carry_out;
    asm volatile("addc.u32 %0, 0, 0;" : "=r"(carry_out));
    return carry_out;
}

// Tiles [tile_begin, tile_end) of the query over every subject of a batch.
//   codes/offsets: the batch's subjects (codes padded with at least 3 bytes).
//   order:         subject of each thread (longest first, so that a warp's subjects are alike).
//   table:         n_rows x table_words match masks (row 0 zero), table_words = n_tiles * TILE.
//   remap:         row of the table for each subject code (256 entries).
//   carries:       (offsets[s] >> 5) + s is the first carry word of subject s.
//   lengths:       LCS length per subject; the launch with tile_begin == 0 initialises it.
template <int TILE, bool WIDE>
__global__ void __launch_bounds__(128) lcs_tiles(
    const u8* __restrict__ codes, const i64* __restrict__ offsets,
    const int* __restrict__ order, const int n_subjects, const u32* __restrict__ table,
    const int n_rows, const int table_words, const u16* __restrict__ remap,
    const int query_length, const int n_tiles, const int tile_begin, const int tile_end,
    u32* __restrict__ carries, int* __restrict__ lengths) {
    extern __shared__ __align__(16) unsigned char shared[];
    const int span = (tile_end - tile_begin) * TILE;
    const int row_stride = span + row_padding<WIDE>();
    u32* sh_table = reinterpret_cast<u32*>(shared);
    u16* sh_remap = reinterpret_cast<u16*>(sh_table + n_rows * row_stride);
    for (int i = threadIdx.x; i < n_rows * span; i += blockDim.x) {
        const int r = i / span;
        const int w = i - r * span;
        sh_table[r * row_stride + w] = table[(i64)r * table_words + tile_begin * TILE + w];
    }
    for (int i = threadIdx.x; i < 256; i += blockDim.x) sh_remap[i] = remap[i];
    __syncthreads();

    const int slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n_subjects) return;
    const int s = order[slot];
    const i64 begin = offsets[s];
    const int n_cols = (int)(offsets[s + 1] - begin);
    const i64 carry_base = (begin >> 5) + s;
    int zeros = tile_begin == 0 ? 0 : lengths[s];

    for (int tile = tile_begin; tile < tile_end; ++tile) {
        u32 v[TILE];
#pragma unroll
        for (int w = 0; w < TILE; ++w) v[w] = 0xffffffffu;
        const u32* tile_rows = sh_table + (tile - tile_begin) * TILE;
        const bool first = tile == 0;
        const bool last = tile == n_tiles - 1;
        u32 packed = 0, in_word = 0, out_word = 0;
        for (int j = 0; j < n_cols; ++j) {
            const i64 p = begin + j;
            if (j == 0 || (p & 3) == 0) packed = __ldg(reinterpret_cast<const u32*>(codes + (p & ~3ll)));
            const u32 c = (packed >> ((p & 3) << 3)) & 0xffu;
            const int bit = j & 31;
            if (!first && bit == 0) in_word = carries[carry_base + (j >> 5)];
            const u32 carry = advance_tile<TILE, WIDE>(v, tile_rows + sh_remap[c] * row_stride,
                                                 (in_word >> bit) & 1u);
            if (!last) {
                out_word |= carry << bit;
                if (bit == 31 || j == n_cols - 1) {
                    carries[carry_base + (j >> 5)] = out_word;
                    out_word = 0;
                }
            }
        }
#pragma unroll
        for (int w = 0; w < TILE; ++w) {
            const int rows = query_length - (tile * TILE + w) * 32;
            const u32 mask = rows >= 32 ? 0xffffffffu : (rows <= 0 ? 0u : ((1u << rows) - 1u));
            zeros += __popc(~v[w] & mask);
        }
    }
    lengths[s] = zeros;
}
