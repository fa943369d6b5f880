"""Results as tables: the headers and columns that the result classes' ``table`` methods return
and the ``gpualign`` command writes with :func:`gpualign.io.write_tsv`.

A column is a NumPy array or a list; ``None`` marks a value that is not available (written ``*``,
SAM's convention). Coordinates are 0-based, half-open, as in the Python API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ALIGN_COLUMNS", "EDIT_COLUMNS", "LCS_ALL_COLUMNS", "LCS_TOP_COLUMNS", "MEM_COLUMNS",
           "alignment_table", "available", "named"]

EDIT_COLUMNS = ("query", "target", "distance", "target_start", "target_end", "cigar")
ALIGN_COLUMNS = ("query", "target", "identity", "score", "query_start", "query_end",
                 "target_start", "target_end", "cigar")
MEM_COLUMNS = ("query", "strand", "reference", "reference_pos", "query_pos", "length")
LCS_TOP_COLUMNS = ("query", "subject", "rank", "lcs_length", "query_length", "subject_length",
                   "lcs")
LCS_ALL_COLUMNS = ("query", "subject", "lcs_length", "query_length", "subject_length")


def named(names: Sequence[str], index: np.ndarray) -> list[str]:
    """The names of the records at ``index``."""
    return [names[i] for i in index.tolist()]


def available(values: np.ndarray) -> list[int | None]:
    """Coordinates with -1 (not available) turned into None."""
    return [None if v < 0 else v for v in values.tolist()]


def alignment_table(result: Any, query_names: Sequence[str],
                    target_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
    """The :data:`ALIGN_COLUMNS` table of an :class:`~gpualign.AlignResult` or
    :class:`~gpualign.AllPairs`: identity with four decimals; values that were not computed
    (starts without ``task="path"``, the CIGAR without ``align=True``) are None."""
    missing = [None] * len(result)
    return ALIGN_COLUMNS, [
        named(query_names, result.query_index),
        named(target_names, result.target_index),
        ([f"{x:.4f}" for x in result.identity.tolist()] if result.identity is not None
         else missing),
        result.score,
        available(result.query_start), available(result.query_end),
        available(result.target_start), available(result.target_end),
        result.cigar if result.cigar is not None else missing,
    ]
