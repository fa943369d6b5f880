"""``gpualign edit``: edit (Levenshtein) distance, locations and CIGARs."""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..backend import resolve_backend
from ..io import write_tsv
from ._common import (
    add_backend_option,
    add_output_options,
    add_pair_inputs,
    api_default,
    check_output,
    describe_alphabet,
    destination,
    non_negative_int,
    open_output,
    plural,
    read_pair_inputs,
    record_pairs,
    report,
)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign edit``."""
    parser = subparsers.add_parser(
        "edit", help="edit (Levenshtein) distance, locations and CIGARs",
        description="Edit distance of query/target pairs (by record order), or of every query "
                    "with every target (--all-vs-all). Writes a TSV table: query, target, "
                    "distance, target_start, target_end (0-based, half-open), cigar "
                    "(=/X/I/D, I consumes the query); '*' where not available.",
        epilog="example: gpualign edit examples/hiv_reads.fa examples/hiv_reference.fa "
               "--all-vs-all --mode infix -k 25 --task path --invalid wildcard -o hits.tsv",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..edit import edit_distance
    add_pair_inputs(parser)
    parser.add_argument("--all-vs-all", action="store_true",
                        help="compare every query with every target instead of pairing records "
                             "by order; with -k only the pairs within k are written")
    parser.add_argument("--mode", choices=("global", "infix", "prefix"),
                        default=api_default(edit_distance, "mode"),
                        help="global: whole query vs whole target (edlib NW); infix: the query "
                             "anywhere in the target (HW); prefix: the query vs a prefix of the "
                             "target (SHW) (default: %(default)s)")
    parser.add_argument("-k", "--max-distance", dest="k", type=non_negative_int, default=None,
                        metavar="K",
                        help="cutoff: pairs over K are reported with distance -1 (pairwise) or "
                             "left out (--all-vs-all); smaller K is faster")
    parser.add_argument("--task", choices=("distance", "locations", "path"),
                        default=api_default(edit_distance, "task"),
                        help="distance only; locations adds the target range of an optimal "
                             "alignment; path adds its CIGAR (default: %(default)s)")
    add_backend_option(parser)
    add_output_options(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign edit`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..edit import edit_distance, edit_distance_matrix
    began = time.perf_counter()
    backend = resolve_backend(args.backend)  # fail early, before reading large files
    check_output(args.output, [args.queries, args.targets])
    progress = not args.quiet
    queries, targets = read_pair_inputs(args)
    n_q, n_t = len(queries), len(targets)
    options = {"mode": args.mode, "k": args.k, "backend": args.backend, "progress": progress}

    if args.all_vs_all:
        shape, compared = f"{n_q} x {n_t} all-vs-all", n_q * n_t
        if args.k is not None:  # a distance pass finds the pairs within k
            result = edit_distance_matrix(queries, targets, **options)
            pairs = (result.query_index, result.target_index)
        else:
            pairs = record_pairs(args, n_q, n_t)[:2]
        if args.k is None or args.task != "distance":
            result = edit_distance(queries, targets, task=args.task, pairs=pairs, **options)
    else:
        shape, compared = record_pairs(args, n_q, n_t)[2], n_q
        result = edit_distance(queries, targets, task=args.task, **options)

    with open_output(args.output) as out:
        write_tsv(out, *result.table(queries.names, targets.names))

    cutoff = (f", {np.count_nonzero(result.distance >= 0)} within k={args.k}"
              if args.k is not None else "")
    report(args, f"{shape}, mode {args.mode}, task {args.task}: {compared} compared{cutoff}, "
                 f"{plural(len(result), 'row')} written{destination(args)} in "
                 f"{time.perf_counter() - began:.2f} s, {describe_alphabet(args)} "
                 f"(backend {backend})")
    return 0
