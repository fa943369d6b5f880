"""Public LCS API: one query (or a few) against many subjects, lengths and top-N with strings."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import integer
from .._progress import progress_bar
from .._tables import LCS_TOP_COLUMNS
from ..backend import resolve_backend
from ..sequences import Alphabet, SequenceSet, encode, resolve_alphabet
from ..streaming import Batch

__all__ = ["LcsTop", "lcs_length", "lcs_length_matrix", "lcs_top"]


@dataclass
class LcsTop:
    """The best subjects of :func:`lcs_top`, best first (longer LCS, then lower index).

    Attributes
    ----------
    index : np.ndarray of int64
        0-based position of each subject in the collection.
    name : list of str
    length : np.ndarray of int32
        LCS length with the query.
    subject_length : np.ndarray of int64
        Length of each subject.
    lcs : list of str or None
        One longest common subsequence per subject (``with_lcs=True``), else None.
    subjects : int
        Number of subjects compared.
    query_length : int
    alphabet : str
        Name of the alphabet the sequences were compared in (inferred for ``"auto"``).
    """

    index: np.ndarray
    name: list[str]
    length: np.ndarray
    subject_length: np.ndarray
    lcs: list[str] | None
    subjects: int
    query_length: int
    alphabet: str = "dna"

    def __len__(self) -> int:
        return len(self.index)

    def table(self, query_name: str) -> tuple[tuple[str, ...], list[Any]]:
        """The best subjects as a table: the header and columns that ``gpualign lcs`` writes
        for this query.

        Parameters
        ----------
        query_name : str
            Written in the query column.

        Returns
        -------
        header : tuple of str
            ``query, subject, rank, lcs_length, query_length, subject_length, lcs`` (without
            ``lcs`` when the result holds no LCS strings).
        columns : list of list or np.ndarray
            One per header entry, one value per subject, best first (rank 1).

        Examples
        --------
        >>> import sys
        >>> from gpualign.io import write_tsv
        >>> top = lcs_top("ACGTACGT", ["ACGT", "TTTTTTTT", "CGTACG"], 2)
        >>> write_tsv(sys.stdout, *top.table("q"))  # doctest: +NORMALIZE_WHITESPACE
        query  subject  rank  lcs_length  query_length  subject_length  lcs
        q      2        1     6           8             6               CGTACG
        q      0        2     4           8             4               ACGT
        """
        count = len(self)
        columns = [[query_name] * count, self.name, list(range(1, count + 1)), self.length,
                   [self.query_length] * count, self.subject_length]
        if self.lcs is None:
            return LCS_TOP_COLUMNS[:-1], columns
        return LCS_TOP_COLUMNS, [*columns, self.lcs]


def _encode_query(query: Any, alphabet: Alphabet, invalid: str, what: str = "query",
                  index: int = 0) -> np.ndarray:
    if isinstance(query, SequenceSet):
        if len(query) != 1:
            raise ValueError(f"{what}: a SequenceSet of {len(query)} sequences; pass one sequence")
        if query.alphabet.name != alphabet.name:
            raise ValueError(f"{what} is encoded as {query.alphabet.name}, not {alphabet.name}")
        return query.codes_of(0)
    if isinstance(query, os.PathLike):
        raise TypeError(f"{what}: pass the sequence itself (str, bytes or uint8 array); read a "
                        "file with SequenceSet.from_file and pass one of its sequences")
    return encode(query, alphabet, name=what, index=index, invalid=invalid)


def _query_alphabet(alphabet: str | Alphabet, query: Any, subjects: Any) -> tuple[Alphabet, Any]:
    """The alphabet of one query and its subjects (see
    :func:`~gpualign.sequences.resolve_alphabet`), and the subjects to read from then on."""
    alpha, (_, subjects) = resolve_alphabet(
        alphabet, query if isinstance(query, SequenceSet) else [query], subjects)
    return alpha, subjects


def _backend(backend: str):
    """The backend module for ``backend``: imported on first use, so a CUDA run never loads
    Numba. Both expose ``run(queries, alphabet, subjects, invalid, consume, devices)``, which
    cuts ``subjects`` into batches and calls ``consume(batch, lengths)`` for every batch, with
    ``lengths`` of shape ``(len(queries), len(batch))``."""
    if resolve_backend(backend) == "cuda":
        from . import _cuda
        return _cuda
    from . import _cpu
    return _cpu


#: What the LCS functions take as ``progress``: a bar of their own (True) or not (False), or a
#: function that they call with the number of subjects done each time a batch is done.
Progress = bool | Callable[[int], object]


@contextlib.contextmanager
def _progress(progress: Progress) -> Iterator[Callable[[int], object]]:
    """The function that counts subjects done: ``progress`` itself, or a bar's update."""
    if callable(progress):
        yield progress
        return
    bar = progress_bar(None, progress, "lcs", unit="subject")
    try:
        yield bar.update
    finally:
        bar.close()


