"""``gpualign makedb``: a search database file (``.gpudb``) from a FASTA/FASTQ file."""

from __future__ import annotations

import argparse
import time

from ..backend import resolve_backend
from ._common import (
    add_backend_option,
    add_encoding_options,
    check_output,
    describe_alphabet,
    plural,
    reading,
    report,
    settle_alphabet,
)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign makedb``."""
    parser = subparsers.add_parser(
        "makedb", help="pack a database for gpualign search",
        description="Read a FASTA/FASTQ file once and write its sequences sorted by length, "
                    "encoded and packed, with their names: a .gpudb file that gpualign "
                    "search maps into memory instead of parsing the FASTA again (the search "
                    "output is the same).",
        epilog="example: gpualign makedb tests/data/uniprot_200.fasta.gz -o uniprot.gpudb",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fasta", metavar="DB.fasta",
                        help="FASTA/FASTQ file of the database (.gz, .bz2, .xz accepted)")
    parser.add_argument("-o", "--output", required=True, metavar="DB.gpudb",
                        help="where to write the database (a file: it is memory-mapped)")
    add_encoding_options(parser)
    add_backend_option(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign makedb`` on the parsed ``args``; return the exit status (0; errors
    raise and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..search import Database
    began = time.perf_counter()
    if args.output == "-":
        raise ValueError("-o -: a database is memory-mapped from a file; give a file name")
    check_output(args.output, [args.fasta])
    backend = resolve_backend(args.backend)  # where the FASTA is parsed
    settle_alphabet(args, args.fasta)
    with reading(args.fasta):
        database = Database.from_file(args.fasta, args.alphabet, invalid=args.invalid,
                                      parser=backend)
    if len(database) == 0:
        raise ValueError(f"{args.fasta}: no records: a database must hold at least one "
                         "sequence")
    database.save(args.output)
    report(args, f"{plural(len(database), 'sequence')}, {database.residues} residues, "
                 f"{describe_alphabet(args)} -> {args.output} in "
                 f"{time.perf_counter() - began:.2f} s (backend {backend})")
    return 0
