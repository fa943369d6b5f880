"""Compiled parts of the file formats that :mod:`gpualign.io` reads and writes: FASTA parsing
and MUMmer text, on the CPU (``_cpu``, Numba) and on the GPU (``_cuda``, ``kernels/``); and the
hash of a record's name that both parsers compute as they copy it (:func:`name_hashes`)."""

from __future__ import annotations

import numpy as np

__all__ = ["NAME_HASH_FACTOR", "NAME_HASH_SEED", "name_hashes"]

#: The 64-bit hash of a name of bytes ``b[0] .. b[n-1]``: ``h = NAME_HASH_SEED``, then
#: ``h = h * NAME_HASH_FACTOR + b[j]`` for every byte, modulo 2**64. Names with equal hashes
#: are compared as strings, so that a collision costs a comparison, never a wrong answer.
NAME_HASH_SEED = 0xCBF29CE484222325
NAME_HASH_FACTOR = 0x9E3779B97F4A7C15


def name_hashes(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The hashes (``uint64``) of the names whose UTF-8 bytes are ``data[offsets[i]:offsets[i +
    1]]``, as the compiled parsers compute them: the loop over bytes runs over all the names
    at once, one NumPy step per byte position.

    Examples
    --------
    >>> data = np.frombuffer(b"r1r2", dtype=np.uint8)
    >>> hashes = name_hashes(data, np.array([0, 2, 4, 4]))
    >>> bool(hashes[0] != hashes[1]), int(hashes[2]) == NAME_HASH_SEED
    (True, True)
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    # Longest first: the names that have a byte at position j are the first ones.
    order = np.argsort(-lengths, kind="stable")
    starts, descending = offsets[:-1][order], -lengths[order]
    hashes = np.full(len(lengths), NAME_HASH_SEED, dtype=np.uint64)
    factor = np.uint64(NAME_HASH_FACTOR)
    for position in range(int(-descending[0]) if len(lengths) else 0):
        longer = hashes[:int(np.searchsorted(descending, -position))]  # a view: updated in place
        longer *= factor
        longer += data[starts[:len(longer)] + position]
    unsorted = np.empty_like(hashes)
    unsorted[order] = hashes
    return unsorted
