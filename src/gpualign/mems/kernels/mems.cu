// Maximal exact matches against one page of a suffix-array index, one thread per query
// position and strand.
//
// The CPU backend (mems/_cpu.py) walks each query in turn; here every position of every query
// on every strand searched is its own thread, since positions are independent: the k-mer table
// gives the suffix-array interval of the position's first k symbols, two binary searches
// narrow it to the suffixes that share all min_length symbols, and each of those reference
// positions is a MEM when it is left-maximal, extended to the right as far as it goes.
//
// Threads are numbered in output order: query, then strand, then position, so thread x of
// query q is x = strands * offsets[q] + strand * m + i. A first launch counts the MEMs of each
// thread; the host turns the counts into output offsets; a second launch writes them there and
// orders each thread's few MEMs by text position, so the whole output is ordered by query,
// strand, query position and text position with no sort afterwards.
//
// The reverse strand is read from the forward codes backwards and complemented, so the host
// never builds it. The text is the whole reference, records each followed by a separator
// (code 5): a comparison or an extension stops at a separator or at N (code 4) in the query,
// so no read runs past the text. The page's suffix array holds text positions minus page_start.
//
// Blocks of 256 threads, the launch bounds of mems_at (mems/_cuda.py sizes the grid from them).

#include "common.cuh"

// One query on one strand, read as the search sees it.
struct Query {
    const u8* codes;  // the forward query
    int m;
    bool reverse;
};

// Symbol j of the query on its strand: the reverse complement reads the forward codes
// backwards, A<->T and C<->G, N staying N.
__device__ __forceinline__ u8 symbol(const Query& q, int j) {
    if (!q.reverse) return q.codes[j];
    const u8 c = q.codes[q.m - 1 - j];
    return c < 4 ? 3 - c : c;
}

// Order of text[p:p+to] against q[i:i+to], both known equal before `from`: -1, 0 or 1.
__device__ __forceinline__ int compare(const u8* __restrict__ text, i64 p, const Query& q,
                                       int i, int from, int to) {
    for (int t = from; t < to; ++t) {
        const u8 a = text[p + t], b = symbol(q, i + t);
        if (a != b) return a < b ? -1 : 1;
    }
    return 0;
}

// The query holding thread x: the last q with strands * offsets[q] <= x (empty ones skipped).
__device__ __forceinline__ int query_of(const i64* __restrict__ offsets, int queries,
                                        int strands, i64 x) {
    int lo = 0, hi = queries;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (strands * offsets[mid] <= x) lo = mid; else hi = mid;
    }
    return lo;
}

// Heap sort of keys[0:n] carrying values along: one thread's MEMs by text position. Nearly
// every thread has zero or one; repeats in the reference can give hundreds.
__device__ void sort_by_key(i64* keys, i64* values, i64 n) {
    auto sift = [&](i64 root, i64 end) {
        while (2 * root + 1 < end) {
            i64 child = 2 * root + 1;
            if (child + 1 < end && keys[child] < keys[child + 1]) ++child;
            if (keys[root] >= keys[child]) return;
            const i64 k = keys[root], v = values[root];
            keys[root] = keys[child]; values[root] = values[child];
            keys[child] = k; values[child] = v;
            root = child;
        }
    };
    for (i64 start = n / 2 - 1; start >= 0; --start) sift(start, n);
    for (i64 end = n - 1; end > 0; --end) {
        const i64 k = keys[0], v = values[0];
        keys[0] = keys[end]; values[0] = values[end];
        keys[end] = k; values[end] = v;
        sift(0, end);
    }
}

// EMIT = false: counts[x] = the MEMs of thread x. EMIT = true: writes them from starts[x]
// (the exclusive prefix sums of the counts). first_reverse: whether strand 0 is the reverse
// complement (strands = 1 searching only it); strand 1, when searched, always is.
template <bool EMIT>
__global__ void __launch_bounds__(256)
mems_at(const u8* __restrict__ codes, const i64* __restrict__ offsets, const int queries,
        const int strands, const int first_reverse, const i64 positions,
        const u8* __restrict__ text, const i64 page_start, const int* __restrict__ suffix_array,
        const i64 rows, const i64* __restrict__ kmer_rows, const int k, const int min_length,
        int* __restrict__ counts, const i64* __restrict__ starts, i64* __restrict__ entry_out,
        i64* __restrict__ q_out, i64* __restrict__ t_out, i64* __restrict__ length_out) {
    const i64 x = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= positions) return;
    const int number = query_of(offsets, queries, strands, x);
    const int m = (int)(offsets[number + 1] - offsets[number]);
    const int r = (int)(x - strands * offsets[number]);
    const int strand = r / m;
    const int i = r - strand * m;
    const Query q{codes + offsets[number], m, first_reverse + strand > 0};
    int count = 0;
    bool searchable = i + min_length <= m;
    for (int t = 0; searchable && t < min_length; ++t) searchable = symbol(q, i + t) < 4;
    if (searchable) {
        i64 lo = 0, hi = rows;
        int offset = 0;
        if (min_length >= k) {
            i64 code = 0;
            for (int t = 0; t < k; ++t) code = code * 4 + symbol(q, i + t);
            lo = kmer_rows[2 * code];
            hi = kmer_rows[2 * code + 1];
            offset = k;
        }
        i64 a = lo, b = hi;
        while (a < b) {  // the first row whose min_length symbols are >= the query's
            const i64 mid = (a + b) / 2;
            if (compare(text, page_start + suffix_array[mid], q, i, offset, min_length) < 0)
                a = mid + 1;
            else
                b = mid;
        }
        const i64 first = a;
        b = hi;
        while (a < b) {  // the first row whose min_length symbols are > the query's
            const i64 mid = (a + b) / 2;
            if (compare(text, page_start + suffix_array[mid], q, i, offset, min_length) <= 0)
                a = mid + 1;
            else
                b = mid;
        }
        const u8 before = i > 0 ? symbol(q, i - 1) : 4;  // N: nothing extends to the left
        const i64 begin = EMIT ? starts[x] : 0;
        for (i64 row = first; row < a; ++row) {
            const i64 p = page_start + suffix_array[row];
            if (before < 4 && p > 0 && text[p - 1] == before) continue;
            if (EMIT) {
                int length = min_length;
                while (i + length < m) {
                    const u8 c = symbol(q, i + length);
                    if (c >= 4 || text[p + length] != c) break;
                    ++length;
                }
                entry_out[begin + count] = (i64)number * strands + strand;
                q_out[begin + count] = i;
                t_out[begin + count] = p;
                length_out[begin + count] = length;
            }
            ++count;
        }
        if (EMIT && count > 1) sort_by_key(t_out + begin, length_out + begin, count);
    }
    if (!EMIT) counts[x] = count;
}
