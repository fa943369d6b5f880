"""Shared GPU plumbing of every capability.

- :mod:`.loader`: kernels from the package's ``.cu`` files, memoized per device, with the codes
  of :mod:`gpualign.codes` and ``common.cuh``;
- :mod:`.launch`: block and grid sizes from the kernel's launch bounds and the device's limits;
- :mod:`.memory`: the one budget of device memory, chunks and launches that fit it;
- :mod:`.host`: page-locked and mapped host buffers, with the fallback to ordinary memory;
- :mod:`.pipeline`: batches in flight on streams, copies overlapped with kernels.

Nothing here imports CuPy at import time: a CPU-only machine imports the package freely.
"""
