// Maximal exact matches against a suffix-array index, one thread per query position.
//
// The CPU backend (mems/_cpu.py) walks each query position in turn; here every position of
// every entry (a query on one strand) is its own thread, since positions are independent:
// the k-mer table gives the suffix-array interval of the position's first k symbols, two
// binary searches narrow it to the suffixes that share all min_length symbols, and each of
// those reference positions is a MEM when it is left-maximal, extended to the right as far as
// it goes. A first launch counts the MEMs of each position; the host turns the counts into
// output offsets; a second launch writes them there, so that the output is ordered by entry,
// query position and suffix-array row, as the CPU backend's.
//
// The text is the reference records each followed by a separator (code 5): a comparison or an
// extension stops at a separator or at N (code 4) in the query, so no read runs past the text.

typedef unsigned char u8;
typedef long long i64;

// Order of text[p:p+to] against q[i:i+to], both known equal before `from`: -1, 0 or 1.
__device__ __forceinline__ int compare(const u8* __restrict__ text, i64 p,
                                       const u8* __restrict__ q, int i, int from, int to) {
    for (int t = from; t < to; ++t) {
        const u8 a = text[p + t], b = q[i + t];
        if (a != b) return a < b ? -1 : 1;
    }
    return 0;
}

// The entry holding flat position x: the last e with offsets[e] <= x (empty entries skipped).
__device__ __forceinline__ int entry_of(const i64* __restrict__ offsets, int entries, i64 x) {
    int lo = 0, hi = entries;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (offsets[mid] <= x) lo = mid; else hi = mid;
    }
    return lo;
}

// EMIT = false: counts[x] = the MEMs starting at flat query position x. EMIT = true: writes
// them from starts[x] (the exclusive prefix sums of the counts).
template <bool EMIT>
__global__ void mems_at(const u8* __restrict__ codes, const i64* __restrict__ offsets,
                        const int entries, const i64 positions, const u8* __restrict__ text,
                        const int* __restrict__ suffix_array, const i64 rows,
                        const i64* __restrict__ kmer_rows, const int k, const int min_length,
                        i64* __restrict__ counts, const i64* __restrict__ starts,
                        i64* __restrict__ entry_out, i64* __restrict__ q_out,
                        i64* __restrict__ t_out, i64* __restrict__ length_out) {
    const i64 x = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= positions) return;
    const int e = entry_of(offsets, entries, x);
    const u8* q = codes + offsets[e];
    const int m = (int)(offsets[e + 1] - offsets[e]);
    const int i = (int)(x - offsets[e]);
    int count = 0;
    bool searchable = i + min_length <= m;
    for (int t = 0; searchable && t < min_length; ++t) searchable = q[i + t] < 4;
    if (searchable) {
        i64 lo = 0, hi = rows;
        int offset = 0;
        if (min_length >= k) {
            i64 code = 0;
            for (int t = 0; t < k; ++t) code = code * 4 + q[i + t];
            lo = kmer_rows[2 * code];
            hi = kmer_rows[2 * code + 1];
            offset = k;
        }
        i64 a = lo, b = hi;
        while (a < b) {  // the first row whose min_length symbols are >= the query's
            const i64 mid = (a + b) / 2;
            if (compare(text, suffix_array[mid], q, i, offset, min_length) < 0) a = mid + 1;
            else b = mid;
        }
        const i64 first = a;
        b = hi;
        while (a < b) {  // the first row whose min_length symbols are > the query's
            const i64 mid = (a + b) / 2;
            if (compare(text, suffix_array[mid], q, i, offset, min_length) <= 0) a = mid + 1;
            else b = mid;
        }
        i64 out = EMIT ? starts[x] : 0;
        for (i64 row = first; row < a; ++row) {
            const i64 p = suffix_array[row];
            if (i > 0 && p > 0 && q[i - 1] < 4 && q[i - 1] == text[p - 1]) continue;
            ++count;
            if (EMIT) {
                int length = min_length;
                while (i + length < m && q[i + length] < 4 && text[p + length] == q[i + length])
                    ++length;
                entry_out[out] = e;
                q_out[out] = i;
                t_out[out] = p;
                length_out[out] = length;
                ++out;
            }
        }
    }
    if (!EMIT) counts[x] = count;
}
