"""``gpualign lcs``: longest common subsequence of queries with a streamed subject collection."""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path
from typing import TextIO

import numpy as np

from .._progress import progress_bar
from .._tables import LCS_ALL_COLUMNS
from ..backend import resolve_backend
from ..io import SequenceFileError, read_records, write_tsv
from ._common import (
    add_backend_option,
    add_encoding_options,
    add_output_options,
    api_default,
    check_output,
    describe_alphabet,
    destination,
    device_list,
    open_output,
    plural,
    positive_int,
    read_sequences,
    reading,
    report,
    settle_alphabet,
    write_rows,
)

#: Rows of ``gpualign lcs --all`` formatted and written at a time.
_ALL_CHUNK = 1 << 16


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign lcs``."""
    parser = subparsers.add_parser(
        "lcs", help="longest common subsequence: the best subjects of each query",
        description="LCS of every query with every subject; the subjects are streamed from "
                    "their file in batches, so the collection may be larger than memory. Writes "
                    "a TSV table: by default the --top N subjects of each query (query, subject, "
                    "rank, lcs_length, query_length, subject_length, lcs), longer LCS first and "
                    "ties in subject file order; with --all the LCS length of every subject "
                    "(query, subject, lcs_length, query_length, subject_length), subjects in "
                    "file order, the rows of one query together.",
        epilog="example: gpualign lcs query.fa tests/data/rdp16s_200.fasta.gz --top 5 "
               "--invalid wildcard -o best.tsv",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..lcs import lcs_top
    parser.add_argument("query", metavar="QUERY",
                        help="FASTA/FASTQ file whose every record is a query, usually one "
                             "(.gz, .bz2, .xz accepted)")
    parser.add_argument("subjects", metavar="SUBJECTS",
                        help="FASTA/FASTQ file of subjects, streamed (.gz, .bz2, .xz accepted)")
    add_encoding_options(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--top", type=positive_int, default=api_default(lcs_top, "n"),
                        metavar="N",
                        help="write the N subjects with the longest LCS for each query "
                             "(default: %(default)s)")
    output.add_argument("--all", action="store_true",
                        help="write the LCS length of every subject instead of the top N")
    parser.add_argument("--no-strings", action="store_true",
                        help="leave out the lcs column (one longest common subsequence per "
                             "reported subject, computed on the CPU)")
    add_backend_option(parser)
    parser.add_argument("--devices", type=device_list, default=None, metavar="IDS",
                        help="GPUs to split the subjects over, e.g. 0,1 (CUDA backend only; "
                             "default: the current GPU)")
    add_output_options(parser)


def _changed(path: str, detail: str) -> SequenceFileError:
    return SequenceFileError(f"{path}: changed while being read ({detail}); read it again")


def _write_all_rows(out: TextIO, path: str, query: str, query_length: int,
                    lengths: np.ndarray, progress: bool) -> None:
    """Rows of ``gpualign lcs --all`` for one query: the subject names and lengths come from a
    second streamed pass over ``path`` (the length API returns lengths only)."""
    names: list[str] = []
    sizes: list[int] = []
    count = len(lengths)
    bar = progress_bar(count, progress, "write", unit="subject")

    def flush(end: int) -> None:
        start = end - len(names)
        write_rows(out, [[query] * len(names), names, lengths[start:end],
                          [query_length] * len(names), sizes])
        bar.update(len(names))
        names.clear()
        sizes.clear()

    index = -1
    try:
        with contextlib.closing(read_records(path)) as records:
            for index, (name, sequence) in enumerate(records):
                if index >= count:
                    raise _changed(path, f"more than {plural(count, 'record')}")
                names.append(name)
                sizes.append(len(sequence))
                if len(names) == _ALL_CHUNK:
                    flush(index + 1)
        if index + 1 != count:
            raise _changed(path, f"{plural(index + 1, 'record')}, was {count}")
        flush(count)
    finally:
        bar.close()


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign lcs`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..lcs import lcs_length_matrix, lcs_top
    began = time.perf_counter()
    backend = resolve_backend(args.backend)  # fail early, before reading large files
    check_output(args.output, [args.query, args.subjects])
    progress = not args.quiet
    settle_alphabet(args, args.query, args.subjects)
    queries = read_sequences(args.query, args)
    n_q = len(queries)
    if n_q == 0:
        raise ValueError(f"{args.query}: no records: QUERY must hold at least one sequence")
    # A Path, not a list: the API streams the file in batches.
    subjects = Path(args.subjects)
    options = {"alphabet": args.alphabet, "invalid": args.invalid, "backend": args.backend,
               "devices": args.devices}

    if args.all:
        # One pass over the subjects for all the queries: a subject done is n_q pairs.
        bar = progress_bar(None, progress, "lcs", unit="pair")
        with reading(args.subjects), contextlib.closing(bar):
            matrix = lcs_length_matrix(queries, subjects, **options,
                                       progress=lambda done: bar.update(done * n_q))
        n_s = matrix.shape[1]
        with open_output(args.output) as out, reading(args.subjects):
            write_tsv(out, LCS_ALL_COLUMNS, [])
            # One pass over the subjects per query keeps the rows of a query together without
            # holding every subject name in memory (QUERY usually holds one record).
            for q in range(n_q):
                _write_all_rows(out, args.subjects, queries.names[q],
                                int(queries.lengths[q]), matrix[q], progress)
        rows = n_q * n_s
        task = "all lengths"
    else:
        with_lcs = not args.no_strings
        # lcs_top takes one query; each query streams the subjects once. One bar counts the
        # pairs done as batches of subjects finish, its total known once the first query has
        # counted the subjects.
        tops = []
        bar = progress_bar(None, progress, "lcs", unit="pair")
        with reading(args.subjects), contextlib.closing(bar):
            for q in range(n_q):
                tops.append(lcs_top(queries.take(np.array([q])), subjects, args.top,
                                    with_lcs=with_lcs, **options, progress=bar.update))
                if q == 0:  # shown from the next update on (tqdm's delay still applies)
                    bar.total = n_q * tops[0].subjects
        n_s = tops[0].subjects
        tables = [top.table(name) for top, name in zip(tops, queries.names, strict=True)]
        with open_output(args.output) as out:
            write_tsv(out, tables[0][0], [])  # the header, the same for every query
            for _, columns in tables:
                write_rows(out, columns)
        rows = sum(len(top) for top in tops)
        task = f"top {args.top}{'' if with_lcs else ' without strings'}"

    report(args, f"{plural(n_q, 'query', 'queries')} x {plural(n_s, 'subject')}, {task}: "
                 f"{n_q * n_s} compared, {plural(rows, 'row')} written{destination(args)} in "
                 f"{time.perf_counter() - began:.2f} s, {describe_alphabet(args)} "
                 f"(backend {backend})")
    return 0
