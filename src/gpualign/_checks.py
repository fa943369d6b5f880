"""Argument checks shared by the public functions (identical messages everywhere)."""

from __future__ import annotations

from typing import Any

import numpy as np


def integer(value: Any, name: str, minimum: int | None = None) -> int:
    """``value`` as an int: TypeError unless it is an integer (bool is not), ValueError below
    ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum} (got {value})")
    return int(value)
