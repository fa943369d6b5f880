"""Pieces shared by the bit-vector algorithms of the CPU backends (Myers' edit distance,
Hyyrö's LCS): 64-bit words, and the query's match table."""

from __future__ import annotations

import numpy as np
from numba import njit

ZERO = np.uint64(0)
ONE = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True)
def match_table(query, n_codes, match_codes):
    """Bit ``i`` of ``table[c, i // 64]`` is set when ``query[i] == c`` and ``c`` can match
    (codes ``>= match_codes``, such as DNA's N, match nothing)."""
    words = (query.shape[0] + 63) >> 6
    table = np.zeros((n_codes, words), dtype=np.uint64)
    for i in range(query.shape[0]):
        c = query[i]
        if c < match_codes:
            table[c, i >> 6] |= ONE << np.uint64(i & 63)
    return table
