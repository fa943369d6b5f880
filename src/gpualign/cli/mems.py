"""``gpualign index`` and ``gpualign mems``: maximal exact matches between reads and a reference,
from its FASTA file or from an index built once. ``gpualign index`` builds the minimizer index
of ``gpualign map`` too (``--kind map``, or an output named ``*.gpumap``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..backend import resolve_backend
from ..io import write_mummer, write_tsv
from ._common import (
    add_backend_option,
    add_names_option,
    add_output_options,
    api_default,
    check_output,
    destination,
    open_output,
    plural,
    positive_int,
    reading,
    report,
)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign index`` and ``gpualign mems``, in this order."""
    index = subparsers.add_parser(
        "index", help="index a reference for gpualign mems or gpualign map",
        description="Build an index of a DNA reference and write it to a file that gpualign "
                    "mems or gpualign map reads instead of the FASTA (symbols other than "
                    "A/C/G/T are read as N, which matches nothing). Two kinds: mems (suffix "
                    "array and k-mer table) and map (minimizers of both strands, as "
                    "minimap2's, with the reference). An output named *.gpumap is a map "
                    "index, any other a MEM index, unless --kind says.",
        epilog="examples: gpualign index examples/hiv_reference.fa -o hiv.gpuidx; "
               "gpualign index examples/hiv_reference.fa -o hiv.gpumap -k 15 -w 10",
        declare=_index_arguments)
    index.set_defaults(run=run_index)
    mems = subparsers.add_parser(
        "mems", help="maximal exact matches between reads and a reference (MUMmer format)",
        description="All maximal exact matches of at least -l bases between every read and "
                    "the reference, every occurrence (mummer -maxmatch). Only A/C/G/T match, "
                    "in any case (N and IUPAC codes match nothing: as mummer -maxmatch -n). "
                    "Output: MUMmer's format (> read, > read Reverse; ref_id ref_pos "
                    "query_pos length, 1-based; ref_id only for several reference records "
                    "or -F), or a TSV table (0-based).",
        epilog="example: gpualign mems examples/hiv_reference.fa examples/hiv_reads.fa -l 20 -b",
        declare=_arguments)
    mems.set_defaults(run=run)


def _index_arguments(parser: argparse.ArgumentParser) -> None:
    from ..map.index import MapIndex
    parser.add_argument("reference", metavar="REF", help="FASTA file (.gz accepted)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="where to write the index: REF.gpuidx (mems), REF.gpumap (map) "
                             "or '-' (standard output, unless it is a terminal)")
    parser.add_argument("--kind", choices=("mems", "map"),
                        help="which index (default: map for an output named *.gpumap, "
                             "else mems)")
    parser.add_argument("-k", type=positive_int, metavar="K",
                        help="map index: minimizer k-mer length, 2 to 28 (default "
                             f"{api_default(MapIndex.build, 'k')})")
    parser.add_argument("-w", type=positive_int, metavar="W",
                        help="map index: minimizer window, consecutive k-mers, 1 to 255 "
                             f"(default {api_default(MapIndex.build, 'w')})")
    add_names_option(parser)
    add_backend_option(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")


def run_index(args: argparse.Namespace) -> int:
    """Run ``gpualign index`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..map.index import MapIndex
    from ..mems import build_index
    began = time.perf_counter()
    to_stdout = args.output == "-"
    if to_stdout and sys.stdout.isatty():
        raise ValueError("-o -: an index is binary, not for a terminal; give a file name or "
                         "redirect standard output")
    check_output(args.output, [args.reference])
    kind = args.kind or ("map" if args.output.endswith(".gpumap") else "mems")
    shape = {name: value for name, value in (("k", args.k), ("w", args.w)) if value is not None}
    if kind == "map":
        index = MapIndex.build(Path(args.reference), **shape, backend=args.backend)
        names, lengths = index.reference.names, index.reference.lengths
        contents = (f", {plural(len(index.positions), 'minimizer')} (k = {index.k}, "
                    f"w = {index.w})")
    elif shape:
        raise ValueError("-k/-w: options of a map index (--kind map, or an output named "
                         "*.gpumap)")
    else:
        index = build_index(Path(args.reference), backend=args.backend)
        names, lengths, contents = index.names, index.lengths, ""
    if to_stdout:
        sys.stdout.flush()
        index.save(sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        index.save(args.output)
    report(args, f"{plural(len(names), 'record')}, {int(lengths.sum())} bp{contents} -> "
                 f"{'standard output' if to_stdout else args.output} in "
                 f"{time.perf_counter() - began:.2f} s")
    return 0


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..mems import find_mems
    parser.add_argument("reference", metavar="REF",
                        help="FASTA file (.gz accepted) or an index from gpualign index")
    parser.add_argument("reads", metavar="READS", help="FASTA/FASTQ file (.gz accepted)")
    parser.add_argument("-l", "--min-length", type=positive_int,
                        default=api_default(find_mems, "min_length"), metavar="L",
                        help="minimum match length (default %(default)s)")
    strands = parser.add_mutually_exclusive_group()
    strands.add_argument("-b", "--both", action="store_true",
                         help="forward and reverse-complement matches")
    strands.add_argument("-r", "--reverse", action="store_true",
                         help="reverse-complement matches only")
    parser.add_argument("-c", dest="forward_positions", action="store_true",
                        help="reverse matches: query position relative to the forward read")
    parser.add_argument("-F", dest="four_columns", action="store_true",
                        help="always write the ref_id column")
    parser.add_argument("-L", dest="lengths", action="store_true",
                        help="read lengths on the header lines")
    parser.add_argument("--format", choices=("mummer", "tsv"), default="mummer",
                        help="output format (default: mummer)")
    add_names_option(parser)
    add_backend_option(parser)
    add_output_options(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign mems`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..map.index import is_map_index_file
    from ..mems import MemIndex, find_mems
    from ..mems.index import is_index_file
    began = time.perf_counter()
    check_output(args.output, [args.reference, args.reads])
    if is_map_index_file(args.reference):  # a zip archive too, but no MEM index
        raise ValueError(f"{args.reference}: a gpualign map index (for gpualign map); "
                         "gpualign mems reads a MEM index (gpualign index -o REF.gpuidx) "
                         "or FASTA")
    # Told apart by their first bytes, so that a damaged index is reported as one; anything
    # else (a folder or a missing file too: the FASTA reader says so) is read as FASTA and
    # indexed by find_mems.
    reference = (MemIndex.load(args.reference)
                 if os.path.isfile(args.reference) and is_index_file(args.reference)
                 else Path(args.reference))
    strands = "both" if args.both else "reverse" if args.reverse else "forward"
    backend = resolve_backend(args.backend)
    with reading(args.reads):
        mems = find_mems(reference, Path(args.reads), min_length=args.min_length,
                         strands=strands, backend=backend)
    with open_output(args.output) as out:
        if args.format == "tsv":
            write_tsv(out, *mems.table())
        else:
            write_mummer(out, mems, strands, four_columns=args.four_columns or None,
                         forward_positions=args.forward_positions, lengths=args.lengths,
                         backend=backend)
    report(args, f"{plural(len(mems.query_names), 'read')} ({strands}) against "
                 f"{plural(len(mems.reference_names), 'reference record')}, l = "
                 f"{args.min_length}: {plural(len(mems), 'MEM')}{destination(args)} in "
                 f"{time.perf_counter() - began:.2f} s (backend {backend})")
    return 0
