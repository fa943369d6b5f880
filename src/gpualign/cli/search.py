"""``gpualign search``: the best local alignments of queries in a protein or DNA database, as a
TSV table or BLAST's tabular format."""

from __future__ import annotations

import argparse
import time

from ..backend import resolve_backend
from ..io import write_tsv
from ._common import (
    add_backend_option,
    add_cluster_options,
    add_encoding_options,
    add_output_options,
    add_scoring_options,
    api_default,
    check_output,
    dask_client,
    describe_alphabet,
    destination,
    open_output,
    plural,
    positive_int,
    read_sequences,
    reading,
    report,
    scoring,
    settle_alphabet,
    write_rows,
)

#: The gap costs of ``gpualign search`` without options: BLAST's defaults (5/2 for DNA, 11/1
#: for proteins) in gpualign's convention (see :func:`gpualign.search.api.default_scoring`).
_GAPS, _MATRIX_GAPS = (7, 2), (12, 1)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign search``."""
    parser = subparsers.add_parser(
        "search", help="database search: the best local alignments of each query, E-values",
        description="Smith-Waterman search of every query against every sequence of a "
                    "database (a FASTA/FASTQ file, or a .gpudb file from gpualign makedb); "
                    "DNA on both strands. Keeps the -n best hits of each query, with bit "
                    "score and E-value (Karlin-Altschul, published parameters). Without "
                    "scoring options: BLOSUM62 (also with gap options alone) with BLAST's "
                    "gaps 11/1 for proteins (gpualign "
                    "--gap-open 12 --gap-extend 1: a gap of length L costs gap-open + "
                    "(L-1)*gap-extend, BLAST's existence + L*extension), +2/-3 with BLAST's "
                    "5/2 for DNA (--gap-open 7 --gap-extend 2). Writes a TSV table (query, "
                    "subject, rank, score, bitscore, evalue, strand, identity, query_start, "
                    "query_end, subject_start, subject_end: 0-based, half-open, cigar; '*' "
                    "where not available) or BLAST's -outfmt 6 columns (--format blast6: "
                    "qseqid sseqid pident length mismatch gapopen qstart qend sstart send "
                    "evalue bitscore, 1-based).",
        epilog="example: gpualign search queries.fa tests/data/uniprot_200.fasta.gz -n 5 "
               "--evalue 1e-5 --format blast6 -o hits.tsv",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..search import search
    parser.add_argument("queries", metavar="QUERIES",
                        help="FASTA/FASTQ file of queries (.gz, .bz2, .xz accepted)")
    parser.add_argument("database", metavar="DB",
                        help="the database: a .gpudb file (gpualign makedb) or a FASTA/FASTQ "
                             "file")
    add_encoding_options(parser)
    parser.add_argument("-n", "--max-hits", type=positive_int, metavar="N",
                        default=api_default(search, "n"),
                        help="hits kept per query, best first (default %(default)s)")
    parser.add_argument("--evalue", type=_positive_float, default=None, metavar="E",
                        help="keep only hits with an E-value at most E (needs a scoring with "
                             "published statistics)")
    parser.add_argument("--task", choices=("score", "locations", "path"),
                        default=api_default(search, "task"),
                        help="score only; locations adds where each hit starts and ends; "
                             "path adds its CIGAR and identity (default: %(default)s; "
                             "blast6 implies path)")
    add_scoring_options(parser, gaps=_GAPS, matrix_gaps=_MATRIX_GAPS)
    parser.add_argument("--format", choices=("tsv", "blast6"), default="tsv",
                        help="output format (default: %(default)s)")
    add_cluster_options(parser, "the database's partitions")
    add_backend_option(parser)
    add_output_options(parser)


def _positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _cluster(args: argparse.Namespace) -> str:
    """Where the scores were computed, for the summary line: a cluster, or nothing (here)."""
    if args.scheduler is not None:
        return f"; scores on the Dask cluster at {args.scheduler}"
    if args.workers is not None:
        return f"; scores on a local Dask cluster of {plural(args.workers, 'worker')}"
    return ""


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign search`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..search import Database, search
    from ..search.database import is_database_file
    began = time.perf_counter()
    given = any(value is not None for value in (args.match, args.mismatch, args.matrix,
                                                args.gap_open, args.gap_extend))
    if given:
        scoring(args)  # bad matrices and gap costs fail before any reading
    backend = resolve_backend(args.backend)
    task = "path" if args.format == "blast6" else args.task
    check_output(args.output, [args.queries, args.database, args.matrix])
    database = Database.open(args.database) if is_database_file(args.database) else None
    if database is not None:
        args.alphabet_inferred = False
        if args.alphabet not in ("auto", database.alphabet.name):
            raise ValueError(f"--alphabet {args.alphabet}: {args.database} is a "
                             f"{database.alphabet.name} database")
        args.alphabet = database.alphabet.name
    else:
        settle_alphabet(args, args.queries, args.database)
    if args.alphabet == "protein" and args.matrix is None and args.match is None and \
            args.mismatch is None:
        args.matrix = "BLOSUM62"  # proteins given only gap costs: BLAST's matrix with them
    scheme = scoring(args) if given else None
    if database is None:
        with reading(args.database):
            database = Database.from_file(args.database, args.alphabet, invalid=args.invalid,
                                          parser=backend)
    if len(database) == 0:
        raise ValueError(f"{args.database}: no records: DB must hold at least one sequence")
    queries = read_sequences(args.queries, args)
    if len(queries) == 0:
        raise ValueError(f"{args.queries}: no records: QUERIES must hold at least one "
                         "sequence")
    with dask_client(args) as client:
        searched = time.perf_counter()
        # On a cluster each worker resolves the backend for its partitions (CUDA where it has
        # a GPU); this process aligns the reported hits with its own.
        result = search(queries, database, scoring=scheme, n=args.max_hits,
                        evalue=args.evalue, task=task,
                        backend=backend if client is None else args.backend, client=client,
                        progress=not args.quiet)
        seconds = time.perf_counter() - searched
    subject_names = database.input_names()
    with open_output(args.output) as out:
        if args.format == "blast6":  # BLAST's tabular output has no header line
            write_rows(out, result.blast6_columns(queries.names, subject_names)[1])
        else:
            write_tsv(out, *result.table(queries.names, subject_names))
    statistics = (result.statistics.source if result.statistics is not None
                  else "no E-values: no published statistics for this scoring")
    report(args, f"{plural(len(queries), 'query', 'queries')} against "
                 f"{plural(len(database), 'sequence')} ({database.residues} residues), "
                 f"{result.scoring.describe()}, task {task}: {result.cells} cells in "
                 f"{seconds:.2f} s ({result.cells / max(seconds, 1e-9) / 1e9:.2f} GCUPS), "
                 f"{plural(len(result), 'hit')} written{destination(args)} in "
                 f"{time.perf_counter() - began:.2f} s, {describe_alphabet(args)}, "
                 f"{statistics} (backend {backend}{_cluster(args)})")
    return 0

