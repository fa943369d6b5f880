// FASTA parsing and MUMmer text on the GPU (formats/_cuda.py drives them): one thread per
// record or per query, each doing what formats/_cpu.py does for it in Numba, so that both
// backends give the same bytes. Blocks of 256 threads (the launch bounds; formats/_cuda.py
// sizes its grids from them).

#include "common.cuh"

__device__ __forceinline__ bool trailing_blank(u8 byte) {
    return byte == ' ' || byte == '\t' || byte == '\r';
}

// Header bytes that dnaio and str.split treat differently from the parser (a carriage
// return before the line's end: dnaio ends the line there): records holding them are left to
// dnaio.
__device__ __forceinline__ bool unusual_header_byte(u8 byte, bool last) {
    return byte >= 128 || byte == 11 || byte == 12 || (byte >= 28 && byte <= 31) ||
           (byte == '\r' && !last);
}

// Record r of a FASTA block: data[starts[r], starts[r + 1]), from its '>' to the next
// record's. Sequence lines lose trailing blanks and carriage returns; the name is the header
// up to its first blank, the description the rest, blanks around it dropped. Without write:
// the sequence length into sequence_at[r], the name and description lengths + 1 into
// name_at[r] and note_at[r], the name's hash into name_hashes[r] (h = seed, then h = h *
// factor + byte for each of its bytes, modulo 2^64: gpualign.formats.NAME_HASH_SEED), and
// unusual[r] = 1 for a record left to dnaio (other white space in a sequence line, a header
// byte above). With write: the sequence copied to sequences + sequence_at[r], the name and a
// newline to names + name_at[r], the description and a newline to notes + note_at[r].
template <bool write>
__global__ void __launch_bounds__(256)
fasta_records(const u8* __restrict__ data, const i64* __restrict__ starts,
              i64 records, i64* __restrict__ sequence_at,
              i64* __restrict__ name_at, i64* __restrict__ note_at,
              int* __restrict__ unusual, u8* __restrict__ sequences,
              u8* __restrict__ names, u8* __restrict__ notes,
              u64* __restrict__ name_hashes, u64 seed, u64 factor) {
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= records) return;
    const i64 end = starts[r + 1];
    i64 line_end = starts[r] + 1;
    while (line_end < end && data[line_end] != '\n') ++line_end;
    if (!write) {
        for (i64 at = starts[r] + 1; at < line_end; ++at) {
            if (unusual_header_byte(data[at], at + 1 == line_end)) {
                unusual[r] = 1;
                return;
            }
        }
    }
    i64 at = starts[r] + 1;
    while (at < line_end && trailing_blank(data[at])) ++at;
    i64 name = write ? name_at[r] : 0;
    u64 name_hash = seed;
    for (; at < line_end && !trailing_blank(data[at]); ++at, ++name) {
        if (write) {
            names[name] = data[at];
        } else {
            name_hash = name_hash * factor + data[at];
        }
    }
    while (at < line_end && trailing_blank(data[at])) ++at;
    i64 note_end = line_end;
    while (note_end > at && trailing_blank(data[note_end - 1])) --note_end;
    i64 note = write ? note_at[r] : 0;
    for (; at < note_end; ++at, ++note) {
        if (write) notes[note] = data[at];
    }
    if (write) {
        names[name] = '\n';
        notes[note] = '\n';
    } else {
        name_at[r] = name + 1;
        note_at[r] = note + 1;
        name_hashes[r] = name_hash;
    }
    i64 used = write ? sequence_at[r] : 0;
    for (at = line_end + 1; at < end;) {
        i64 stop = at;
        while (stop < end && data[stop] != '\n') ++stop;
        i64 last = stop;
        while (last > at && trailing_blank(data[last - 1])) --last;
        for (i64 position = at; position < last; ++position, ++used) {
            const u8 byte = data[position];
            if (write) {
                sequences[used] = byte;
            } else if (byte <= 32 || byte >= 127) {
                unusual[r] = 1;
                return;
            }
        }
        at = stop + 1;
    }
    if (!write) sequence_at[r] = used;
}

__device__ __forceinline__ i64 put_bytes(u8* text, i64 at, const u8* source, i64 lo, i64 hi,
                                         bool write) {
    if (write) {
        for (i64 k = lo; k < hi; ++k) text[at + k - lo] = source[k];
    }
    return at + hi - lo;
}

__device__ __forceinline__ i64 put_text(u8* text, i64 at, const char* source, bool write) {
    for (; *source; ++source, ++at) {
        if (write) text[at] = (u8)*source;
    }
    return at;
}

// value (>= 0) right-aligned in width characters (more when it has more digits).
__device__ __forceinline__ i64 put_number(u8* text, i64 at, i64 value, int width, bool write) {
    int digits = 1;
    for (i64 rest = value / 10; rest; rest /= 10) ++digits;
    const i64 end = at + (width > digits ? width : digits);
    if (write) {
        for (i64 k = at; k < end - digits; ++k) text[k] = ' ';
        for (i64 k = end - 1; k >= end - digits; --k, value /= 10) text[k] = '0' + value % 10;
    }
    return end;
}

// The MUMmer blocks of query q (io.write_mummer prepares the arguments): without write,
// their size into starts[q]; with write, the text from text + starts[q].
template <bool write>
__global__ void __launch_bounds__(256)
mummer_blocks(const u8* __restrict__ names, const i64* __restrict__ name_offsets,
              i64 queries, const i64* __restrict__ query_lengths,
              const i64* __restrict__ bounds, int forward, int reverse,
              int with_lengths, const u8* __restrict__ is_reverse,
              const i64* __restrict__ reference_index,
              const i64* __restrict__ reference_pos,
              const i64* __restrict__ query_pos, const i64* __restrict__ length,
              const u8* __restrict__ labels,
              const i64* __restrict__ label_offsets, int forward_positions,
              i64* __restrict__ starts, u8* __restrict__ text) {
    const i64 q = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= queries) return;
    i64 at = write ? starts[q] : 0;
    for (int block = 0; block < 2; ++block) {
        if ((block == 0 && !forward) || (block == 1 && !reverse)) continue;
        at = put_text(text, at, "> ", write);
        at = put_bytes(text, at, names, name_offsets[q], name_offsets[q + 1], write);
        if (block == 1) at = put_text(text, at, " Reverse", write);
        if (with_lengths) {
            at = put_text(text, at, "  Len = ", write);
            at = put_number(text, at, query_lengths[q], 0, write);
        }
        at = put_text(text, at, "\n", write);
        for (i64 j = bounds[q]; j < bounds[q + 1]; ++j) {
            if ((is_reverse[j] != 0) != (block == 1)) continue;
            const i64 record = reference_index[j];
            at = put_bytes(text, at, labels, label_offsets[record], label_offsets[record + 1],
                           write);
            const i64 position = (block == 1 && forward_positions)
                                     ? query_lengths[q] - query_pos[j] : query_pos[j] + 1;
            at = put_number(text, at, reference_pos[j] + 1, 8, write);
            at = put_text(text, at, "  ", write);
            at = put_number(text, at, position, 8, write);
            at = put_text(text, at, "  ", write);
            at = put_number(text, at, length[j], 8, write);
            at = put_text(text, at, "\n", write);
        }
    }
    if (!write) starts[q] = at;
}
