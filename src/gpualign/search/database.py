"""The database of :func:`gpualign.search`: sequences sorted by length and packed once, in
memory or in a ``.gpudb`` file (``gpualign makedb``) whose arrays are memory-mapped.

Sorting by length puts subjects of similar lengths side by side, so that a backend's batches
(a GPU block's subjects, a CPU task's) do similar work. Results name subjects by their position
in the input (:attr:`Database.order` maps back), and ties between equal scores go to the
subject that came first in the input, whatever the sorting.

A ``.gpudb`` file is the magic :data:`MAGIC`, the byte length of a JSON header (little-endian
uint64), the header (format version, alphabet, counts, and for each array its dtype, offset and
length) and the arrays, each at an offset aligned to :data:`_ALIGNMENT` bytes: the residue codes
(uint8, sorted order), their offsets (int64), ``order`` (int64) and the names (UTF-8 bytes and
int64 offsets, sorted order). :meth:`Database.open` maps the arrays read-only, so opening is
instant and the codes go from the page cache to the GPU without a parsing pass.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..io import DATABASE_MAGIC, joined_utf8
from ..sequences import AUTO, Alphabet, SequenceSet, as_sequence_set, get_alphabet

__all__ = ["MAGIC", "Database", "as_database", "best_hits", "fold_hits", "input_positions",
           "partition_bounds",
           "is_database_file"]

#: The first bytes of a ``.gpudb`` file (the FASTA readers refuse such a file by them).
MAGIC = DATABASE_MAGIC
_FORMAT = 1
#: Arrays start at multiples of this in the file (a page: mapped arrays start on one).
_ALIGNMENT = 4096
_HEADER_LENGTH = np.dtype("<u8")


class Database:
    """A protein or DNA database: sequences sorted by length (ascending, stable), packed once.

    Build one with :meth:`from_file` or :meth:`from_sequences`, write it with :meth:`save`
    (what ``gpualign makedb`` does) and map a saved one with :meth:`open`.

    Attributes
    ----------
    sequences : SequenceSet
        The residues in sorted order (codes of ``alphabet``), names in sorted order.
    order : np.ndarray of int64
        ``order[k]`` is the 0-based index in the input of sorted sequence ``k``.
    alphabet : Alphabet
    residues : int
        Total residues.

    Examples
    --------
    >>> db = Database.from_sequences(["ACGTACGT", "ACG", "ACGTA"], names=["a", "b", "c"])
    >>> db.order.tolist(), db.sequences.names, db.input_names(), db.residues
    ([1, 2, 0], ['b', 'c', 'a'], ['a', 'b', 'c'], 16)
    """

    def __init__(self, sequences: SequenceSet, order: np.ndarray):
        self.sequences = sequences
        self.order = np.asarray(order, dtype=np.int64)
        if len(self.order) != len(sequences):
            raise ValueError(f"{len(self.order)} order entries for {len(sequences)} sequences")
        self.alphabet: Alphabet = sequences.alphabet
        self.residues = int(sequences.offsets[-1])

    def __len__(self) -> int:
        return len(self.sequences)

    def __repr__(self) -> str:
        return (f"Database({len(self)} sequences, {self.residues} residues, "
                f"alphabet={self.alphabet.name!r})")

    @classmethod
    def from_set(cls, records: SequenceSet) -> Database:
        """The database of an encoded set (its sequences sorted, the set left as it is)."""
        order = np.argsort(records.lengths, kind="stable").astype(np.int64)
        return cls(records.take(order), order)

    @classmethod
    def from_file(cls, path: str | os.PathLike, alphabet: str | Alphabet = AUTO, *,
                  duplicates: str | None = None, invalid: str = "error",
                  parser: str = "cpu") -> Database:
        """Read a FASTA/FASTQ file (plain, .gz, .bz2, .xz) as :meth:`SequenceSet.from_file
        <gpualign.SequenceSet.from_file>` does (``alphabet``, ``invalid``, ``duplicates``,
        ``parser``)."""
        return cls.from_set(SequenceSet.from_file(path, alphabet, invalid=invalid,
                                                  parser=parser, duplicates=duplicates))

    @classmethod
    def from_sequences(cls, sequences: Iterable[Any], alphabet: str | Alphabet = AUTO, *,
                       names: list[str] | None = None, invalid: str = "error") -> Database:
        """Encode sequences (str, bytes, uint8 arrays) as :meth:`SequenceSet.from_sequences
        <gpualign.SequenceSet.from_sequences>` does; names default to ``"0"``, ``"1"``, ..."""
        return cls.from_set(SequenceSet.from_sequences(sequences, alphabet, names=names,
                                                       invalid=invalid))

    def input_names(self) -> list[str]:
        """The names in input order."""
        names = np.empty(len(self), dtype=object)
        names[self.order] = self.sequences.names
        return names.tolist()

    def save(self, path: str | os.PathLike) -> None:
        """Write the database to ``path`` (a ``.gpudb`` file: see the module's description)."""
        name_bytes, name_offsets = joined_utf8(self.sequences.names)
        arrays = {"codes": self.sequences.codes, "offsets": self.sequences.offsets,
                  "order": self.order, "names": name_bytes, "name_offsets": name_offsets}
        layout, position = {}, 0
        for key, array in arrays.items():
            layout[key] = {"dtype": array.dtype.str, "count": len(array), "offset": position}
            position = _aligned(position + array.nbytes)
        header = json.dumps({"format": _FORMAT, "alphabet": self.alphabet.name,
                             "sequences": len(self), "residues": self.residues,
                             "arrays": layout}).encode("utf-8")
        start = _aligned(len(MAGIC) + _HEADER_LENGTH.itemsize + len(header))
        with open(path, "wb") as handle:
            handle.write(MAGIC + np.array(len(header), dtype=_HEADER_LENGTH).tobytes() + header)
            for key, array in arrays.items():
                handle.seek(start + layout[key]["offset"])
                handle.write(np.ascontiguousarray(array).tobytes())
            handle.truncate(start + position)

    @classmethod
    def open(cls, path: str | os.PathLike) -> Database:
        """Map a database written by :meth:`save`: its codes, offsets and order read-only,
        read from the file (or the page cache) as they are used; its names are read. OSError
        when the file cannot be read; ValueError naming it when it is no database, is damaged
        or of another format version."""
        where = os.fspath(path)
        with open(where, "rb") as handle:
            head = handle.read(len(MAGIC) + _HEADER_LENGTH.itemsize)
            if not head.startswith(MAGIC):
                raise ValueError(f"{where}: not a gpualign search database (gpualign makedb "
                                 "writes one)")
            size = int(np.frombuffer(head[len(MAGIC):], dtype=_HEADER_LENGTH)[0]) \
                if len(head) == len(MAGIC) + _HEADER_LENGTH.itemsize else -1
            text = handle.read(size) if 0 <= size < 1 << 24 else b""
            total = os.fstat(handle.fileno()).st_size
        try:
            header = json.loads(text.decode("utf-8"))
            version = header["format"]
        except (ValueError, KeyError, TypeError):
            raise _damaged(where, "its header cannot be read") from None
        if version != _FORMAT:
            raise ValueError(f"{where}: a gpualign search database of format {version}, this "
                             f"version reads format {_FORMAT}: rebuild it with gpualign makedb")
        try:
            start = _aligned(len(MAGIC) + _HEADER_LENGTH.itemsize + size)
            arrays = {}
            for key, entry in header["arrays"].items():
                dtype, count = np.dtype(entry["dtype"]), int(entry["count"])
                offset = start + int(entry["offset"])
                if offset + dtype.itemsize * count > total:
                    raise _damaged(where, f"it ends before its {key} (truncated?)")
                arrays[key] = (np.memmap(where, dtype=dtype, mode="r", offset=offset,
                                         shape=(count,)) if count else np.zeros(0, dtype))
            names = _split(arrays["names"], arrays["name_offsets"])
            sequences = SequenceSet(arrays["codes"], arrays["offsets"], names,
                                    get_alphabet(header["alphabet"]))
            order = arrays["order"]
            # What the searches index with: checked once here, so that damage is an error
            # naming the file, never a wrong hit or a read past a table.
            if len(order) != len(sequences) or (len(order) and (
                    int(order.min()) < 0 or int(order.max()) >= len(order)
                    or int(np.bincount(order, minlength=len(order)).max()) != 1)):
                raise _damaged(where, "its order is not a permutation of its sequences")
            if len(sequences.codes) and int(sequences.codes.max()) >= sequences.alphabet.size:
                raise _damaged(where, f"a code outside the {sequences.alphabet.name} alphabet")
            return cls(sequences, order)
        except (KeyError, TypeError, IndexError) as exc:
            raise _damaged(where, f"its header lacks {exc}") from None
        except ValueError as exc:
            if str(exc).startswith(where):
                raise
            raise _damaged(where, str(exc)) from None


def _damaged(where: str, why: str) -> ValueError:
    return ValueError(f"{where}: damaged gpualign search database ({why}); rebuild it with "
                      "gpualign makedb")


def _aligned(position: int) -> int:
    return -(-position // _ALIGNMENT) * _ALIGNMENT


def _split(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    """The names that :func:`~gpualign.io.joined_utf8` packed."""
    bounds = np.asarray(offsets).tolist()
    text = bytes(data)
    return [text[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def is_database_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file that starts as a ``.gpudb`` does, so that a damaged database
    is reported as one rather than read as FASTA (False for what cannot be read: the FASTA
    reader says why)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def as_database(database: Any, alphabet: str | Alphabet = AUTO, *,
                invalid: str = "error") -> Database:
    """Accept a :class:`Database`, a path (str or os.PathLike) to a ``.gpudb`` file or a
    FASTA/FASTQ file, a :class:`~gpualign.SequenceSet` or an iterable of sequences.

    Examples
    --------
    >>> len(as_database(["MKV", "MEEPQSD"]))
    2
    """
    if isinstance(database, Database):
        return database
    if isinstance(database, (str, os.PathLike)):
        if is_database_file(database):
            return Database.open(database)
        return Database.from_file(database, alphabet, invalid=invalid)
    return Database.from_set(as_sequence_set(database, alphabet, invalid=invalid,
                                             role="database"))


def input_positions(subject: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The input index of each sorted position in ``subject``, and for -1 (no candidate) one
    after every input index, so that no candidate sorts last on ties.

    Examples
    --------
    >>> input_positions(np.array([1, -1, 0]), np.array([5, 3])).tolist() == [3, 2**63 - 1, 5]
    True
    """
    # Index -1 takes the appended last entry.
    return np.append(np.asarray(order, dtype=np.int64), np.iinfo(np.int64).max)[subject]


def best_hits(score: np.ndarray, subject: np.ndarray, order: np.ndarray,
              n: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``n`` of each row: the contract's top-n rule, shared by the backends.

    Parameters
    ----------
    score : np.ndarray of int, shape (rows, m)
        Candidate scores; -1 marks no candidate.
    subject : np.ndarray of int64, shape (rows, m) or (m,)
        Their sorted database positions (-1 for no candidate).
    order : np.ndarray of int64
        :attr:`Database.order`: ties go to the smaller input index.
    n : int

    Returns
    -------
    score, subject : np.ndarray of int64, shape (rows, n)
        Best first; padded with -1 where a row has fewer than ``n`` candidates.

    Examples
    --------
    >>> s, k = best_hits(np.array([[5, 9, 5]]), np.array([0, 1, 2]), np.array([2, 0, 1]), 2)
    >>> s.tolist(), k.tolist()
    ([[9, 5]], [[1, 2]])
    """
    score = np.asarray(score, dtype=np.int64)
    rows = score.shape[0]
    subject = np.broadcast_to(np.asarray(subject, dtype=np.int64), score.shape)
    ranked = np.lexsort((input_positions(subject, order), -score), axis=-1)[:, :n]
    best = np.full((rows, n), -1, dtype=np.int64)
    chosen = np.full((rows, n), -1, dtype=np.int64)
    width = ranked.shape[1]
    best[:, :width] = np.take_along_axis(score, ranked, axis=1)
    chosen[:, :width] = np.take_along_axis(subject, ranked, axis=1)
    chosen[best < 0] = -1
    best[chosen < 0] = -1
    return best, chosen


def fold_hits(score: np.ndarray, subject: np.ndarray, more_score: np.ndarray,
              more_subject: np.ndarray, order: np.ndarray,
              n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`best_hits` of the hits held (``score``, ``subject``) and more found for the same
    rows: how a backend folds each part of the database into its best ``n``.

    Examples
    --------
    >>> s, k = fold_hits(np.array([[9, -1]]), np.array([[1, -1]]), np.array([[9, 4]]),
    ...                  np.array([[0, 2]]), np.array([2, 0, 1]), 2)
    >>> s.tolist(), k.tolist()
    ([[9, 9]], [[1, 0]])
    """
    return best_hits(np.concatenate((score, more_score), axis=1),
                     np.concatenate((subject, more_subject), axis=1), order, n)


def partition_bounds(offsets: np.ndarray, residues: int) -> list[tuple[int, int]]:
    """``(lo, hi)`` ranges of consecutive sequences of at most ``residues`` residues each,
    covering all of them (a longer sequence is a range of its own): the partitions of a
    database on a cluster, or on a GPU it does not fit.

    Parameters
    ----------
    offsets : np.ndarray of int64
        :attr:`SequenceSet.offsets <gpualign.SequenceSet.offsets>` of the sorted database, or
        any other cumulative cost of its items (the CUDA backend passes bytes a pair of
        subjects, :func:`gpualign.search._cuda.partition_plan`).
    residues : int
        The most a range may hold, in the units of ``offsets``.

    Examples
    --------
    >>> partition_bounds(np.array([0, 2, 4, 9, 10]), 4)
    [(0, 2), (2, 3), (3, 4)]
    """
    offsets = np.asarray(offsets)
    bounds, lo, count = [], 0, len(offsets) - 1
    while lo < count:
        # The last sequence that ends within `residues` of this range's start.
        hi = int(np.searchsorted(offsets, offsets[lo] + residues, side="right")) - 1
        hi = min(count, max(lo + 1, hi))
        bounds.append((lo, hi))
        lo = hi
    return bounds