def _check_devices(devices: Sequence[int] | None) -> list[int] | None:
    if devices is None:
        return None
    devices = [int(d) for d in devices]
    if not devices or len(set(devices)) != len(devices) or min(devices) < 0:
        raise ValueError(f"devices={devices!r}: expected distinct GPU ordinals")
    return devices


def lcs_length_matrix(queries: Any, subjects: Any, *, alphabet: str | Alphabet = "auto",
                      invalid: str = "error", backend: str = "auto",
                      devices: Sequence[int] | None = None,
                      progress: Progress = False) -> np.ndarray:
    """LCS length of every query with every subject, reading the subjects once.

    Parameters
    ----------
    queries : list of str/bytes/uint8 arrays, or a SequenceSet
    subjects : SequenceSet, pathlib.Path to FASTA/FASTQ (plain or compressed), or an iterable of
        sequences or ``(name, sequence)`` pairs; files and iterators are streamed in batches.
    alphabet, invalid, backend, devices, progress : as :func:`lcs_top`

    Returns
    -------
    np.ndarray of int32, shape ``(len(queries), number of subjects)``

    Examples
    --------
    >>> lcs_length_matrix(["ACGT", "TTT"], ["AGT", "TATAT", ""], backend="cpu").tolist()
    [[3, 2, 0], [1, 3, 0]]
    """
    alpha, (queries, subjects) = resolve_alphabet(alphabet, queries, subjects)
    resolve_backend(backend)  # fail on a bad backend before the inputs are encoded
    if isinstance(queries, SequenceSet):
        if queries.alphabet.name != alpha.name:
            raise ValueError(f"queries are encoded as {queries.alphabet.name}, not {alpha.name}")
        encoded = [queries.codes_of(i) for i in range(len(queries))]
    elif isinstance(queries, (str, bytes, os.PathLike)):
        raise TypeError("queries: pass a list of sequences or a SequenceSet")
    else:
        encoded = [_encode_query(q, alpha, invalid, f"query #{i}", i)
                   for i, q in enumerate(queries)]
    return _length_rows(encoded, subjects, alpha, invalid, backend, devices, progress)


def _length_rows(queries: list[np.ndarray], subjects: Any, alphabet: Alphabet, invalid: str,
                 backend: str, devices: Sequence[int] | None, progress: Progress,
                 ) -> np.ndarray:
    devices = _check_devices(devices)
    engine = _backend(backend)
    rows: list[tuple[int, np.ndarray]] = []
    with _progress(progress) as advance:

        def consume(batch: Batch, lengths: np.ndarray) -> None:
            rows.append((batch.start, lengths))
            advance(len(batch))

        engine.run(queries, alphabet, subjects, invalid, consume, devices)
    rows.sort(key=lambda item: item[0])
    if not rows:
        return np.zeros((len(queries), 0), dtype=np.int32)
    return np.concatenate([lengths for _, lengths in rows], axis=1)


def lcs_length(query: Any, subjects: Any, *, alphabet: str | Alphabet = "auto",
               invalid: str = "error", backend: str = "auto",
               devices: Sequence[int] | None = None, progress: Progress = False,
               ) -> np.ndarray:
    """Length of the longest common subsequence of ``query`` with each subject.

    Parameters
    ----------
    query : str, bytes or uint8 array of symbols
    subjects : SequenceSet, pathlib.Path to FASTA/FASTQ (plain or compressed), or an iterable of
        sequences or ``(name, sequence)`` pairs; files and iterators are streamed in batches.
    alphabet, invalid, backend, devices, progress : as :func:`lcs_top`

    Returns
    -------
    np.ndarray of int32, one length per subject, in input order.

    Examples
    --------
    >>> lcs_length("ACGTACGT", ["ACGT", "TTTTGGGG", "CAGTTACG"], backend="cpu").tolist()
    [4, 2, 6]
    """
    alpha, subjects = _query_alphabet(alphabet, query, subjects)
    resolve_backend(backend)
    return _length_rows([_encode_query(query, alpha, invalid)], subjects, alpha, invalid,
                        backend, devices, progress)[0]


