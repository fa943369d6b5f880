"""The progress bar of long runs (stderr; shown only once a run outlasts a second)."""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_bar(total: int | None, enabled: bool, what: str, unit: str = "pair") -> tqdm:
    """A bar over ``total`` items (None: a counter) that stays silent for short runs and when not
    ``enabled``."""
    return tqdm(total=total, disable=not enabled, unit=unit, desc=what, leave=False,
                delay=1.0, file=sys.stderr)
