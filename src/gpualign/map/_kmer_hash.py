"""minimap2's k-mer hash, shared by the index (NumPy, over arrays of codes) and the mapper's
compiled host stages (:mod:`._host`, one code at a time): its operations are those of a NumPy
array and of a scalar alike, and this module loads no Numba."""

from __future__ import annotations

import numpy as np


def hash64(key, mask: np.uint64):
    """minimap2's ``hash64``: an invertible mix of the 2k-bit codes ``key`` (uint64, an array
    or one value).

    Examples
    --------
    >>> hash64(np.array([5, 6], dtype=np.uint64), np.uint64((1 << 30) - 1)).tolist()
    [370420184, 230526742]
    """
    key = (~key + (key << np.uint64(21))) & mask
    key = key ^ (key >> np.uint64(24))
    key = (key + (key << np.uint64(3)) + (key << np.uint64(8))) & mask
    key = key ^ (key >> np.uint64(14))
    key = (key + (key << np.uint64(2)) + (key << np.uint64(4))) & mask
    key = key ^ (key >> np.uint64(28))
    return (key + (key << np.uint64(31))) & mask
