"""The reference index for maximal exact matches: a suffix array and a k-mer table.

The reference records are concatenated with a separator after each one, so that no match runs
from one record into the next. The suffix array comes from libdivsufsort (through
``pydivsufsort``); the k-mer table holds, for every k-mer of A/C/G/T, the first suffix-array
row whose suffix starts with it, so that a search starts inside the right interval.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass

import numpy as np
from numba import njit

from .. import config
from ..sequences import SequenceSet, as_sequence_set

__all__ = ["MemIndex", "build_index"]

#: Code of the separator after each reference record (DNA codes are 0-3 for ACGT and 4 for N).
SEPARATOR = 5
_FORMAT = 1


@dataclass
class MemIndex:
    """A reference ready for :func:`gpualign.find_mems`.

    Attributes
    ----------
    text : np.ndarray of uint8
        The records' DNA codes, each followed by :data:`SEPARATOR`.
    starts : np.ndarray of int64
        Where each record starts in ``text`` (one more entry: the end).
    names : list of str
    suffix_array : np.ndarray of int32
    kmer_size : int
    kmer_rows : np.ndarray of int64, shape (4 ** kmer_size, 2)
        ``[first, last + 1)`` suffix-array rows of the suffixes starting with k-mer code ``c``
        (A=0, C=1, G=2, T=3, most significant first).
    """

    text: np.ndarray
    starts: np.ndarray
    names: list[str]
    suffix_array: np.ndarray
    kmer_size: int
    kmer_rows: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts) - 1

    def save(self, path: str | os.PathLike) -> None:
        """Write the index to ``path`` (NumPy ``.npz``)."""
        with open(path, "wb") as handle:
            np.savez(handle, format=np.array([_FORMAT]), text=self.text, starts=self.starts,
                     names=np.array(self.names, dtype=object).astype(str),
                     suffix_array=self.suffix_array, kmer_size=np.array([self.kmer_size]),
                     kmer_rows=self.kmer_rows)

    @classmethod
    def load(cls, path: str | os.PathLike) -> MemIndex:
        """Read an index written by :meth:`save`."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["format"][0]) != _FORMAT:
                    raise ValueError("another version")
                return cls(data["text"], data["starts"], [str(n) for n in data["names"]],
                           data["suffix_array"], int(data["kmer_size"][0]), data["kmer_rows"])
        except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: not a gpualign MEM index of this version "
                             f"({exc})") from None


@njit(cache=True)
def _kmer_rows(text, suffix_array, k):
    """``[first, last + 1)`` suffix-array rows of every k-mer of A/C/G/T (empty when absent).
    Suffixes with another symbol within their first k never fall inside an interval."""
    rows = np.zeros((4 ** k, 2), dtype=np.int64)
    for row in range(len(suffix_array)):
        start = suffix_array[row]
        if start + k > len(text):
            continue
        code = 0
        for t in range(k):
            symbol = text[start + t]
            if symbol > 3:
                code = -1
                break
            code = code * 4 + symbol
        if code < 0:
            continue
        if rows[code, 1] == 0:
            rows[code, 0] = row
        rows[code, 1] = row + 1
    return rows


def build_index(reference, *, invalid: str = "wildcard", kmer_size: int | None = None) -> MemIndex:
    """Index a DNA reference (SequenceSet, FASTA path, or list of sequences) for MEM search.

    Symbols other than A/C/G/T (any case) become ``N`` with ``invalid="wildcard"``, the default
    for references (they hold N runs and IUPAC codes), and ``N`` matches nothing.
    """
    records = as_sequence_set(reference, "dna", invalid=invalid, role="reference")
    if len(records) == 0:
        raise ValueError("reference: no records")
    k = int(kmer_size or config.MEM_KMER_SIZE)
    text, starts = _concatenate(records)
    import pydivsufsort

    suffix_array = pydivsufsort.divsufsort(text.copy()).astype(np.int32)
    return MemIndex(text, starts, list(records.names), suffix_array, k,
                    _kmer_rows(text, suffix_array, k))


def _concatenate(records: SequenceSet) -> tuple[np.ndarray, np.ndarray]:
    lengths = records.lengths
    starts = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=starts[1:])
    text = np.full(int(starts[-1]), SEPARATOR, dtype=np.uint8)
    for number in range(len(records)):
        text[starts[number]:starts[number] + lengths[number]] = records.codes_of(number)
    return text, starts
