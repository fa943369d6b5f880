"""One loader for every CUDA kernel of the package.

Kernels live in ``.cu`` files shipped as package data. Each source is compiled with NVRTC
through CuPy on first use, after a preamble of the codes shared with Python
(:func:`gpualign.codes.kernel_preamble`), with this folder on the include path for
``common.cuh``; specializations are C++ template arguments (``name_expressions``), memoized per
device, so each is compiled once per process (CuPy also caches the binaries on disk between
processes).

Examples
--------
>>> "    OP_MATCH = 0," in source("edit/kernels/path.cu")
True
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.resources
from pathlib import Path
from typing import Any

from ..codes import kernel_preamble

#: The folder of the shared headers (``common.cuh``).
INCLUDE_DIR = Path(__file__).resolve().parent

#: NVRTC options of every kernel (the kernel compile test builds with them too).
OPTIONS = ("--std=c++17", f"--include-path={INCLUDE_DIR}")

#: How often each kernel ``(path, name, options)`` was asked for in this process, in the order
#: of first use: :mod:`gpualign.cuda.report` tells from it which kernels a workload used.
REQUESTS: collections.Counter[tuple[str, str, tuple[str, ...]]] = collections.Counter()


@functools.cache
def _headers_digest() -> str:
    """A digest of the shared headers: CuPy's disk cache keys on the source text and options
    only, so the source names the headers' content to be rebuilt when they change."""
    digest = hashlib.sha256()
    for header in sorted(INCLUDE_DIR.glob("*.cuh")):
        digest.update(header.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def source(path: str) -> str:
    """The text NVRTC compiles for the package file ``path``: the generated codes, then the
    file."""
    text = importlib.resources.files("gpualign").joinpath(path).read_text(encoding="utf-8")
    return f"{kernel_preamble()}// headers {_headers_digest()}\n#line 1 \"{path}\"\n{text}"


@functools.cache
def _module(path: str, name_expression: str, options: tuple[str, ...], device: int) -> Any:
    import cupy

    with cupy.cuda.Device(device):
        module = cupy.RawModule(code=source(path), options=OPTIONS + options,
                                name_expressions=(name_expression,))
        module.compile()
    return module


def get_kernel(path: str, name: str, options: tuple[str, ...] = ()) -> Any:
    """Return the compiled kernel ``name`` of the package file ``path`` for the current device.

    Parameters
    ----------
    path : str
        Path of the ``.cu`` file inside the package, e.g. ``"edit/kernels/myers.cu"``.
    name : str
        An ``extern "C"`` kernel name, or a template specialization such as
        ``"myers_edit<1, 1, true, 0>"``.
    options : tuple of str
        Extra NVRTC options.
    """
    import cupy

    device = cupy.cuda.Device().id
    REQUESTS[path, name, tuple(options)] += 1
    return _function(path, name, tuple(options), device)


@functools.cache
def _function(path: str, name: str, options: tuple[str, ...], device: int) -> Any:
    """:func:`get_kernel`'s answer, kept: with a module's ``get_function`` each time a call
    took 17 us, kept 3 us (an H100 host), and a long pair's CIGAR asks a dozen times."""
    return _module(path, name, options, device).get_function(name)
