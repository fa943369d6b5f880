"""Inputs of the pairwise capabilities (edit distance, alignment): two sets of one alphabet and
the index pairs to compare."""

from __future__ import annotations

from typing import Any

import numpy as np

from .sequences import Alphabet, SequenceSet, as_sequence_set, resolve_alphabet


def pair_sets(queries: Any, targets: Any, alphabet: str | Alphabet, invalid: str, *,
              matrix: bool = False) -> tuple[SequenceSet, SequenceSet]:
    """Encode queries and targets (unless they are SequenceSets already) with one alphabet:
    ``alphabet``, or for ``"auto"`` the one both sides imply (``matrix``: they are scored with
    a substitution matrix; see :func:`~gpualign.sequences.resolve_alphabet`)."""
    alphabet, (queries, targets) = resolve_alphabet(alphabet, queries, targets, matrix=matrix)
    qset = as_sequence_set(queries, alphabet, invalid=invalid, role="queries")
    tset = as_sequence_set(targets, alphabet, invalid=invalid, role="targets")
    if qset.alphabet.name != tset.alphabet.name:
        raise ValueError(f"queries are {qset.alphabet.name} but targets are "
                         f"{tset.alphabet.name}; encode both with one alphabet")
    return qset, tset


def pair_indices(qset: SequenceSet, tset: SequenceSet, pairs: tuple[Any, Any] | None,
                 function: str, matrix_function: str) -> tuple[np.ndarray, np.ndarray]:
    """``(query_index, target_index)`` of the pairs to compare: ``pairs`` checked, or
    ``queries[i]`` with ``targets[i]`` (then the sets must be equally long)."""
    if pairs is None:
        if len(qset) != len(tset):
            raise ValueError(f"{len(qset)} queries but {len(tset)} targets: {function} "
                             "compares queries[i] with targets[i]; pass pairs=, or use "
                             f"{matrix_function} for all pairs")
        index = positions(len(qset))
        return index, index
    q_index, t_index = (_index_array(a, len(s), what)
                        for a, s, what in zip(pairs, (qset, tset), ("query", "target"),
                                              strict=True))
    if len(q_index) != len(t_index):
        raise ValueError(f"pairs: {len(q_index)} query indices but {len(t_index)} target "
                         "indices")
    return q_index, t_index


_positions = np.zeros(0, dtype=np.int64)


def positions(count: int) -> np.ndarray:
    """``0 .. count-1`` as a read-only int64 array: a view of one array kept between calls, which
    grows as needed (a call on a million pairs would otherwise spend about a millisecond
    allocating and filling it)."""
    global _positions
    if len(_positions) < count:
        grown = np.arange(max(count, 2 * len(_positions)), dtype=np.int64)
        grown.setflags(write=False)
        _positions = grown
    return _positions[:count]


def _index_array(values: Any, size: int, what: str) -> np.ndarray:
    index = np.asarray(values)
    if index.ndim != 1 or (index.size and index.dtype.kind not in "iu"):
        raise ValueError(f"pairs: {what} indices must be a 1-D integer array")
    index = index.astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= size):
        raise ValueError(f"pairs: {what} indices must lie in [0, {size})")
    return index
