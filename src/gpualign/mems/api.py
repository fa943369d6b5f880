"""Public API of maximal exact matches: :func:`find_mems`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from .._checks import integer
from .._tables import MEM_COLUMNS, named
from ..backend import resolve_backend
from ..streaming import iter_batches
from .index import MemIndex, _backend, build_index, nucleotides

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

    def table(self) -> tuple[tuple[str, ...], list[Any]]:
        """The matches as a table: the header and columns that ``gpualign mems --format tsv``
        writes (0-based positions).

        Returns
        -------
        header : tuple of str
            ``query, strand, reference, reference_pos, query_pos, length``.
        columns : list of list or np.ndarray
            One per header entry, one value per match; strand ``+`` or ``-`` (reverse
            complement).

        Examples
        --------
        >>> import sys
        >>> from gpualign.io import write_tsv
        >>> m = find_mems(["TTACGTACGGA"], ["ACGTACG"], min_length=6)
        >>> write_tsv(sys.stdout, *m.table())  # doctest: +NORMALIZE_WHITESPACE
        query  strand  reference  reference_pos  query_pos  length
        0      +       0          2              0          7
        0      -       0          3              0          6
        """
        return MEM_COLUMNS, [
            named(self.query_names, self.query_index),
            ["-" if r else "+" for r in self.reverse.tolist()],
            named(self.reference_names, self.reference_index),
            self.reference_pos, self.query_pos, self.length]


def find_mems(reference: Any, queries: Any, *, min_length: int = 20, strands: str = "both",
              invalid: str = "wildcard", backend: str = "auto") -> Mems:
    """All maximal exact matches of at least ``min_length`` between every query and the
    reference: substrings shared by both that cannot be extended left or right, every
    occurrence in the reference (MUMmer's ``-maxmatch``).

    Only A/C/G/T match (case-insensitive; RNA's U is T); ``N`` and any other symbol (read as
    ``N`` with ``invalid="wildcard"``) match nothing, as ``mummer -maxmatch -n``. Matches never
    span two reference records. Reads or a reference whose first records look like protein
    (or text) are refused with a ValueError.

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
    invalid : {"wildcard", "error"}
        Symbols other than A/C/G/T/U/N in the queries and in a reference that is not a
        :class:`MemIndex`: read as ``N``, or an error naming record and position.
    backend : {"auto", "cpu", "cuda"}
        Where the search runs and a reference that is not a :class:`MemIndex` is indexed.

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
    search = _backend(backend)
    queries = nucleotides(queries, "queries")
    count, first_reverse = (2, False) if strands == "both" else (1, strands == "reverse")
    found, names, lengths = [], [], []
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The index is built (on the GPU, or by libdivsufsort, which releases the GIL) and
        # moved to the GPU while the first reads are read; reads from a file or an iterator
        # are read and encoded in batches on a background thread, up to MEM_READ_AHEAD
        # batches ahead, so that reading does not wait for the index and host memory stays
        # bounded. FASTA is parsed on the same backend: a CUDA run never loads Numba.
        ready = pool.submit(_prepare, reference, backend, min_length, invalid)
        for batch in iter_batches(queries, "dna", invalid=invalid, role="queries",
                                  batch_residues=config.MEM_QUERY_BATCH_RESIDUES,
                                  read_ahead=config.MEM_READ_AHEAD, parser=backend):
            index, prepared = ready.result()
            qset = batch.sequences
            pages = [search.find_all(qset.codes, qset.offsets, count, first_reverse, prepared,
                                     number, min_length) for number in range(len(index.pages))]
            entry, q_pos, t_pos, length = _merge_pages(pages)
            found.append((entry // count + batch.start, (entry % count + first_reverse) > 0,
                          q_pos, t_pos, length))
            names.extend(qset.names)
            lengths.append(qset.lengths)
        index, _ = ready.result()
    if found:
        query_index, reverse, q_pos, t_pos, length = (np.concatenate(column)
                                                      for column in zip(*found, strict=True))
    else:
        query_index = q_pos = t_pos = length = np.zeros(0, dtype=np.int64)
        reverse = np.zeros(0, dtype=bool)
    # Ordered by text position within a query position, so by record, then position in it.
    record = np.searchsorted(index.starts, t_pos, side="right") - 1
    return Mems(query_index, reverse, q_pos, record.astype(np.int64, copy=False),
                t_pos - index.starts[record], length, names, list(index.names),
                np.concatenate(lengths).astype(np.int64) if lengths else
                np.zeros(0, dtype=np.int64))


def _prepare(reference: Any, backend: str, min_length: int,
             invalid: str) -> tuple[MemIndex, Any]:
    """The :class:`MemIndex` of ``reference`` (built unless it is one, its symbols read as
    ``invalid`` says) and the reference as the resolved ``backend`` searches it (its
    ``prepare``: the index itself on the CPU, a :class:`~gpualign.mems._cuda.DeviceIndex` on
    CUDA)."""
    index = (reference if isinstance(reference, MemIndex) else
             build_index(reference, invalid=invalid, backend=backend))
    if len(index.pages) > 1 and min_length > index.overlap:
        raise ValueError(f"min_length={min_length}: this index of {len(index.pages)} pages "
                         f"supports MEMs of at most {index.overlap} (MEM_PAGE_OVERLAP when it "
                         f"was built)")
    return index, _backend(backend).prepare(index)


def _merge_pages(pages: list[tuple]) -> tuple:
    """One page's ``entry, query_pos, text_pos, length`` as they are; several pages' merged
    into the same order (entry, query position, text position)."""
    if len(pages) == 1:
        return pages[0]
    entry, q_pos, t_pos, length = (np.concatenate(column) for column in zip(*pages, strict=True))
    order = np.lexsort((t_pos, q_pos, entry))
    return entry[order], q_pos[order], t_pos[order], length[order]
