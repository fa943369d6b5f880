"""The index of :func:`gpualign.map_reads`: minimizers of a DNA reference, and the candidate
windows of a batch of reads.

Minimizers are those of minimap2 (Li, *Bioinformatics* 2016 and 2018): every k-mer of A/C/G/T
is read on both strands and the smaller 2-bit code (A0 C1 G2 T3, first base most significant)
is the canonical one; its hash is minimap2's invertible ``hash64`` of that code. A k-mer that
holds an ``N`` (or runs past the end of its sequence) is none, so an ``N`` breaks the k-mers
around it. In every window of ``w`` consecutive k-mers of a stretch between breaks, the
k-mers of the smallest hash (all of them on ties) are minimizers; a stretch of fewer than
``w`` k-mers is one window.

The index keeps every minimizer of the reference, sorted by hash then position: the distinct
hashes (:attr:`MapIndex.keys`, looked up with ``np.searchsorted``), where each one's entries
start, and for each entry its position in the concatenated reference and its strand.
Minimizers that occur more than ``config.MAP_MAX_OCCURRENCES`` times are skipped when reads
are looked up, not when the index is built, so that the cap can change without a rebuild.

The index is built with vectorised NumPy over whole pieces of the reference (no Numba:
``gpualign index`` on a GPU machine loads none); the reads' candidates are looked up by
compiled loops (:mod:`gpualign.map._host`), one read at a time on every core, each hash in
its bucket of keys of the same top bits. A saved index (:meth:`MapIndex.save`, ``.gpumap``)
is a NumPy ``.npz`` whose first entry is ``gpumap``: the reference's codes and names come
with it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pathlib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from .. import config
from .._checks import integer
from ..backend import resolve_backend
from ..mems.index import nucleotides
from ..sequences import SequenceSet, as_sequence_set
from ._kmer_hash import hash64

__all__ = ["Candidates", "MapIndex", "as_map_index", "is_map_index_file", "minimizers"]

#: The largest k: a k-mer's 2-bit code must fit the 64-bit hash with room to spare (minimap2's
#: bound too).
MAX_K = 28
#: The largest window (minimap2's bound).
MAX_W = 255
_FORMAT = 1
#: A saved index is a zip archive (``np.savez``) whose first member is this one: the zip's
#: first local header names it at byte 30, so a file is told apart even when truncated.
_ZIP_MAGIC = b"PK\x03\x04"
_FIRST_MEMBER = b"gpumap.npy"
_FIRST_MEMBER_OFFSET = 30
_IDENTITY = b"gpualign map index"
#: The hash of no k-mer (a real hash has at most 2 * MAX_K bits).
_NONE = np.uint64(np.iinfo(np.uint64).max)


def _kmer_codes(bases: np.ndarray, k: int) -> np.ndarray:
    """The 2-bit codes (first base most significant) of the k-mers from each position of
    ``bases`` (uint64, 0-3): codes of 1, 2, 4 ... bases from shorter ones, then k's binary
    digits put together."""
    levels, span, level = {1: bases}, 1, bases
    while 2 * span <= k:
        level = (level[:-span] << np.uint64(2 * span)) | level[span:]
        span *= 2
        levels[span] = level
    count = len(bases) - k + 1
    code, done = np.zeros(count, dtype=np.uint64), 0
    for span in sorted((span for span in levels if k & span), reverse=True):
        code = (code << np.uint64(2 * span)) | levels[span][done:done + count]
        done += span
    return code


#: Masks of every other 2-bit and 4-bit group of a 64-bit word.
_PAIRS = np.uint64(0x3333333333333333)
_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)


def _reverse_complement(code: np.ndarray, k: int) -> np.ndarray:
    """The codes of the reverse complements of the k-mer codes ``code``: their 2-bit groups
    in reverse order (swapped within nibbles, bytes, then the bytes reversed), complemented."""
    code = ((code >> np.uint64(2)) & _PAIRS) | ((code & _PAIRS) << np.uint64(2))
    code = ((code >> np.uint64(4)) & _NIBBLES) | ((code & _NIBBLES) << np.uint64(4))
    return ~code.byteswap() >> np.uint64(64 - 2 * k)


def _sliding(values: np.ndarray, width: int, reduce: np.ufunc, fill: Any) -> np.ndarray:
    """``reduce`` (np.minimum or np.maximum) over ``values[s:s + width]`` for every ``s``
    (``fill`` past the end), from windows of 1, 2, 4 ... values, two overlapping at the end."""
    padded = np.concatenate((values, np.full(width - 1, fill, dtype=values.dtype)))
    span = 1
    while 2 * span <= width:
        padded = reduce(padded[:-span], padded[span:])
        span *= 2
    return reduce(padded[:len(values)], padded[width - span:width - span + len(values)])


def minimizers(codes: np.ndarray, offsets: np.ndarray, k: int,
               w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (w, k)-minimizers of the sequences ``codes[offsets[i]:offsets[i + 1]]`` (DNA codes).

    Parameters
    ----------
    codes : np.ndarray of uint8
        DNA codes (A0 C1 G2 T3; 4 and above is N).
    offsets : np.ndarray of int64
        Sequence bounds in ``codes`` (one more than there are sequences).
    k : int
        k-mer length, 2 to :data:`MAX_K` (at least 2, so that no k-mer spans two sequences).
    w : int
        Consecutive k-mers per window, 1 to :data:`MAX_W`.

    Returns
    -------
    position : np.ndarray of int64
        Start of each minimizer in ``codes``, ascending.
    hash : np.ndarray of uint64
        Its hash (of its canonical k-mer).
    reverse : np.ndarray of bool
        Its canonical k-mer is the reverse complement of the k-mer read forward.

    Examples
    --------
    >>> seq = SequenceSet.from_sequences(["ACGTTGCANGTCCA"], "dna")
    >>> position, _, reverse = minimizers(seq.codes, seq.offsets, 3, 2)
    >>> position.tolist(), reverse.tolist()
    ([0, 1, 2, 4, 5, 9, 10], [False, True, True, True, False, True, True])
    """
    codes = np.asarray(codes, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    count = len(codes) - k + 1  # k-mer start positions
    if count <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, bool)
    forward = _kmer_codes((codes & 3).astype(np.uint64), k)
    backward = _reverse_complement(forward, k)
    reverse = backward < forward
    hashes = hash64(np.minimum(forward, backward), np.uint64((1 << (2 * k)) - 1))
    del forward, backward

    ns = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(codes > 3, out=ns[1:])
    sequence_end = np.repeat(offsets[1:], np.diff(offsets))[:count]
    valid = (ns[k:] == ns[:count]) & (np.arange(count) + k <= sequence_end)
    hashes[~valid] = _NONE

    # Stretches of consecutive k-mers (their number, for each k-mer).
    stretch_start = valid & ~np.concatenate(([False], valid[:-1]))
    stretch = np.cumsum(stretch_start) - 1
    first = np.flatnonzero(stretch_start)
    chosen = np.zeros(count, dtype=bool)
    if len(first):
        # A stretch of fewer than w k-mers is one window: its smallest hashes. (Each span from
        # one stretch's start to the next's holds the stretch, then k-mers that are none.)
        short = np.add.reduceat(valid.astype(np.int64), first) < w
        smallest = np.minimum.reduceat(hashes, first)
        chosen |= valid & short[stretch] & (hashes == smallest[stretch])
    # Full windows: w valid k-mers from start s. A k-mer is the smallest of some full window
    # holding it iff its hash is the largest of those windows' smallest (none is below it),
    # so windows mark their smallest hash plus one (0: not a full window) and every k-mer
    # takes the largest mark of the windows over it.
    invalid = np.zeros(count + w, dtype=np.int64)
    np.cumsum(~valid, out=invalid[1:count + 1])
    invalid[count + 1:] = invalid[count] + 1  # windows running past the end are not full
    full = invalid[w:w + count] == invalid[:count]
    mark = np.zeros(count + w - 1, dtype=np.uint64)
    mark[w - 1:][full] = _sliding(hashes, w, np.minimum, _NONE)[full] + np.uint64(1)
    covering = _sliding(mark, w, np.maximum, np.uint64(0))[:count]
    chosen |= valid & (covering == hashes + np.uint64(1))
    position = np.flatnonzero(chosen)
    return position, hashes[position], reverse[position]


