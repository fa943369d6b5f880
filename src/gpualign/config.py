"""Tunables, read at call time so that tests can patch them.

Tests shrink the batch sizes (``unittest.mock.patch("gpualign.config.X", ...)``) to drive the
multi-batch and multi-bin code paths with tiny inputs.
"""

from __future__ import annotations

#: Environment variable consulted when ``backend="auto"``: ``cpu`` or ``cuda``.
BACKEND_ENV_VAR = "GPUALIGN_BACKEND"

#: CUDA threads per block for the edit-distance kernels.
EDIT_THREADS_PER_BLOCK = 128

#: Kernel bins for edit distance, by query length in 64-bit words:
#: ``(max_words, lanes_per_pair, words_per_lane)``. ``lanes_per_pair == 1`` is the task-parallel
#: kernel (one pair per thread); larger values spread a query's words over that many lanes of a
#: warp (the thread-cooperative kernel). Queries longer than the last bin are processed in
#: slices of that many words, passing the horizontal deltas of the slice border through memory.
EDIT_KERNEL_BINS: tuple[tuple[int, int, int], ...] = (
    (1, 1, 1),
    (2, 1, 2),
    (4, 1, 4),
    (16, 4, 4),
    (32, 8, 4),
    (64, 16, 4),
    (128, 32, 4),
    (256, 32, 8),
)

#: Fraction of the free GPU memory one batch may use.
GPU_MEMORY_FRACTION = 0.6

#: Upper bound on the bytes of one GPU batch (None: only the free-memory fraction applies).
GPU_BATCH_BYTES: int | None = None

#: Pairs handled per CPU batch (bounds the temporary buffers of the CPU backend).
CPU_BATCH_PAIRS = 1 << 16

#: Largest traceback matrix (bytes of stored bit-vectors) for one pair with ``task="path"``.
PATH_MAX_BYTES_PER_PAIR = 2 << 30

#: Pairs per row block of :func:`gpualign.edit_distance_matrix` (bounds its temporary memory).
MATRIX_BLOCK_PAIRS = 1 << 22
