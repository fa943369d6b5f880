// The k-mer table of one page of the MEM index, built on the GPU from its suffix array
// (mems/_cuda.py sorts the suffixes; mems/_cpu.py builds the same table on the CPU).
//
// The table holds, for every k-mer code c of A/C/G/T (most significant symbol first), the
// rows [first, last + 1) of the suffixes that start with it. Those rows are consecutive in a
// suffix array, so each row only compares its k-mer with its neighbours' to know whether it
// opens or closes one.
//
// One thread per row, in blocks of 256 threads: the kernels' launch bounds, which
// mems/_cuda.py sizes the grid from.

#include "common.cuh"

// The k-mer code of the suffix in every row: -1 when one of its first k symbols is not
// A/C/G/T or the text ends first.
extern "C" __global__ void __launch_bounds__(256)
kmer_codes_at_rows(const u8* __restrict__ text, i64 text_length, i64 page_start,
                   const int* __restrict__ suffix_array, i64 rows, int k,
                   i64* __restrict__ codes) {
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const i64 position = page_start + suffix_array[row];
    i64 code = 0;
    for (int j = 0; j < k; ++j) {
        if (position + j >= text_length || text[position + j] > 3) {
            code = -1;
            break;
        }
        code = (code << 2) | text[position + j];
    }
    codes[row] = code;
}

// kmer_rows[c] = {first, last + 1} for every k-mer c present; the caller zeroes the table.
extern "C" __global__ void __launch_bounds__(256)
kmer_bounds(const i64* __restrict__ codes, i64 rows, i64* __restrict__ kmer_rows) {
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const i64 code = codes[row];
    if (code < 0) return;
    if (row == 0 || codes[row - 1] != code) kmer_rows[2 * code] = row;
    if (row == rows - 1 || codes[row + 1] != code) kmer_rows[2 * code + 1] = row + 1;
}
