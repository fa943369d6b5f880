"""``gpualign align``: NW / SW / semi-global / overlap alignment, as a TSV table or SAM."""

from __future__ import annotations

import argparse
import sys
import time

from .. import config
from ..backend import resolve_backend
from ..io import write_sam, write_tsv
from ._common import (
    PROG,
    add_backend_option,
    add_output_options,
    add_pair_inputs,
    add_scoring_options,
    api_default,
    check_output,
    describe_alphabet,
    destination,
    open_output,
    plural,
    read_pair_inputs,
    record_pairs,
    report,
    scoring,
)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign align``."""
    parser = subparsers.add_parser(
        "align", help="NW / SW / semi-global / overlap alignment with scores, ends and CIGARs",
        description="Align query/target pairs (by record order), or every query with every "
                    "target (--all-vs-all), with match/mismatch scores or a substitution "
                    "matrix and affine gaps (a gap of length L costs gap-open + "
                    "(L-1)*gap-extend). Writes a TSV table (query, target, identity, score, "
                    "query_start, query_end, target_start, target_end: 0-based, half-open; "
                    "cigar: =/X/I/D, I consumes the query; '*' where not available), or SAM "
                    "(-o *.sam or --format sam: targets are the references, task path).",
        epilog="example: gpualign align reads.fa windows.fa --mode semi-global --task path "
               "-o reads.sam",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..align import align
    add_pair_inputs(parser)
    parser.add_argument("--all-vs-all", action="store_true",
                        help="align every query with every target instead of pairing records "
                             "by order")
    parser.add_argument("--mode", choices=("global", "local", "semi-global", "overlap"),
                        default=api_default(align, "mode"),
                        help="global: end to end (NW); local: best local alignment (SW); "
                             "semi-global: the query end to end, target ends free; overlap: "
                             "all four ends free (default: %(default)s)")
    parser.add_argument("--task", choices=("score", "end", "path"),
                        default=api_default(align, "task"),
                        help="score only; end adds where the alignment ends; path adds where "
                             "it starts, the CIGAR and the identity (default: %(default)s)")
    parser.add_argument("--band", type=int, default=None, metavar="B",
                        help="task path, modes global and semi-global: compute only the "
                             "diagonals of end-to-end placements widened by B on each side; "
                             "the answer is the full DP's (pairs the band cannot settle are "
                             "aligned in full), faster where pairs align near those diagonals "
                             "(default: the full DP)")
    add_scoring_options(parser)
    parser.add_argument("--format", choices=("tsv", "sam"), default=None,
                        help="output format (default: sam when -o ends in .sam, else tsv)")
    add_backend_option(parser)
    add_output_options(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign align`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..align import _parasail, align
    began = time.perf_counter()
    scheme = scoring(args)  # bad matrices and gap costs fail before any reading
    backend = resolve_backend(args.backend)
    sam = args.format == "sam" or (args.format is None and str(args.output).endswith(".sam"))
    task = "path" if sam else args.task
    # A bad band is refused before any reading, in the options' words.
    if args.band is not None and args.band < 0:
        raise ValueError(f"--band {args.band}: a band of 0 or more diagonals")
    if args.band is not None and (task != "path" or args.mode not in ("global", "semi-global")):
        raise ValueError(f"--band {args.band}: for --task path (or SAM) in --mode global or "
                         f"semi-global, not --task {task} in --mode {args.mode}")
    check_output(args.output, [args.queries, args.targets, args.matrix])
    queries, targets = read_pair_inputs(args)
    q_index, t_index, shape = record_pairs(args, len(queries), len(targets))
    result = align(queries, targets, mode=args.mode, scoring=scheme, task=task,
                   backend=args.backend, pairs=(q_index, t_index), progress=not args.quiet,
                   band=args.band)
    with open_output(args.output) as out:
        if sam:
            write_sam(out, queries, targets, q_index, t_index, result,
                      " ".join([PROG, *sys.argv[1:]]))
        else:
            write_tsv(out, *result.table(queries.names, targets.names))
    if backend == "cpu" and task == "score" and config.ALIGN_CPU_SCORES == "parasail" and \
            queries.alphabet.name != "bytes" and not _parasail.available(queries.alphabet.name):
        # parasail stays optional (no wheels for every platform); without it the scores come
        # from the scalar DP, about 9x slower on 16S genes, and nothing else would say so.
        report(args, "hint: pip install parasail for CPU scores about 9x faster (the same "
                     "scores)")
    report(args, f"{shape}, mode {args.mode}, {scheme.describe()}, task {task}: "
                 f"{plural(len(result), 'row')} written{destination(args)} in "
                 f"{time.perf_counter() - began:.2f} s, {describe_alphabet(args)} "
                 f"(backend {backend})")
    return 0
