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