class _TopN:
    """The ``n`` best subjects seen so far (longer LCS first, then lower index).

    Batches may arrive in any order (several GPUs). With strings wanted, the LCS of every
    subject that enters the top list is computed at once on a CPU thread, while the GPU goes on
    with later batches; subjects pushed out later simply drop their result.
    """

    def __init__(self, n: int, query: np.ndarray, alphabet: Alphabet, with_lcs: bool,
                 executor: ThreadPoolExecutor | None):
        self.n = n
        self.query = query
        self.alphabet = alphabet
        self.index = np.zeros(0, dtype=np.int64)
        self.length = np.zeros(0, dtype=np.int32)
        self.names: dict[int, str] = {}
        self.subject_lengths: dict[int, int] = {}
        self.strings: dict[int, Future] = {}
        self.with_lcs = with_lcs
        self.executor = executor
        self.lock = threading.Lock()
        if with_lcs:
            # The strings are computed on the CPU whatever the backend; without them a CUDA
            # run does not load Numba.
            from ._cpu import lcs_codes
            self.lcs_codes = lcs_codes

    def _best(self, index: np.ndarray, length: np.ndarray) -> np.ndarray:
        order = np.lexsort((index, -length.astype(np.int64)))
        return order[:self.n]

    def add(self, batch: Batch, lengths: np.ndarray) -> None:
        count = len(lengths)
        if count > self.n:
            # Candidates: every subject longer than the n-th best of the batch, and the first
            # (lowest-index) ones equal to it.
            cut = np.partition(lengths, count - self.n)[count - self.n]
            above = np.flatnonzero(lengths > cut)
            equal = np.flatnonzero(lengths == cut)[:self.n - len(above)]
            local = np.concatenate((above, equal))
        else:
            local = np.arange(count)
        with self.lock:
            index = np.concatenate((self.index, batch.start + local))
            length = np.concatenate((self.length, lengths[local]))
            keep = self._best(index, length)
            self.index, self.length = index[keep], length[keep]
            kept = set(self.index.tolist())
            for old in [i for i in self.names if i not in kept]:
                del self.names[old]
                del self.subject_lengths[old]
                self.strings.pop(old, None)
            for i in self.index.tolist():
                if i in self.names:
                    continue
                position = i - batch.start
                self.names[i] = batch.sequences.names[position]
                self.subject_lengths[i] = int(batch.sequences.offsets[position + 1]
                                              - batch.sequences.offsets[position])
                if self.with_lcs:
                    subject = batch.sequences.codes_of(position).copy()
                    self.strings[i] = self.executor.submit(
                        self.lcs_codes, self.query, subject, self.alphabet.size,
                        self.alphabet.match_codes)

    def result(self, subjects: int) -> LcsTop:
        best = self.index.tolist()
        names = [self.names[i] for i in best]
        subject_length = np.array([self.subject_lengths[i] for i in best], dtype=np.int64)
        lcs = None
        if self.with_lcs:
            lcs = [self.alphabet.decode(self.strings[i].result()) for i in best]
        return LcsTop(self.index, names, self.length, subject_length, lcs, subjects,
                      len(self.query), self.alphabet.name)


def lcs_top(query: Any, subjects: Any, n: int = 10, *, with_lcs: bool = True,
            alphabet: str | Alphabet = "auto", invalid: str = "error", backend: str = "auto",
            devices: Sequence[int] | None = None, progress: Progress = False) -> LcsTop:
    """The ``n`` subjects with the longest common subsequence with ``query``.

    Ties are broken by the lower subject index, so the result is the same on every backend.
    Subjects from a file or an iterator are streamed in batches: host memory holds a few
    batches and the current best ``n``, whatever the size of the collection. On the GPU, batches
    go through page-locked buffers on a few CUDA streams per device, so that reading, copies,
    kernels and the CPU work on results (top-N, LCS strings) overlap.

    Parameters
    ----------
    query : str, bytes or uint8 array of symbols
    subjects : SequenceSet, pathlib.Path to FASTA/FASTQ (plain or compressed), or an iterable of
        sequences or ``(name, sequence)`` pairs.
    n : int
        How many subjects to return (fewer when the collection is smaller).
    with_lcs : bool
        Also return one longest common subsequence per returned subject (computed on the CPU
        in linear space).
    alphabet : {"auto", "dna", "protein", "bytes"}
        "auto" infers it from the query and the first subjects (a SequenceSet keeps its own;
        see :func:`gpualign.sequences.resolve_alphabet`). In DNA, ``U`` is read as ``T`` and
        ``N`` matches nothing, not even ``N``.
    invalid : {"error", "wildcard"}
        Symbols outside the alphabet raise an error naming record and position, or become the
        wildcard.
    backend : {"auto", "cpu", "cuda"}
    devices : list of int, optional
        GPUs to split the batches over (CUDA backend; default: the current device).
    progress : bool or callable
        True: a progress bar (subjects done) on stderr. A function is called instead with the
        number of subjects of each batch done (batches of a file may finish out of order on
        several GPUs), for a bar of the caller's over several calls.

    Returns
    -------
    LcsTop

    Examples
    --------
    >>> top = lcs_top("ACGTACGT", ["ACGT", "TTTTGGGG", "CAGTTACG"], n=2, backend="cpu")
    >>> top.index.tolist(), top.length.tolist(), top.lcs
    ([2, 0], [6, 4], ['AGTACG', 'ACGT'])
    """
    n = integer(n, "n", 1)
    alpha, subjects = _query_alphabet(alphabet, query, subjects)
    encoded = _encode_query(query, alpha, invalid)
    devices = _check_devices(devices)
    engine = _backend(backend)
    executor = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) // 2),
                                  thread_name_prefix="gpualign-lcs") if with_lcs else None
    top = _TopN(int(n), encoded, alpha, with_lcs, executor)
    seen = [0]
    try:
        with _progress(progress) as advance:

            def consume(batch: Batch, lengths: np.ndarray) -> None:
                top.add(batch, lengths[0])
                seen[0] += len(batch)
                advance(len(batch))

            engine.run([encoded], alpha, subjects, invalid, consume, devices)
        return top.result(seen[0])
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
