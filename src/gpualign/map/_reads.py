"""Reads for mapping, in batches: encoded DNA with their names and, from FASTQ, qualities."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..sequences import SequenceSet, as_sequence_set, encode_many

#: A read's symbols outside ACGT (IUPAC codes) are N, which matches nothing: as every mapper.
READ_INVALID = "wildcard"


@dataclass
class ReadBatch:
    """Reads ``start .. start + len(sequences)`` of a file or set, with their FASTQ qualities
    (None for FASTA and for reads given in memory)."""

    start: int
    sequences: SequenceSet
    qualities: list[str | None] | None

    def __len__(self) -> int:
        return len(self.sequences)


def read_batches(reads: Any, batch_reads: int) -> Iterator[ReadBatch]:
    """Consecutive batches of ``batch_reads`` reads of ``reads``: a :class:`os.PathLike` to a
    FASTA/FASTQ file (streamed: memory holds one batch), a :class:`SequenceSet` (views) or
    sequences in memory."""
    if isinstance(reads, os.PathLike):
        records = iter(_file_records(reads))
        start = 0
        for chunk in iter(lambda: list(itertools.islice(records, batch_reads)), []):
            names, sequences, qualities = (list(column) for column in zip(*chunk, strict=True))
            codes, offsets = encode_many(sequences, "dna", names=names, first_index=start,
                                         invalid=READ_INVALID)
            yield ReadBatch(start, SequenceSet(codes, offsets, names, "dna"),
                            None if qualities[0] is None else qualities)
            start += len(names)
        return
    whole = as_sequence_set(reads, "dna", invalid=READ_INVALID, role="reads")
    if whole.alphabet.name != "dna":
        raise ValueError(f"reads are encoded as {whole.alphabet.name}; mapping needs DNA")
    for lo in range(0, len(whole), batch_reads):
        yield ReadBatch(lo, whole.view(lo, min(len(whole), lo + batch_reads)), None)


def _file_records(path: os.PathLike) -> Iterator[tuple[str, str, str | None]]:
    from ..io import read_records  # dnaio loads once a file is read

    return read_records(path, qualities=True)
