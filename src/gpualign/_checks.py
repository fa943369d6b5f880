"""Argument checks shared by the public functions (identical messages everywhere)."""

from __future__ import annotations

from typing import Any

import numpy as np


def integer(value: Any, name: str, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """``value`` as an int: TypeError unless it is an integer (bool is not), ValueError outside
    ``minimum .. maximum`` (either bound may be None: none), the message stating the bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        bounds = (f">= {minimum}" if maximum is None else f"<= {maximum}" if minimum is None
                  else f"from {minimum} to {maximum}")
        raise ValueError(f"{name} must be {bounds} (got {value})")
    return int(value)
