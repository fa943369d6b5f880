"""Public API of maximal exact matches: :func:`find_mems`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from .._checks import integer
from ..backend import resolve_backend
from ..sequences import SequenceSet
from ..streaming import iter_batches
from . import _cpu, _cuda
from .index import MemIndex, build_index

__all__ = ["Mems", "find_mems"]

_STRANDS = ("forward", "reverse", "both")


@dataclass
class Mems:
    """Maximal exact matches of :func:`find_mems`, sorted by query, strand, query position,
    reference record and reference position. Positions are 0-based.

    Attributes
    ----------
    query_index : np.ndarray of int64
    reverse : np.ndarray of bool
        True for matches of the query's reverse complement.
    query_pos : np.ndarray of int64
        Start in the query as searched: for ``reverse`` matches, in the reverse complement
        (MUMmer's convention without ``-c``).
    reference_index, reference_pos : np.ndarray of int64
        Record of the reference and start within it.
    length : np.ndarray of int64
    query_names, reference_names : list of str
    query_lengths : np.ndarray of int64
    """

    query_index: np.ndarray
    reverse: np.ndarray
    query_pos: np.ndarray
    reference_index: np.ndarray
    reference_pos: np.ndarray
    length: np.ndarray
    query_names: list[str]
    reference_names: list[str]
    query_lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.length)


def find_mems(reference: Any, queries: Any, *, min_length: int = 20, strands: str = "both",
              invalid: str = "wildcard", backend: str = "auto") -> Mems:
    """All maximal exact matches of at least ``min_length`` between every query and the
    reference: substrings shared by both that cannot be extended left or right, every
    occurrence in the reference (MUMmer's ``-maxmatch``).

    Only A/C/G/T match (case-insensitive); ``N`` and any other symbol (read as ``N`` with
    ``invalid="wildcard"``) match nothing, as ``mummer -maxmatch -n``. Matches never span two
    reference records.

    Parameters
    ----------
    reference : MemIndex, SequenceSet, pathlib.Path to FASTA, or list of sequences
        An index from :func:`~gpualign.mems.build_index` (or ``gpualign index``) is used as
        is; anything else is indexed first.
    queries : SequenceSet, pathlib.Path to FASTA/FASTQ, or list of sequences
    min_length : int >= 1
    strands : {"forward", "reverse", "both"}
        Search the queries, their reverse complements, or both (MUMmer: default, ``-r``,
        ``-b``).
    backend : {"auto", "cpu", "cuda"}
        Where the search runs (the index is built on the CPU either way).

    Returns
    -------
    Mems

    Examples
    --------
    >>> m = find_mems(["TTACGTACGGA"], ["ACGTACG"], min_length=5)
    >>> m.reverse.tolist(), m.query_pos.tolist(), m.reference_pos.tolist(), m.length.tolist()
    ([False, True, True], [0, 0, 2], [2, 3, 1], [7, 6, 5])
    """
    min_length = integer(min_length, "min_length", 1)
    if strands not in _STRANDS:
        raise ValueError(f"strands={strands!r}: expected one of {', '.join(_STRANDS)}")
    backend = resolve_backend(backend)
    index = reference if isinstance(reference, MemIndex) else build_index(reference)
    device_index = _cuda.DeviceIndex(index) if backend == "cuda" else None
    found, names, lengths = [], [], []
    # Reads from a file or an iterator are read and encoded in batches (on a background
    # thread), so that only one batch of them is held at a time.
    for batch in iter_batches(queries, "dna", invalid=invalid, role="queries",
                              batch_residues=config.MEM_QUERY_BATCH_RESIDUES):
        qset = batch.sequences
        codes, offsets, query_of, reverse_of = _strand_entries(qset, strands)
        if device_index is None:
            entry, q_pos, t_pos, length = _cpu.find_all(codes, offsets, index.text,
                                                         index.suffix_array, index.kmer_rows,
                                                         index.kmer_size, int(min_length))
        else:
            entry, q_pos, t_pos, length = _cuda.find_all(codes, offsets, device_index,
                                                          int(min_length))
        found.append((query_of[entry] + batch.start, reverse_of[entry], q_pos, t_pos, length))
        names.extend(qset.names)
        lengths.append(qset.lengths)
    if found:
        query_index, reverse, q_pos, t_pos, length = (np.concatenate(column)
                                                      for column in zip(*found, strict=True))
    else:
        query_index = q_pos = t_pos = length = np.zeros(0, dtype=np.int64)
        reverse = np.zeros(0, dtype=bool)
    record = np.searchsorted(index.starts, t_pos, side="right") - 1
    reference_pos = t_pos - index.starts[record]
    order = np.lexsort((reference_pos, record, q_pos, reverse, query_index))
    return Mems(query_index[order], reverse[order], q_pos[order], record[order].astype(np.int64),
                reference_pos[order].astype(np.int64), length[order], names, list(index.names),
                np.concatenate(lengths).astype(np.int64) if lengths else
                np.zeros(0, dtype=np.int64))


def _strand_entries(qset: SequenceSet, strands: str):
    """The sequences to search: each query forward and/or reverse-complemented."""
    parts, query_of, reverse_of = [], [], []
    for number in range(len(qset)):
        codes = qset.codes_of(number)
        if strands in ("forward", "both"):
            parts.append(codes)
            query_of.append(number)
            reverse_of.append(False)
        if strands in ("reverse", "both"):
            parts.append(_cpu.COMPLEMENT[codes[::-1]])
            query_of.append(number)
            reverse_of.append(True)
    entries = SequenceSet.from_codes(parts, [""] * len(parts), qset.alphabet)
    return (entries.codes, entries.offsets, np.array(query_of, dtype=np.int64),
            np.array(reverse_of, dtype=bool))
