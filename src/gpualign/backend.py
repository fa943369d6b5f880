"""Backend selection: ``"auto"``, ``"cpu"`` or ``"cuda"``."""

from __future__ import annotations

import functools
import os

from . import config, tuning
from .cuda.launch import device_limits

BACKENDS = ("auto", "cpu", "cuda")


class BackendUnavailableError(RuntimeError):
    """The CUDA backend was requested but CuPy or a GPU is missing."""


@functools.cache
def cuda_status() -> tuple[bool, str]:
    """Return ``(available, reason)`` for the CUDA backend; probed once per process."""
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        return False, f"CuPy is not installed ({exc}); pip install 'gpualign[cuda13]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CuPy raises its own CUDARuntimeError subclasses
        return False, f"no usable CUDA device ({exc})"
    if count == 0:
        return False, "no CUDA device found"
    return True, f"{count} CUDA device(s)"


def cuda_devices() -> list[str]:
    """The CUDA devices this process can use, as ``CUDA_VISIBLE_DEVICES`` names them (the
    variable's entries when it is set, else ordinals); empty without CuPy or a GPU."""
    if not cuda_status()[0]:
        return []
    import cupy

    count = int(cupy.cuda.runtime.getDeviceCount())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [name.strip() for name in visible.split(",")] if visible else []
    return names[:count] if len(names) >= count else [str(k) for k in range(count)]


def resolve_backend(backend: str | None = "auto") -> str:
    """Turn a backend request into ``"cpu"`` or ``"cuda"``.

    ``"auto"`` (or None) uses the ``GPUALIGN_BACKEND`` environment variable when set, else CUDA
    when CuPy and a GPU are present, else the CPU. Asking for ``"cuda"`` without a GPU raises
    :class:`BackendUnavailableError`.

    Examples
    --------
    >>> resolve_backend("cpu")
    'cpu'
    """
    requested = (backend or "auto").lower()
    if requested == "auto":
        requested = os.environ.get(config.BACKEND_ENV_VAR, "auto").lower() or "auto"
        if requested not in BACKENDS:
            raise ValueError(
                f"{config.BACKEND_ENV_VAR}={requested!r}: expected one of {', '.join(BACKENDS)}"
            )
    if requested not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")
    available, reason = cuda_status()
    if requested == "cuda" and not available:
        raise BackendUnavailableError(f"backend 'cuda' requested but unavailable: {reason}")
    if requested == "auto":
        requested = "cuda" if available else "cpu"
    if requested == "cuda":  # the choices `gpualign tune` stored for this GPU model
        import cupy

        tuning.apply(device_limits(cupy.cuda.Device().id).name)
    return requested
