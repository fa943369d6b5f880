"""``gpualign allpairs``: every pair of a set (or of two sets) at or above a percent identity."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections.abc import Iterator

from ..backend import resolve_backend
from ..io import write_tsv
from ._common import (
    PROG,
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
    read_sequences,
    report,
    scoring,
    settle_alphabet,
)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign allpairs``."""
    parser = subparsers.add_parser(
        "allpairs", help="every pair of a set at or above a percent identity",
        description="Every unordered pair of SEQS (or every pair of SEQS x OTHERS) whose "
                    "identity in its optimal global alignment reaches --min-identity. A "
                    "lossless cascade (length bound, edit-distance bound) spares most pairs "
                    "the alignment. Writes a TSV table: query, target, identity, score, "
                    "query_start, query_end, target_start, target_end (0-based, half-open), "
                    "cigar (=/X/I/D, I consumes the query).",
        epilog="example: gpualign allpairs tests/data/rdp16s_200.fasta.gz --min-identity 0.9 "
               "--invalid wildcard -o pairs.tsv",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..allpairs import allpairs
    parser.add_argument("seqs", metavar="SEQS",
                        help="FASTA/FASTQ file (.gz, .bz2, .xz accepted)")
    parser.add_argument("others", metavar="OTHERS", nargs="?", default=None,
                        help="optional second file: compare SEQS x OTHERS instead of the pairs "
                             "within SEQS")
    add_encoding_options(parser)
    parser.add_argument("--min-identity", type=float,
                        default=api_default(allpairs, "min_identity"),
                        help="keep pairs with at least this identity (default %(default)s)")
    parser.add_argument("--identity", choices=("columns", "shorter"),
                        default=api_default(allpairs, "identity"),
                        help="columns: matches / alignment columns; shorter: matches / length "
                             "of the shorter sequence (default: %(default)s)")
    parser.add_argument("--no-align", action="store_true",
                        help="keep no CIGARs: the cigar column is written '*'")
    add_scoring_options(parser)
    parser.add_argument("--checkpoint", metavar="DIR", default=None,
                        help="keep finished tiles in DIR; a rerun with the same DIR resumes")
    add_cluster_options(parser, "the tiles")
    add_backend_option(parser)
    add_output_options(parser)


@contextlib.contextmanager
def _checkpoint_warnings(args: argparse.Namespace) -> Iterator[None]:
    """Print each :class:`~gpualign.allpairs.CheckpointWarning` as one line on standard error,
    even with ``--quiet``: a tile computed again is a warning, not part of the summary."""
    from ..allpairs import CheckpointWarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, CheckpointWarning):
            print(f"{PROG} {args.command}: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():  # restores showwarning and the filters
        warnings.simplefilter("always", CheckpointWarning)
        shown, warnings.showwarning = warnings.showwarning, show
        yield


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign allpairs`` on the parsed ``args``; return the exit status (0; errors
    raise and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..allpairs import allpairs
    began = time.perf_counter()
    scheme = scoring(args)
    backend = resolve_backend(args.backend)
    check_output(args.output, [args.seqs, args.others, args.matrix])
    settle_alphabet(args, args.seqs, args.others)
    seqs = read_sequences(args.seqs, args)
    others = read_sequences(args.others, args) if args.others is not None else None
    with dask_client(args) as client, _checkpoint_warnings(args):
        hits = allpairs(seqs, others, min_identity=args.min_identity, scoring=scheme,
                        identity=args.identity, align=not args.no_align,
                        checkpoint=args.checkpoint, client=client, alphabet=args.alphabet,
                        invalid=args.invalid, backend=args.backend, progress=not args.quiet)
    targets = seqs if others is None else others
    with open_output(args.output) as out:
        write_tsv(out, *hits.table(seqs.names, targets.names))
    report(args, f"{hits.describe_stages()}, identity >= {args.min_identity:g} "
                 f"({args.identity}): {plural(len(hits), 'row')} written{destination(args)} in "
                 f"{time.perf_counter() - began:.2f} s, {describe_alphabet(args)} "
                 f"(stages: {hits.describe_seconds()}; "
                 f"backend {backend})")
    return 0
