"""Compiled parts of the file formats that :mod:`gpualign.io` reads and writes: FASTA parsing
and MUMmer text, on the CPU (``_cpu``, Numba) and on the GPU (``_cuda``, ``kernels/``)."""
