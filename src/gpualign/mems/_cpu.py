"""CPU backend of MEM search: suffix-array intervals per query position, with Numba.

Each query is searched on one or both strands (the reverse complements built at once). For
every query position ``i`` whose next ``min_length`` symbols are A/C/G/T, the k-mer table
gives the suffix-array interval of its first k symbols and two binary searches narrow it to the
suffixes sharing all ``min_length`` symbols; each of those reference positions ``p`` is a MEM
when it is left-maximal (``i == 0``, ``p`` at a record start, or the symbols before differ),
and the match is extended to the right as far as it goes (right-maximal by construction).
``N`` and the record separator match nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

__all__ = ["PageBuilder", "find_all", "prepare"]

#: Complement of each DNA code (A<->T, C<->G, N stays N).
COMPLEMENT = np.array([3, 2, 1, 0, 4], dtype=np.uint8)


@njit(cache=True, nogil=True)
def _compare(text, p, query, i, offset, length):
    """Order of ``text[p:p+length]`` against ``query[i:i+length]``, both known equal before
    ``offset``: -1, 0 or 1."""
    for t in range(offset, length):
        a = text[p + t]
        b = query[i + t]
        if a != b:
            return -1 if a < b else 1
    return 0


@njit(cache=True, nogil=True)
def _scan(query, text, page_start, suffix_array, kmer_rows, k, min_length, emit, q_out, t_out,
          len_out, base):
    """MEMs of one query on one strand against one page; with ``emit`` written from ``base``,
    those of each query position ordered by text position. Returns the count."""
    m = len(query)
    # run[i]: how many A/C/G/T symbols start at i (a MEM needs min_length of them).
    run = np.zeros(m + 1, dtype=np.int64)
    for i in range(m - 1, -1, -1):
        run[i] = run[i + 1] + 1 if query[i] < 4 else 0
    use_table = min_length >= k
    count = 0
    for i in range(m - min_length + 1):
        if run[i] < min_length:
            continue
        if use_table:
            code = 0
            for t in range(k):
                code = code * 4 + query[i + t]
            lo, hi, offset = kmer_rows[code, 0], kmer_rows[code, 1], k
        else:
            lo, hi, offset = 0, len(suffix_array), 0
        if lo >= hi:
            continue
        a, b = lo, hi
        while a < b:  # first row whose min_length symbols are >= the query's
            mid = (a + b) // 2
            if _compare(text, page_start + suffix_array[mid], query, i, offset, min_length) < 0:
                a = mid + 1
            else:
                b = mid
        first = a
        b = hi
        while a < b:  # first row whose min_length symbols are > the query's
            mid = (a + b) // 2
            if _compare(text, page_start + suffix_array[mid], query, i, offset,
                        min_length) <= 0:
                a = mid + 1
            else:
                b = mid
        begin = count
        for row in range(first, a):
            p = page_start + suffix_array[row]
            if i > 0 and p > 0 and query[i - 1] < 4 and query[i - 1] == text[p - 1]:
                continue  # extends to the left: not maximal
            if emit:
                length = min_length
                while i + length < m and query[i + length] < 4 and \
                        text[p + length] == query[i + length]:
                    length += 1
                q_out[base + count] = i
                t_out[base + count] = p
                len_out[base + count] = length
            count += 1
        if emit and count - begin > 1:
            order = np.argsort(t_out[base + begin:base + count]) + base + begin
            t_out[base + begin:base + count] = t_out[order]
            len_out[base + begin:base + count] = len_out[order]
    return count


@njit(cache=True, nogil=True)
def _strand(codes, reverse_codes, offsets, number, reverse):
    """Query ``number`` as searched: its codes, or their reverse complement (a slice of
    ``reverse_codes``, the reverse complement of all queries together)."""
    if reverse:
        return reverse_codes[offsets[-1] - offsets[number + 1]:offsets[-1] - offsets[number]]
    return codes[offsets[number]:offsets[number + 1]]


def prepare(index: Any) -> Any:
    """The reference (a :class:`~gpualign.mems.MemIndex`) as :func:`find_all` searches it:
    ``index`` itself, in host memory."""
    return index


def find_all(codes: np.ndarray, offsets: np.ndarray, strands: int, first_reverse: bool,
             index: Any, page_number: int, min_length: int,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The MEMs of every query of ``codes``/``offsets`` on ``strands`` strands (1 or 2; strand
    0 is the reverse complement when ``first_reverse``, strand 1 always) against page
    ``page_number`` of ``index`` (from :func:`prepare`). Returns ``entry, query_pos, text_pos,
    length`` arrays (entry: ``query * strands + strand``), ordered by entry, then query
    position, then text position."""
    page = index.pages[page_number]
    return _find_all(codes, offsets, strands, first_reverse, index.text, page.start,
                     page.suffix_array, page.kmer_rows, index.kmer_size, min_length)