@dataclass
class Candidates:
    """Candidate windows for each read, both strands: arrays of equal length, grouped by read
    (ascending), within a read by votes descending, then contig, start and strand ascending.

    Attributes
    ----------
    read : np.ndarray of int64
        The read's index in the batch.
    reverse : np.ndarray of bool
        The read's reverse complement aligns here.
    contig : np.ndarray of int64
        The contig's index in the reference.
    start, end : np.ndarray of int64
        The window on the contig, 0-based, half-open, clipped to the contig.
    votes : np.ndarray of int32
        Minimizers of the read (each counted once) whose hits fall on this contig and strand
        within the window's band of diagonals.
    """

    read: np.ndarray
    reverse: np.ndarray
    contig: np.ndarray
    start: np.ndarray
    end: np.ndarray
    votes: np.ndarray

    def __len__(self) -> int:
        return len(self.read)


class MapIndex:
    """Minimizer index of a DNA reference: (w, k)-minimizers of both strands (canonical),
    hash -> positions (see the module's description).

    Build one with :meth:`build` (or :func:`as_map_index`), write it with :meth:`save`
    (``gpualign index REF.fa -o REF.gpumap``) and read it back with :meth:`open`.

    Attributes
    ----------
    reference : SequenceSet
        The contigs (DNA codes, N = 4).
    k, w : int
        k-mer length and window.
    keys : np.ndarray of uint64
        The distinct minimizer hashes, ascending.
    key_starts : np.ndarray of int64
        Entries of ``keys[i]`` are ``key_starts[i]:key_starts[i + 1]`` of the arrays below.
    positions : np.ndarray of int64
        Each entry's k-mer start in ``reference.codes`` (ascending for one hash).
    reverse : np.ndarray of bool
        Each entry's canonical k-mer is the reverse complement of the reference's.

    Examples
    --------
    >>> reference = "TTGACCATGCAAGTCCGATTAGGCATTCAGGTACCTGAAGTCATGGCAT"
    >>> index = MapIndex.build([reference], k=5, w=3)
    >>> read = SequenceSet.from_sequences([reference[10:40]], "dna")
    >>> best = index.candidates(read, max_candidates=1, margin=0)
    >>> best.reverse.tolist(), best.start.tolist(), best.end.tolist(), best.votes.tolist()
    ([False], [10], [40], [11])
    """

    def __init__(self, reference: SequenceSet, k: int, w: int, keys: np.ndarray,
                 key_starts: np.ndarray, positions: np.ndarray, reverse: np.ndarray):
        self.reference = reference
        self.k, self.w = int(k), int(w)
        self.keys = np.asarray(keys, dtype=np.uint64)
        self.key_starts = np.asarray(key_starts, dtype=np.int64)
        self.positions = np.asarray(positions, dtype=np.int64)
        self.reverse = np.asarray(reverse, dtype=bool)

    def __repr__(self) -> str:
        return (f"MapIndex({len(self.reference)} contigs, {len(self.reference.codes)} bp, "
                f"k={self.k}, w={self.w}, {len(self.positions)} minimizers)")

    @classmethod
    def build(cls, reference: Any, *, k: int = 15, w: int = 10,
              backend: str = "auto") -> MapIndex:
        """Index the minimizers of a DNA reference.

        Parameters
        ----------
        reference : SequenceSet, path to a FASTA file (.gz accepted), or sequences
            Symbols other than A/C/G/T (any case; U is T) become N. A reference that looks
            like protein is refused (ValueError), and so are records with the same name (SAM
            names each reference record once): rename them when reading, e.g.
            ``SequenceSet.from_file(path, duplicates="rename")``.
        k : int
            k-mer length, 2 to :data:`MAX_K` (minimap2's ``-k``; 15 is its default, 21 its
            short-read preset's).
        w : int
            Window, consecutive k-mers, 1 to :data:`MAX_W` (minimap2's ``-w``).
        backend : str
            The parser of a FASTA file (``"cpu"``, ``"cuda"`` or ``"auto"``); the minimizers
            are computed on the host with NumPy, in pieces of ``config.MAP_INDEX_BATCH_BASES``
            of the reference side by side on every core.

        Examples
        --------
        >>> index = MapIndex.build(["ACGTACGTTT", "GGGNNAC"], k=4, w=2, backend="cpu")
        >>> index.positions.tolist(), index.reverse.tolist()
        ([0, 4, 6, 1, 3], [False, False, True, False, True])
        """
        k = integer(k, "k", 2, MAX_K)
        w = integer(w, "w", 1, MAX_W)
        backend = resolve_backend(backend)
        records = as_sequence_set(nucleotides(reference, "reference", "read mapping is"),
                                  "dna", invalid="wildcard", role="reference", parser=backend)
        if len(records) == 0:
            raise ValueError("reference: no records")
        _check_unique_names(records.names, reference)
        size, batch = len(records.codes), int(config.MAP_INDEX_BATCH_BASES)
        cores = range(0, max(size, 1), batch)
        with ThreadPoolExecutor(max_workers=min(len(cores), os.cpu_count() or 1)) as pool:
            found = list(pool.map(lambda start: _piece_minimizers(
                records, start, min(size, start + batch), k, w), cores))
        position, hashes, reverse = (np.concatenate(parts) for parts in zip(*found, strict=True))
        order = np.argsort(hashes, kind="stable")  # positions stay ascending within a hash
        ordered = hashes[order]
        # Each run of equal hashes in sorted order: its key and where it starts (np.unique
        # would sort them again).
        run_starts = np.ones(len(ordered), dtype=bool)
        run_starts[1:] = ordered[1:] != ordered[:-1]
        first = np.flatnonzero(run_starts)
        keys = ordered[first]
        key_starts = np.append(first, len(order)).astype(np.int64)
        return cls(records, k, w, keys, key_starts, position[order], reverse[order])

    def occurrences(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the entries of each of ``hashes`` start (in :attr:`positions` and
        :attr:`reverse`) and how many there are (0 for a hash not in the index).

        Examples
        --------
        >>> index = MapIndex.build(["ACGTTGCAAGGCACGTTGCA"], k=6, w=1)  # ACGTTG twice
        >>> first, count = index.occurrences(index.keys)
        >>> int(count.sum()) == len(index.positions), int(count.max())
        (True, 2)
        """
        hashes = np.asarray(hashes, dtype=np.uint64)
        if not len(self.keys):
            return np.zeros(len(hashes), np.int64), np.zeros(len(hashes), np.int64)
        # Searched in sorted order: neighbouring searches then share the cache.
        order = np.argsort(hashes)
        slot = np.empty(len(hashes), dtype=np.int64)
        slot[order] = np.minimum(np.searchsorted(self.keys, hashes[order]), len(self.keys) - 1)
        found = self.keys[slot] == hashes
        first = self.key_starts[slot]
        return first, np.where(found, self.key_starts[slot + 1] - first, 0)

    def candidates(self, reads: SequenceSet | Any, *, max_candidates: int = 8,
                   margin: int | None = None) -> Candidates:
        """Candidate windows of each read on both strands (see :class:`Candidates`).

        Every minimizer of a read (or of its reverse complement: canonical k-mers find both)
        that occurs in the reference at most ``config.MAP_MAX_OCCURRENCES`` times places the
        read on a diagonal (reference position minus read position, on the strand the hit
        implies). The hits of one read on one contig and strand, sorted by diagonal, form
        candidates of at most ``margin`` from their first diagonal to their last (a hit
        beyond opens the next: a tandem repeat gives several candidates, not one over the
        whole repeat); a candidate's votes are the read's distinct minimizers among them.
        Each read keeps its best ``max_candidates``; a read without hits has none. Compiled
        (:mod:`gpualign.map._host`): the reads side by side on every core, each read's
        minimizers, hits and candidates in its thread's scratch arrays.

        Parameters
        ----------
        reads : SequenceSet, or sequences
            DNA reads (N, and any other symbol than A/C/G/T, breaks k-mers).
        max_candidates : int
            Candidates kept per read (the most votes; both strands together).
        margin : int or None
            Bases added on both sides of a candidate's diagonals (indels, ends of the read);
            None: a tenth of the read's length (rounded up) plus 8, for each read.

        Examples
        --------
        >>> index = MapIndex.build(["ACGTTGCAAGGCTTAACCGATTACA"], k=5, w=3)
        >>> read = SequenceSet.from_sequences(["GGTTAAGCCTTGCA"], "dna")  # reverse complement
        >>> found = index.candidates(read, margin=2)
        >>> found.reverse.tolist(), found.start.tolist(), found.end.tolist()
        ([True], [2], [20])
        """
        max_candidates = integer(max_candidates, "max_candidates", 1)
        if isinstance(reads, SequenceSet) and reads.alphabet.name != "dna":
            raise ValueError(f"reads: alphabet {reads.alphabet.name}, read mapping is for DNA")
        reads = as_sequence_set(reads, "dna", invalid="wildcard", role="reads")
        lengths = reads.lengths
        margins = (lengths + 9) // 10 + 8 if margin is None else \
            np.full(len(reads), integer(margin, "margin", 0), dtype=np.int64)
        from ._host import read_candidates  # Numba: loaded by the runs that map

        buckets, shift = self._buckets
        found, reverse, contig, start, end, votes = read_candidates(
            reads.codes, reads.offsets, margins, self.k, self.w, self.keys, self.key_starts,
            self.positions, self.reverse, buckets, shift, self.reference.offsets,
            int(config.MAP_MAX_OCCURRENCES), max_candidates)
        kept = (np.arange(max_candidates) < found[:, None]).ravel()
        return Candidates(np.repeat(np.arange(len(reads), dtype=np.int64), found),
                          reverse[kept], contig[kept], start[kept], end[kept], votes[kept])

    @functools.cached_property
    def _buckets(self) -> tuple[np.ndarray, int]:
        """Where the keys of each value of their top bits start in :attr:`keys` (one more
        entry: the end), and the shift that gives a hash's top bits: a lookup searches its
        bucket only, about one key (at most 2**24 buckets)."""
        bits = min(2 * self.k, 24, max(1, int(len(self.keys)).bit_length()))
        shift = 2 * self.k - bits
        tops = np.arange((1 << bits) + 1, dtype=np.uint64) << np.uint64(shift)
        return np.searchsorted(self.keys, tops).astype(np.int64), shift

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write the index, with its reference, to ``path``: a file name or a binary file open
        for writing (a NumPy ``.npz``; ``.gpumap`` by convention).

        Examples
        --------
        >>> import io
        >>> buffer = io.BytesIO()
        >>> MapIndex.build(["ACGTTGCAAGGC"], k=4, w=2).save(buffer)
        >>> buffer.getvalue()[30:40]
        b'gpumap.npy'
        """
        reference = self.reference
        with (open(path, "wb") if isinstance(path, str | os.PathLike)
              else contextlib.nullcontext(path)) as handle:
            # gpumap goes first: the file is known by its first member's name (is_map_index_file).
            np.savez(handle, gpumap=np.array([_IDENTITY]), format=np.array([_FORMAT]),
                     k=np.array([self.k]), w=np.array([self.w]), codes=reference.codes,
                     offsets=reference.offsets,
                     names=np.array(reference.names, dtype=object).astype(str),
                     keys=self.keys, key_starts=self.key_starts, positions=self.positions,
                     reverse=self.reverse)

    @classmethod
    def open(cls, path: str | os.PathLike) -> MapIndex:
        """Read an index written by :meth:`save`: OSError when the file cannot be read,
        ValueError naming it when it is no map index, is damaged or of another format version.

        Examples
        --------
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ref.gpumap")
        >>> MapIndex.build(["ACGTTGCAAGGC"], k=4, w=2).save(path)
        >>> MapIndex.open(path).reference.names
        ['0']
        """
        where = os.fspath(path)
        if not _starts_as_map_index(where):
            raise ValueError(f"{where}: not a gpualign map index (gpualign index -o REF.gpumap "
                             "writes one)")
        try:
            with np.load(where, allow_pickle=False) as data:
                if bytes(data["gpumap"][0]) != _IDENTITY:
                    raise ValueError("its first member is not the map index's")
                version = int(data["format"][0])
                if version == _FORMAT:
                    reference = SequenceSet(data["codes"], data["offsets"],
                                            [str(name) for name in data["names"]], "dna")
                    return cls(reference, int(data["k"][0]), int(data["w"][0]), data["keys"],
                                data["key_starts"], data["positions"], data["reverse"])
        except (ValueError, KeyError, IndexError, EOFError, OSError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{where}: damaged gpualign map index ({exc}); rebuild it with "
                             "gpualign index") from None
        raise ValueError(f"{where}: a gpualign map index of format {version}, this version "
                         f"reads format {_FORMAT}: rebuild it with gpualign index")


def is_map_index_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file that starts as a saved :class:`MapIndex` does, so that a
    damaged index is reported as one rather than read as FASTA (False for what cannot be
    read: the FASTA reader says why).

    Examples
    --------
    >>> is_map_index_file(os.devnull)
    False
    """
    try:
        return _starts_as_map_index(path)
    except OSError:
        return False


def _starts_as_map_index(path: str | os.PathLike) -> bool:
    """:func:`is_map_index_file`, but OSError when ``path`` cannot be read."""
    with open(path, "rb") as handle:
        head = handle.read(_FIRST_MEMBER_OFFSET + len(_FIRST_MEMBER))
    return head.startswith(_ZIP_MAGIC) and head[_FIRST_MEMBER_OFFSET:] == _FIRST_MEMBER


def as_map_index(reference: Any, **build_options: Any) -> MapIndex:
    """Accept a :class:`MapIndex`, a path (str or os.PathLike) to a saved one (``.gpumap``)
    or to a FASTA file, a :class:`~gpualign.SequenceSet` or sequences; what is not an index
    yet is built with ``build_options`` (:meth:`MapIndex.build`'s ``k``, ``w``,
    ``backend``). An index given with a ``k`` or ``w`` it was not built with is refused
    (ValueError).

    Examples
    --------
    >>> as_map_index(["ACGTTGCAAGGC"], k=4, w=2)
    MapIndex(1 contigs, 12 bp, k=4, w=2, 5 minimizers)
    """
    if isinstance(reference, (str, os.PathLike)):
        reference = MapIndex.open(reference) if is_map_index_file(reference) else \
            pathlib.Path(reference)
    if not isinstance(reference, MapIndex):
        return MapIndex.build(reference, **build_options)
    for name in ("k", "w"):
        wanted = build_options.get(name)
        if wanted is not None and wanted != getattr(reference, name):
            raise ValueError(f"{name}={wanted}: the index was built with "
                             f"{name}={getattr(reference, name)}")
    return reference


def _check_unique_names(names: list[str], reference: Any) -> None:
    """ValueError naming the file (else "reference"), the name and its records when two
    records of the reference have the same name."""
    seen: dict[str, int] = {}
    for number, name in enumerate(names):
        first = seen.setdefault(name, number)
        if first == number:
            continue
        where = os.fspath(reference) if isinstance(reference, os.PathLike) else "reference"
        raise ValueError(f"{where}: records #{first} and #{number} have the same name "
                         f"{name!r}; SAM names each reference record once (rename "
                         "them: SequenceSet.from_file(path, duplicates='rename'), or gpualign "
                         "map --rename-duplicates)")


def _piece_minimizers(records: SequenceSet, start: int, end: int, k: int,
                      w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minimizers of ``records`` that start in ``records.codes[start:end]``, found in that
    piece and enough bases around it that every window over those k-mers is whole (w - 1
    k-mers before; w - 1 k-mers and their k - 1 bases after). The piece's ends cut its
    sequences there, which only changes k-mers of the margins."""
    lo = max(0, start - (w - 1))
    hi = min(len(records.codes), end + (w - 1) + (k - 1))
    inside = records.offsets[(records.offsets > lo) & (records.offsets < hi)]
    position, hashes, reverse = minimizers(records.codes[lo:hi],
                                           np.concatenate(([lo], inside, [hi])) - lo, k, w)
    core = (position >= start - lo) & (position < end - lo)
    return position[core] + lo, hashes[core], reverse[core]
