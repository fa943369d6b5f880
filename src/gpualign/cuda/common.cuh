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
