"""One loader for every CUDA kernel of the package.

Kernels live in ``.cu`` files shipped as package data. They are compiled with NVRTC through
CuPy on first use, specialized by C++ template arguments (``name_expressions``), and memoized
per device, so each specialization is compiled once per process (CuPy also caches the binaries
on disk between processes).
"""

from __future__ import annotations

import functools
import importlib.resources
from typing import Any

_OPTIONS = ("--std=c++17",)


@functools.cache
def _source(path: str) -> str:
    return importlib.resources.files("gpualign").joinpath(path).read_text(encoding="utf-8")


@functools.cache
def _module(path: str, name_expression: str, options: tuple[str, ...], device: int) -> Any:
    import cupy

    with cupy.cuda.Device(device):
        module = cupy.RawModule(code=_source(path), options=_OPTIONS + options,
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
        ``"myers_edit<1, 1, true>"``.
    options : tuple of str
        Extra NVRTC options.
    """
    import cupy

    device = cupy.cuda.Device().id
    return _module(path, name, tuple(options), device).get_function(name)
