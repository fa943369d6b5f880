"""The reference index for maximal exact matches: suffix arrays and k-mer tables, in pages.

The reference records are concatenated with a separator after each one, so that no match runs
from one record into the next. The positions of this text are cut into pages of
``config.MEM_PAGE_BASES``; each page holds the suffix array of the suffixes starting in it
(from libdivsufsort, through ``pydivsufsort``, over the page and ``config.MEM_PAGE_OVERLAP``
symbols after it) and a k-mer table holding, for every k-mer of A/C/G/T, the suffix-array rows
whose suffix starts with it, so that a search starts inside the right interval. A search only
ever orders suffixes by their first ``min_length`` symbols and extends matches on the whole
text, so pages sorted that far find every MEM, also those that run past the page's end.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from dataclasses import dataclass
from types import ModuleType
from typing import Any, BinaryIO

import numpy as np

from .. import config
from .._checks import integer
from ..backend import resolve_backend
from ..sequences import SequenceSet, as_sequence_set, resolve_alphabet

__all__ = ["IndexPage", "MemIndex", "build_index"]

#: Code of the separator after each reference record (DNA codes are 0-3 for ACGT and 4 for N).
SEPARATOR = 5
_FORMAT = 2
#: The first bytes of an index file: :meth:`MemIndex.save` writes a NumPy ``.npz``, a zip archive.
_MAGIC = b"PK\x03\x04"
#: The largest k-mer size: every page's k-mer table has ``4 ** k`` rows of two int64, 16 GiB at
#: k = 15 (on the host, on the GPU while it is built, and in the index file); 16 would take
#: 64 GiB a page. (The int64 k-mer codes, -1 for none, would allow up to 31.)
MAX_KMER_SIZE = 15

#: The smallest k that :func:`default_kmer_size` chooses.
_MIN_KMER_SIZE = 4


@dataclass
class IndexPage:
    """The suffixes starting at text positions ``start .. end - 1``.

    Attributes
    ----------
    start, end : int
    suffix_array : np.ndarray of int32
        Their start positions minus ``start``, in the order of their first
        :attr:`MemIndex.overlap` symbols at least.
    kmer_rows : np.ndarray of int64, shape (4 ** kmer_size, 2)
        ``[first, last + 1)`` rows of the suffixes starting with k-mer code ``c`` (A=0, C=1,
        G=2, T=3, most significant first).
    """

    start: int
    end: int
    suffix_array: np.ndarray
    kmer_rows: np.ndarray


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
    kmer_size : int
    pages : list of IndexPage
        Consecutive, covering every position of ``text``.
    overlap : int
        The longest ``min_length`` a search of more than one page supports.
    """

    text: np.ndarray
    starts: np.ndarray
    names: list[str]
    kmer_size: int
    pages: list[IndexPage]
    overlap: int

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts) - 1

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write the index to ``path``, a file name or a binary file open for writing (NumPy
        ``.npz``)."""
        bounds = np.array([page.start for page in self.pages] + [len(self.text)])
        with (open(path, "wb") if isinstance(path, str | os.PathLike)
              else contextlib.nullcontext(path)) as handle:
            np.savez(handle, format=np.array([_FORMAT]), text=self.text, starts=self.starts,
                     names=np.array(self.names, dtype=object).astype(str),
                     kmer_size=np.array([self.kmer_size]), overlap=np.array([self.overlap]),
                     page_bounds=bounds,
                     suffix_array=np.concatenate([page.suffix_array for page in self.pages]),
                     kmer_rows=np.stack([page.kmer_rows for page in self.pages]))

    @classmethod
    def load(cls, path: str | os.PathLike) -> MemIndex:
        """Read an index written by :meth:`save`: OSError when the file cannot be read,
        ValueError when it is not an index, is damaged or is of another format version."""
        path = os.fspath(path)
        if not is_index_file(path):
            raise ValueError(f"{path}: not a gpualign MEM index (gpualign index writes one)")
        try:
            with np.load(path, allow_pickle=False) as data:
                version = int(data["format"][0])
                if version == _FORMAT:
                    bounds = data["page_bounds"].tolist()
                    suffix_array, kmer_rows = data["suffix_array"], data["kmer_rows"]
                    pages = [IndexPage(bounds[number], bounds[number + 1],
                                       suffix_array[bounds[number]:bounds[number + 1]],
                                       kmer_rows[number]) for number in range(len(bounds) - 1)]
                    return cls(data["text"], data["starts"], [str(n) for n in data["names"]],
                               int(data["kmer_size"][0]), pages, int(data["overlap"][0]))
        except (ValueError, KeyError, IndexError, EOFError, OSError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: damaged gpualign MEM index ({exc}); rebuild it with "
                             "gpualign index") from None
        raise ValueError(f"{path}: a gpualign MEM index of format {version}, this version reads "
                         f"format {_FORMAT}: rebuild it with gpualign index")


def is_index_file(path: str | os.PathLike) -> bool:
    """Whether the file ``path`` starts as an index file does (OSError when it cannot be read),
    so that a damaged index is reported as one rather than read as FASTA."""
    with open(path, "rb") as handle:
        return handle.read(len(_MAGIC)) == _MAGIC


def build_index(reference, *, invalid: str = "wildcard", kmer_size: int | None = None,
                backend: str = "auto") -> MemIndex:
    """Index a DNA reference (SequenceSet, FASTA path, or list of sequences) for MEM search.

    Symbols other than A/C/G/T (any case; RNA's U is T) become ``N`` with
    ``invalid="wildcard"``, the default for references (they hold N runs and IUPAC codes), and
    ``N`` matches nothing; ``invalid="error"`` stops at the first. A reference whose first
    records look like protein (or text) is refused with a ValueError. With the
    CUDA backend the suffixes are sorted and the k-mer tables built on the GPU (a page too
    large for its free memory is sorted by libdivsufsort); the index is the same either way.
    ``kmer_size`` (1 to :data:`MAX_KMER_SIZE`; None: :func:`default_kmer_size` of the
    reference, at most ``config.MEM_KMER_SIZE``) is the length of the k-mers whose table starts
    a search.

    Examples
    --------
    >>> index = build_index(["ACGTTACG"], backend="cpu")
    >>> index.pages[0].suffix_array.tolist()
    [0, 5, 1, 6, 2, 7, 4, 3, 8]
    """
    if kmer_size is not None:
        integer(kmer_size, "kmer_size", 1, MAX_KMER_SIZE)
    backend = resolve_backend(backend)
    records = as_sequence_set(nucleotides(reference, "reference"), "dna", invalid=invalid,
                              role="reference", parser=backend)
    if len(records) == 0:
        raise ValueError("reference: no records")
    k = int(kmer_size) if kmer_size is not None else default_kmer_size(int(records.lengths.sum()))
    page_bases, overlap = int(config.MEM_PAGE_BASES), int(config.MEM_PAGE_OVERLAP)
    text, starts = _concatenate(records)
    build = _backend(backend).PageBuilder(text, k)
    pages = []
    for start in range(0, len(text), page_bases):
        end = min(len(text), start + page_bases)
        pages.append(IndexPage(start, end, *build(start, end, min(len(text), end + overlap))))
    return MemIndex(text, starts, list(records.names), k, pages, overlap)


def nucleotides(source: Any, role: str, purpose: str = "MEMs are") -> Any:
    """``source`` after a look at its first records (a one-shot iterator comes back with them
    put back in front): a ValueError naming the file (else ``role``) unless they look like
    nucleotides (:func:`~gpualign.sequences.infer_alphabet`; RNA too), or a SequenceSet of
    another alphabet than DNA; the message ends "``purpose`` for DNA"."""
    alphabet, (source,) = resolve_alphabet("auto", source)
    if alphabet.name != "dna":
        where = os.fspath(source) if isinstance(source, os.PathLike) else role
        looks = "protein" if alphabet.name == "protein" else "neither DNA nor protein"
        raise ValueError(f"{where}: looks like {looks}, {purpose} for DNA")
    return source

def default_kmer_size(bases: int) -> int:
    """The k of the k-mer table of a reference of ``bases`` symbols: the largest k up to
    ``config.MEM_KMER_SIZE`` whose table (4**k rows) has no more rows than the reference has
    symbols, and at least 4 (a 4 KiB table).

    k only narrows where a search starts (the MEMs are the same for every k), so a small
    reference need not carry the 16 MiB table of k = 10.

    Examples
    --------
    >>> default_kmer_size(9_000), default_kmer_size(5_000_000), default_kmer_size(10)
    (6, 10, 4)
    """
    largest = int(config.MEM_KMER_SIZE)
    k = min(largest, _MIN_KMER_SIZE)
    while k < largest and 4 ** (k + 1) <= bases:
        k += 1
    return k


def _backend(backend: str) -> ModuleType:
    """The module of the resolved ``backend`` (``"cpu"`` or ``"cuda"``): imported on first use,
    so a CUDA run never loads Numba. Both offer ``PageBuilder(text, k)``, ``prepare(index)``
    and ``find_all``."""
    if backend == "cuda":
        from . import _cuda

        return _cuda
    from . import _cpu

    return _cpu


def _concatenate(records: SequenceSet) -> tuple[np.ndarray, np.ndarray]:
    lengths = records.lengths
    starts = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=starts[1:])
    text = np.full(int(starts[-1]), SEPARATOR, dtype=np.uint8)
    for number in range(len(records)):
        text[starts[number]:starts[number] + lengths[number]] = records.codes_of(number)
    return text, starts
