// Shared by every kernel of the package: included as "common.cuh" (the loader puts this folder
// on the include path, after the generated codes of gpualign/codes.py).
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

// DNA symbol codes: A C G T, and N (4), which matches nothing.
constexpr int DNA_CODES = 5;
// A full warp for the *_sync intrinsics.
constexpr u32 FULL_WARP = 0xffffffffu;

// Whether cell (score, i, j) comes before cell (other_score, other_i, other_j) in the CPU
// backend's order of best cells: larger score, then smaller column, then smaller row.
__device__ __forceinline__ bool better_cell(int score, int i, int j, int other_score,
                                            int other_i, int other_j) {
    return score > other_score ||
           (score == other_score && (j < other_j || (j == other_j && i < other_i)));
}

// The best of the warp's cells (score, i, j) by better_cell, in every lane.
__device__ __forceinline__ void warp_best_cell(int& score, int& i, int& j) {
    for (int d = 16; d > 0; d /= 2) {
        const int other = __shfl_xor_sync(FULL_WARP, score, d);
        const int other_i = __shfl_xor_sync(FULL_WARP, i, d);
        const int other_j = __shfl_xor_sync(FULL_WARP, j, d);
        if (better_cell(other, other_i, other_j, score, i, j)) {
            score = other;
            i = other_i;
            j = other_j;
        }
    }
}
