"""Subjects in batches: the input side of every one-to-many search.

A collection of subjects (a :class:`SequenceSet` in memory, a FASTA/FASTQ file, or an iterable of
sequences) is cut into consecutive :class:`Batch` es of about ``batch_residues`` symbols each.
Sets in memory are cut into views (no copy). Files and iterables are read and encoded on a
background thread, a few batches ahead, so that reading overlaps the comparison work and host
memory stays bounded whatever the input size.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .sequences import (
    AUTO,
    Alphabet,
    SequenceSet,
    encode_many,
    name_settler,
    read_sets,
    resolve_alphabet,
)

__all__ = ["Batch", "iter_batches"]

#: Batches read ahead of the consumer from files and iterables, unless told otherwise.
_READ_AHEAD = 2


@dataclass
class Batch:
    """Subjects ``start .. start + len(sequences)`` of the collection."""

    start: int
    sequences: SequenceSet

    def __len__(self) -> int:
        return len(self.sequences)


def _slices(subjects: SequenceSet, batch_residues: int, first_residues: int) -> Iterator[Batch]:
    """Views of consecutive subjects; the first batches are smaller (``first_residues``,
    doubling) so that a pipeline fills quickly."""
    count = len(subjects)
    lo, size = 0, max(1, min(first_residues, batch_residues))
    while lo < count:
        base = subjects.offsets[lo]
        hi = int(np.searchsorted(subjects.offsets, base + size, side="right")) - 1
        hi = min(count, max(hi, lo + 1))
        yield Batch(lo, subjects.view(lo, hi))
        lo, size = hi, min(batch_residues, 2 * size)


def _records(source: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """``(name, sequence)`` from an iterable of sequences or of (name, sequence) pairs."""
    for index, item in enumerate(source):
        if isinstance(item, tuple) and len(item) == 2:
            yield str(item[0]), item[1]
        else:
            yield str(index), item


def _encoded_batches(source: Any, alphabet: Alphabet, invalid: str, batch_residues: int,
                     role: str, parser: str = "cpu") -> Iterator[Batch]:
    if isinstance(source, os.PathLike):
        for start, chunk in read_sets(source, alphabet, batch_residues=batch_residues,
                                      invalid=invalid, parser=parser):
            yield Batch(start, chunk)
        return
    names: list[str] = []
    sequences: list[Any] = []
    residues = start = 0
    settle = name_settler(role)  # names of (name, sequence) pairs, as a file's

    def batch() -> Batch:
        settled = settle(names) if settle else names
        codes, offsets = encode_many(sequences, alphabet, names=names, first_index=start,
                                     invalid=invalid)
        return Batch(start, SequenceSet(codes, offsets, settled, alphabet))

    for name, sequence in _records(source):
        names.append(name)
        sequences.append(sequence)
        residues += len(sequence)
        if residues >= batch_residues:
            yield batch()
            start += len(names)
            names, sequences, residues = [], [], 0
    if sequences:
        yield batch()


def reading_ahead(batches: Iterator[Any], ahead: int) -> Iterator[Any]:
    """Run ``batches`` on a daemon thread from this call on (so a caller may start the reading
    before other work), ``ahead`` batches ahead; errors re-raise in the consumer, in order. A
    consumer that stops early (it closes the iterator or drops it) leaves at once: the thread
    stops at its next batch.

    Examples
    --------
    >>> list(reading_ahead(iter(range(3)), 1))
    [0, 1, 2]
    """
    ready: queue.Queue = queue.Queue(maxsize=max(1, ahead))
    stop = threading.Event()

    def hand_over(item: Any) -> bool:
        """Queue ``item`` unless the consumer has stopped; False once it has. The end marker and
        errors go through here too: a plain ``put`` would block for ever on a full queue that a
        consumer which stopped early never empties."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:  # holds no reference to the consumer, which may then be collected
        try:
            for batch in batches:
                if not hand_over(batch):
                    return
            hand_over(_DONE)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            hand_over(exc)

    threading.Thread(target=produce, name="gpualign-reader", daemon=True).start()
    return _Ahead(ready, stop)


#: What the reading thread hands over after the last batch.
_DONE = object()


class _Ahead:
    """The consumer's side of :func:`reading_ahead`: the batches in order, an error re-raised;
    once it has ended, is closed or is collected, the thread stops."""

    def __init__(self, ready: queue.Queue, stop: threading.Event) -> None:
        self._ready, self._stop = ready, stop

    def __iter__(self) -> _Ahead:
        return self

    def __next__(self) -> Any:
        if self._stop.is_set():
            raise StopIteration
        item = self._ready.get()
        if item is _DONE or isinstance(item, BaseException):
            self._stop.set()
            if item is _DONE:
                raise StopIteration
            raise item
        return item

    def close(self) -> None:
        """Stop the reading: the thread ends at its next batch."""
        self._stop.set()

    def __del__(self) -> None:
        self._stop.set()


def iter_batches(subjects: Any, alphabet: str | Alphabet = AUTO, *, invalid: str = "error",
                 batch_residues: int = 1 << 26, first_residues: int | None = None,
                 read_ahead: int = _READ_AHEAD, role: str = "subjects",
                 parser: str = "cpu") -> Iterator[Batch]:
    """Cut ``subjects`` into batches of about ``batch_residues`` symbols.

    Parameters
    ----------
    subjects : SequenceSet, pathlib.Path to FASTA/FASTQ (plain or compressed), or an iterable
        of str/bytes/uint8 arrays or of ``(name, sequence)`` pairs.
    alphabet, invalid : as :func:`gpualign.sequences.encode`; ``"auto"`` (the default) infers
        the alphabet from the first subjects (:func:`gpualign.sequences.resolve_alphabet`),
        reading those of an iterator at once (up to 1,000), before the read-ahead thread
        starts: name the alphabet to read an iterator only as the batches go.
    batch_residues : int
        Symbols per batch (a batch holds at least one subject).
    first_residues : int, optional
        For sets in memory: the size of the first batch, doubling up to ``batch_residues``.
    read_ahead : int
        For files and iterators: batches read ahead of the consumer, at most.
    parser : {"cpu", "cuda"}
        For FASTA files: where blocks are parsed (see :func:`gpualign.io.read_packed`).

    Examples
    --------
    >>> [(b.start, len(b)) for b in iter_batches(["ACGT", "GG", "TTTT"], batch_residues=5)]
    [(0, 2), (2, 1)]
    """
    # "auto" reads the first subjects: an iterator gets them back in front of the rest.
    alpha, (subjects,) = resolve_alphabet(alphabet, subjects)
    if isinstance(subjects, SequenceSet):
        if subjects.alphabet.name != alpha.name:
            raise ValueError(f"{role} are encoded as {subjects.alphabet.name}, not {alpha.name}")
        return _slices(subjects, batch_residues, first_residues or batch_residues)
    if isinstance(subjects, (str, bytes)):
        raise TypeError(f"{role}: pass a list of sequences, a SequenceSet or a pathlib.Path, "
                        f"not a single {type(subjects).__name__}")
    if not isinstance(subjects, (os.PathLike, Iterable)):
        raise TypeError(f"{role}: expected a SequenceSet, a pathlib.Path or an iterable of "
                        f"sequences, got {type(subjects).__name__}")
    if isinstance(subjects, (list, tuple)):  # already in memory: no thread needed
        return _encoded_batches(subjects, alpha, invalid, batch_residues, role)
    return reading_ahead(_encoded_batches(subjects, alpha, invalid, batch_residues, role, parser),
                       read_ahead)