@njit(cache=True, parallel=True)
def _find_all(codes, offsets, strands, first_reverse, text, page_start, suffix_array,
              kmer_rows, k, min_length):
    """:func:`find_all` against the page of ``text`` at ``page_start`` with ``suffix_array``
    and ``kmer_rows``, its k-mer table of ``k``-mers."""
    queries = len(offsets) - 1
    entries = queries * strands
    reverse_codes = COMPLEMENT[codes[::-1]] if first_reverse or strands == 2 else codes[:0]
    counts = np.zeros(entries, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    for number in prange(queries):
        for strand in range(strands):
            query = _strand(codes, reverse_codes, offsets, number, first_reverse + strand > 0)
            counts[number * strands + strand] = _scan(
                query, text, page_start, suffix_array, kmer_rows, k, min_length, False, empty,
                empty, empty, 0)
    starts = np.zeros(entries + 1, dtype=np.int64)
    for e in range(entries):
        starts[e + 1] = starts[e] + counts[e]
    total = starts[entries]
    entry = np.empty(total, dtype=np.int64)
    q_pos = np.empty(total, dtype=np.int64)
    t_pos = np.empty(total, dtype=np.int64)
    length = np.empty(total, dtype=np.int64)
    for number in prange(queries):
        for strand in range(strands):
            e = number * strands + strand
            query = _strand(codes, reverse_codes, offsets, number, first_reverse + strand > 0)
            _scan(query, text, page_start, suffix_array, kmer_rows, k, min_length, True, q_pos,
                  t_pos, length, starts[e])
            entry[starts[e]:starts[e + 1]] = e
    return entry, q_pos, t_pos, length


class PageBuilder:
    """Suffix arrays (libdivsufsort, through ``pydivsufsort``) and k-mer tables of the pages
    of ``text``: ``build(start, end, stop)`` sorts the suffixes of ``text[start:stop]`` and
    keeps those starting before ``end``."""

    def __init__(self, text: np.ndarray, k: int):
        self.text, self.k = text, k
        self.codes: np.ndarray | None = None

    def __call__(self, start: int, end: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        import pydivsufsort

        order = pydivsufsort.divsufsort(self.text[start:stop].copy())
        if stop > end:
            order = order[order < end - start]
        suffix_array = order.astype(np.int32, copy=False)
        if self.codes is None:
            self.codes = _kmer_codes(self.text, self.k)
        return suffix_array, _kmer_rows(self.codes, suffix_array, start, self.k)


@njit(cache=True, nogil=True)
def _kmer_codes(text, k):
    """The k-mer code starting at every text position, -1 where one of its k symbols is not
    A/C/G/T (or the text ends first)."""
    codes = np.full(len(text), -1, dtype=np.int64)
    mask = (1 << (2 * k)) - 1
    code = run = 0
    for position in range(len(text)):
        symbol = text[position]
        if symbol > 3:
            run = 0
            continue
        code = ((code << 2) | symbol) & mask
        run += 1
        if run >= k:
            codes[position - k + 1] = code
    return codes


@njit(cache=True, nogil=True)
def _kmer_rows(codes, suffix_array, start, k):
    """``[first, last + 1)`` rows of every k-mer of a page (empty when absent); rows of one
    k-mer are consecutive, and suffixes with another symbol within their first k fall in
    none."""
    rows = np.zeros((4 ** k, 2), dtype=np.int64)
    for row in range(len(suffix_array)):
        code = codes[start + suffix_array[row]]
        if code < 0:
            continue
        if rows[code, 1] == 0:
            rows[code, 0] = row
        rows[code, 1] = row + 1
    return rows
