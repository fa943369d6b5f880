"""Reads for mapping, in batches: encoded DNA with their names and, from FASTQ, qualities."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..mems.index import nucleotides
from ..sequences import SequenceSet, as_sequence_set, code_table, get_alphabet

#: A read's symbols outside ACGT (IUPAC codes) are N, which matches nothing: as every mapper.
READ_INVALID = "wildcard"


@dataclass
class ReadBatch:
    """Reads ``start .. start + len(sequences)`` of a file or set, with their FASTQ qualities
    joined in a uint8 array, a read's at its offsets in ``sequences`` less the first (None for
    FASTA and for reads given in memory)."""

    start: int
    sequences: SequenceSet
    qualities: np.ndarray | None

    def __len__(self) -> int:
        return len(self.sequences)


def read_batches(reads: Any, batch_reads: int, role: str = "reads") -> Iterator[ReadBatch]:
    """Consecutive batches of ``batch_reads`` reads of ``reads``: a :class:`os.PathLike` to a
    FASTA/FASTQ file (streamed: memory holds a batch, two where the mapper reads the next
    while it maps one), a :class:`SequenceSet` (views) or sequences in memory. Reads whose
    first records do not look like nucleotides (protein, say) are refused with a ValueError
    naming the file, else ``role``, as a reference is: a symbol outside ACGT would otherwise
    map as N."""
    reads = nucleotides(reads, role, "read mapping is")
    if isinstance(reads, os.PathLike):
        from ..formats._cpu import translate  # compiled: without the GIL
        from ..io import read_record_batches  # dnaio loads once a file is read

        # Every byte has a code (outside ACGT the wildcard): no read is refused for a symbol.
        table = code_table(get_alphabet("dna"), READ_INVALID)
        start = 0
        for names, sequences, offsets, qualities in read_record_batches(reads, batch_reads):
            codes = translate(sequences, table)
            yield ReadBatch(start, SequenceSet(codes, offsets, names, "dna"), qualities)
            start += len(names)
        return
    whole = as_sequence_set(reads, "dna", invalid=READ_INVALID, role=role)
    for lo in range(0, len(whole), batch_reads):
        yield ReadBatch(lo, whole.view(lo, min(len(whole), lo + batch_reads)), None)


def template_name(name: str) -> str:
    """A read's name without the ``/1`` or ``/2`` that tells the mates of a pair apart (as bwa
    and minimap2 drop it): the name the two mates share.

    Examples
    --------
    >>> template_name("frag7/2"), template_name("frag7")
    ('frag7', 'frag7')
    """
    return name[:-2] if name.endswith(("/1", "/2")) else name


def mate_names_differ(names: list[str], mate_names: list[str]) -> int | None:
    """The first position where a read and its mate (same position) do not share a
    :func:`template_name`, or None where every pair does.

    Examples
    --------
    >>> mate_names_differ(["a/1", "b/1", "c"], ["a/2", "x/2", "c"])
    1
    """
    if names == mate_names:  # mates named alike: one comparison
        return None
    # Names that differ by /1 and /2: their templates compared at once, as bytes.
    reads, mates = _template_bytes(names), _template_bytes(mate_names)
    if reads is not None and mates is not None and np.array_equal(reads, mates):
        return None
    return next((i for i, (name, mate) in enumerate(zip(names, mate_names, strict=True))
                 if template_name(name) != template_name(mate)), None)


def _template_bytes(names: list[str]) -> np.ndarray | None:
    """The :func:`template_name` of every name, each followed by a newline, as the bytes of
    one text (UTF-8); None when a name holds a newline itself (the text would not tell the
    names apart)."""
    text = np.frombuffer(("\n".join(names) + "\n").encode("utf-8", "surrogatepass"), np.uint8)
    ends = np.flatnonzero(text == ord("\n"))
    if len(ends) != len(names):
        return None
    starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else ends
    tagged = ends[(ends - starts >= 2) & (text[np.maximum(ends - 2, 0)] == ord("/"))
                  & np.isin(text[np.maximum(ends - 1, 0)], (ord("1"), ord("2")))]
    keep = np.ones(len(text), dtype=bool)
    keep[tagged - 1] = keep[tagged - 2] = False
    return text[keep]


